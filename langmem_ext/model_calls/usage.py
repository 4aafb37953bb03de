"""What model calls cost: input and output tokens, by purpose.

Every chat-model call the package makes (reflection's extraction, the
LangMem-style managers and the store manager's queries, summarization, the
prompt optimizers, the chat re-ranker, the LoCoMo harness's answers and
grades) runs with a :class:`UsageRecorder` among its callbacks. The recorder
reads each call's ``usage_metadata`` (what the server reported) and

* adds it to the OpenTelemetry counter ``memory.llm.tokens`` (attributes
  ``purpose``, ``model``, ``direction`` = ``input``/``output``, and
  ``estimated``), on the global ``MeterProvider`` unless
  :func:`instrument_models` chose another;
* keeps the totals in a :class:`TokenUsage`, which the caller hands on
  (``ReflectionResult.tokens``, a manager result's ``usage``).

A server that reports no usage (some local servers, scripted test models)
gets an **estimate**: the ``cl100k_base`` count of the text sent (messages,
tool schemas) and received (text, tool-call arguments), plus
:data:`MESSAGE_OVERHEAD` tokens per message for the chat template. Another
model's tokenizer counts differently (often 10-30 %); an estimated call is
marked (``estimated=True`` on the metric, ``estimated_calls`` in the totals).

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> recorder = UsageRecorder("answer")
    >>> reply = ScriptedExtractionModel([AIMessage("Tea")]).invoke(
    ...     [HumanMessage("What does Ada drink?")], {"callbacks": [recorder]})
    >>> recorder.usage.input_tokens, recorder.usage.output_tokens, recorder.usage.estimated_calls
    (9, 2, 1)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config
from opentelemetry import metrics as otel

from .tokens import token_counter

__all__ = [
    "MESSAGE_OVERHEAD",
    "TOKENS_METRIC",
    "TokenMetrics",
    "TokenUsage",
    "UsageRecorder",
    "WithUsage",
    "estimate_input",
    "estimate_output",
    "instrument_models",
    "recorded",
]

#: The metric every model call adds its tokens to.
TOKENS_METRIC = "memory.llm.tokens"
#: Tokens an estimate adds per message for the chat template around it (as
#: OpenAI documents for its chat models: a few tokens of role and separators).
MESSAGE_OVERHEAD = 4


@dataclass
class TokenUsage:
    """Tokens of some model calls: ``input_tokens`` sent, ``output_tokens``
    received, ``calls`` answered, of which ``estimated_calls`` counted by
    estimate (the server reported no usage); ``by_purpose`` splits the same
    totals by what the calls were for.

    Examples:
        >>> a = TokenUsage(10, 2, 1)
        >>> a.add(TokenUsage(5, 1, 1, 1))
        >>> a.input_tokens, a.output_tokens, a.total_tokens, a.calls, a.estimated_calls
        (15, 3, 18, 2, 1)
    """

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    estimated_calls: int = 0
    by_purpose: dict[str, TokenUsage] = field(default_factory=dict, repr=False)

    @property
    def total_tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens

    def add(self, other: TokenUsage) -> None:
        """Add ``other``'s counts (and its split by purpose) to these."""
        self._add_counts(other)
        for purpose, part in other.by_purpose.items():
            self.by_purpose.setdefault(purpose, TokenUsage())._add_counts(part)

    def count(
        self, purpose: str, input_tokens: int, output_tokens: int, *, estimated: bool
    ) -> None:
        """Add one call of ``purpose``."""
        one = TokenUsage(input_tokens, output_tokens, 1, int(estimated))
        self._add_counts(one)
        self.by_purpose.setdefault(purpose, TokenUsage())._add_counts(one)

    def _add_counts(self, other: TokenUsage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls
        self.estimated_calls += other.estimated_calls

    def to_dict(self) -> dict[str, Any]:
        """The counts as plain data (``by_purpose`` nested the same way)."""
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": self.calls,
            "estimated_calls": self.estimated_calls,
        }
        if self.by_purpose:
            out["by_purpose"] = {p: u.to_dict() for p, u in sorted(self.by_purpose.items())}
        return out


class WithUsage(list):
    """A list that also carries the :class:`TokenUsage` of the run that made
    it: a manager's result keeps LangMem's shape (a list) and tells its cost.

    Examples:
        >>> out = WithUsage(["a"], TokenUsage(3, 1, 1))
        >>> out == ["a"], out.usage.total_tokens
        (True, 4)
    """

    def __init__(self, items: Sequence[Any] = (), usage: TokenUsage | None = None) -> None:
        super().__init__(items)
        self.usage = usage if usage is not None else TokenUsage()

    def __reduce__(self) -> Any:
        return (WithUsage, (list(self), self.usage))


