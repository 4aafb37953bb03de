"""Who calls and where their memories live: tenants and callers
(:mod:`.tenancy`), namespace templates (:mod:`.namespaces`), layers and their
precedence (:mod:`.layers`) and the namespace layout (:mod:`.layout`).
Pure: no store requests. Upper layers use these through
:mod:`langmem_ext.engine`."""
