"""Who calls and where their memories live: tenants and callers
(:mod:`.tenancy`), namespace templates (:mod:`.namespaces`), layers and their
precedence (:mod:`.layers`) and the namespace layout (:mod:`.layout`).
Pure: no store requests. Upper layers use these through
:mod:`langmem_ext.engine`.

Examples:
    >>> from langmem_ext.engine import MemoryContext, NamespaceTemplate
    >>> NamespaceTemplate(("memories", "{user_id}"))({"configurable": {"user_id": "ada"}})
    ('memories', 'ada')
    >>> MemoryContext("acme", user_id="ada").own_space()
    ('user', 'ada')
"""
