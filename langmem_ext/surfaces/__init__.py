"""Where users meet the package: agent tools, namespace templates, compartments, the CLI."""

from ._tooling import MemoryNotFoundError, MemoryTool, MemoryToolError
from .compartments import COMPARTMENTS, CompartmentFullError, Compartments, MemoryEntry
from .namespaces import IDENTITY_KEYS, NamespaceTemplate, resolve_identity
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
