"""For agents: the memory tool set, run / session / plan compartments, the
memory prompt, and reflection (facts extracted after each turn). Needs the
``agents`` extra (``pip install 'langmem-ext[agents]'``).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.agents import create_memory_tools
    >>> from langmem_ext.engine import MemoryEngine
    >>> [t.name for t in create_memory_tools(MemoryEngine(SQLiteStore()))][:2]
    ['memory_store_fact', 'memory_store_episode']
"""

from .compartments import COMPARTMENTS, Compartments, MemoryEntry
from .middleware import MemoryPrompt, ReflectionMiddleware
from .reflection import (
    FactExtractor,
    ReflectionExecutor,
    ReflectionFailure,
    ReflectionResult,
    ReflectionSettings,
    TokenUsage,
    instrument_models,
    memory_context,
)
from .rerank import ChatReranker, chat_reranker
from .tooling import MemoryTool
from .tools import MEMORY_TOOL_NAMES, create_memory_tools

__all__ = [
    "COMPARTMENTS",
    "MEMORY_TOOL_NAMES",
    "ChatReranker",
    "Compartments",
    "FactExtractor",
    "MemoryEntry",
    "MemoryPrompt",
    "MemoryTool",
    "ReflectionExecutor",
    "ReflectionFailure",
    "ReflectionMiddleware",
    "ReflectionResult",
    "ReflectionSettings",
    "TokenUsage",
    "chat_reranker",
    "create_memory_tools",
    "instrument_models",
    "memory_context",
]