class TokenMetrics:
    """The ``memory.llm.tokens`` counter, from one meter (the global provider by default)."""

    def __init__(self, meter_provider: Any = None) -> None:
        meter = otel.get_meter("langmem_ext.models", meter_provider=meter_provider)
        self.tokens = meter.create_counter(
            TOKENS_METRIC, "{token}", "Tokens sent to and received from chat models, by purpose"
        )

    def record(
        self, purpose: str, model: str, input_tokens: int, output_tokens: int, estimated: bool
    ) -> None:
        for direction, n in (("input", input_tokens), ("output", output_tokens)):
            attrs: dict[str, str | bool] = {
                "purpose": purpose,
                "model": model,
                "direction": direction,
                "estimated": estimated,
            }
            self.tokens.add(n, attrs)


_shared: TokenMetrics | None = None
_shared_lock = threading.Lock()


def _metrics() -> TokenMetrics:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TokenMetrics()
        return _shared


def instrument_models(meter_provider: Any) -> TokenMetrics:
    """Record every model call's tokens to ``meter_provider`` from now on
    (instead of the global provider; None: back to the global one).

    Examples:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> _ = instrument_models(MeterProvider())
        >>> _ = instrument_models(None)  # back to the global provider
    """
    global _shared
    with _shared_lock:
        _shared = TokenMetrics(meter_provider)
        return _shared


# -- estimates -------------------------------------------------------------------------------


def _text(message: BaseMessage) -> str:
    content = message.content
    parts = [content if isinstance(content, str) else json.dumps(content, default=str)]
    for call in getattr(message, "tool_calls", None) or ():
        parts.append(f"{call.get('name', '')} {json.dumps(call.get('args', {}), default=str)}")
    return "\n".join(p for p in parts if p)


def estimate_input(messages: Sequence[BaseMessage], tools: Any = None) -> int:
    """The estimated input tokens of ``messages`` (and the ``tools`` schemas
    sent beside them): see the module.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> estimate_input([HumanMessage("What does Ada drink?")])  # 5 tokens + 4 per message
        9
    """
    count = token_counter()
    n = sum(count(_text(m)) + MESSAGE_OVERHEAD for m in messages)
    if tools:
        n += count(json.dumps(tools, default=str))
    return n


def estimate_output(message: Any) -> int:
    """The estimated output tokens of a reply (its text and tool-call arguments)."""
    if isinstance(message, BaseMessage):
        return token_counter()(_text(message))
    return token_counter()(str(message or ""))


def _model_name(
    serialized: dict[str, Any] | None, params: dict[str, Any], meta: dict[str, Any]
) -> str:
    for value in (
        meta.get("ls_model_name"),
        params.get("model_name"),
        params.get("model"),
        params.get("_type"),
        (serialized or {}).get("name"),
    ):
        if isinstance(value, str) and value:
            return value
    return "unknown"


class UsageRecorder(BaseCallbackHandler):
    """A LangChain callback that counts the tokens of every chat-model call
    of the run it is given to (nested calls included: trustcall's repairs,
    a graph's model nodes), records them to ``memory.llm.tokens`` and keeps
    the totals in :attr:`usage` (see the module).

    Args:
        purpose: what the calls are for (``reflection``, ``memory_manager``,
            ``answer``, ...): the metric's ``purpose`` attribute.
    """

    # Called in the caller's thread and loop, so the totals are complete when
    # the call returns.
    run_inline = True
    raise_error = False

    def __init__(self, purpose: str) -> None:
        self.purpose = purpose
        self.usage = TokenUsage()
        self._started: dict[UUID, tuple[str, int]] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        model = _model_name(serialized, params, metadata or {})
        sent = estimate_input(messages[0] if messages else [], params.get("tools"))
        with self._lock:
            self._started[run_id] = (model, sent)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            model, sent = self._started.pop(run_id, ("unknown", 0))
        generation = (
            response.generations[0][0] if response.generations and response.generations[0] else None
        )
        message = getattr(generation, "message", None)
        reported = getattr(message, "usage_metadata", None)
        if reported:
            input_tokens = int(reported.get("input_tokens") or 0)
            output_tokens = int(reported.get("output_tokens") or 0)
            estimated = False
        else:
            input_tokens = sent
            output_tokens = estimate_output(
                message if message is not None else getattr(generation, "text", "")
            )
            estimated = True
        with self._lock:
            self.usage.count(self.purpose, input_tokens, output_tokens, estimated=estimated)
        _metrics().record(self.purpose, model, input_tokens, output_tokens, estimated)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        # A failed call reports no usage; what it cost, if anything, is unknown.
        with self._lock:
            self._started.pop(run_id, None)


def recorded(recorder: UsageRecorder, config: RunnableConfig | None = None) -> RunnableConfig:
    """``config`` (default: the running graph's) with ``recorder`` added to
    its callbacks, so a call made with it keeps the caller's callbacks
    (streaming, tracing) and is counted too.

    Examples:
        >>> cfg = recorded(UsageRecorder("summarization"), {"callbacks": []})
        >>> [type(h).__name__ for h in cfg["callbacks"]]
        ['UsageRecorder']
    """
    base = ensure_config(config)
    callbacks = base.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(recorder, inherit=True)
        return {**base, "callbacks": manager}
    return {**base, "callbacks": [*(callbacks or []), recorder]}
