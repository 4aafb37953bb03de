"""Machinery shared by the memory tools: errors the model can read, the tool
class that turns them into error ``ToolMessage``s, store lookup, JSON output.

Examples:
    >>> from langmem_ext.errors import MemoryNotFoundError
    >>> model_text(MemoryNotFoundError("no fact 'x'"), "memory_get").split(". ")[0]
    "MEMORY_NOT_FOUND: no fact 'x'"
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core import messages as lc_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.store.base import BaseStore
from pydantic import ValidationError as PydanticValidationError

from .._langgraph import config_runtime, current_config
from ..engine import error_text, invalid
from ..errors import (
    ConfigurationError,
    LangmemError,
    MemoryToolError,
    PermissionDeniedError,
    TenantAccessError,
)

__all__ = ["MemoryTool", "dumps", "model_text", "resolve_store"]

_TOO_DEEP = "the arguments are nested too deeply; send flat values (text, numbers, short lists)"


class MemoryTool(StructuredTool):
    """A ``StructuredTool`` whose errors reach the model.

    Called with a tool call (``{"type": "tool_call", "id": ..., "args": ...}``, as
    a ``ToolNode`` does), a package error becomes a ``ToolMessage`` with
    ``status="error"`` and the text ``"<CODE>: <message>"`` plus what to do;
    called with plain arguments it is raised. LangGraph 1.x's ``ToolNode``
    re-raises tool errors by default, and LangChain's ``handle_tool_error`` would
    also swallow errors of direct calls, hence this. ``spec``: the catalogue
    operation the tool runs, whose checks word the errors of arguments that do
    not fit the schema.
    """

    spec: Any = None

    def run(self, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return super().run(tool_input, *args, **kwargs)
        except Exception as e:
            return self._to_message(self._coded(e), kwargs.get("tool_call_id"), e)

    async def arun(self, tool_input: str | dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().arun(tool_input, *args, **kwargs)
        except Exception as e:
            return self._to_message(self._coded(e), kwargs.get("tool_call_id"), e)

    def _coded(self, e: Exception) -> LangmemError | None:
        if isinstance(e, LangmemError):
            return e
        if isinstance(e, PydanticValidationError):
            # Arguments that do not fit the schema (a limit of 1e308, NaN) are
            # the model's mistake too: it reads what was wrong.
            return invalid(self.spec, e) if self.spec is not None else MemoryToolError(short(e))
        if isinstance(e, RecursionError):
            # LangChain prints the input before any check; arguments nested
            # thousands deep are a model's mistake like any other.
            return MemoryToolError(_TOO_DEEP)
        return None

    def _to_message(
        self, e: LangmemError | None, tool_call_id: str | None, raw: Exception
    ) -> lc_messages.ToolMessage:
        if e is None or e is raw:
            if tool_call_id is None or e is None:
                raise raw
        elif tool_call_id is None:
            raise e from raw
        return lc_messages.ToolMessage(
            content=model_text(e, self.name),
            tool_call_id=tool_call_id,
            name=self.name,
            status="error",
        )


def model_text(e: LangmemError, tool: str) -> str:
    """How a model reads an error (agent tools and MCP alike): ``"<CODE>:
    <message>"`` and what to do next."""
    if isinstance(e, PermissionDeniedError):
        # The caller may read but not write: calling again cannot help.
        hint = (
            "Nothing was changed; do not call it again: you may read memories here but "
            "not change them (tell the user if they asked for a change)."
        )
    elif type(e) is TenantAccessError and "requested" in e.details:
        # The model passed a tenant it may not use: the fix is its own.
        hint = f"Nothing was changed; call {tool} again without the tenant argument."
    elif isinstance(e, ConfigurationError | TenantAccessError):
        # Not the model's mistake, but it must see it (and can tell the user)
        # rather than crash the run.
        hint = "Memory is unavailable for this conversation; tell the user."
    elif "tools" in e.details:  # a tool that does not exist (MCP)
        hint = "Nothing was changed; call one of those tools instead."
    elif e.retryable:
        hint = "The memory store failed; try again later."
    else:
        hint = f"Nothing was changed; fix the arguments and call {tool} again."
    text = error_text(e)
    return f"{text}{'' if text.endswith(('.', '!', '?')) else '.'} {hint}"


def resolve_store(initial: BaseStore | None, config: RunnableConfig, tool: str) -> BaseStore:
    if initial is not None:
        return initial
    for cfg in (config, current_config(None)):
        store = getattr(config_runtime(cfg), "store", None)
        if store is not None:
            return store
    raise ConfigurationError(
        f"{tool} has no store: create it with store=... to use it outside a graph, or run it "
        "in a graph compiled with a store (create_react_agent(..., store=store), "
        "create_agent(..., store=store) or graph.compile(store=store))"
    )


def dumps(obj: Any) -> str:
    # Compact like LangMem's orjson output; non-ASCII text kept readable.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)


def short(e: Exception) -> str:
    if isinstance(e, PydanticValidationError):
        return "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'content'}: {err['msg']}" for err in e.errors()
        )
    return str(e)


# Public under langmem_ext.agents: reprs and docs show that path.
MemoryTool.__module__ = "langmem_ext.agents"
