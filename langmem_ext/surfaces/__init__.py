"""Where users meet the package: agent tools, namespace templates, compartments, the CLI.

Examples:
    >>> from langmem_ext.surfaces import create_manage_memory_tool
    >>> create_manage_memory_tool().name
    'manage_memory'
"""

from ..engine import IDENTITY_KEYS, NamespaceTemplate, resolve_identity
from ._tooling import MemoryTool
from .compartments import COMPARTMENTS, Compartments, MemoryEntry
from .tools import create_manage_memory_tool, create_search_memory_tool

__all__ = [
    "COMPARTMENTS",
    "IDENTITY_KEYS",
    "Compartments",
    "MemoryEntry",
    "MemoryTool",
    "NamespaceTemplate",
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "resolve_identity",
]
