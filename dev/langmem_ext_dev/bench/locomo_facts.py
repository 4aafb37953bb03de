"""The ``facts`` document set of ``langmem-ext bench locomo``: what reflection stores.

Each conversation goes through the reflection pipeline an application runs,
one thread per session: :class:`~langmem_ext.agents.reflection.ReflectionExecutor`
sends the turns to the extraction model in windows, screens the facts it
answers with, skips duplicates, merges near-duplicates, supersedes replaced
facts and stores the rest in the user's profile. Each question is then asked
with :meth:`~langmem_ext.engine.MemoryEngine.recall`, as an agent's ``recall``
memory tool does (the store's default hybrid search under the recall score).
A recalled fact counts for the dialog turns its provenance names: the messages
of the window it was extracted from, and those of every fact merged into it.

The extraction model is scripted by default (:func:`observation_model`): it
answers each call with LoCoMo's own observations of the dialog turns in that
call's window. The figures then measure the pipeline and the search, not a
model: a real model would write other facts, in other words. Any chat model
can extract instead (``model=``, as ``langmem-ext bench locomo
--reflect-model`` does); a session whose reflection fails is counted and
skipped. The tally counts the tokens the model calls cost (estimated for the
scripted model, which reports none).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryEngine
    >>> from langmem_ext_dev.bench.locomo_data import Conversation, Doc
    >>> said = {"session": 1, "speaker": "Ana"}
    >>> turns = [Doc("D1:1", "Ana: I adopted a kitten", ("D1:1",), said)]
    >>> obs = [Doc("obs-1-0", "Ana adopted a kitten.", ("D1:1",), {"session": 1})]
    >>> engine = MemoryEngine(SQLiteStore())
    >>> tally = reflect_conversation(engine, Conversation("c", turns, obs, []), window=1)
    >>> tally.offered, tally.stored
    (1, 1)
    >>> [fact_turns(h.record) for h in engine.recall(caller("c"), "kitten")]
    [('D1:1',)]
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langmem_ext.agents.reflection import (
    FactExtractor,
    ReflectionExecutor,
    ReflectionResult,
    ReflectionSettings,
)
from langmem_ext.engine import Fact, MemoryContext, MemoryEngine, MemoryRecord
from langmem_ext.errors import LangmemError
from langmem_ext.testing.chat import ScriptedExtractionModel

from .locomo_data import Conversation, Doc

__all__ = [
    "FactTally",
    "caller",
    "fact_turns",
    "observation_model",
    "recall_facts",
    "reflect_conversation",
]

logger = logging.getLogger(__name__)

#: Confidence the scripted model gives every fact (above the default threshold).
CONFIDENCE = 0.95


@dataclass
class FactTally:
    """What reflecting conversations did: ``observations`` in the data,
    ``offered`` facts in the model's answers (an observation of turns in two
    windows is offered twice), ``stored`` new facts, ``active`` at the end;
    ``invalid`` (refused by validation), ``screened`` and ``skipped`` by
    reason; ``merged``: offered facts folded into a near-duplicate already
    stored."""

    observations: int = 0
    offered: int = 0
    stored: int = 0
    active: int = 0
    invalid: int = 0
    screened: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    merged: int = 0
    superseded: int = 0
    removed: int = 0
    model_calls: int = 0
    reflect_seconds: float = 0.0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_calls: int = 0
    failed_sessions: int = 0

    def add(self, other: FactTally) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)

    def absorb(self, result: ReflectionResult) -> None:
        self.stored += len(result.added)
        self.invalid += len(result.invalid)
        self.screened.update(d.reason for d in result.dropped)
        self.skipped.update(s.reason for s in result.skipped)
        self.superseded += len(result.superseded)
        self.removed += len(result.removed)
        self.model_calls += result.model_calls
        self.input_tokens += result.tokens.input_tokens
        self.output_tokens += result.tokens.output_tokens
        self.estimated_calls += result.tokens.estimated_calls

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["screened"], out["skipped"] = dict(self.screened), dict(self.skipped)
        out["reflect_seconds"] = round(self.reflect_seconds, 1)
        return out


def caller(sample_id: str) -> MemoryContext:
    """Whose memory a conversation's facts go to (one user per conversation)."""
    return MemoryContext(user_id=sample_id)


def fact_turns(record: MemoryRecord) -> tuple[str, ...]:
    """The dialog ids a fact came from: its own window's message ids, then
    those of the facts merged into it."""
    if not isinstance(record, Fact):
        return ()
    prov = record.provenance
    sources = [prov, *prov.get("merged", [])]
    return tuple(dict.fromkeys(i for s in sources for i in s.get("message_ids", [])))


