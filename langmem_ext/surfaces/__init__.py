"""Where users meet the package: agent tools, namespace templates, compartments, the CLI.

Example:
    >>> from langmem_ext.surfaces import create_manage_memory_tool
    >>> create_manage_memory_tool().name
    'manage_memory'
"""

from ..engine import IDENTITY_KEYS, NamespaceTemplate, resolve_identity
from ._tooling import MemoryNotFoundError, MemoryTool, MemoryToolError
from .compartments import COMPARTMENTS, CompartmentFullError, Compartments, MemoryEntry
from .tools import create_manage_memory_tool, create_search_memory_tool

__all__ = [
    "COMPARTMENTS",
    "IDENTITY_KEYS",
    "CompartmentFullError",
    "Compartments",
    "MemoryEntry",
    "MemoryNotFoundError",
    "MemoryTool",
    "MemoryToolError",
    "NamespaceTemplate",
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "resolve_identity",
]
