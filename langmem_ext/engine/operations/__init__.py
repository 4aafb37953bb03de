"""The engine's operations, by name: the catalogue every surface is derived from
(the engine's methods, the agent tool set, MCP, ``langmem-ext memories``, the
memory browser). Each operation is declared once, and the declaration is its
body (see :mod:`..runtime.catalogue`); the modules group them by what they do:

* :mod:`.writes` — store notes, facts, episodes, rules;
* :mod:`.changes` — confirm, mark, forget, update, revise, delete, sweep;
* :mod:`.reads` — get, history, versions;
* :mod:`.searching` — search, layered search, recall, the store's own items;
* :mod:`.listing` — list with cursors, stats;
* :mod:`.knowledge` — entities, what is known about one, timelines, stale memories;
* :mod:`.profile` — the user profile (facts reflection collects, the summary);
* :mod:`.provider` — health check, embeddings, storage size;
* :mod:`.erasure` — erase a user or a tenant for good, with a receipt.

The steps they share are in :mod:`.lifecycle` (writes), :mod:`.retrieval`
(reads), :mod:`.loading` (reads by id), :mod:`.fields` (rules a type cannot
state) and :mod:`.profile_facts` (the profile's collection rules).

Examples:
    >>> [name for name, spec in OPERATIONS.items() if spec.tool][:3]
    ['store_fact', 'store_episode', 'store_rule']
    >>> OPERATIONS["search"].params[0].description
    'What to look for, in natural language.'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..runtime.catalogue import Spec
from . import (
    changes,
    erasure,
    knowledge,
    listing,
    profile,
    provider,
    reads,
    searching,
    writes,
)

__all__ = ["OPERATIONS"]

#: Every engine operation, writes first, in the order surfaces list them.
OPERATIONS: Mapping[str, Spec[Any, Any]] = {
    s.name: s
    for module in (
        writes,
        changes,
        reads,
        searching,
        listing,
        provider,
        profile,
        knowledge,
        erasure,
    )
    for s in vars(module).values()
    if isinstance(s, Spec)
}
