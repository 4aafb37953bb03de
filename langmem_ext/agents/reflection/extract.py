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
for good only when the model or server says it cannot call tools
(``NotImplementedError``, or an HTTP 400/404/422/500/501 whose message is about
tools, functions or the response format; see :func:`classify`). A prompt too
long for the model's context raises :class:`ContextOverflow` instead (the
caller sends fewer turns), and any other error is raised as it is (retried
with a backoff by the caller). A reply that ignores the tool and answers in
text is read as JSON too.

The conversation is shown with the assistant's lines marked as context: facts
come from the user's own words. Every call has an output cap
(``max_tokens``) and a time limit (``timeout``), and runs with no callbacks
of its own caller: a graph streamed with ``stream_mode="messages"`` neither
streams the extraction call nor shows its output to the user.

Reading is tolerant and storing strict: a category spelt with another case, a
plural or stray spaces (``" Preferences"``) is read as the allowed category;
any other category is invalid. Validation is per fact: content a non-empty
string, category one of :data:`~langmem_ext.engine.records.policy.FACT_CATEGORIES`,
confidence a number in [0, 1], optional fields strings. Output that is not the
requested object at all raises :class:`MalformedOutput`; invalid facts are
reported as problems (the caller asks again, telling the model what was
wrong, in a few hundred characters at most).

Examples:
    >>> extractor = FactExtractor("openai:gpt-4o-mini")  # resolved at the first call
    >>> facts, problems = extractor.parse({"facts": [
    ...     {"content": "Lives in Berlin", "category": "context", "confidence": 0.9},
    ...     {"content": "Likes jazz", "category": "hobby", "confidence": 0.8}]})
    >>> [f.content for f in facts], problems
    (['Lives in Berlin'], ["fact 2: unknown category 'hobby'; use one of preference, knowledge, context, behavior, goal, correction"])
"""  # noqa: E501

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from ...engine import Fact, FactCandidate, Operation, policy, run_async, run_sync
from ...errors import ConfigurationError
from ...model_calls.calls import (
    ContextOverflow,
    MalformedOutput,
    ModelCalls,
    OnModelCalls,
    Shape,
    classify,
    cut_off,
    decode,
    short,
)
from ...model_calls.usage import TokenUsage
from .screen import cut, examples_in

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT",
    "FEEDBACK_CHARS",
    "TOOL_NAME",
    "ContextOverflow",
    "FactExtractor",
    "MalformedOutput",
    "classify",
    "format_turns",
    "normal_category",
]

logger = logging.getLogger("langmem_ext.agents.reflection")

DEFAULT_MODEL = "openai:gpt-4o-mini"
TOOL_NAME = "extract_facts"
Method = Literal["auto", "tool", "json"]
#: Output cap of one extraction call, in tokens: a few dozen short facts fit,
#: and a model that starts repeating itself is cut off early.
DEFAULT_MAX_TOKENS = 1024
#: Seconds one extraction call may take before it counts as failed.
DEFAULT_TIMEOUT = 120.0
#: What is wrong with an answer is told to the model in at most this many
#: characters (the broken answer itself is never quoted whole).
FEEDBACK_CHARS = 600


def normal_category(value: Any) -> str | None:
    """The allowed category ``value`` spells, reading case, a plural and
    spaces, hyphens or underscores leniently; None for anything else.

    Examples:
        >>> normal_category(" Preferences"), normal_category("GOAL"), normal_category("hobby")
        ('preference', 'goal', None)
    """
    if not isinstance(value, str):
        return None
    word = re.sub(r"[\s_-]+", "", value.casefold())
    allowed = policy.FACT_CATEGORIES
    for candidate in (word, word[:-1] if word.endswith("s") else None):
        if candidate in allowed:
            return candidate
    return None


class _ExtractedFact(BaseModel):
    content: str = Field(
        description="One self-contained fact about the user, in the third person "
        "(e.g. 'Lives in <city>', with the user's own city)."
    )
    category: Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are, 0 to 1.")
    subject: str | None = Field(
        default=None,
        description="What the fact is about: 'user', or 'user.<relative>' for a relative "
        "the user names (e.g. 'user.<relative>').",
    )
    predicate: str | None = Field(
        default=None,
        description="The attribute, e.g. 'home_city'. A later fact with the same subject "
        "and predicate replaces this one.",
    )
    replaces: str | int | None = Field(
        default=None,
        description="The number of the known fact this fact corrects or updates (the "
        "number before it in the list of known facts), else null.",
    )
    object: str | None = Field(
        default=None,
        description="The person, place or organisation the fact relates the subject to "
        "(the city of home_city), else null.",
    )
    when: str | None = Field(
        default=None,
        description="When it started to hold, if the user said so (YYYY-MM-DD, or the "
        "user's words such as 'last month'), else null.",
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
- Facts come from the user's own words only. The assistant's lines are context \
(to understand what the user answers); never record what the assistant said.
- One fact per item, one short sentence, self-contained, third person \
("Lives in <city>", with the user's own words for <city>).
- confidence is 0 to 1: 0.9+ when the user states it plainly, lower when inferred.
- Do not repeat a known fact unless it changed. When a fact updates or corrects a \
known fact (the user moved, changed jobs, changed their mind), set "replaces" to \
the number of that known fact in the list below, else null.
- Give subject and predicate for attributes that have one current value \
(home_city, employer, favorite_color).
- Nothing about the assistant, nothing about this conversation's mechanics.
- Return an empty list when there is nothing worth remembering."""

