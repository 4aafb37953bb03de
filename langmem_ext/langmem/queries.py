"""The search queries a store manager's ``query_model`` writes, asked in the
extraction's call strategy (:mod:`langmem_ext.model_calls.calls`): a
named tool choice, which local servers accept, and JSON output where a server
cannot call tools.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langmem_ext.engine import run_sync
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> call = {"name": "search_memory", "args": {"query": "tea"}, "id": "q1"}
    >>> writer = QueryWriter(ScriptedExtractionModel([AIMessage("", tool_calls=[call])]))
    >>> run_sync(writer.queries([("user", "what do I drink?")]), None)
    ['tea']
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from ..engine import Operation
from ..model_calls.calls import MalformedOutput, ModelCalls, decode
from ..model_calls.usage import TokenUsage
from .schemas import conversation

__all__ = ["QueryWriter"]

_TOOL = {
    "type": "function",
    "function": {
        "name": "search_memory",
        "description": "Search long-term memory.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


class QueryWriter:
    """Asks ``model`` what to search for in a conversation."""

    def __init__(self, model: str | BaseChatModel) -> None:
        self._calls = ModelCalls(
            model,
            method="auto",
            shapes=("tool", "json"),
            name="search_memory",
            purpose="store_manager_query",
        )

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every call made so far."""
        return self._calls.usage

    def queries(self, messages: list[Any], usage: TokenUsage | None = None) -> Operation[list[str]]:
        """The model's queries for ``messages`` (empty when it gave none); the
        call's tokens are added to ``usage``."""
        ask = (
            "Search for memories relevant to this conversation, phrased as the memories "
            f"themselves would be:\n\n<convo>\n{conversation(messages)}\n</convo>"
        )
        json_tail = '\n\nAnswer with one JSON object and nothing else: {"query": str}.'

        def prompt(shape: str) -> list[HumanMessage]:
            return [HumanMessage(ask + (json_tail if shape == "json" else ""))]

        reply, _ = yield from self._calls.ask(_TOOL, prompt, usage)
        calls = [tc["args"] for tc in getattr(reply, "tool_calls", ()) if tc["args"]]
        if not calls:
            try:
                calls = [decode(reply, "search_memory")]
            except MalformedOutput:
                return []
        return [str(a.get("query") or "") for a in calls if isinstance(a, dict) and a.get("query")]
