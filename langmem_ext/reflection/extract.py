"""Fact extraction: one chat-model call per conversation turn, validated.

The model sees the turn and the user's related facts (with their ids) and
answers with ``{"facts": [{"content", "category", "confidence", "subject"?,
"predicate"?, "replaces"?}]}``. Two call shapes:

``"tool"``
    ``bind_tools([extract_facts], tool_choice="extract_facts")``: a *named*
    tool choice, which local OpenAI-compatible servers (llama.cpp's, LM Studio,
    Ollama) accept, unlike ``tool_choice="any"``/``"required"`` and
    ``json_schema`` response formats (HTTP 500 on llama-cpp-python's server),
    which is what trustcall and LangMem's managers send.
``"json"``
    ``response_format={"type": "json_object"}`` on OpenAI-compatible models
    (plain text elsewhere), the JSON parsed from the reply.

``method="auto"`` (default) starts with ``"tool"`` and switches to ``"json"``
for good when the model or server rejects tool calling (``NotImplementedError``
or an HTTP 400/404/422/500/501 from the tool call); a reply that ignores the
tool and answers in text is read as JSON too.

Validation is strict and per fact: content a non-empty string, category one of
:data:`~langmem_ext.engine.policy.FACT_CATEGORIES`, confidence a number in
[0, 1], optional fields strings. Output that is not the requested object at all
raises :class:`MalformedOutput`; invalid facts are reported as problems (the
caller asks again, telling the model what was wrong).

Examples:
    >>> extractor = FactExtractor("openai:gpt-4o-mini")  # resolved at the first call
    >>> facts, problems = extractor.parse({"facts": [
    ...     {"content": "Lives in Berlin", "category": "context", "confidence": 0.9},
    ...     {"content": "Likes jazz", "category": "hobby", "confidence": 0.8}]})
    >>> [f.content for f in facts], problems
    (['Lives in Berlin'], ["fact 2: unknown category 'hobby'; use one of preference, knowledge, context, behavior, goal, correction"])
"""  # noqa: E501

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ..engine import policy
from ..engine.models import Fact
from ..engine.profile import FactCandidate

__all__ = ["DEFAULT_MODEL", "TOOL_NAME", "FactExtractor", "MalformedOutput", "format_turns"]

logger = logging.getLogger("langmem_ext.reflection")

DEFAULT_MODEL = "openai:gpt-4o-mini"
TOOL_NAME = "extract_facts"
Method = Literal["auto", "tool", "json"]
# HTTP statuses with which servers reject a request shape they do not support.
_UNSUPPORTED_STATUS = frozenset({400, 404, 422, 500, 501})


class MalformedOutput(ValueError):
    """The model's reply is not the requested facts object (bad JSON, no
    ``facts`` list, no tool call and no JSON text)."""


class _ExtractedFact(BaseModel):
    content: str = Field(
        description="One self-contained fact about the user, in the third person "
        "(e.g. 'Lives in Berlin')."
    )
    category: Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1.")
    subject: str | None = Field(
        default=None, description="What the fact is about, e.g. 'user' or 'user.sister'."
    )
    predicate: str | None = Field(
        default=None,
        description="The attribute, e.g. 'home_city'. A later fact with the same subject "
        "and predicate replaces this one.",
    )
    replaces: str | None = Field(
        default=None,
        description="Id of a known fact that this fact corrects or updates, else null.",
    )


class _ExtractFacts(BaseModel):
    """Record the facts about the user worth remembering from this conversation."""

    facts: list[_ExtractedFact] = Field(description="Empty when there is nothing new.")


def _tool_schema() -> dict[str, Any]:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tool = convert_to_openai_tool(_ExtractFacts)
    tool["function"]["name"] = TOOL_NAME
    return tool


INSTRUCTIONS = """\
You maintain long-term memory about a user. Read the conversation and extract \
facts about the user that will still matter in future conversations: \
preferences, knowledge, context (life situation, work, places, people), \
behavior, goals, and corrections of earlier facts.

Categories: preference (likes, dislikes, choices), knowledge (what the user \
knows or has learnt), context (circumstances, relationships, location, job), \
behavior (habits, ways of working), goal (what the user wants to achieve), \
correction (the user corrects something known or said earlier).

Rules:
- One fact per item, short and self-contained, third person ("Lives in Berlin").
- confidence is 0 to 1: 0.9+ when the user states it plainly, lower when inferred.
- Do not repeat a known fact unless it changed. When a fact updates or corrects a \
known fact, set "replaces" to that fact's id.
- Give subject and predicate for attributes that have one current value \
(home_city, employer, favorite_color).
- Nothing about the assistant, nothing about this conversation's mechanics.
- Return an empty list when there is nothing worth remembering."""