_JSON_SHAPE = (
    'Answer with one JSON object and nothing else: {"facts": [{"content": str, '
    '"category": str, "confidence": number, "subject": str|null, "predicate": str|null, '
    '"replaces": number|null}]}.'
)


_ROLES = {"human": "user", "ai": "assistant"}
#: How the assistant's lines are labelled in the extraction prompt.
ASSISTANT_LABEL = "assistant (context only, not about the user)"


def format_turns(messages: Sequence[BaseMessage], *, assistant: str = "assistant") -> str:
    """The conversation as ``role: text`` lines (tool traffic left out);
    ``assistant`` is the label of the assistant's lines."""
    lines = []
    for m in messages:
        role = _ROLES.get(m.type)
        text = m.text if isinstance(m.text, str) else str(m.content)
        if role and text.strip():
            lines.append(f"{assistant if role == 'assistant' else role}: {text.strip()}")
    return "\n".join(lines)


def _known(related: Sequence[Fact]) -> str:
    if not related:
        return "Known facts about the user: none yet."
    # Numbered: a small model copies "2" where it garbles a long id; the id
    # is shown too, and either is read back (see reflect's replaces check).
    rows = [
        f"{n}. id={f.id} [{f.category or 'fact'} | {f.confidence:.2f}] {f.content}"
        for n, f in enumerate(related, 1)
    ]
    return "Known facts about the user (numbers for 'replaces'):\n" + "\n".join(rows)


