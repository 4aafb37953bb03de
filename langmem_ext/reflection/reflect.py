"""One reflection: the turns of a thread not yet reflected → profile facts.

Written once as a generator of engine requests (see
:mod:`langmem_ext.engine.requests`); the model call is a ``Call`` request, so
:func:`reflect` and :func:`areflect` share this body.

Per user and thread, a cursor item (the user's ``reflection`` bookkeeping
namespace, key ``thread_id``; see :mod:`langmem_ext.engine.layout`) holds the
id of the last message reflected, so two users on one thread id never share
it. A reflection reads it, takes the messages after it (all of them when
the messages carry no ids), and advances it only after the facts of those
messages are stored. So a turn whose extraction fails stays pending and is
covered by the next reflection of the thread, and a crash between storing and
advancing at worst re-reads a turn whose facts are then skipped as duplicates.

The model is asked up to ``attempts`` times: after an exception it waits
``backoff * 2**n`` seconds; after an invalid answer it asks again at once,
telling the model what was wrong. If the last answer still holds invalid
facts, its valid facts are stored and the others logged; if no usable answer
came at all, :class:`~langmem_ext.errors.ExtractionError` is raised.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> from langmem_ext.engine.requests import run_sync
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> extractor = FactExtractor(ScriptedExtractionModel([[("Has a dog", "context", 0.9)]]))
    >>> turn = [HumanMessage("I adopted a dog", id="h1"), AIMessage("Lovely!", id="a1")]
    >>> steps = reflect_steps(engine.env(ctx), extractor, turn, "t1", ReflectionSettings())
    >>> [f.content for f in run_sync(steps, engine.store).added]
    ['Has a dog']
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.store.base import GetOp, PutOp

from ..engine import policy
from ..engine import profile as pf
from ..engine import recall as rc
from ..engine.checks import shown
from ..engine.env import Env
from ..engine.models import Fact
from ..engine.profile import FactCandidate, ProfileUpdate, SkippedFact
from ..engine.requests import Batch, Call, Operation
from ..errors import ConfigurationError, ExtractionError
from .extract import FactExtractor, MalformedOutput, format_turns

__all__ = ["ReflectionResult", "ReflectionSettings", "reflect_steps"]

logger = logging.getLogger("langmem_ext.reflection")


@dataclass(frozen=True)
class ReflectionSettings:
    """How reflections run.

    Args:
        threshold: facts under this confidence are skipped (seed 004: 0.5).
        max_facts: active facts kept per profile (seed 004: 500).
        attempts: model calls per turn before giving up (the turn stays pending).
        backoff: seconds before the second attempt after a model error; doubles.
        related: how many of the user's facts related to the turn the model sees.
        window: at most this many messages per model call; a longer backlog is
            reflected window by window, oldest first.
    """

    threshold: float = policy.EXTRACTION_THRESHOLD
    max_facts: int = policy.MAX_PROFILE_FACTS
    attempts: int = 3
    backoff: float = 1.0
    related: int = 10
    window: int = 20

    def __post_init__(self) -> None:
        def bad(name: str, want: str) -> ConfigurationError:
            return ConfigurationError(f"{name} must be {want}, got {shown(getattr(self, name))}")

        def number(v: Any) -> bool:
            return isinstance(v, int | float) and not isinstance(v, bool)

        if not number(self.threshold) or not 0.0 <= self.threshold <= 1.0:
            raise bad("threshold", "a number from 0 to 1")
        for name, low in (("max_facts", 1), ("attempts", 1), ("related", 0), ("window", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise bad(name, f"an integer >= {low}")
        if not number(self.backoff) or self.backoff < 0:
            raise bad("backoff", "a number of seconds >= 0")


@dataclass
class ReflectionResult:
    """What one reflection of a thread did."""

    thread_id: str
    messages: int = 0
    model_calls: int = 0
    added: list[Fact] = field(default_factory=list)
    merged: list[Fact] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    skipped: list[SkippedFact] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)

    def absorb(self, update: ProfileUpdate) -> None:
        self.added += update.added
        self.merged += update.merged
        self.superseded += update.superseded
        self.skipped += update.skipped
        self.removed += update.removed


def _pending(messages: Sequence[BaseMessage], cursor: str | None) -> list[BaseMessage]:
    if cursor is None:
        return list(messages)
    for i, m in enumerate(messages):
        if m.id == cursor:
            return list(messages[i + 1 :])
    # The cursor's message is not in this list (a trimmed history, or another
    # list altogether): reflect all of it; duplicates are skipped downstream.
    return list(messages)


def _sleep(env: Env, seconds: float) -> Call:
    return Call(lambda: env.config.sleep(seconds), lambda: asyncio.sleep(seconds))


def _ask(
    env: Env,
    extractor: FactExtractor,
    turns: list[BaseMessage],
    related: list[Fact],
    settings: ReflectionSettings,
    result: ReflectionResult,
) -> Operation[list[FactCandidate]]:
    """The facts of ``turns``, asking again on errors and invalid answers."""
    feedback: str | None = None
    last: Exception | None = None
    best: tuple[list[FactCandidate], list[str]] | None = None
    for attempt in range(settings.attempts):
        prompt = extractor.prompt(turns, related, feedback)
        try:
            reply, made = yield Call(
                functools.partial(extractor.invoke, prompt),
                functools.partial(extractor.ainvoke, prompt),
            )
        except Exception as e:
            result.model_calls += 1
            logger.warning(
                "thread %s: extraction call failed (attempt %d/%d): %r",
                result.thread_id,
                attempt + 1,
                settings.attempts,
                e,
            )
            last = e
            if attempt + 1 < settings.attempts:
                yield _sleep(env, settings.backoff * 2**attempt)
            continue
        result.model_calls += made
        try:
            facts, problems = extractor.parse(extractor.decode(reply))
        except MalformedOutput as e:
            logger.warning(
                "thread %s: malformed extraction output (attempt %d/%d): %s",
                result.thread_id,
                attempt + 1,
                settings.attempts,
                e,
            )
            last, feedback = e, str(e)
            continue
        if not problems:
            return facts
        for p in problems:
            logger.warning("thread %s: invalid extracted %s", result.thread_id, p)
        best, feedback = (facts, problems), "; ".join(problems)
    if best is not None:
        facts, problems = best
        result.invalid += problems
        logger.warning(
            "thread %s: kept %d valid facts, dropped %d invalid ones after %d attempts",
            result.thread_id,
            len(facts),
            len(problems),
            settings.attempts,
        )
        return facts
    raise ExtractionError(
        f"fact extraction failed {settings.attempts} times for thread {result.thread_id!r}: "
        f"{last!r}; the turn stays pending and is reflected again with the thread's next turn",
        thread_id=result.thread_id,
        attempts=settings.attempts,
    )


def _related(env: Env, turns: list[BaseMessage], limit: int) -> Operation[list[Fact]]:
    """The user's active facts most related to the turn (what the model may update)."""
    query = format_turns([m for m in turns if m.type == "human"]) or format_turns(turns)
    if not query.strip() or limit <= 0:
        return []
    hits = yield from rc.search(
        env,
        query[-2000:],
        types=["fact"],
        scope=None,
        mode=None,
        limit=limit,
        min_confidence=None,
        layers=[pf.PROFILE_LAYER],
        tags=None,
        filter=None,
    )
    return [h.record for h in hits if isinstance(h.record, Fact)]