def observation_model(
    conv: Conversation, subjects: bool = False
) -> tuple[ScriptedExtractionModel, Counter[str]]:
    """A scripted extraction model for ``conv`` and the count of facts it offered.

    Each call is answered with the observations of every turn whose line the
    prompt's conversation shows (matched by text: message ids do not reach the
    model), as facts of category ``context`` with confidence :data:`CONFIDENCE`;
    ``subjects``: each fact's subject is its speaker (who the observation is
    about), as the extraction prompt asks a model to say.
    """
    line_of = {d.key: f"\nuser: {d.text.strip()}\n" for d in conv.turns}
    about: dict[str, list[Doc]] = {}
    for o in conv.observations:
        for dia in o.dia_ids:
            about.setdefault(dia, []).append(o)
    offered: Counter[str] = Counter()

    def answer(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        # Whole lines only: one turn's text can start another's ("Yes" / "Yes, I did").
        said = str(messages[-1].content).split("Conversation", 1)[-1] + "\n"
        shown = [dia for dia, line in line_of.items() if line in said]
        facts = {o.key: o for dia in shown for o in about.get(dia, [])}
        offered["facts"] += len(facts)
        return [
            {"content": o.text, "category": "context", "confidence": CONFIDENCE}
            | ({"subject": o.meta["speaker"]} if subjects and o.meta.get("speaker") else {})
            for o in facts.values()
        ]

    # One step per call: at most one call per turn, and retries (none expected).
    return ScriptedExtractionModel([answer] * (2 * len(conv.turns) + 10)), offered


def reflect_conversation(
    engine: MemoryEngine,
    conv: Conversation,
    window: int,
    model: BaseChatModel | FactExtractor | None = None,
    *,
    session_dates: bool = False,
    settings: ReflectionSettings | None = None,
    subjects: bool = False,
) -> FactTally:
    """Reflect ``conv`` session by session into :func:`caller`'s memory, at
    most ``window`` turns per model call, with ``model`` (default: the
    scripted :func:`observation_model`). ``session_dates``: each session's
    date is the turn time reflection dates facts from (as an application
    passes it); ``subjects``: see :func:`observation_model`."""
    scripted, offered = observation_model(conv, subjects)
    if isinstance(model, FactExtractor):
        extractor = model
    else:
        extractor = FactExtractor(model if model is not None else scripted)
    tally = FactTally(observations=len(conv.observations))
    ctx = caller(conv.sample_id)
    settings = settings or ReflectionSettings(window=window, backoff=0.0)
    started = time.perf_counter()
    merged = 0
    with ReflectionExecutor(extractor, engine=engine, delay=0, settings=settings) as ex:
        for session, turns in itertools.groupby(conv.turns, key=lambda d: d.meta["session"]):
            # Both speakers are people whose facts matter, so both are the user:
            # reflection reads assistant lines as context only and screens out
            # facts made of their words, which would drop what the second
            # speaker says about themself. The name keeps who spoke.
            said = list(turns)
            messages = [HumanMessage(d.text, id=d.key, name=d.meta["speaker"]) for d in said]
            thread = f"{conv.sample_id}-session-{session}"
            configurable: dict[str, Any] = {"memory_context": ctx, "thread_id": thread}
            if session_dates and said[0].meta.get("date"):
                configurable["session_date"] = said[0].meta["date"]
            config: RunnableConfig = {"configurable": configurable}
            tally.turns += len(said)
            calls_before = ex.usage.calls
            try:
                result = ex.reflect(messages, config)
                tally.absorb(result)
                merged += len(result.merged)
            except LangmemError as e:
                # A real model may fail a session; the rest of the conversation
                # is still reflected (its turns count, their facts are missing).
                tally.failed_sessions += 1
                logger.warning("%s: reflection failed: %s", thread, e)
                tally.model_calls += ex.usage.calls - calls_before
    tally.reflect_seconds = time.perf_counter() - started
    tally.active = len(engine.get_profile(ctx).facts)
    if model is None:
        tally.offered = offered["facts"]
        # What reached the profile and was neither stored nor skipped was merged.
        reached = tally.offered - tally.invalid - sum(tally.screened.values())
        tally.merged = reached - tally.stored - sum(tally.skipped.values())
    else:
        # A model's answers are not seen here: what it offered is what the
        # results account for.
        tally.merged = merged
        tally.offered = (
            tally.stored
            + merged
            + tally.invalid
            + sum(tally.screened.values())
            + sum(tally.skipped.values())
        )
    return tally


def recall_facts(
    engine: MemoryEngine,
    conv: Conversation,
    limit: int,
    scored: Callable[[Any, list[tuple[str, ...]], float], None],
) -> None:
    """Ask every question of ``conv`` with ``engine.recall``; ``scored`` gets
    the question, the recalled facts' dialog ids and the seconds the recall took."""
    ctx = caller(conv.sample_id)
    for q in conv.questions:
        t = time.perf_counter()
        hits = engine.recall(ctx, q.text, limit=limit)
        spent = time.perf_counter() - t
        scored(q, [fact_turns(h.record) for h in hits], spent)