class FactExtractor(OnModelCalls):
    """Extracts facts from conversation turns with a LangChain chat model.

    Args:
        model: a chat model instance, a ``"provider:model"`` string (resolved
            with LangChain's ``init_chat_model`` at the first call), or None for
            :data:`DEFAULT_MODEL` (``ChatOpenAI``; needs ``OPENAI_API_KEY``).
        method: ``"auto"`` (default), ``"tool"`` or ``"json"``; see the module.
        instructions: replaces the default extraction instructions.
        max_tokens: output cap of each call (None: the model's own setting).
            Sent as ``max_tokens`` to OpenAI-compatible models (also in the
            request body for servers other than OpenAI's) and to models with
            a ``max_tokens`` field.
        timeout: seconds each call may take (None: no limit). Also sent to
            OpenAI-compatible clients, so the HTTP request itself is dropped.

    Attributes:
        calls: model calls made so far (failed calls included).
        method_in_use: the call shape the next call will use.

    Examples:
        >>> extractor = FactExtractor("openai:gpt-4o-mini", max_tokens=512, timeout=30)
        >>> extractor.max_tokens, extractor.timeout, extractor.method_in_use
        (512, 30.0, 'tool')
    """

    def __init__(
        self,
        model: BaseChatModel | str | None = None,
        *,
        method: Method = "auto",
        instructions: str = INSTRUCTIONS,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if method not in ("auto", "tool", "json"):
            raise ConfigurationError(f"unknown method {method!r}; use 'auto', 'tool' or 'json'")
        if model is not None and not isinstance(model, str | BaseChatModel):
            raise TypeError(
                f"model must be a chat model, a 'provider:model' string or None, got {model!r}"
            )
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise ConfigurationError(
                f"max_tokens must be a positive integer or None, got {max_tokens!r}"
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ConfigurationError(
                f"timeout must be a number of seconds > 0 or None, got {timeout!r}"
            )
        self.method = method
        self.instructions = instructions
        self._calls = ModelCalls(
            model if model is not None else DEFAULT_MODEL,
            method=method,
            shapes=("tool", "json"),
            max_tokens=max_tokens,
            timeout=float(timeout) if timeout is not None else None,
            name=TOOL_NAME,
            purpose="reflection",
        )

    @functools.cached_property
    def examples(self) -> frozenset[str]:
        """The example texts of this extractor's prompt and schema: a fact equal
        to one is the model copying the request (screened out)."""
        return examples_in(self.instructions, json.dumps(_tool_schema()), _JSON_SHAPE)

    @property
    def method_in_use(self) -> Shape:
        """The call shape the next call uses."""
        return self._calls.shape

    # -- the request ------------------------------------------------------------

    def prompt(
        self,
        turns: Sequence[BaseMessage],
        related: Sequence[Fact] = (),
        feedback: str | None = None,
        *,
        max_facts: int | None = None,
    ) -> list[BaseMessage]:
        """The messages sent to the model for one turn.

        Args:
            turns: the conversation to read.
            related: known facts the model may update (shown with their ids).
            feedback: what was wrong with the previous answer (cut to
                :data:`FEEDBACK_CHARS` characters).
            max_facts: ask for at most this many facts (after an answer was
                cut off at the output cap).
        """
        system = f"{self.instructions}\n\n{_known(related)}"
        if self.method_in_use == "json":
            system += f"\n\n{_JSON_SHAPE}"
        else:
            system += f"\n\nCall {TOOL_NAME} once with all the facts."
        user = (
            "Conversation (facts come from the user's lines; the assistant's lines are "
            f"context only):\n{format_turns(turns, assistant=ASSISTANT_LABEL)}"
        )
        if feedback:
            user += (
                f"\n\nYour previous answer was invalid: {cut(feedback, FEEDBACK_CHARS)}\n"
                "Answer again with valid facts only."
            )
        if max_facts is not None:
            user += (
                f"\n\nGive at most {max_facts} facts, the most important ones, each a few "
                "words long."
            )
        return [SystemMessage(system), HumanMessage(user)]

    def request(
        self, messages: list[BaseMessage], usage: TokenUsage | None = None
    ) -> Operation[tuple[BaseMessage, int]]:
        """Send the prompt, as an operation; returns the reply and the number
        of model calls made (2 when tool calling was rejected and
        ``method="auto"`` fell back); the tokens are added to ``usage`` too.

        Raises:
            ContextOverflow: the prompt is too long for the model.
            TimeoutError: the call took longer than ``timeout``.
        """
        return (
            yield from self._calls.ask(
                _tool_schema(), lambda shape: self._reshaped(messages, shape), usage
            )
        )

    def invoke(self, messages: list[BaseMessage]) -> tuple[BaseMessage, int]:
        """:meth:`request`, run here."""
        return run_sync(self.request(messages), None)  # type: ignore[arg-type]

    async def ainvoke(self, messages: list[BaseMessage]) -> tuple[BaseMessage, int]:
        """Async :meth:`invoke`."""
        return await run_async(self.request(messages), None)  # type: ignore[arg-type]

    def _reshaped(self, messages: list[BaseMessage], shape: str) -> list[BaseMessage]:
        # A prompt built for tool mode asks for a tool call; after a fall-back
        # to JSON mid-call, ask for the JSON shape instead.
        if shape == "json" and _JSON_SHAPE not in str(messages[0].content):
            tail = f"Call {TOOL_NAME} once with all the facts."
            text = str(messages[0].content).replace(tail, _JSON_SHAPE)
            return [SystemMessage(text), *messages[1:]]
        return messages

    # -- the reply ---------------------------------------------------------------

    def truncated(self, reply: BaseMessage) -> bool:
        """Whether the reply was cut off at the output cap (see :func:`.calls.cut_off`)."""
        return cut_off(reply, self.max_tokens, TOOL_NAME)

    def decode(self, reply: BaseMessage) -> Any:
        """The facts object from a reply: the ``extract_facts`` tool call's
        arguments, else JSON in the text.

        Raises:
            MalformedOutput: no usable object (its message quotes at most a
                short excerpt of the reply; ``truncated`` when it was cut off).
        """
        return decode(reply, TOOL_NAME, max_tokens=self.max_tokens)

    def parse(self, raw: Any) -> tuple[list[FactCandidate], list[str]]:
        """Valid facts and a description of each invalid one.

        Raises:
            MalformedOutput: ``raw`` is not ``{"facts": [...]}`` (or a list).
        """
        if isinstance(raw, dict):
            if "facts" not in raw:
                raise MalformedOutput(f"no 'facts' list in the output: {short(raw)}")
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
                        category=normal_category(item["category"]) or "",
                        confidence=float(item["confidence"]),
                        subject=item.get("subject"),
                        predicate=item.get("predicate"),
                        replaces=(
                            str(item["replaces"]) if item.get("replaces") is not None else None
                        ),
                        object=_text(item.get("object")),
                        when=_model_when(item.get("when")),
                    )
                )
        return facts, problems


