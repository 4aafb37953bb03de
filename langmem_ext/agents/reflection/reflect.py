"""One reflection: the turns of a thread not yet reflected → profile facts.

Written once as a generator of engine requests (see
:mod:`langmem_ext.engine.runtime.requests`); the model call is a ``Call`` request, so
:func:`reflect` and :func:`areflect` share this body.

Per user and thread, a cursor item (the user's ``reflection`` bookkeeping
namespace, key ``thread_id``; see :mod:`langmem_ext.engine.identity.layout`) holds the
id of the last message reflected, so two users on one thread id never share
it. A reflection reads it, takes the messages after it (all of them when
the messages carry no ids), and advances it only after the facts of those
messages are stored. So a turn whose extraction fails stays pending and is
covered by the next reflection of the thread, and a crash between storing and
advancing at worst re-reads a turn whose facts are then skipped as duplicates.

Pending messages are sent in windows that fit the model's context
(``context_tokens``, counted with ``tokenizer``): the output cap, the
instructions and the known facts are set aside, and the turns take what is
left, oldest first, at most ``window`` messages at a time; a single message
too long for a window is shortened (its start and end kept). Each window's
facts are stored and the cursor moved past it before the next window, so a
long backlog never blocks a thread. When the server still answers that the
prompt is too long (its tokenizer counts more than ours), the window is
halved and the same turns are sent again.

Each window is asked of the model by :func:`.ask.ask_steps` (retries,
screening, the facts of the best answer). A ``replaces`` names a known fact by
its number in the list shown, its id or its text (a small model copies "2"
where it garbles an id); one that names no fact the model was shown is logged
and cleared (the fact is stored as a new one, not guessed).

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> from langmem_ext.engine import run_sync
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> extractor = FactExtractor(ScriptedExtractionModel([[("Has a dog", "context", 0.9)]]))
    >>> turn = [HumanMessage("I adopted a dog", id="h1"), AIMessage("Lovely!", id="a1")]
    >>> steps = reflect_steps(engine.env(ctx), extractor, turn, "t1", ReflectionSettings())
    >>> [f.content for f in run_sync(steps, engine.store).added]
    ['Has a dog']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.store.base import GetOp, PutOp

from ...engine import (
    OPERATIONS,
    PROFILE_LAYER,
    REFLECTION_SOURCE,
    Batch,
    Env,
    Fact,
    FactCandidate,
    Operation,
)
from ...errors import ExtractionError
from ...model_calls.tokens import token_counter
from .ask import ask_steps, meaning_steps
from .dating import dated
from .extract import (
    ASSISTANT_LABEL,
    ContextOverflow,
    FactExtractor,
    _known,
    format_turns,
)
from .meaning import Meaning, screen_embedder, texts_of, turn_text
from .screen import cut, meaning_corrections, named_corrections
from .settings import (
    CONTEXT_MARGIN,
    MIN_TURN_TOKENS,
    TURNS_SHARE,
    ReflectionResult,
    ReflectionSettings,
)

__all__ = ["ReflectionResult", "ReflectionSettings", "reflect_steps"]

logger = logging.getLogger("langmem_ext.agents.reflection")


def _pending(messages: Sequence[BaseMessage], cursor: str | None) -> list[BaseMessage]:
    if cursor is None:
        return list(messages)
    for i, m in enumerate(messages):
        if m.id == cursor:
            return list(messages[i + 1 :])
    # The cursor's message is not in this list (a trimmed history, or another
    # list altogether): reflect all of it; duplicates are skipped downstream.
    return list(messages)


def _related(env: Env, turns: list[BaseMessage], limit: int) -> Operation[list[Fact]]:
    """The user's active facts most related to the turn (what the model may update)."""
    query = format_turns([m for m in turns if m.type == "human"]) or format_turns(turns)
    if not query.strip() or limit <= 0:
        return []
    hits = yield from OPERATIONS["search"].within(
        env, query[-2000:], types=["fact"], mode=None, limit=limit, layers=[PROFILE_LAYER]
    )
    return [h.record for h in hits if isinstance(h.record, Fact)]