_JSON_SHAPE = (
    'Answer with one JSON object and nothing else: {"facts": [{"content": str, '
    '"category": str, "confidence": number, "subject": str|null, "predicate": str|null, '
    '"replaces": str|null}]}.'
)


def format_turns(messages: Sequence[BaseMessage]) -> str:
    """The conversation as ``role: text`` lines (tool traffic left out)."""
    lines = []
    for m in messages:
        role = {"human": "user", "ai": "assistant"}.get(m.type)
        text = m.text if isinstance(m.text, str) else str(m.content)
        if role and text.strip():
            lines.append(f"{role}: {text.strip()}")
    return "\n".join(lines)


def _known(related: Sequence[Fact]) -> str:
    if not related:
        return "Known facts about the user: none yet."
    rows = [
        f"- id={f.id} [{f.category or 'fact'} | {f.confidence:.2f}] {f.content}" for f in related
    ]
    return "Known facts about the user (ids for 'replaces'):\n" + "\n".join(rows)


class FactExtractor:
    """Extracts facts from conversation turns with a LangChain chat model.

    Args:
        model: a chat model instance, a ``"provider:model"`` string (resolved
            with LangChain's ``init_chat_model`` at the first call), or None for
            :data:`DEFAULT_MODEL` (``ChatOpenAI``; needs ``OPENAI_API_KEY``).
        method: ``"auto"`` (default), ``"tool"`` or ``"json"``; see the module.
        instructions: replaces the default extraction instructions.

    Attributes:
        calls: model calls made so far (failed calls included).
        method_in_use: the call shape the next call will use.
    """

    def __init__(
        self,
        model: BaseChatModel | str | None = None,
        *,
        method: Method = "auto",
        instructions: str = INSTRUCTIONS,
    ) -> None:
        if method not in ("auto", "tool", "json"):
            raise ValueError(f"unknown method {method!r}; use 'auto', 'tool' or 'json'")
        if model is not None and not isinstance(model, str | BaseChatModel):
            raise TypeError(
                f"model must be a chat model, a 'provider:model' string or None, got {model!r}"
            )
        self._model = model if model is not None else DEFAULT_MODEL
        self.method = method
        self.method_in_use: Literal["tool", "json"] = "json" if method == "json" else "tool"
        self.instructions = instructions
        self.calls = 0
        self._lock = threading.Lock()

    @property
    def model(self) -> BaseChatModel:
        """The chat model (a string is resolved on first use)."""
        with self._lock:
            if isinstance(self._model, str):
                from langchain.chat_models import init_chat_model

                self._model = init_chat_model(self._model)
            return self._model

    # -- the request ------------------------------------------------------------

    def prompt(
        self,
        turns: Sequence[BaseMessage],
        related: Sequence[Fact] = (),
        feedback: str | None = None,
    ) -> list[BaseMessage]:
        """The messages sent to the model for one turn."""
        system = f"{self.instructions}\n\n{_known(related)}"
        if self.method_in_use == "json":
            system += f"\n\n{_JSON_SHAPE}"
        else:
            system += f"\n\nCall {TOOL_NAME} once with all the facts."
        user = f"Conversation:\n{format_turns(turns)}"
        if feedback:
            user += (
                f"\n\nYour previous answer was invalid: {feedback}\n"
                "Answer again with valid facts only."
            )
        return [SystemMessage(system), HumanMessage(user)]

    def _runnable(self, shape: str) -> Any:
        model = self.model
        if shape == "tool":
            return model.bind_tools([_tool_schema()], tool_choice=TOOL_NAME)
        from langchain_openai.chat_models.base import BaseChatOpenAI

        if isinstance(model, BaseChatOpenAI):
            return model.bind(response_format={"type": "json_object"})
        return model

    def _fall_back(self, e: Exception) -> bool:
        """Switch to JSON mode if ``e`` says tool calling is unsupported."""
        status = getattr(e, "status_code", None)
        if self.method != "auto" or self.method_in_use != "tool":
            return False
        if not (isinstance(e, NotImplementedError) or status in _UNSUPPORTED_STATUS):
            return False
        logger.warning("tool calling failed (%r); extracting with JSON output from now on", e)
        self.method_in_use = "json"
        return True

    def invoke(self, messages: list[BaseMessage]) -> tuple[BaseMessage, int]:
        """Send the prompt; returns the reply and the number of model calls made
        (2 when tool calling was rejected and ``method="auto"`` fell back)."""
        made = 0
        while True:
            shape = self.method_in_use
            made += 1
            self._count()
            try:
                return self._runnable(shape).invoke(self._reshaped(messages, shape)), made
            except Exception as e:
                if not self._fall_back(e):
                    raise

    async def ainvoke(self, messages: list[BaseMessage]) -> tuple[BaseMessage, int]:
        """Async :meth:`invoke`."""
        made = 0
        while True:
            shape = self.method_in_use
            made += 1
            self._count()
            try:
                reply = await self._runnable(shape).ainvoke(self._reshaped(messages, shape))
                return reply, made
            except Exception as e:
                if not self._fall_back(e):
                    raise

    def _count(self) -> None:
        with self._lock:
            self.calls += 1

    def _reshaped(self, messages: list[BaseMessage], shape: str) -> list[BaseMessage]:
        # A prompt built for tool mode asks for a tool call; after a fall-back
        # to JSON mid-call, ask for the JSON shape instead.
        if shape == "json" and _JSON_SHAPE not in str(messages[0].content):
            tail = f"Call {TOOL_NAME} once with all the facts."
            text = str(messages[0].content).replace(tail, _JSON_SHAPE)
            return [SystemMessage(text), *messages[1:]]
        return messages

    # -- the reply ---------------------------------------------------------------

    def decode(self, reply: BaseMessage) -> Any:
        """The facts object from a reply: the ``extract_facts`` tool call's
        arguments, else JSON in the text."""
        if isinstance(reply, AIMessage):
            for tc in reply.tool_calls:
                if tc["name"] == TOOL_NAME:
                    return tc["args"]
            for bad in reply.invalid_tool_calls:
                if bad.get("name") in (TOOL_NAME, None):
                    raise MalformedOutput(f"the tool call's arguments are not valid JSON: {bad}")
        text = reply.text if isinstance(reply.text, str) else str(reply.content)
        return _json_in(text)

    def parse(self, raw: Any) -> tuple[list[FactCandidate], list[str]]:
        """Valid facts and a description of each invalid one.

        Raises:
            MalformedOutput: ``raw`` is not ``{"facts": [...]}`` (or a list).
        """
        if isinstance(raw, dict):
            if "facts" not in raw:
                raise MalformedOutput(f"no 'facts' list in the output: {_short(raw)}")
            raw = raw["facts"]
        if not isinstance(raw, list):
            raise MalformedOutput(f"'facts' must be a list, got {type(raw).__name__}")
        facts: list[FactCandidate] = []
        problems: list[str] = []
        for n, item in enumerate(raw, 1):
            why = _invalid(item)
            if why:
                problems.append(f"fact {n}: {why}")
            else:
                facts.append(
                    FactCandidate(
                        content=item["content"].strip(),
                        category=item["category"].strip().casefold(),
                        confidence=float(item["confidence"]),
                        subject=item.get("subject"),
                        predicate=item.get("predicate"),
                        replaces=item.get("replaces"),
                    )
                )
        return facts, problems


