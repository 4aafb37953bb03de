"""What is stored: the record types (:mod:`.models`), how stored values are
read and checked (:mod:`.decode`), the lifecycle numbers (:mod:`.policy`),
scores (:mod:`.scoring`) and checks of caller-supplied values
(:mod:`.checks`). The engine's lowest room: it imports no other."""
