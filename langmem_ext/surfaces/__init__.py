"""The old home of the agent tools, servers and command line, kept for one
release: every name and module here warns and points to its new place
(:mod:`langmem_ext.agents`, :mod:`langmem_ext.langmem`,
:mod:`langmem_ext.servers`, :mod:`langmem_ext.cli`).

Examples:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     from langmem_ext.surfaces import create_manage_memory_tool
    >>> create_manage_memory_tool.__module__
    'langmem_ext.langmem.tools'
"""

from .._moved import install, old_package

install()

__getattr__, __dir__ = old_package(
    __name__,
    {
        "create_manage_memory_tool": "langmem_ext.langmem",
        "create_search_memory_tool": "langmem_ext.langmem",
        "Compartments": "langmem_ext.agents",
        "COMPARTMENTS": "langmem_ext.agents",
        "MemoryEntry": "langmem_ext.agents",
        "MemoryTool": "langmem_ext.agents",
        "NamespaceTemplate": "langmem_ext.engine",
        "IDENTITY_KEYS": "langmem_ext.engine",
        "resolve_identity": "langmem_ext.engine",
    },
)
