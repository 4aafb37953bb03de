"""The old home of reflection and the LangMem-compatible managers, kept for
one release: every name and module here warns and points to its new place
(:mod:`langmem_ext.agents.reflection`, :mod:`langmem_ext.agents`,
:mod:`langmem_ext.langmem`), except ``ReflectionExecutor``: LangMem's
``langmem.reflection`` has it here too.

Examples:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     from langmem_ext.reflection import ReflectionExecutor
    >>> ReflectionExecutor.__module__
    'langmem_ext.agents.reflection.executor'
"""

from .._moved import install, old_package

install()

_REFLECTION = "langmem_ext.agents.reflection"
_LANGMEM = "langmem_ext.langmem"
__getattr__, __dir__ = old_package(
    __name__,
    {
        **{
            n: _REFLECTION
            for n in (
                "DEFAULT_QUOTAS",
                "FactExtractor",
                "MalformedOutput",
                "ReflectionExecutor",
                "ReflectionFailure",
                "ReflectionResult",
                "ReflectionSettings",
                "amemory_context",
                "format_profile",
                "memory_context",
                "token_counter",
            )
        },
        "MemoryPrompt": "langmem_ext.agents",
        "ReflectionMiddleware": "langmem_ext.agents",
        **{
            n: _LANGMEM
            for n in (
                "ExtractedMemory",
                "Memory",
                "MemoryManager",
                "MemoryStoreManager",
                "create_memory_manager",
                "create_memory_store_manager",
                "create_thread_extractor",
            )
        },
    },
    quiet=("ReflectionExecutor",),
)
