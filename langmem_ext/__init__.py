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

__version__ = "0.1.0"

__all__ = [
    "CachedEmbeddings",
    "ConfigurationError",
    "EmbeddingDimensionError",
    "HybridSearchOp",
    "IndexConfig",
    "InvalidValueError",
    "LangmemError",
    "LocalEmbeddings",
    "SQLiteStore",
    "StoreError",
    "__version__",
]
