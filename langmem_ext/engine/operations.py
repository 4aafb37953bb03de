"""The engine's operations, by name: the catalogue every surface is derived from
(the engine's methods, the agent tool set, MCP, ``langmem-ext memories``, the
memory browser). See :mod:`.catalogue` for what a declaration holds.

Examples:
    >>> [name for name, spec in OPERATIONS.items() if spec.tool][:3]
    ['store_fact', 'store_episode', 'store_rule']
    >>> OPERATIONS["search"].params[0].description
    'What to look for, in natural language.'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import ops_profile, ops_read, ops_write
from .catalogue import Spec

__all__ = ["OPERATIONS"]

#: Every engine operation, writes first, in the order surfaces list them.
OPERATIONS: Mapping[str, Spec[Any, Any]] = {
    s.name: s
    for module in (ops_write, ops_read, ops_profile)
    for s in vars(module).values()
    if isinstance(s, Spec)
}
