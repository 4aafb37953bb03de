"""The model-call kit: calling a chat model and reading what it says, for
every feature that asks one (reflection's extraction, the LangMem-style
managers and store manager, summarization, the prompt optimizers, the chat
re-ranker).

* :class:`ModelCalls` — one chat model and the call shape it is asked in
  (named tool, JSON, trustcall), with an output cap, a time limit and
  classified failures (:mod:`.calls`);
* :func:`decode`, :func:`cut_off`, :class:`MalformedOutput` — a reply read as
  the requested object, cut-offs recognised (:mod:`.replies`);
* :func:`token_counter` — token counts for prompt budgets, offline (:mod:`.tokens`);
* :class:`TokenUsage`, :class:`UsageRecorder`, :func:`instrument_models` —
  what the calls cost (:mod:`.usage`).

It sits between the engine and the agents: it may use the engine's front
door, and nothing below it imports it.

Examples:
    >>> token_counter()("Prefers dark mode")
    4
    >>> cut("x" * 300, 10)
    'xxxxxxxxxx… [290 more characters]'
"""

from .calls import ContextOverflow, ModelCalls, ModelTimeout, classify, rejects_tool_shape
from .replies import LOG_CHARS, MalformedOutput, cut, cut_off, decode
from .tokens import TokenCounter, token_counter
from .usage import TokenUsage, UsageRecorder, WithUsage, instrument_models, recorded

__all__ = [
    "LOG_CHARS",
    "ContextOverflow",
    "MalformedOutput",
    "ModelCalls",
    "ModelTimeout",
    "TokenCounter",
    "TokenUsage",
    "UsageRecorder",
    "WithUsage",
    "classify",
    "cut",
    "cut_off",
    "decode",
    "instrument_models",
    "recorded",
    "rejects_tool_shape",
    "token_counter",
]
