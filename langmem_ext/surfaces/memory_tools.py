"""The memory tool set (facts, episodes, rules) as LangChain tools over a
:class:`MemoryEngine`.

``create_memory_tools(engine)`` returns ``memory_store_episode``,
``memory_store_fact``, ``memory_store_rule``, ``memory_search``,
``memory_recall``, ``memory_get``, ``memory_confirm``, ``memory_mark_helpful``,
``memory_mark_harmful``, ``memory_forget``, ``memory_stats`` and
``memory_context`` (the memory block for a prompt, within a token budget), each
sync and async. The caller (tenant, actor, layer identifiers) comes from the run's
config — LangGraph's auth user or a ``MemoryContext`` in
``configurable["memory_context"]`` — never from arguments; the optional
``tenant_id`` argument is an admin's explicit cross-tenant selector and is
rejected for anyone else.

Errors come back to the model as text ``"<CODE>: <what to do>"`` (a
``ToolException``, so a ``ToolNode`` reports it as an error ``ToolMessage``).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> tools = {t.name: t for t in create_memory_tools(MemoryEngine(SQLiteStore()))}
    >>> config = {"configurable": {"memory_context": MemoryContext("acme", user_id="ada")}}
    >>> rule_id = tools["memory_store_rule"].invoke(
    ...     {"content": "Always confirm before sending messages"}, config)
    >>> tools["memory_get"].invoke({"type": "episode", "id": rule_id}, config)
    "MEMORY_NOT_FOUND: no episode with id '...' among your memories; ..."
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from ..engine import MemoryEngine
from ..engine.checks import shown
from ..engine.models import Fact, MemoryRecord, Rule
from ..engine.requests import Operation
from ..errors import ConfigurationError, LangmemError
from ..reflection.context import DEFAULT_CONTEXT_BUDGET, context_steps

__all__ = ["MEMORY_TOOL_NAMES", "create_memory_tools"]

MEMORY_TOOL_NAMES = (
    "memory_store_episode",
    "memory_store_fact",
    "memory_store_rule",
    "memory_search",
    "memory_recall",
    "memory_get",
    "memory_confirm",
    "memory_mark_helpful",
    "memory_mark_harmful",
    "memory_forget",
    "memory_stats",
    "memory_context",
)

MemoryType = Literal["episode", "fact", "rule"]
Mode = Literal["hybrid", "vector", "keyword"]
_TENANT_DOC = "Leave empty. Admins only, with an elevated context: another tenant's id."


class _Call(NamedTuple):
    """What a tool call does: an engine operation, measured as ``operation``,
    and how its result becomes the tool's text."""

    operation: str
    op: Operation[Any]
    render: Callable[[Any], str]


def _hits_json(hits: list[Any]) -> str:
    return json.dumps([h.to_dict() for h in hits])


def _record_json(record: MemoryRecord, engine: MemoryEngine) -> str:
    value = record.to_dict()
    if isinstance(record, Fact | Rule):
        value["effective_confidence"] = round(record.effective_confidence(engine.config.clock()), 4)
    return json.dumps(value, ensure_ascii=False)


