"""langmem_ext: long-term memory for LangGraph / LangChain agents.

Example:
    >>> from langmem_ext import SQLiteStore
    >>> store = SQLiteStore(":memory:")
    >>> store.put(("user", "u-1"), "m1", {"content": "likes tea"})
    >>> store.get(("user", "u-1"), "m1").value
    {'content': 'likes tea'}
"""

from .engine import EngineConfig, EngineMetrics, HealthStatus, MemoryContext, MemoryEngine
from .errors import (
    ConfigurationError,
    ContentTooLongError,
    EmbeddingDimensionError,
    InvalidLayerError,
    InvalidValueError,
    LangmemError,
    MemoryNotFoundError,
    MissingIdentifierError,
    ProviderError,
    RateLimitedError,
    StoreError,
    TenantAccessError,
)
from .stores import (
    AsyncPostgresStore,
    CachedEmbeddings,
    HybridSearchOp,
    IndexConfig,
    LocalEmbeddings,
    PostgresStore,
    SQLiteStore,
    VectorIndexConfig,
)
from .surfaces import (
    Compartments,
    MemoryToolError,
    NamespaceTemplate,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from .surfaces.memory_tools import create_memory_tools

__version__ = "0.1.0"

__all__ = [
    "AsyncPostgresStore",
    "CachedEmbeddings",
    "Compartments",
    "ConfigurationError",
    "ContentTooLongError",
    "EmbeddingDimensionError",
    "EngineConfig",
    "EngineMetrics",
    "HealthStatus",
    "HybridSearchOp",
    "IndexConfig",
    "InvalidLayerError",
    "InvalidValueError",
    "LangmemError",
    "LocalEmbeddings",
    "MemoryContext",
    "MemoryEngine",
    "MemoryNotFoundError",
    "MemoryToolError",
    "MissingIdentifierError",
    "NamespaceTemplate",
    "PostgresStore",
    "ProviderError",
    "RateLimitedError",
    "SQLiteStore",
    "StoreError",
    "TenantAccessError",
    "VectorIndexConfig",
    "__version__",
    "create_manage_memory_tool",
    "create_memory_tools",
    "create_search_memory_tool",
]
