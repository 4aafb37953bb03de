"""A chat model that plays a script of tool calls: real agents, no network."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

_ids = itertools.count(1)


def call(name: str, **args: Any) -> AIMessage:
    """An AIMessage with one tool call."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{next(_ids)}"}])


def say(text: str) -> AIMessage:
    return AIMessage(text)


def last_tool_result(messages: list[BaseMessage]) -> ToolMessage:
    return next(m for m in reversed(messages) if isinstance(m, ToolMessage))


class ScriptedChatModel(BaseChatModel):
    """Answers each call with the next step of ``script``; a step may be a function
    of the messages the model was given (to use an id a tool returned). ``seen``
    records every call's input messages."""

    script: list[Any]
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        if not self.script:
            raise AssertionError("the script has no more steps")
        step = self.script.pop(0)
        msg = step(messages) if callable(step) else step
        # A fresh copy per call: graphs keep message objects in their state.
        return ChatResult(generations=[ChatGeneration(message=msg.model_copy(deep=True))])