def create_memory_tools(
    engine: MemoryEngine, *, include: tuple[str, ...] | None = None
) -> list[BaseTool]:
    """Build the memory tools over ``engine``.

    Args:
        engine: the engine (and store) the tools use.
        include: tool names to build (default: all of :data:`MEMORY_TOOL_NAMES`).

    Returns:
        LangChain tools; pass them to ``create_react_agent`` or a ``ToolNode``.
    """
    if not isinstance(engine, MemoryEngine):
        raise ConfigurationError(f"engine must be a MemoryEngine, got {type(engine).__name__}")
    names = MEMORY_TOOL_NAMES if include is None else include
    if isinstance(names, str) or not isinstance(names, list | tuple | set | frozenset):
        raise ConfigurationError(f"include must be a list of tool names, got {shown(names)}")
    unknown = [shown(n) for n in names if n not in MEMORY_TOOL_NAMES]
    if unknown:
        raise ConfigurationError(f"unknown tools {unknown}; use {', '.join(MEMORY_TOOL_NAMES)}")
    e = engine

    def _record(operation: str, op: Operation[MemoryRecord]) -> _Call:
        return _Call(operation, op, lambda r: _record_json(r, e))

    def store_episode(
        content: str,
        butler: str,
        session_id: str | None = None,
        importance: float | None = None,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """Store an episode (what happened in this session); it expires after 7 days.
        Importance 0-10, default 5. Returns the episode id."""
        op = e.store_episode_op(config, content, butler, session_id, importance, tenant=tenant_id)
        return _Call("store_episode", op, lambda r: r.id)

    def store_fact(
        subject: str,
        predicate: str,
        content: str,
        importance: float | None = None,
        permanence: Literal["permanent", "stable", "standard", "volatile", "ephemeral"]
        | None = None,
        scope: str = "global",
        tags: list[str] | None = None,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """Store a fact about subject/predicate (e.g. user / favorite_color). A newer fact
        for the same subject and predicate supersedes the old one. Returns the fact id."""
        op = e.store_fact_op(
            config,
            subject,
            predicate,
            content,
            importance=importance,
            permanence=permanence,
            scope=scope,
            tags=tags,
            tenant=tenant_id,
        )
        return _Call("store_fact", op, lambda r: r.id)

    def store_rule(
        content: str,
        scope: str = "global",
        tags: list[str] | None = None,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """Store a behavioural rule (starts as a candidate, confidence 0.5). Returns its id."""
        op = e.store_rule_op(config, content, scope=scope, tags=tags, tenant=tenant_id)
        return _Call("store_rule", op, lambda r: r.id)

    def search(
        query: str,
        types: list[MemoryType] | None = None,
        scope: str | None = None,
        mode: Mode = "hybrid",
        limit: int = 20,
        min_confidence: float | None = None,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """Search episodes, facts and rules. Returns JSON results with type, id,
        content, score and confidence."""
        op = e.search_op(
            config,
            query,
            types=types,
            scope=scope,
            mode=mode,
            limit=limit,
            min_confidence=min_confidence,
            tenant=tenant_id,
        )
        return _Call("search", op, _hits_json)

    def recall(
        topic: str,
        scope: str | None = None,
        limit: int = 10,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """Recall the facts and rules most useful for a topic (relevance, importance,
        recency, confidence). Use this first when you need to remember something."""
        op = e.recall_op(config, topic, scope=scope, limit=limit, tenant=tenant_id)
        return _Call("recall", op, _hits_json)

    def get(
        type: MemoryType, id: str, tenant_id: str | None = None, *, config: RunnableConfig
    ) -> _Call:
        """Get one memory by type and id (the full record)."""
        return _record("get_memory", e.get_memory_op(config, type, id, tenant=tenant_id))

    def confirm(
        type: MemoryType, id: str, tenant_id: str | None = None, *, config: RunnableConfig
    ) -> _Call:
        """Confirm a fact or rule is still true: resets its confidence decay."""
        return _record("confirm", e.confirm_op(config, type, id, tenant=tenant_id))

    def mark_helpful(
        rule_id: str, tenant_id: str | None = None, *, config: RunnableConfig
    ) -> _Call:
        """Record that a rule helped."""
        return _record("mark_helpful", e.mark_helpful_op(config, rule_id, tenant=tenant_id))

    def mark_harmful(
        rule_id: str,
        reason: str | None = None,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """Record that a rule did harm, with the reason."""
        op = e.mark_harmful_op(config, rule_id, reason, tenant=tenant_id)
        return _record("mark_harmful", op)

    def forget(
        type: MemoryType, id: str, tenant_id: str | None = None, *, config: RunnableConfig
    ) -> _Call:
        """Forget a memory (kept for audit, never recalled again)."""
        return _record("forget", e.forget_op(config, type, id, tenant=tenant_id))

    def stats(
        scope: str | None = None, tenant_id: str | None = None, *, config: RunnableConfig
    ) -> _Call:
        """Counts and health of stored memories (scope: only 'global' and this scope)."""
        return _Call("stats", e.stats_op(config, scope, tenant=tenant_id), json.dumps)

    def context(
        trigger_prompt: str,
        butler: str,
        token_budget: int = DEFAULT_CONTEXT_BUDGET,
        tenant_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> _Call:
        """The memory block to put into a system prompt for this request: the best facts,
        rules and recent episodes for trigger_prompt, scoped to butler, within token_budget
        tokens (default 3000)."""
        env = e.env(config, tenant_id)
        op = context_steps(env, trigger_prompt, butler, token_budget, None, None)
        return _Call("context", op, str)

    specs: dict[str, Callable[..., Any]] = {
        "memory_store_episode": store_episode,
        "memory_store_fact": store_fact,
        "memory_store_rule": store_rule,
        "memory_search": search,
        "memory_recall": recall,
        "memory_get": get,
        "memory_confirm": confirm,
        "memory_mark_helpful": mark_helpful,
        "memory_mark_harmful": mark_harmful,
        "memory_forget": forget,
        "memory_stats": stats,
        "memory_context": context,
    }
    return [_tool(engine, name, specs[name]) for name in names]


def _tool(engine: MemoryEngine, name: str, spec: Callable[..., _Call]) -> BaseTool:
    # The spec builds the operation (validating its arguments); one sync and one
    # async body run it, so no tool has a hand-written twin.
    @functools.wraps(spec)
    def run(*args: Any, **kwargs: Any) -> str:
        try:
            call = spec(*args, **kwargs)
            return call.render(engine.run(call.op, call.operation))
        except LangmemError as err:
            raise ToolException(f"{err.code}: {err}") from err

    @functools.wraps(spec)
    async def arun(*args: Any, **kwargs: Any) -> str:
        try:
            call = spec(*args, **kwargs)
            return call.render(await engine.arun(call.op, call.operation))
        except LangmemError as err:
            raise ToolException(f"{err.code}: {err}") from err

    tool = StructuredTool.from_function(
        func=run, coroutine=arun, name=name, description=spec.__doc__ or name
    )
    tool.handle_tool_error = True
    return tool
