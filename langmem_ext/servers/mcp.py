"""The memory tools over MCP: ``langmem-ext mcp``.

An MCP server, on the official ``mcp`` SDK, that serves the memory tool set
(``memory_store_fact``, ``memory_store_episode``, ``memory_store_rule``,
``memory_search``, ``memory_recall``, ``memory_get``, ``memory_confirm``,
``memory_mark_helpful``, ``memory_mark_harmful``, ``memory_forget``,
``memory_stats``, ``memory_context``) and the LangMem-style ``manage_memory``
and ``search_memory``, over any store, on stdio or streamable HTTP.

Who is calling decides whose memories a call touches, never the arguments:

* **HTTP** (127.0.0.1 by default): every request carries ``Authorization:
  Bearer <token>``; the token maps to a caller (tenant, user, permissions) in a
  callers file (:mod:`.callers`), checked by the SDK's token verifier. A
  request without a valid token gets HTTP 401. Only ``allow_anonymous=True``
  (for a single local user) serves requests without a token, as that user.
* **stdio** (a local client starts the server): the caller is configured when
  the server starts (``--token`` from the callers file, or ``--user-id`` in the
  single-tenant default).

A non-admin caller naming a tenant in a tool's ``tenant_id`` argument gets a
``TENANT_FORBIDDEN`` error; admins cross tenants only when elevated.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext
    >>> server = create_mcp_server(SQLiteStore(), caller=MemoryContext(user_id="ada"))
    >>> sorted(server.tool_names)[:3]
    ['manage_memory', 'memory_about', 'memory_confirm']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore

from ..agents.tooling import model_text
from ..agents.tools import TOOL_SET, tool_answer
from ..engine import OPERATIONS, MemoryContext, MemoryEngine, Spec, strip_titles
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidValueError,
    LangmemError,
    PermissionDeniedError,
)
from ..langmem.tools import create_manage_memory_tool, create_search_memory_tool
from .callers import Callers
from .hosts import LOOPBACK, allowed_origins, check_host_names

__all__ = ["MemoryMCPServer", "create_mcp_server"]


class MemoryMCPServer:
    """The MCP server and how to run it (see :func:`create_mcp_server`)."""

    def __init__(
        self,
        server: Any,
        tool_names: list[str],
        url: str | None,
        state: dict[str, Any],
        hosts: list[str],
    ) -> None:
        self.server = server
        self.tool_names = tool_names
        self.url = url
        self._state = state
        self._hosts = hosts

    def run_stdio(self) -> None:
        """Serve on stdin/stdout until the client closes them, as the configured
        caller (a stdio server is started by its one local client)."""
        self._state["stdio"] = True
        self.server.run("stdio")

    def http_app(self) -> Any:
        """The streamable-HTTP ASGI app (path ``/mcp``)."""
        from mcp.server.transport_security import TransportSecuritySettings

        # The SDK's own Host/Origin checks, over the names this server answers
        # (a page on another site, or one whose domain resolves here, is refused).
        names = [f"[{h}]" if ":" in h else h for h in self._hosts]
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[*names, *(f"{h}:*" for h in names)],
            allowed_origins=allowed_origins(self._hosts),
        )
        return self.server.streamable_http_app(
            streamable_http_path="/mcp", transport_security=security
        )

    def run_http(self, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Serve streamable HTTP on ``host:port`` (``/mcp``) until interrupted."""
        import uvicorn

        uvicorn.run(self.http_app(), host=host, port=port, log_level="warning")


def create_mcp_server(
    store: BaseStore,
    *,
    callers: Callers | None = None,
    caller: MemoryContext | None = None,
    allow_anonymous: bool = False,
    url: str = "http://127.0.0.1:8000",
    namespace: Any = None,
    allowed_hosts: Sequence[str] = LOOPBACK,
) -> MemoryMCPServer:
    """An MCP server for the memory tools over ``store``.

    The tools are the agent tool set (:mod:`.memory_tools`, derived from the
    operation catalogue) plus the LangMem-style ``manage_memory`` and
    ``search_memory``. Each caller is offered what it may use: ``tenant_id``
    only to admins, no writing tools to read-only callers. A failed call is
    an MCP result with ``isError: true`` and ``"<CODE>: <message>"``, and one
    line in the server's log.

    Args:
        store: any ``BaseStore`` (``SQLiteStore``, ``PostgresStore``…).
        callers: bearer tokens → callers, for HTTP (every request authenticated).
        caller: the one caller of a stdio server, or of an HTTP server started
            with ``allow_anonymous`` (requests without a token act as it).
        allow_anonymous: serve HTTP requests without a token, as ``caller``
            (a single local user only; never on a shared address).
        url: the server's own address (announced to OAuth-aware clients).
        namespace: the user-space template, as for the memory tools.
        allowed_hosts: host names HTTP requests may carry (default: this
            machine's loopback names); add a reverse proxy's name here. Other
            names get HTTP 421, so a web page cannot reach the server by making
            its own domain resolve to this machine.

    Raises:
        ConfigurationError: neither ``callers`` nor ``caller`` is given.
    """
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

    if callers is None and caller is None:
        raise ConfigurationError(
            "an MCP server needs its callers: pass callers=Callers.load(...) (bearer tokens) "
            "or caller=MemoryContext(...) (one local user)"
        )

    class _Verifier:
        async def verify_token(self, token: str) -> AccessToken | None:
            try:
                ctx = callers.authenticate(f"Bearer {token}")  # type: ignore[union-attr]
            except AuthenticationError:
                return None
            return AccessToken(token=token, client_id=ctx.actor or "caller", scopes=[])

    authenticated = callers is not None and not allow_anonymous
    state: dict[str, Any] = {"stdio": False}
    kwargs: dict[str, Any] = {}
    if authenticated:
        kwargs["token_verifier"] = _Verifier()
        # Tokens are opaque keys of the callers file, issued for this server only.
        kwargs["auth"] = AuthSettings(
            issuer_url=AnyHttpUrl(url),
            resource_server_url=AnyHttpUrl(f"{url}/mcp"),
            validate_token_resource=False,
        )

    def who() -> MemoryContext:
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        if token is not None and callers is not None:
            return callers.authenticate(f"Bearer {token.token}")
        if caller is not None and (allow_anonymous or not authenticated or state["stdio"]):
            return caller
        raise AuthenticationError("missing bearer token; send 'Authorization: Bearer <token>'")

    engine = MemoryEngine(store, namespace=namespace)
    tools: list[_CatalogueTool | _LangMemTool] = [
        *(_CatalogueTool(engine, spec) for spec in TOOL_SET),
        # Not an agent tool: offered to admins only (erasing one's own
        # memories is for the user, through the CLI or the browser).
        _CatalogueTool(engine, OPERATIONS["erase"], name="memory_erase", admin=True),
        # The server's store is this package's, shown by its browser: its notes
        # keep their history, as every other tool's memories do.
        _LangMemTool(create_manage_memory_tool(namespace, store=store, history=True), writes=True),
        _LangMemTool(create_search_memory_tool(namespace, store=store), writes=False),
    ]
    server = _server_class()(
        "langmem-ext",
        tools,
        who,
        instructions="Long-term memory: store, search and recall facts, episodes, rules and "
        "notes about the user.",
        **kwargs,
    )
    hosts = check_host_names(allowed_hosts)
    if any(h.startswith("*.") for h in hosts):
        raise ConfigurationError("the MCP server takes exact host names in allowed_hosts")
    return MemoryMCPServer(server, [t.name for t in tools], url, state, hosts)


