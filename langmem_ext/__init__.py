"""langmem_ext: long-term memory for LangGraph / LangChain agents.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> store = SQLiteStore(":memory:")
    >>> store.put(("user", "u-1"), "m1", {"content": "likes tea"})
    >>> store.get(("user", "u-1"), "m1").value
    {'content': 'likes tea'}
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time names load on first use
    from .engine import EngineConfig, EngineMetrics, HealthStatus, MemoryContext, MemoryEngine
    from .errors import (
        AuthenticationError,
        CompartmentFullError,
        ConfigurationError,
        ContentTooLongError,
        DamagedMemoryError,
        EmbeddingDimensionError,
        ExtractionError,
        FactNotFoundError,
        IdentityError,
        InvalidEmbeddingError,
        InvalidLayerError,
        InvalidMemoryTypeError,
        InvalidNamespaceError,
        InvalidOperationError,
        InvalidValueError,
        LangmemError,
        MemoryNotFoundError,
        MemoryToolError,
        MemoryToolNotFoundError,
        MissingIdentifierError,
        PermissionDeniedError,
        ProviderError,
        RateLimitedError,
        StoreError,
        StoreUnavailableError,
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
        NamespaceTemplate,
        create_manage_memory_tool,
        create_search_memory_tool,
    )
    from .surfaces.mcp import create_mcp_server
    from .surfaces.memory_tools import create_memory_tools
    from .surfaces.searcher import create_memory_searcher
    from .surfaces.ui import create_ui_app

#: Where each exported name lives: ``import langmem_ext`` imports none of them,
#: ``from langmem_ext import SQLiteStore`` only the SQLite store.
_EXPORTS = {
    "AsyncPostgresStore": ".stores",
    "AuthenticationError": ".errors",
    "CachedEmbeddings": ".stores",
    "CompartmentFullError": ".errors",
    "Compartments": ".surfaces",
    "ConfigurationError": ".errors",
    "ContentTooLongError": ".errors",
    "DamagedMemoryError": ".errors",
    "EmbeddingDimensionError": ".errors",
    "EngineConfig": ".engine",
    "EngineMetrics": ".engine",
    "ExtractionError": ".errors",
    "FactNotFoundError": ".errors",
    "HealthStatus": ".engine",
    "HybridSearchOp": ".stores",
    "IdentityError": ".errors",
    "IndexConfig": ".stores",
    "InvalidEmbeddingError": ".errors",
    "InvalidLayerError": ".errors",
    "InvalidMemoryTypeError": ".errors",
    "InvalidNamespaceError": ".errors",
    "InvalidOperationError": ".errors",
    "InvalidValueError": ".errors",
    "LangmemError": ".errors",
    "LocalEmbeddings": ".stores",
    "MemoryContext": ".engine",
    "MemoryEngine": ".engine",
    "MemoryNotFoundError": ".errors",
    "MemoryPrompt": ".reflection",
    "MemoryToolError": ".errors",
    "MemoryToolNotFoundError": ".errors",
    "MissingIdentifierError": ".errors",
    "PermissionDeniedError": ".errors",
    "NamespaceTemplate": ".surfaces",
    "PostgresStore": ".stores",
    "ProviderError": ".errors",
    "RateLimitedError": ".errors",
    "ReflectionExecutor": ".reflection",
    "SQLiteStore": ".stores",
    "StoreError": ".errors",
    "StoreUnavailableError": ".errors",
    "TenantAccessError": ".errors",
    "VectorIndexConfig": ".stores",
    "create_manage_memory_tool": ".surfaces",
    "create_mcp_server": ".surfaces.mcp",
    "create_memory_manager": ".reflection",
    "create_memory_searcher": ".surfaces.searcher",
    "create_memory_store_manager": ".reflection",
    "create_memory_tools": ".surfaces.memory_tools",
    "create_search_memory_tool": ".surfaces",
    "create_thread_extractor": ".reflection",
    "create_ui_app": ".surfaces.ui",
}

__version__ = "0.1.0"

__all__ = [
    "AsyncPostgresStore",
    "AuthenticationError",
    "CachedEmbeddings",
    "CompartmentFullError",
    "Compartments",
    "ConfigurationError",
    "ContentTooLongError",
    "DamagedMemoryError",
    "EmbeddingDimensionError",
    "EngineConfig",
    "EngineMetrics",
    "ExtractionError",
    "FactNotFoundError",
    "HealthStatus",
    "HybridSearchOp",
    "IdentityError",
    "IndexConfig",
    "InvalidEmbeddingError",
    "InvalidLayerError",
    "InvalidMemoryTypeError",
    "InvalidNamespaceError",
    "InvalidOperationError",
    "InvalidValueError",
    "LangmemError",
    "LocalEmbeddings",
    "MemoryContext",
    "MemoryEngine",
    "MemoryNotFoundError",
    "MemoryPrompt",
    "MemoryToolError",
    "MemoryToolNotFoundError",
    "MissingIdentifierError",
    "NamespaceTemplate",
    "PermissionDeniedError",
    "PostgresStore",
    "ProviderError",
    "RateLimitedError",
    "ReflectionExecutor",
    "SQLiteStore",
    "StoreError",
    "StoreUnavailableError",
    "TenantAccessError",
    "VectorIndexConfig",
    "__version__",
    "create_manage_memory_tool",
    "create_mcp_server",
    "create_memory_manager",
    "create_memory_searcher",
    "create_memory_store_manager",
    "create_memory_tools",
    "create_search_memory_tool",
    "create_thread_extractor",
    "create_ui_app",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, ["__version__"])