class _Budget:
    """Token room for the turns and the known facts of one prompt."""

    def __init__(self, extractor: FactExtractor, settings: ReflectionSettings) -> None:
        self.count = token_counter(settings.tokenizer)
        fixed = self.count("\n".join(str(m.content) for m in extractor.prompt([], [], max_facts=1)))
        room = int(settings.context_tokens * (1 - CONTEXT_MARGIN))
        room -= (extractor.max_tokens or 0) + fixed
        if room < 2 * MIN_TURN_TOKENS:
            raise ExtractionError(
                f"context_tokens={settings.context_tokens} leaves no room for the conversation "
                f"after the instructions ({fixed} tokens) and the output cap "
                f"(max_tokens={extractor.max_tokens}); raise "
                "ReflectionSettings(context_tokens=...) to the model's context size or lower "
                "the extractor's max_tokens"
            )
        self.turns = int(room * TURNS_SHARE)
        self.known = room - self.turns

    def line(self, m: BaseMessage) -> int:
        # the role label and the chat template's few tokens per line
        return self.count(format_turns([m], assistant=ASSISTANT_LABEL)) + 4

    def take(self, pending: list[BaseMessage], window: int) -> list[BaseMessage]:
        """The oldest pending messages that fit the turn budget (at least one,
        shortened when it alone is too long)."""
        chunk: list[BaseMessage] = []
        used = 0
        for m in pending[:window]:
            cost = self.line(m)
            if chunk and used + cost > self.turns:
                break
            if not chunk and cost > self.turns:
                return [self._shortened(m, cost)]
            chunk.append(m)
            used += cost
        return chunk

    def _shortened(self, m: BaseMessage, cost: int) -> BaseMessage:
        text = m.text if isinstance(m.text, str) else str(m.content)
        size = len(text)
        # A first guess from the characters per token, then smaller steps.
        keep = int(size * self.turns / max(1, cost) / 0.8)
        while keep > 0:
            keep = int(keep * 0.8)
            half = keep // 2
            short = f"{text[:half]} […] {text[size - half :]}" if keep else ""
            if self.count(short) + 16 <= self.turns:
                logger.info(
                    "a message of %d characters is too long for the context; "
                    "reflected shortened to %d",
                    size,
                    len(short),
                )
                return m.model_copy(update={"content": short})
        return m.model_copy(update={"content": ""})

    def known_facts(self, related: list[Fact]) -> list[Fact]:
        """The most related facts whose listing fits the known-facts budget."""
        shown = list(related)
        while shown and self.count(_known(shown)) > self.known:
            shown.pop()
        return shown


def reflect_steps(
    env: Env,
    extractor: FactExtractor,
    messages: Sequence[BaseMessage],
    thread_id: str,
    settings: ReflectionSettings,
    config: Any = None,
) -> Operation[ReflectionResult]:
    """Reflect the thread's messages after its cursor (see the module docstring).
    ``config``: the run's config, where a session or thread date may be (the
    time "last month" is read against, when the messages carry none)."""
    result = ReflectionResult(thread_id)
    key = thread_id
    cursor_ns = env.meta(env.layer(PROFILE_LAYER), "reflection")
    [item] = yield Batch([GetOp(cursor_ns, key)])
    pending = _pending(messages, item.value.get("last_message_id") if item else None)
    budget = _Budget(extractor, settings)
    start = 0
    while start < len(pending):
        chunk = budget.take(pending[start:], max(1, settings.window))
        if format_turns(chunk):
            related = yield from _related(env, chunk, settings.related)
            related = budget.known_facts(related)
            try:
                facts = yield from ask_steps(env, extractor, chunk, related, settings, result)
            except ContextOverflow as e:
                if budget.turns // 2 < MIN_TURN_TOKENS:
                    raise ExtractionError(
                        f"the model's context is too small even for {budget.turns} tokens of "
                        f"conversation ({cut(str(e))}); set ReflectionSettings(context_tokens=...) "
                        "to the server's context size",
                        thread_id=thread_id,
                        attempts=result.model_calls,
                    ) from e
                budget.turns //= 2
                budget.known //= 2
                logger.warning(
                    "thread %s: the prompt was too long for the model; sending at most %d "
                    "tokens of conversation",
                    thread_id,
                    budget.turns,
                )
                continue
            facts, meaning = yield from _corrections(
                _checked_replaces(facts, related, result), related, chunk, settings
            )
            facts = dated(
                facts, chunk, config=config, now=env.now, sources=_sources(facts, chunk, meaning)
            )
            provenance: dict[str, Any] = {
                # Marks the facts the profile cap may archive (never the user's own).
                "source": REFLECTION_SOURCE,
                "thread_id": thread_id,
                "message_ids": [m.id for m in chunk if m.id],
            }
            update = yield from OPERATIONS["add_facts"].within(
                env,
                facts,
                threshold=settings.threshold,
                max_facts=settings.max_facts,
                provenance=provenance,
            )
            result.absorb(update)
        result.messages += len(chunk)
        start += len(chunk)
        if chunk[-1].id:
            value = {"last_message_id": chunk[-1].id, "thread_id": thread_id, "at": env.stamp}
            yield Batch([PutOp(cursor_ns, key, value, False)])
    return result


