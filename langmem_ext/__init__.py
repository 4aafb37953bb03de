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
from ._moved import install as _install_paths

_install_paths()  # LangMem's module paths (langmem_ext.knowledge.tools, ...)

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time names load on first use
    from .agents import Compartments, MemoryPrompt, ReflectionExecutor, create_memory_tools
    from .engine import EngineConfig, MemoryContext, MemoryEngine, NamespaceTemplate
    from .errors import LangmemError
    from .langmem import (
        PromptVersions,
        create_manage_memory_tool,
        create_memory_manager,
        create_memory_searcher,
        create_memory_store_manager,
        create_multi_prompt_optimizer,
        create_prompt_optimizer,
        create_search_memory_tool,
        create_thread_extractor,
    )
    from .servers import create_mcp_server, create_ui_app
    from .short_term import (
        RunningSummary,
        SummarizationNode,
        asummarize_messages,
        summarize_messages,
    )
    from .stores import AsyncPostgresStore, AsyncSqliteStore, PostgresStore, SQLiteStore

#: Where each exported name lives: ``import langmem_ext`` imports none of them,
#: ``from langmem_ext import SQLiteStore`` only the SQLite store. The package
#: names the entry points only; everything else is public in its module
#: (``langmem_ext.errors``, ``.stores``, ``.engine``, ``.agents``, ``.langmem``).
_EXPORTS = {
    # -- stores ----------------------------------------------------------------------
    "SQLiteStore": ".stores",
    "AsyncSqliteStore": ".stores",
    "PostgresStore": ".stores",
    "AsyncPostgresStore": ".stores",
    # -- the memory engine -------------------------------------------------------------
    "MemoryEngine": ".engine",
    "MemoryContext": ".engine",
    "EngineConfig": ".engine",
    "NamespaceTemplate": ".engine",
    # -- agents: tools, reflection, the memory prompt ----------------------------------
    "create_memory_tools": ".agents",
    "ReflectionExecutor": ".agents",
    "MemoryPrompt": ".agents",
    "Compartments": ".agents",
    # -- LangMem's API -----------------------------------------------------------------
    "create_manage_memory_tool": ".langmem",
    "create_search_memory_tool": ".langmem",
    "create_memory_manager": ".langmem",
    "create_memory_store_manager": ".langmem",
    "create_memory_searcher": ".langmem",
    "create_thread_extractor": ".langmem",
    "create_prompt_optimizer": ".langmem",
    "create_multi_prompt_optimizer": ".langmem",
    "PromptVersions": ".langmem",
    "SummarizationNode": ".short_term",
    "RunningSummary": ".short_term",
    "summarize_messages": ".short_term",
    "asummarize_messages": ".short_term",
    # -- servers -----------------------------------------------------------------------
    "create_mcp_server": ".servers",
    "create_ui_app": ".servers",
    # -- errors: the base class (every code's class is in langmem_ext.errors) -----------
    "LangmemError": ".errors",
}

#: Names this package exported before it named only the entry points: they keep
#: working for one release, with a DeprecationWarning saying where they live.
_MOVED = {
    **{
        name: ".errors"
        for name in (
            "AuthenticationError",
            "CompartmentFullError",
            "ConfigurationError",
            "ContentTooLongError",
            "DamagedMemoryError",
            "EmbeddingDimensionError",
            "ExtractionError",
            "FactNotFoundError",
            "IdentityError",
            "InvalidEmbeddingError",
            "InvalidLayerError",
            "InvalidMemoryTypeError",
            "InvalidNamespaceError",
            "InvalidOperationError",
            "InvalidValueError",
            "MemoryNotFoundError",
            "MemoryToolError",
            "MemoryToolNotFoundError",
            "MissingIdentifierError",
            "PermissionDeniedError",
            "ProviderError",
            "RateLimitedError",
            "StoreError",
            "StoreUnavailableError",
            "TenantAccessError",
        )
    },
    "EngineMetrics": ".engine",
    "HealthStatus": ".engine",
    "HybridSearchOp": ".stores",
    "IndexConfig": ".stores",
    "VectorIndexConfig": ".stores",
    "CachedEmbeddings": ".stores",
    "LocalEmbeddings": ".stores",
    "query_feedback": ".stores",
    "set_threads": ".stores",
    "chat_reranker": ".agents",
    "rule_feedback": ".langmem",
    "arule_feedback": ".langmem",
    "SummarizationResult": ".short_term",
}

__version__ = "0.1.0"

__all__ = [  # noqa: RUF022 -- grouped as the entry points are documented
    "__version__",
    # stores
    "SQLiteStore",
    "AsyncSqliteStore",
    "PostgresStore",
    "AsyncPostgresStore",
    # the memory engine
    "MemoryEngine",
    "MemoryContext",
    "EngineConfig",
    "NamespaceTemplate",
    # agents
    "create_memory_tools",
    "ReflectionExecutor",
    "MemoryPrompt",
    "Compartments",
    # LangMem's API
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "create_memory_manager",
    "create_memory_store_manager",
    "create_memory_searcher",
    "create_thread_extractor",
    "create_prompt_optimizer",
    "create_multi_prompt_optimizer",
    "PromptVersions",
    "SummarizationNode",
    "RunningSummary",
    "summarize_messages",
    "asummarize_messages",
    # servers
    "create_mcp_server",
    "create_ui_app",
    # errors
    "LangmemError",
]
assert set(__all__) == {"__version__", *_EXPORTS}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, ["__version__"], _MOVED)
