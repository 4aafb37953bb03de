"""Run, session and plan memory for agents: three tools and a prompt hook.

* **run** memory holds scratch notes for the task at hand. It is shown to the
  model in every model call of the run and cleared when the run ends. A run is
  one ``invoke`` of the agent: it is keyed by ``run_id`` when the config has one,
  else by ``thread_id``, plus the graph's position, so a sub-agent invoked from
  a tool gets its own run memory and clearing it leaves the parent's alone.
* **session** memory persists across runs and is shared by every agent of the
  session, sub-agents included. The session is ``session_id`` (from
  ``configurable`` or the run's context), else ``thread_id``; a sub-agent
  invoked inside a tool inherits both from its parent.
* **plan** memory tracks a multi-step plan; ``plan_scope`` makes it live as long
  as a run or (default) a session.

Only run memory enters the prompt; the model reads the others with
``get_memory``. Entries are items of the ``BaseStore`` (one item each, under
``(*namespace, compartment, scope…)``, not indexed for vector search), with
``id``, ``content``, ``category``, ``tags``, ``metadata``, ``created_at``,
``updated_at``, ``access_count`` (reads by ``get_memory``) and ``priority``
(1–10). Each compartment holds at most ``limit`` characters of content (10,000
by default); a save that would exceed it fails, changes nothing, and lists the
entries the model could delete, least important first.

Wiring, in one line each::

    create_agent(model, tools, store=store, middleware=[Compartments().middleware()])
    create_react_agent(model, tools + c.tools, store=store,
                       pre_model_hook=c.pre_model_hook, post_model_hook=c.post_model_hook)

Examples:
    >>> import json
    >>> from langgraph.store.memory import InMemoryStore
    >>> c = Compartments(store=InMemoryStore(), limit=50)
    >>> save, get, clear = c.tools
    >>> cfg = {"configurable": {"thread_id": "t1"}}
    >>> save.invoke({"compartment": "session", "content": "user is in Paris"}, cfg)
    'saved memory ... in session (16/50 characters used)'
    >>> [e["content"] for e in json.loads(get.invoke({"compartment": "session"}, cfg))]
    ['user is in Paris']
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core import messages as lc
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, PutOp

from .._langgraph import config_runtime
from ..engine import (
    MemoryContext,
    NamespaceTemplate,
    check_int,
    check_label,
    check_mapping,
    check_text,
    layout,
    run_config,
    shown,
)
from ..errors import (
    ConfigurationError,
    InvalidValueError,
    MissingIdentifierError,
)
from .compartment_plans import (
    COMPARTMENTS,
    PLANS,
    MemoryEntry,
    alist_entries,
    list_entries,
    schemas,
    ttl_supported,
)
from .middleware import with_system_block
from .tooling import MemoryTool, resolve_store

__all__ = ["COMPARTMENTS", "Compartments", "MemoryEntry"]


class Compartments:
    """Run / session / plan memory: tools, a prompt hook and run-end clearing.

    Args:
        store: Store to use; by default the running graph's store.
        namespace: The app's namespace template for each user's memories (the
            same as the memory tools'); None: the identity rule. Compartments live
            in that user's bookkeeping, so one user never reads another's
            session, even on a shared session id. Without any user (a
            single-user app passing only ``thread_id``), they live in an
            anonymous space of the tenant.
        default_tenant: tenant of runs without authentication.
        limit: Characters of content each compartment may hold (10,000).
        limits: Per-compartment overrides, e.g. ``{"plan": 20_000}``.
        plan_scope: ``"session"`` (default) or ``"run"``: how long plans live.

    Examples:
        >>> c = Compartments(limits={"plan": 20_000})
        >>> [t.name for t in c.tools], c.limits["plan"], c.limits["run"]
        (['save_memory', 'get_memory', 'clear_memory'], 20000, 10000)
    """

    def __init__(
        self,
        *,
        store: BaseStore | None = None,
        namespace: tuple[str, ...] | str | NamespaceTemplate | None = None,
        default_tenant: str | None = None,
        limit: int = 10_000,
        limits: dict[str, int] | None = None,
        plan_scope: Literal["run", "session"] = "session",
    ) -> None:
        if plan_scope not in ("run", "session"):
            raise ConfigurationError(
                f"plan_scope must be 'run' or 'session', got {shown(plan_scope)}"
            )
        if store is not None and not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a LangGraph BaseStore, got {type(store).__name__}"
            )
        check_mapping("limits", limits, error=ConfigurationError)
        unknown = [shown(c) for c in limits or {} if c not in COMPARTMENTS]
        if unknown:
            raise ConfigurationError(
                f"unknown compartments {unknown} in limits; use {', '.join(COMPARTMENTS)}"
            )
        self.limits: dict[str, int] = {c: limit for c in COMPARTMENTS} | dict(limits or {})
        for c, v in self.limits.items():
            check_int(f"the {c} limit", v, 1, 10**9, ConfigurationError)
        check_text("default_tenant", default_tenant, optional=True, error=ConfigurationError)
        self.store = store
        self.namespace = NamespaceTemplate(namespace)
        self.default_tenant = default_tenant
        self.plan_scope = plan_scope
        self.tools: list[MemoryTool] = _make_tools(self)

    # -- where entries live --------------------------------------------------------

    def scope(self, compartment: str, config: RunnableConfig | None = None) -> tuple[str, ...]:
        """The namespace of ``compartment`` for the call ``config`` belongs to.

        Raises:
            ConfigurationError: no ``thread_id`` / ``session_id`` / ``run_id`` to
                key the compartment by.
        """
        _check_compartment(compartment)
        cfg = run_config(config)
        conf = cfg.get("configurable") or {}
        ctx = MemoryContext.from_config(
            cfg, namespace=self.namespace, default_tenant=self.default_tenant
        )
        try:
            space = layout.user_space(ctx.tenant_id, ctx.own_space())
        except MissingIdentifierError:
            space = (*layout.tenant_root(ctx.tenant_id), "_anonymous")
        base = layout.meta_space(ctx.tenant_id, space, "compartments")
        if compartment == "session" or (compartment == "plan" and self.plan_scope == "session"):
            session = ctx.session_id
            if session is None:
                raise ConfigurationError(
                    f"{compartment} memory needs a session: set 'session_id' or 'thread_id' "
                    "in config['configurable'] (use a checkpointer and a thread)"
                )
            return (*base, compartment, check_label("session_id", session))
        runtime = config_runtime(cfg)
        run = getattr(getattr(runtime, "execution_info", None), "run_id", None)
        run = run or conf.get("thread_id")
        if run is None:
            raise ConfigurationError(
                f"{compartment} memory needs a run: set 'thread_id' in config['configurable'] "
                "or pass run_id in the config"
            )
        ns = (*base, compartment, check_label("run id", str(run)))
        # checkpoint_ns is "node:task" at the top level and "tool:task|node:task" in a
        # sub-agent; its parent part tells a sub-agent's run from its parent's.
        parent = "|".join(str(conf.get("checkpoint_ns") or "").split("|")[:-1])
        return (*ns, check_label("graph", parent)) if parent else ns

    def entries(self, compartment: str, config: RunnableConfig | None = None) -> list[MemoryEntry]:
        """The entries of ``compartment``, oldest first (no access is counted)."""
        store, ns = self._where(compartment, config)
        return list_entries(store, ns)

    async def aentries(
        self, compartment: str, config: RunnableConfig | None = None
    ) -> list[MemoryEntry]:
        """Async :meth:`entries`."""
        store, ns = self._where(compartment, config)
        return await alist_entries(store, ns)

    def clear(self, compartment: str, config: RunnableConfig | None = None) -> int:
        """Delete every entry of ``compartment``; returns how many."""
        store, ns = self._where(compartment, config)
        ops = [PutOp(ns, e.id, None) for e in list_entries(store, ns)]
        if ops:
            store.batch(ops)
        return len(ops)

    async def aclear(self, compartment: str, config: RunnableConfig | None = None) -> int:
        """Async :meth:`clear`."""
        store, ns = self._where(compartment, config)
        ops = [PutOp(ns, e.id, None) for e in await alist_entries(store, ns)]
        if ops:
            await store.abatch(ops)
        return len(ops)

    def _where(
        self, compartment: str, config: RunnableConfig | None
    ) -> tuple[BaseStore, tuple[str, ...]]:
        cfg = run_config(config)
        return resolve_store(self.store, cfg, "compartment memory"), self.scope(compartment, cfg)

    def _run_scoped(self) -> tuple[str, ...]:
        return ("run", "plan") if self.plan_scope == "run" else ("run",)

    # -- the run: prompt and clearing -----------------------------------------------

    def render(self, entries: list[MemoryEntry]) -> str | None:
        """The block of run memory put into the prompt (``None`` when empty)."""
        if not entries:
            return None
        lines = [
            "## Run memory",
            "Notes you saved with save_memory(compartment='run') during this run; "
            "they are erased when the run ends.",
        ]
        for e in sorted(entries, key=lambda e: (-e.priority, e.created_at)):
            tags = f"; tags: {', '.join(e.tags)}" if e.tags else ""
            cat = f" [{e.category}{tags}]" if e.category or tags else ""
            lines.append(f"- id={e.id}{cat} (priority {e.priority}) {e.content}")
        return "\n".join(lines)

    def pre_model_hook(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        """``create_react_agent(pre_model_hook=...)``: show run memory to the model.

        At the first model call of a run (the last message is the user's), leftovers
        of an earlier run that ended abnormally are cleared first.
        """
        messages: list[lc.AnyMessage] = list(state["messages"])
        if messages and isinstance(messages[-1], lc.HumanMessage):
            for c in self._run_scoped():
                self.clear(c, config)
            return {"llm_input_messages": messages}
        block = self.render(self.entries("run", config))
        extra = [lc.SystemMessage(block)] if block else []
        return {"llm_input_messages": extra + messages}

    def post_model_hook(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        """``create_react_agent(post_model_hook=...)``: clear run memory when the model
        answers without calling a tool, which ends the run."""
        last = state["messages"][-1] if state["messages"] else None
        if isinstance(last, lc.AIMessage) and not last.tool_calls:
            for c in self._run_scoped():
                self.clear(c, config)
        return {}

    def middleware(self) -> AgentMiddleware:
        """Middleware for LangChain's ``create_agent``: adds the three tools, shows
        run memory in every model call, clears it when the run ends.

        Examples:
            >>> Compartments().middleware().tools[0].name
            'save_memory'
        """
        return CompartmentMiddleware(self)


class CompartmentMiddleware(AgentMiddleware):
    """The ``create_agent`` side of :class:`Compartments`; see :meth:`Compartments.middleware`."""

    def __init__(self, compartments: Compartments) -> None:
        super().__init__()
        self.compartments = compartments
        self.tools = list(compartments.tools)

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        for c in self.compartments._run_scoped():
            self.compartments.clear(c)
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        for c in self.compartments._run_scoped():
            await self.compartments.aclear(c)
        return None

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return await self.abefore_agent(state, runtime)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        block = self.compartments.render(self.compartments.entries("run"))
        return handler(with_system_block(request, block))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        block = self.compartments.render(await self.compartments.aentries("run"))
        return await handler(with_system_block(request, block))


def _check_compartment(compartment: Any) -> str:
    if not isinstance(compartment, str) or compartment not in COMPARTMENTS:
        raise InvalidValueError(
            f"compartment must be one of {', '.join(COMPARTMENTS)}, got {shown(compartment)}"
        )
    return compartment


def _ttl(c: Compartments, compartment: str) -> float | None:
    # A day's TTL on run entries is a safety net for runs that crash before clearing.
    return 24 * 60.0 if compartment in c._run_scoped() else None


def _make_tools(c: Compartments) -> list[MemoryTool]:
    def runner(kind: str) -> tuple[Callable[..., str], Callable[..., Awaitable[str]]]:
        def plan(
            ns: tuple[str, ...], entries: list[MemoryEntry], args: dict[str, Any]
        ) -> tuple[list[PutOp], str]:
            compartment = args["compartment"]
            return PLANS[kind](
                ns, entries, args, limit=c.limits[compartment], ttl=_ttl(c, compartment)
            )

        def run(*, config: RunnableConfig, **args: Any) -> str:
            store, ns = c._where(args["compartment"], config)
            ops, out = plan(ns, list_entries(store, ns), args)
            if ops:
                store.batch(ttl_supported(store, ops))
            return out

        async def arun(*, config: RunnableConfig, **args: Any) -> str:
            store, ns = c._where(args["compartment"], config)
            ops, out = plan(ns, await alist_entries(store, ns), args)
            if ops:
                await store.abatch(ttl_supported(store, ops))
            return out

        return run, arun

    tools = []
    for name, (schema, description) in schemas(c.limits).items():
        run, arun = runner(name)
        tools.append(
            MemoryTool(
                name=name, description=description, args_schema=schema, func=run, coroutine=arun
            )
        )
    return tools
