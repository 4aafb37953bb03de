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
from .reflection import (
    MemoryPrompt,
    ReflectionExecutor,
    create_memory_manager,
    create_memory_store_manager,
    create_thread_extractor,
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
from .surfaces.searcher import create_memory_searcher

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
    "MemoryPrompt",
    "MemoryToolError",
    "MissingIdentifierError",
    "NamespaceTemplate",
    "PostgresStore",
    "ProviderError",
    "RateLimitedError",
    "ReflectionExecutor",
    "SQLiteStore",
    "StoreError",
    "TenantAccessError",
    "VectorIndexConfig",
    "__version__",
    "create_manage_memory_tool",
    "create_memory_manager",
    "create_memory_searcher",
    "create_memory_store_manager",
    "create_memory_tools",
    "create_search_memory_tool",
    "create_thread_extractor",
]