def _corrections(
    facts: list[FactCandidate],
    shown: list[Fact],
    turns: list[BaseMessage],
    settings: ReflectionSettings,
) -> Operation[tuple[list[FactCandidate], Meaning | None]]:
    """Corrections tied to the known facts they replace: by meaning with the
    settings' embedder (:func:`.screen.meaning_corrections`), else by the
    user's words (:func:`.screen.named_corrections`); and the meaning of the
    facts and the turn (for dating)."""
    if not facts:
        return facts, None
    part = turn_text(turns)
    texts = texts_of(part, (f.content for f in facts), (k.content for k in shown))
    meaning = yield from meaning_steps(screen_embedder(settings.embeddings), texts)
    if not shown:
        return facts, meaning
    if meaning is None:
        return named_corrections(facts, shown, turns), None
    return meaning_corrections(facts, shown, turns, meaning), meaning


def _sources(
    facts: list[FactCandidate], turns: list[BaseMessage], meaning: Meaning | None
) -> dict[str, str]:
    """Each fact's content -> the user's statement it restates in meaning."""
    if meaning is None:
        return {}
    part = turn_text(turns)
    found = {f.content: meaning.restated(f.content, part) for f in facts}
    return {k: v for k, v in found.items() if v}


def _shown_fact(value: str, shown: list[Fact]) -> str | None:
    """The id of the shown fact ``value`` names: its id, its number in the
    list (``"2"``, ``"[2]"``, ``"#2"``) or its text; None for anything else."""
    by_id = {f.id: f for f in shown}
    if value in by_id:
        return value
    number = value.strip().strip("[]#.() ")
    if number.isdigit() and 1 <= int(number) <= len(shown):
        return shown[int(number) - 1].id
    folded = " ".join(value.casefold().split()).rstrip(".")
    same = [f.id for f in shown if " ".join(f.content.casefold().split()).rstrip(".") == folded]
    return same[0] if len(same) == 1 else None


def _checked_replaces(
    facts: list[FactCandidate], shown: list[Fact], result: ReflectionResult
) -> list[FactCandidate]:
    """``replaces`` kept only when it names a fact the model was shown (by id,
    number or text; the evidence the profile needs to supersede it)."""
    out = []
    for f in facts:
        if f.replaces is None:
            out.append(f)
            continue
        fid = _shown_fact(f.replaces, shown)
        if fid is None:
            logger.warning(
                "thread %s: extracted fact %r replaces %r, which is no known fact; "
                "stored as a new fact",
                result.thread_id,
                cut(f.content),
                cut(f.replaces, 60),
            )
            result.unknown_replaces.append(f.replaces)
        out.append(replace(f, replaces=fid))
    return out
