"""LangMem's API over this package's memory: the same names, arguments and
results, so a LangMem user switches by changing the import. Needs the ``agents``
extra.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.langmem import create_manage_memory_tool
    >>> create_manage_memory_tool(store=SQLiteStore()).name
    'manage_memory'
"""

from ..agents.reflection import ReflectionExecutor
from .erasure import erase_user
from .managers import (
    ExtractedMemory,
    Memory,
    MemoryManager,
    create_memory_manager,
)
from .optimizers import Prompt, create_multi_prompt_optimizer, create_prompt_optimizer
from .prompt_versions import PromptVersions
from .rule_feedback import arule_feedback, rule_feedback
from .searcher import create_memory_searcher
from .store_manager import MemoryStoreManager, create_memory_store_manager
from .thread_extractor import create_thread_extractor
from .tools import create_manage_memory_tool, create_search_memory_tool

__all__ = [
    "ExtractedMemory",
    "Memory",
    "MemoryManager",
    "MemoryStoreManager",
    "Prompt",
    "PromptVersions",
    "ReflectionExecutor",
    "arule_feedback",
    "create_manage_memory_tool",
    "create_memory_manager",
    "create_memory_searcher",
    "create_memory_store_manager",
    "create_multi_prompt_optimizer",
    "create_prompt_optimizer",
    "create_search_memory_tool",
    "create_thread_extractor",
    "erase_user",
    "rule_feedback",
]
