"""LangGraph ``BaseStore`` backends. They know nothing about memories.

Example:
    >>> from langmem_ext.stores import SQLiteStore, supports_hybrid
    >>> supports_hybrid(SQLiteStore())
    True
"""

from ._base import HybridStore, supports_hybrid
from ._filters import OPERATORS, normalize_filter
from ._ops import SEARCH_MODES, HybridSearchOp, SearchMode
from .embeddings import CachedEmbeddings, IndexConfig, LocalEmbeddings
from .postgres import AsyncPostgresStore, PostgresStore, VectorIndexConfig
from .sqlite import SQLiteStore

__all__ = [
    "OPERATORS",
    "SEARCH_MODES",
    "AsyncPostgresStore",
    "CachedEmbeddings",
    "HybridSearchOp",
    "HybridStore",
    "IndexConfig",
    "LocalEmbeddings",
    "PostgresStore",
    "SQLiteStore",
    "SearchMode",
    "VectorIndexConfig",
    "normalize_filter",
    "supports_hybrid",
]