def _text(value: Any) -> str | None:
    """Optional text a model may give (anything else is left out)."""
    if isinstance(value, str) and value.strip() and value.strip().casefold() != "null":
        return value.strip()[:200]
    return None


def _model_when(value: Any) -> dict[str, Any] | None:
    """The model's date of a fact, kept for reflection to weigh against the
    user's words (anything but text is ignored: dates are optional)."""
    if isinstance(value, str) and value.strip() and value.strip().casefold() != "null":
        return {"model": value.strip()[:100]}
    return None


def _invalid(item: Any) -> str | None:
    """Why one extracted fact is unusable, or None."""
    if not isinstance(item, dict):
        return f"must be an object, got {type(item).__name__} {short(item)}"
    content, category, conf = item.get("content"), item.get("category"), item.get("confidence")
    if not isinstance(content, str) or not content.strip():
        return f"content must be a non-empty string, got {short(content)}"
    allowed = policy.FACT_CATEGORIES
    if normal_category(category) is None:
        return f"unknown category {short(category)}; use one of {', '.join(allowed)}"
    if isinstance(conf, bool) or not isinstance(conf, int | float):
        return f"confidence must be a number from 0 to 1, got {short(conf)}"
    if not math.isfinite(conf) or not 0.0 <= conf <= 1.0:
        return f"confidence {conf} is outside 0-1"
    for name in ("subject", "predicate", "replaces"):
        v = item.get(name)
        if name == "replaces" and isinstance(v, int) and not isinstance(v, bool):
            continue  # a known fact's number
        if v is not None and (not isinstance(v, str) or not v.strip()):
            return f"{name} must be a non-empty string or null, got {short(v)}"
    return None
