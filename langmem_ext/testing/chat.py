"""A scripted chat model for extraction: tests and examples without a network.

Each call answers with the next step of the script:

* a list of facts (``(content, category, confidence)`` tuples or dicts) → an
  ``extract_facts`` tool call with those facts;
* a string → a plain text reply (for JSON mode, or malformed output);
* an ``AIMessage`` → itself;
* an exception instance → raised (a failing provider);
* a callable → called with the prompt messages, its result used as above.

``calls`` counts the calls, ``seen`` keeps each call's messages and ``bound``
each call's binding kwargs (``tool_choice``, ``response_format``).
``rejects`` lists ``tool_choice`` values the model answers with an HTTP 500
error, as llama.cpp's server does for ``"any"`` and ``"required"``.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> model = ScriptedExtractionModel([[("Lives in Berlin", "context", 0.9)]])
    >>> model.invoke([HumanMessage("hi")]).tool_calls[0]["args"]["facts"][0]["content"]
    'Lives in Berlin'
    >>> model.calls
    1
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

__all__ = ["ScriptedExtractionModel", "UnsupportedRequest", "facts_call"]

_ids = itertools.count(1)


def facts_call(facts: Sequence[Any]) -> AIMessage:
    """An ``extract_facts`` tool call carrying ``facts``."""
    items = [
        f if isinstance(f, dict) else {"content": f[0], "category": f[1], "confidence": f[2]}
        for f in facts
    ]
    call = {"name": "extract_facts", "args": {"facts": items}, "id": f"x{next(_ids)}"}
    return AIMessage("", tool_calls=[call])


class UnsupportedRequest(Exception):
    """What an OpenAI-compatible server answers to a request shape it does not
    support (``status_code`` 500, like llama.cpp's server)."""

    status_code = 500


class ScriptedExtractionModel(BaseChatModel):
    """Plays ``script`` (see the module docstring)."""

    script: list[Any]
    supports_tools: bool = True
    rejects: tuple[str, ...] = ()
    calls: int = 0
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[dict[str, Any]] = Field(default_factory=list)

    def __init__(self, script: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(script=list(script), **kwargs)  # type: ignore[call-arg]

    @property
    def _llm_type(self) -> str:
        return "scripted-extraction"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        if not self.supports_tools:
            raise NotImplementedError("this model does not call tools")
        # The tools are kept in the bound arguments (``bound``), as a server sees them.
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        self.seen.append(list(messages))
        self.bound.append({k: v for k, v in kwargs.items() if k != "run_manager"})
        if kwargs.get("tool_choice") in self.rejects:
            raise UnsupportedRequest(f"Unsupported tool_choice {kwargs['tool_choice']!r}")
        if not self.script:
            raise AssertionError("the script has no more steps")
        step = self.script.pop(0)
        if callable(step) and not isinstance(step, BaseMessage):
            step = step(messages)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            msg = AIMessage(step)
        elif isinstance(step, AIMessage):
            msg = step.model_copy(deep=True)
        else:
            msg = facts_call(step)
        return ChatResult(generations=[ChatGeneration(message=msg)])