def reflect_steps(
    env: Env,
    extractor: FactExtractor,
    messages: Sequence[BaseMessage],
    thread_id: str,
    settings: ReflectionSettings,
) -> Operation[ReflectionResult]:
    """Reflect the thread's messages after its cursor (see the module docstring)."""
    result = ReflectionResult(thread_id)
    key = thread_id
    cursor_ns = env.meta(env.layer(pf.PROFILE_LAYER), "reflection")
    [item] = yield Batch([GetOp(cursor_ns, key)])
    pending = _pending(messages, item.value.get("last_message_id") if item else None)
    for start in range(0, len(pending), max(1, settings.window)):
        chunk = pending[start : start + max(1, settings.window)]
        result.messages += len(chunk)
        if format_turns(chunk):
            related = yield from _related(env, chunk, settings.related)
            facts = yield from _ask(env, extractor, chunk, related, settings, result)
            provenance: dict[str, Any] = {
                "source": "reflection",
                "thread_id": thread_id,
                "message_ids": [m.id for m in chunk if m.id],
            }
            update = yield from pf.add_facts(
                env,
                facts,
                threshold=settings.threshold,
                max_facts=settings.max_facts,
                provenance=provenance,
            )
            result.absorb(update)
        if chunk[-1].id:
            value = {"last_message_id": chunk[-1].id, "thread_id": thread_id, "at": env.stamp}
            yield Batch([PutOp(cursor_ns, key, value, False)])
    return result
