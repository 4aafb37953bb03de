"""Dating extracted facts: when each fact held in the world, read from the
user's own words against the turn's time (:mod:`.when`), the model's date
only as a fallback.

For each fact the date is read from the fact's text ("Moved to Munich last
month"); when the fact states none, from the one clause of the user's words
the fact was most likely taken from: the clause (sentences cut at commas and
"and"-like words) sharing most words of four letters or more with the fact,
when exactly one clause shares the most; when none shares a word (the fact
is in another language than the user's words: "Plays the drums" from "Hace
tres meses empecé a tocar la batería"), the sentence the caller found by
meaning (``sources``). "I'm vegetarian, and yesterday I
went to the cinema" dates the cinema, not being vegetarian. The model's
``when`` is used only when neither states a date; when both do and they
differ, the words win and the disagreement is logged and kept in the fact's
provenance (``provenance["when"]["note"]``).
A date the words place in the future ("I'll move to Lisbon next month") is a
plan: it is kept in the provenance, not as ``valid_at`` (the plan holds now).

Examples:
    >>> from datetime import datetime, timezone
    >>> from langchain_core.messages import HumanMessage
    >>> from langmem_ext.engine import FactCandidate
    >>> said = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)
    >>> turn = [HumanMessage("News: I moved to Munich last month!",
    ...                      additional_kwargs={"timestamp": said.isoformat()})]
    >>> [fact] = dated([FactCandidate("Lives in Munich", "context", 0.9)], turn)
    >>> fact.valid_at[:10], fact.when["phrase"]
    ('2026-02-01', 'last month')
    >>> turn = [HumanMessage("I'm vegetarian, and yesterday I went to the cinema")]
    >>> [veg] = dated([FactCandidate("Is vegetarian", "preference", 0.9)], turn, now=said)
    >>> veg.valid_at is None
    True
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage

from ...engine import FactCandidate
from .when import When, reconcile, resolve_when, turn_time

__all__ = ["dated"]

logger = logging.getLogger("langmem_ext.agents.reflection")

_CLAUSE = re.compile(
    r"(?<=[.!?;:])\s+|\n+|,\s*|\s+(?:and|but|und|aber|y|pero|et|mais|e|ma|en|maar)\s+",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w{4,}")


def dated(
    facts: Sequence[FactCandidate],
    turns: Sequence[BaseMessage],
    *,
    config: Any = None,
    now: datetime | None = None,
    sources: Mapping[str, str] | None = None,
) -> list[FactCandidate]:
    """``facts`` with ``valid_at`` / ``invalid_at`` read from the words (see
    the module docs); the model's date, if it gave one, is ``fact.when["model"]``;
    ``sources``: a fact's content -> the user's sentence it restates, used
    when no clause shares a word with it."""
    reference = turn_time(turns, config, now)
    clauses = [
        c.strip()
        for m in turns
        if m.type == "human" and isinstance(m.content, str)
        for c in _CLAUSE.split(m.content)
        if c.strip()
    ]
    out: list[FactCandidate] = []
    for fact in facts:
        given = (fact.when or {}).get("model")
        parsed = resolve_when(fact.content, reference)
        if parsed is None:
            source = _source_clause(fact.content, clauses)
            if source is None and sources:
                source = sources.get(fact.content)
            parsed = resolve_when(source, reference) if source else None
        when, note = reconcile(parsed, given, reference)
        if note:
            logger.info("date of fact %r: %s", fact.content[:120], note)
        out.append(_with(fact, when, note))
    return out


def _with(fact: FactCandidate, when: When | None, note: str | None) -> FactCandidate:
    model = {"model": fact.when["model"]} if fact.when and fact.when.get("model") else {}
    if when is None:
        return replace(fact, when={**model, "note": note} if note else model or None)
    record: dict[str, Any] = {
        "label": when.label(),
        "phrase": when.phrase,
        "source": when.source,
        **model,
    }
    if note:
        record["note"] = note
    if when.future:  # a plan: it holds now that the user intends it
        return replace(fact, when={**record, "future": True})
    start = when.start.isoformat() if when.start else None
    end = when.end.isoformat() if when.end else None
    if start and end and end < start:
        start = end = None
    return replace(
        fact, when=record, valid_at=fact.valid_at or start, invalid_at=fact.invalid_at or end
    )


def _source_clause(fact: str, clauses: Sequence[str]) -> str | None:
    """The clause sharing most words (four letters or more) with the fact;
    None when none shares one, or two share as many."""
    words = {w.casefold() for w in _WORD.findall(fact)}
    if not words:
        return None
    scored = sorted(
        ((len(words & {w.casefold() for w in _WORD.findall(c)}), c) for c in clauses),
        key=lambda x: -x[0],
    )
    if not scored or scored[0][0] < 1 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return scored[0][1]
