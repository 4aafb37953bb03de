"""What is stored: the record types (:mod:`.models`), how stored values are
read and checked (:mod:`.decode`), the lifecycle numbers (:mod:`.policy`),
scores (:mod:`.scoring`) and checks of caller-supplied values
(:mod:`.checks`). The engine's lowest room: it imports no other.

Examples:
    >>> from langmem_ext.engine import Fact, policy
    >>> fact = Fact(id="f1", tenant_id="t", layer="user", layer_id="ada", content="Likes tea")
    >>> fact.to_value()["kind"], fact.confidence == policy.FACT_CONFIDENCE
    ('fact', True)
"""