def _invalid(item: Any) -> str | None:
    """Why one extracted fact is unusable, or None."""
    if not isinstance(item, dict):
        return f"must be an object, got {type(item).__name__} {_short(item)}"
    content, category, conf = item.get("content"), item.get("category"), item.get("confidence")
    if not isinstance(content, str) or not content.strip():
        return f"content must be a non-empty string, got {_short(content)}"
    allowed = policy.FACT_CATEGORIES
    if not isinstance(category, str) or category.strip().casefold() not in allowed:
        return f"unknown category {_short(category)}; use one of {', '.join(allowed)}"
    if isinstance(conf, bool) or not isinstance(conf, int | float):
        return f"confidence must be a number from 0 to 1, got {_short(conf)}"
    if not math.isfinite(conf) or not 0.0 <= conf <= 1.0:
        return f"confidence {conf} is outside 0-1"
    for name in ("subject", "predicate", "replaces"):
        v = item.get(name)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            return f"{name} must be a non-empty string or null, got {_short(v)}"
    return None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _json_in(text: str) -> Any:
    """The JSON value in a reply's text (code fences and chatter around it allowed)."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise MalformedOutput(f"the reply holds no JSON (and no tool call): {_short(text)}")
    try:
        value, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as e:
        raise MalformedOutput(f"invalid JSON in the reply ({e.msg}): {_short(text)}") from e
    return value


def _short(value: Any, n: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."
