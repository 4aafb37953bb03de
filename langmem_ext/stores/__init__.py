"""LangGraph ``BaseStore`` backends. They know nothing about memories."""

from ._filters import OPERATORS
from ._ops import HybridSearchOp, SearchMode
from .embeddings import CachedEmbeddings, IndexConfig, LocalEmbeddings
from .sqlite import SQLiteStore

__all__ = [
    "OPERATORS",
    "CachedEmbeddings",
    "HybridSearchOp",
    "IndexConfig",
    "LocalEmbeddings",
    "SQLiteStore",
    "SearchMode",
]
