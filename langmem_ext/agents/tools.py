"""The memory tool set (notes, facts, episodes, rules) as LangChain tools,
derived from the operation catalogue (:mod:`langmem_ext.engine.operations`).

``create_memory_tools(engine)`` returns ``memory_store_fact``,
``memory_store_episode``, ``memory_store_rule``, ``memory_confirm``,
``memory_mark_helpful``, ``memory_mark_harmful``, ``memory_forget``,
``memory_get``, ``memory_search``, ``memory_recall``, ``memory_stats`` and
``memory_context`` (the memory block for a prompt, within a token budget), each
sync and async. Names, parameters (with their descriptions, enums and ranges),
results and errors are the catalogue's, as over MCP. The caller (tenant,
actor, layer identifiers) comes from the run's config — LangGraph's auth user
or a ``MemoryContext`` in ``configurable["memory_context"]`` — never from
arguments; ``admin=True`` adds ``tenant_id``, an admin's explicit tenant
selector (refused for anyone else).

A failed call comes back to the model as ``"<CODE>: <what to do>"``: an error
``ToolMessage`` (``status="error"``) from a tool call, the exception itself
from a direct call.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> tools = {t.name: t for t in create_memory_tools(MemoryEngine(SQLiteStore()))}
    >>> config = {"configurable": {"memory_context": MemoryContext("acme", user_id="ada")}}
    >>> rule_id = tools["memory_store_rule"].invoke(
    ...     {"content": "Always confirm before sending messages"}, config)
    >>> msg = tools["memory_get"].invoke({"type": "tool_call", "id": "c1", "name": "memory_get",
    ...     "args": {"type": "episode", "id": rule_id}}, config)
    >>> msg.status, msg.content.split(":")[0]
    ('error', 'MEMORY_NOT_FOUND')
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from ..engine import OPERATIONS, MemoryEngine, Spec, shown, to_json
from ..errors import ConfigurationError
from .reflection.context import context as context_op
from .tooling import MemoryTool

__all__ = ["MEMORY_TOOL_NAMES", "TOOL_SET", "create_memory_tools", "tool_answer"]

#: The operations offered as tools, in the order tools are listed.
TOOL_SET: tuple[Spec[Any, Any], ...] = (
    *(spec for spec in OPERATIONS.values() if spec.tool),
    context_op,
)
MEMORY_TOOL_NAMES: tuple[str, ...] = tuple(str(spec.tool) for spec in TOOL_SET)
#: Tools whose answer is the new memory's id (what a model needs to refer to it).
_ANSWER_ID = frozenset({"store_fact", "store_episode", "store_rule"})


def tool_answer(spec: Spec[Any, Any], result: Any, engine: MemoryEngine) -> str:
    """What a tool (agent or MCP) answers for an operation's result: the id of
    a stored memory, the text of a memory block, or the result as JSON."""
    if spec.name in _ANSWER_ID:
        return str(result.id)
    if isinstance(result, str):
        return result
    return json.dumps(to_json(result, engine.config.clock()), ensure_ascii=False, default=str)


def create_memory_tools(
    engine: MemoryEngine,
    *,
    include: Sequence[str] | None = None,
    admin: bool = False,
) -> list[BaseTool]:
    """Build the memory tools over ``engine``.

    Args:
        engine: the engine (and store) the tools use.
        include: tool names to build (default: all of :data:`MEMORY_TOOL_NAMES`).
        admin: offer ``tenant_id`` (for agents acting as an elevated admin).

    Returns:
        LangChain tools; pass them to ``create_agent`` or a ``ToolNode``.
    """
    if not isinstance(engine, MemoryEngine):
        raise ConfigurationError(f"engine must be a MemoryEngine, got {type(engine).__name__}")
    names = MEMORY_TOOL_NAMES if include is None else include
    if isinstance(names, str) or not isinstance(names, list | tuple | set | frozenset):
        raise ConfigurationError(f"include must be a list of tool names, got {shown(names)}")
    unknown = [shown(n) for n in names if n not in MEMORY_TOOL_NAMES]
    if unknown:
        raise ConfigurationError(f"unknown tools {unknown}; use {', '.join(MEMORY_TOOL_NAMES)}")
    return [_tool(engine, spec, admin) for spec in TOOL_SET if spec.tool in names]


def _tool(engine: MemoryEngine, spec: Spec[Any, Any], admin: bool) -> BaseTool:
    # One body for both modes: the catalogue checks the arguments and builds the
    # operation; the engine's two drivers run it.
    def run(config: RunnableConfig, **args: Any) -> str:
        result = engine.run(spec.start(engine, config, args), spec.name)
        return tool_answer(spec, result, engine)

    async def arun(config: RunnableConfig, **args: Any) -> str:
        result = await engine.arun(spec.start(engine, config, args), spec.name)
        return tool_answer(spec, result, engine)

    # The schema is what the model is offered; the arguments are checked by the
    # catalogue itself (one check, one wording, as over MCP and in Python).
    return MemoryTool(
        name=str(spec.tool),
        description=spec.summary,
        args_schema=spec.schema(admin=admin),
        func=run,
        coroutine=arun,
        spec=spec,
    )
