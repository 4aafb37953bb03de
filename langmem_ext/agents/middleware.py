"""Agent faces of reflection: memory in the system prompt, reflection after a run.

:class:`MemoryPrompt` puts the user's memory into every model call, in one line:

* ``create_react_agent(model, tools, pre_model_hook=MemoryPrompt(engine).pre_model_hook)``
* ``create_agent(model, tools, middleware=[MemoryPrompt(engine).middleware()])``

``kind="profile"`` (default) renders the profile block (user context, history,
facts within 2000 tokens); ``kind="context"`` renders
``memory_context`` for the last user message (facts, rules, recent episodes
within 3000 tokens). Without an engine the graph's store is used.

:class:`ReflectionMiddleware` (``executor.middleware()``) schedules a reflection
when a ``create_agent`` run ends.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
    >>> _ = engine.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    >>> prompt = MemoryPrompt(engine)
    >>> print(prompt.render({"configurable": {"memory_context": ctx}}))
    What you remember about the user:
    Facts:
    - [preference | 0.90] Prefers dark mode
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core import messages as lc
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from .._langgraph import graph_store
from ..engine import (
    OPERATIONS,
    EngineConfig,
    EnginesByStore,
    MemoryEngine,
    NamespaceTemplate,
    check_int,
    check_text,
    records_of,
    run_async,
    run_config,
    run_sync,
    shown,
)
from ..errors import ConfigurationError, InvalidValueError
from ..model_calls.tokens import TokenCounter, token_counter
from .reflection import context as cx
from .reflection.faces import ReflectionMiddleware as _ReflectionMiddleware

__all__ = ["MemoryPrompt", "ReflectionMiddleware", "with_system_block"]

# Defined with the executor it serves; named here too, beside MemoryPrompt.
ReflectionMiddleware = _ReflectionMiddleware


def with_system_block(request: ModelRequest, block: str | None) -> ModelRequest:
    """``request`` with ``block`` appended to its system message."""
    if not block:
        return request
    old = request.system_message
    if old is None:
        return request.override(system_message=lc.SystemMessage(block))
    if isinstance(old.content, str):
        return request.override(system_message=lc.SystemMessage(f"{old.content}\n\n{block}"))
    content = [*old.content, {"type": "text", "text": block}]
    return request.override(system_message=lc.SystemMessage(content))


def _last_user_text(messages: list[Any]) -> str | None:
    for m in reversed(messages):
        if isinstance(m, lc.HumanMessage) and m.text.strip():
            return m.text
    return None


class MemoryPrompt:
    """Renders the caller's memory block for the system prompt.

    Args:
        engine: the engine to read; None uses the graph's store.
        kind: ``"profile"`` (the profile block) or ``"context"``
            (``memory_context`` for the last user message).
        max_tokens: the block's budget (default 2000 for profile, 3000 for context).
        scope: with ``kind="context"``, the memories of this scope and
            ``global`` only (None: every scope).
        quotas: section quotas of ``kind="context"``.
        tokenizer: encoding name or ``str -> int`` (default cl100k_base).
        default_tenant: tenant of runs without LangGraph auth (default: the
            default tenant; nothing to configure for single-tenant apps).
        namespace: the app's namespace template for each user's memories (the
            same as the memory tools'); None: the identity rule (``("user", id)``).
        title: a line put above the block (None: none).
    """

    def __init__(
        self,
        engine: MemoryEngine | None = None,
        *,
        kind: Literal["profile", "context"] = "profile",
        max_tokens: int | None = None,
        scope: str | None = None,
        quotas: Mapping[str, float] | None = None,
        tokenizer: str | TokenCounter | None = None,
        default_tenant: str | None = None,
        namespace: Any = None,
        title: str | None = "What you remember about the user:",
    ) -> None:
        if kind not in ("profile", "context"):
            raise ConfigurationError(f"kind must be 'profile' or 'context', got {shown(kind)}")
        if engine is not None and not isinstance(engine, MemoryEngine):
            raise ConfigurationError(f"engine must be a MemoryEngine, got {type(engine).__name__}")
        self.engine = engine
        self.kind = kind
        default = cx.DEFAULT_PROFILE_TOKENS if kind == "profile" else cx.DEFAULT_CONTEXT_BUDGET
        self.max_tokens = default if max_tokens is None else max_tokens
        check_int("max_tokens", self.max_tokens, 1, cx.MAX_TOKENS, ConfigurationError)
        check_text("scope", scope, optional=True, error=ConfigurationError)
        check_text("default_tenant", default_tenant, optional=True, error=ConfigurationError)
        if title is not None and not isinstance(title, str):
            raise ConfigurationError(f"title must be text or None, got {shown(title)}")
        NamespaceTemplate(namespace)
        self.scope = scope
        self.quotas = cx.check_quotas(quotas)
        self.tokenizer = tokenizer
        self.count = token_counter(tokenizer)
        self.default_tenant = default_tenant
        self.namespace = namespace
        self.title = title
        self._engines = EnginesByStore(
            EngineConfig(namespace=namespace, default_tenant=default_tenant)
        )
        self.pre_model_hook = RunnableLambda(self._hook, afunc=self._ahook, name="memory_prompt")
        """``create_react_agent(pre_model_hook=...)``: a system message with the block."""

    def _engine(self, store: BaseStore | None) -> MemoryEngine:
        if store is not None and not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a LangGraph BaseStore, got {type(store).__name__}"
            )
        if self.engine is not None:
            return self.engine
        store = store or graph_store()
        if store is None:
            raise ConfigurationError(
                "MemoryPrompt has no store: pass engine=MemoryEngine(store) or use it in a "
                "graph compiled with a store"
            )
        return self._engines.get(store)

    def _step(self, engine: MemoryEngine, config: RunnableConfig, query: str | None) -> Any:
        ctx = engine.context(config, namespace=self.namespace, default_tenant=self.default_tenant)
        env = engine.env(ctx)
        if self.kind == "profile":
            profile = yield from OPERATIONS["get_profile"].within(env)
            # The user's rules and episodes too: the prompt shows every kind of
            # memory the user has, whoever wrote it.
            others = yield from records_of(env, env.layer("user"), ("rule", "episode"))
            others = [r for r in others if r.retrievable(env.stamp)]
            shown = (profile.facts, profile.notes, profile.user_context, profile.history, others)
            if not any(shown):
                return None
            return cx.format_profile(profile, self._budget(), self.count, also=others, now=env.now)
        if not query:
            return None
        text = yield from cx.context_steps(
            env, query, self.scope, self._budget(), self.quotas, self.count
        )
        return text

    def _budget(self) -> int:
        title = self.count(self.title + "\n") if self.title else 0
        return max(1, self.max_tokens - title)

    def _titled(self, block: str | None) -> str | None:
        return f"{self.title}\n{block}" if block and self.title else block

    def render(
        self,
        config: RunnableConfig | None = None,
        *,
        query: str | None = None,
        store: BaseStore | None = None,
    ) -> str | None:
        """The block for the caller in ``config`` (None when there is nothing).
        ``query``: the trigger prompt of ``kind="context"``."""
        engine = self._engine(store)
        config = _checked(config, query)
        block = run_sync(self._step(engine, config, query), engine.store, engine.config)
        return self._titled(block)

    async def arender(
        self,
        config: RunnableConfig | None = None,
        *,
        query: str | None = None,
        store: BaseStore | None = None,
    ) -> str | None:
        """Async :meth:`render`."""
        engine = self._engine(store)
        config = _checked(config, query)
        block = await run_async(self._step(engine, config, query), engine.store, engine.config)
        return self._titled(block)

    def _hook(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = list(state["messages"])
        block = self.render(config, query=_last_user_text(messages))
        return {"llm_input_messages": ([lc.SystemMessage(block)] if block else []) + messages}

    async def _ahook(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        messages = list(state["messages"])
        block = await self.arender(config, query=_last_user_text(messages))
        return {"llm_input_messages": ([lc.SystemMessage(block)] if block else []) + messages}

    def middleware(self) -> MemoryPromptMiddleware:
        """Middleware for LangChain's ``create_agent``: the block in every model call."""
        return MemoryPromptMiddleware(self)


def _checked(config: Any, query: Any) -> Any:
    if query is not None and not isinstance(query, str):
        raise InvalidValueError(f"query must be text or None, got {shown(query)}")
    return run_config(config)


class MemoryPromptMiddleware(AgentMiddleware):
    """The ``create_agent`` face of :class:`MemoryPrompt`."""

    def __init__(self, prompt: MemoryPrompt) -> None:
        super().__init__()
        self.prompt = prompt

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        store = getattr(request.runtime, "store", None)
        block = self.prompt.render(query=_last_user_text(request.messages), store=store)
        return handler(with_system_block(request, block))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        store = getattr(request.runtime, "store", None)
        block = await self.prompt.arender(query=_last_user_text(request.messages), store=store)
        return await handler(with_system_block(request, block))
