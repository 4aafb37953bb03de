"""langmem_ext: long-term memory for LangGraph / LangChain agents.

Example:
    >>> from langmem_ext import SQLiteStore
    >>> store = SQLiteStore(":memory:")
    >>> store.put(("user", "u-1"), "m1", {"content": "likes tea"})
    >>> store.get(("user", "u-1"), "m1").value
    {'content': 'likes tea'}
"""

from .errors import (
    ConfigurationError,
    EmbeddingDimensionError,
    InvalidValueError,
    LangmemError,
    StoreError,
)
from .stores import CachedEmbeddings, HybridSearchOp, IndexConfig, LocalEmbeddings, SQLiteStore
from .surfaces import (
    Compartments,
    MemoryToolError,
    NamespaceTemplate,
    create_manage_memory_tool,
    create_search_memory_tool,
)

__version__ = "0.1.0"

__all__ = [
    "CachedEmbeddings",
    "Compartments",
    "ConfigurationError",
    "EmbeddingDimensionError",
    "HybridSearchOp",
    "IndexConfig",
    "InvalidValueError",
    "LangmemError",
    "LocalEmbeddings",
    "MemoryToolError",
    "NamespaceTemplate",
    "SQLiteStore",
    "StoreError",
    "__version__",
    "create_manage_memory_tool",
    "create_search_memory_tool",
]
