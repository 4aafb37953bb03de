"""LangGraph ``BaseStore`` backends. They know nothing about memories."""

from ._base import HybridStore, supports_hybrid
from ._filters import OPERATORS
from ._ops import HybridSearchOp, SearchMode
from .embeddings import CachedEmbeddings, IndexConfig, LocalEmbeddings
from .postgres import AsyncPostgresStore, PostgresStore, VectorIndexConfig
from .sqlite import SQLiteStore

__all__ = [
    "OPERATORS",
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
    "supports_hybrid",
]
