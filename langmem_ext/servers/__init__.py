"""Servers: the memory tools over MCP (``mcp`` extra) and the memory browser
(``ui`` extra). Each serves the operation catalogue to callers authenticated
by bearer tokens (:mod:`.callers`), answering only its own host names.

Examples:
    >>> from langmem_ext.servers import Callers
    >>> Callers.from_json('{"tokens": {"tok-ada-123": {"user_id": "ada"}}}').authenticate(
    ...     "Bearer tok-ada-123").user_id
    'ada'
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .callers import Callers
    from .mcp import MemoryMCPServer, create_mcp_server
    from .ui import create_ui_app

__all__ = ["Callers", "MemoryMCPServer", "create_mcp_server", "create_ui_app"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Callers": ".callers",
        "MemoryMCPServer": ".mcp",
        "create_mcp_server": ".mcp",
        "create_ui_app": ".ui",
    },
    [],
)
