"""Asking the model for the facts of one window of turns, as an operation.

The model is asked up to ``attempts`` times: after an exception it waits
``backoff * 2**n`` seconds; after an invalid answer it asks again at once,
telling the model briefly what was wrong; after an answer cut off at the
output cap it asks for fewer, shorter facts. The valid facts of the best
answer (the most facts that survive screening) are returned and the rest is
logged; if no usable answer came at all,
:class:`~langmem_ext.errors.ExtractionError` is raised.

The facts of an answer are screened (:mod:`.screen`, by meaning with the
settings' embedder: :mod:`.meaning`): copies of the assistant's words, text
the user pasted, small talk, questions, paragraphs and repeats are dropped
and logged. When screening drops every fact of an answer as the assistant's
or the pasted text's (copies, its questions, paragraphs) while the user said
something that could be a fact, the model is asked once more with the user's
own lines alone (pasted text left out); there a fact less than half made of
the user's words, and restating none of the user's statements in meaning,
is the model answering the user, and is dropped.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.agents.reflection.settings import ReflectionResult, ReflectionSettings
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> from langmem_ext.engine import run_sync
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> model = ScriptedExtractionModel([[("Berlin is the capital of Germany", "context", 0.9)],
    ...                                  [("Lives in Berlin", "context", 0.9)]])
    >>> turn = [HumanMessage("I live in Berlin", id="h1"),
    ...         AIMessage("Berlin is the capital of Germany.", id="a1")]
    >>> result = ReflectionResult("t1")
    >>> steps = ask_steps(engine.env(ctx), FactExtractor(model), turn, [],
    ...                   ReflectionSettings(), result)
    >>> [f.content for f in run_sync(steps, engine.store)], result.model_calls
    (['Lives in Berlin'], 2)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.messages import BaseMessage

from ...engine import Call, Env, Fact, FactCandidate, Operation
from ...errors import ExtractionError
from .extract import ContextOverflow, FactExtractor, MalformedOutput
from .meaning import (
    Meaning,
    meaning_call,
    screen_embedder,
    split_user_text,
    statement_part,
    texts_of,
    turn_text,
)
from .screen import DroppedFact, cut, screen, user_statements
from .settings import ReflectionResult, ReflectionSettings

__all__ = ["FACTS_AFTER_CUTOFF", "ask_steps", "meaning_steps"]

logger = logging.getLogger("langmem_ext.agents.reflection")

#: Facts asked for after an answer was cut off at the output cap (halved
#: again after each further cut-off).
FACTS_AFTER_CUTOFF = 5

#: What screening says of a fact the model took from the wrong lines.
_MISREAD = frozenset({"assistant_copy", "pasted_text", "not_from_user", "too_long"})


def _sleep(env: Env, seconds: float) -> Call:
    return Call(lambda: env.config.sleep(seconds), lambda: asyncio.sleep(seconds))


def meaning_steps(embedder: Any, texts: list[str]) -> Operation[Meaning | None]:
    """The :class:`~.meaning.Meaning` of ``texts``, None without an embedder
    or when it fails (screening then compares words; logged)."""
    if embedder is None or not texts:
        return None
    try:
        meaning: Meaning = yield meaning_call(embedder, texts)
    except Exception as e:
        logger.warning("screening compares words only: the embedder failed: %s", cut(repr(e)))
        return None
    return meaning


def _own_lines(turns: list[BaseMessage]) -> list[BaseMessage]:
    """The user's messages of ``turns`` with pasted text left out."""
    out = []
    for m in turns:
        if m.type != "human":
            continue
        text = m.text if isinstance(m.text, str) else str(m.content)
        own, pasted = split_user_text(text)
        out.append(m.model_copy(update={"content": " ".join(own)}) if pasted else m)
    return out


def ask_steps(
    env: Env,
    extractor: FactExtractor,
    turns: list[BaseMessage],
    related: list[Fact],
    settings: ReflectionSettings,
    result: ReflectionResult,
) -> Operation[list[FactCandidate]]:
    """The screened facts of ``turns``, asking again on errors, invalid and
    cut-off answers.

    Raises:
        ContextOverflow: the prompt is too long for the model (not retried:
            the caller sends fewer turns).
    """
    feedback: str | None = None
    max_facts: int | None = None
    last: Exception | None = None
    # (facts kept after screening, their problems, what screening dropped)
    best: tuple[list[FactCandidate], list[str], list[DroppedFact]] | None = None
    tid = result.thread_id
    tried = 0
    shown_turns = turns
    embedder = screen_embedder(settings.embeddings)
    parts = turn_text(turns)
    for attempt in range(settings.attempts):
        tried = attempt + 1
        prompt = extractor.prompt(shown_turns, related, feedback, max_facts=max_facts)
        try:
            reply, made = yield from extractor.request(prompt, result.tokens)
        except ContextOverflow:
            result.model_calls += 1
            raise
        except Exception as e:
            result.model_calls += 1
            logger.warning(
                "thread %s: extraction call failed (attempt %d/%d): %s",
                tid,
                attempt + 1,
                settings.attempts,
                cut(repr(e)),
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
                "thread %s: %s extraction output (attempt %d/%d): %s",
                tid,
                "cut-off" if e.truncated else "malformed",
                attempt + 1,
                settings.attempts,
                cut(str(e)),
            )
            last = e
            if e.truncated:
                # The same request would be cut off at the same place.
                max_facts = FACTS_AFTER_CUTOFF if max_facts is None else max(1, max_facts // 2)
                feedback = "your answer was cut off at the output limit before it was complete"
            else:
                feedback = str(e)
            continue
        meaning = yield from meaning_steps(
            embedder,
            texts_of(parts, [f.content for f in facts], [statement_part(f.content) for f in facts]),
        )
        kept, dropped = screen(
            facts,
            turns,
            thread_id=tid,
            examples=extractor.examples,
            feedback=feedback,
            users_lines_only=shown_turns is not turns,
            meaning=meaning,
        )
        if best is None or len(kept) > len(best[0]):
            best = (kept, problems, dropped)
        if (
            not kept
            and shown_turns is turns
            and any(d.reason in _MISREAD for d in dropped)
            and user_statements(turns, meaning)
        ):
            # A small model that files only the assistant's sentences (its
            # questions and paragraphs too) has read them as the user's; shown
            # the user's lines alone it finds the user's facts. Asked once, and
            # only then, so other turns keep one call.
            logger.info(
                "thread %s: every fact was the assistant's or pasted text; "
                "asking again with the user's lines only",
                tid,
            )
            shown_turns = _own_lines(turns)
            feedback = None
            continue
        if not problems:
            break
        for p in problems[:5]:
            logger.warning("thread %s: invalid extracted %s", tid, cut(p))
        feedback = "; ".join(problems)
    if best is not None:
        facts, problems, dropped = best
        result.dropped += dropped
        if problems:
            result.invalid += problems
            logger.warning(
                "thread %s: kept %d valid facts of the best answer, dropped %d invalid ones "
                "after %d attempts",
                tid,
                len(facts),
                len(problems),
                tried,
            )
        return facts
    raise ExtractionError(
        f"fact extraction failed {settings.attempts} times for thread {tid!r}: "
        f"{cut(repr(last))}; the turn stays pending and is reflected again with the "
        "thread's next turn",
        thread_id=tid,
        attempts=settings.attempts,
    )
