"""Reflection: facts extracted from conversations in the background, and
memory given back to the model within a token budget.

* :class:`FactExtractor` — one chat-model call per turn, validated (:mod:`.extract`);
* :class:`ReflectionExecutor` — debounced background reflection, a graph node
  and ``create_agent`` middleware (:mod:`.executor`);
* :func:`format_profile`, :func:`memory_context` — the profile and
  context blocks (:mod:`.context`); :class:`MemoryPrompt` puts them into the system
  prompt (:mod:`langmem_ext.agents.middleware`);
* :func:`resolve_when`, :func:`turn_time`, :func:`reconcile` — when a fact held,
  read from the user's words against the turn's own time (:mod:`.when`);
* :class:`TokenUsage`, :func:`instrument_models` — what every model call of
  the package costs, in its results and the ``memory.llm.tokens`` metric (:mod:`.usage`).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
    >>> _ = engine.store_rule(ctx, "Always confirm before sending messages")
    >>> print(memory_context(engine, ctx, "send a message", "general"))
    # Memory
    ## Facts
    - (none)
    ## Rules
    - [candidate | 0.80] Always confirm before sending messages
    ## Recent episodes
    - (none)
"""

from ...model_calls.tokens import token_counter
from ...model_calls.usage import TokenUsage, instrument_models
from .context import DEFAULT_QUOTAS, amemory_context, format_profile, memory_context
from .executor import ReflectionExecutor, ReflectionFailure
from .extract import FactExtractor, MalformedOutput
from .reflect import ReflectionResult, ReflectionSettings
from .when import When, reconcile, resolve_when, turn_time

__all__ = [
    "DEFAULT_QUOTAS",
    "FactExtractor",
    "MalformedOutput",
    "ReflectionExecutor",
    "ReflectionFailure",
    "ReflectionResult",
    "ReflectionSettings",
    "TokenUsage",
    "When",
    "amemory_context",
    "format_profile",
    "instrument_models",
    "memory_context",
    "reconcile",
    "resolve_when",
    "token_counter",
    "turn_time",
]
