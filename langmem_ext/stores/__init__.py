"""LangGraph ``BaseStore`` backends. They know nothing about memories.

Examples:
    >>> from langmem_ext.stores import SQLiteStore, supports_hybrid
    >>> supports_hybrid(SQLiteStore())
    True
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._base import HybridStore, PurgeReport, UnembeddedItemsWarning, supports_hybrid
from ._filters import OPERATORS, normalize_filter
from ._metrics import StoreMetrics, instrument_stores
from ._ops import SEARCH_MODES, HybridSearchOp, SearchMode
from .embeddings import CachedEmbeddings, IndexConfig, LocalEmbeddings
from .feedback import query_feedback
from .sqlite import AsyncSqliteStore, SQLiteStore
from .threads import set_threads

if TYPE_CHECKING:
    from .postgres import AsyncPostgresStore, PostgresStore, VectorIndexConfig

__all__ = [
    "OPERATORS",
    "SEARCH_MODES",
    "AsyncPostgresStore",
    "AsyncSqliteStore",
    "CachedEmbeddings",
    "HybridSearchOp",
    "HybridStore",
    "IndexConfig",
    "LocalEmbeddings",
    "PostgresStore",
    "PurgeReport",
    "SQLiteStore",
    "SearchMode",
    "StoreMetrics",
    "UnembeddedItemsWarning",
    "VectorIndexConfig",
    "instrument_stores",
    "normalize_filter",
    "query_feedback",
    "set_threads",
    "supports_hybrid",
]

# The PostgreSQL stores load psycopg on first use: it is an optional extra.
__getattr__, __dir__ = lazy_exports(
    __name__,
    dict.fromkeys(["AsyncPostgresStore", "PostgresStore", "VectorIndexConfig"], ".postgres"),
    [n for n in __all__ if n not in ("AsyncPostgresStore", "PostgresStore", "VectorIndexConfig")],
)