class _CatalogueTool:
    """A catalogue operation as an MCP tool."""

    admin = False

    def __init__(
        self,
        engine: MemoryEngine,
        spec: Spec[Any, Any],
        name: str | None = None,
        admin: bool = False,
    ) -> None:
        self.engine, self.spec, self.name = engine, spec, name or str(spec.tool)
        self.writes = spec.access == "write"
        self.admin = admin

    def describe(self, ctx: MemoryContext) -> tuple[str, dict[str, Any]]:
        return self.spec.summary, self.spec.schema(admin=ctx.is_admin)

    async def run(self, ctx: MemoryContext, args: dict[str, Any]) -> str:
        spec, engine = self.spec, self.engine
        config: RunnableConfig = {"configurable": {"memory_context": ctx}}
        result = await engine.arun(spec.start(engine, config, args), spec.name)
        return tool_answer(spec, result, engine)


class _LangMemTool:
    """A LangMem-style tool (its own schema and answers) as an MCP tool."""

    admin = False

    def __init__(self, tool: BaseTool, *, writes: bool) -> None:
        self.tool, self.name, self.writes = tool, tool.name, writes

    def describe(self, ctx: MemoryContext) -> tuple[str, dict[str, Any]]:
        schema = self.tool.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
        return self.tool.description, strip_titles(schema)

    async def run(self, ctx: MemoryContext, args: dict[str, Any]) -> str:
        config: RunnableConfig = {"configurable": {"memory_context": ctx}}
        out = await self.tool.ainvoke(args, config)
        return out if isinstance(out, str) else str(out)


def _server_class() -> type:
    """The SDK's server, serving our tools: listed per caller, run as the caller."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent, ToolAnnotations
    from mcp_types import Tool as MCPTool

    class MemoryServer(MCPServer):
        def __init__(self, name: str, tools: list[Any], who: Any, **kwargs: Any) -> None:
            super().__init__(name, **kwargs)
            self._memory_tools = {t.name: t for t in tools}
            self._who = who

        def _offered(self, ctx: MemoryContext) -> list[Any]:
            return [
                t
                for t in self._memory_tools.values()
                if not (t.writes and ctx.read_only) and (ctx.is_admin or not t.admin)
            ]

        async def list_tools(self) -> list[Any]:
            ctx = self._who()
            out = []
            for tool in self._offered(ctx):
                description, schema = tool.describe(ctx)
                hints = ToolAnnotations(read_only_hint=not tool.writes, open_world_hint=False)
                out.append(
                    MCPTool(
                        name=tool.name,
                        description=description,
                        input_schema=schema,
                        annotations=hints,
                    )
                )
            return out

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                ctx = self._who()
                tool = {t.name: t for t in self._offered(ctx)}.get(name)
                if tool is None:
                    raise _not_offered(name, self._memory_tools, self._offered(ctx))
                text = await tool.run(ctx, dict(arguments or {}))
            except LangmemError as e:
                # Reported to the client as an error result with the code and
                # message, and logged by the SDK on one line (no traceback).
                raise ToolError(model_text(e, name)) from None
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)

    return MemoryServer


def _not_offered(name: str, every: dict[str, Any], offered: list[Any]) -> LangmemError:
    """Why ``name`` cannot be called, and (``details["tools"]``) what can."""
    tools = ", ".join(t.name for t in offered)
    if name in every:  # a writing tool, asked by a caller who may only read
        return PermissionDeniedError(
            f"{name} changes memories, and you may read memories but not change them "
            "(your permissions grant memory:read without memory:write)",
            tool=name,
        )
    return InvalidValueError(f"there is no tool {name!r}; the tools are {tools}", tools=tools)
