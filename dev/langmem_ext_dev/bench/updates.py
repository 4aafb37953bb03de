"""A generated knowledge-update benchmark, judge-free: does memory keep the
newest value of an attribute, reach it through a relation, and answer for a
past date?

A user tells the assistant, over dated turns, about ``people`` relatives and
friends ("My sister Clara has lived in Lisbon since May 2019."), each of whom
then moves ``updates - 1`` more times ("Clara moved to Porto last month.",
said early the next month), and, after the last move, looks back at the first
home ("Clara lived in Lisbon from May 2019 to March 2020"): a statement that
is newer than the current home but no longer holds. Every turn is reflected by the engine with a
scripted extraction model (no network, no judge); the dates come from the
words, read against the turn's time, as reflection always does:

* ``oracle`` answers like a model that names the subject, the attribute and
  the place of each fact (``subject="my sister Clara"``, ``predicate="lives_in"``,
  ``object="Lisbon"``), as the extraction prompt asks;
* ``naive`` stores each statement as a fact of its own (content only), as a
  memory without slots or entities would.

Then three kinds of question, each with one exact answer (a city):

* **current** (single-hop): "Where does Clara live now?";
* **relation** (two-hop): "Where does Ada's sister live?" (the person is named
  only through the relation);
* **as-of**: "Where did Clara live on <date>?", recalled ``as_of`` that date
  (a date between two moves).

The answer is the first city named by the top recalled memories (recall limit
``k``, 5 by default): right when it is the expected one. Accuracy per kind and
extractor is printed and written to ``updates.json``.

At most one person per relation word (8): "Ada's sister" must name one person.

Examples:
    >>> result = run_updates(UpdatesConfig(people=2, updates=3, seed=1))
    >>> result["oracle"]["current"]["accuracy"], result["questions"]["current"]
    (1.0, 2)
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langmem_ext import SQLiteStore
from langmem_ext.agents.reflection.extract import FactExtractor
from langmem_ext.agents.reflection.reflect import reflect_steps
from langmem_ext.agents.reflection.settings import ReflectionSettings
from langmem_ext.engine import MemoryContext, MemoryEngine, run_sync
from langmem_ext.testing.chat import ScriptedExtractionModel, facts_call

__all__ = ["EXTRACTORS", "UpdatesConfig", "run_updates", "write_outputs"]

RELATIONS = ("sister", "brother", "friend", "cousin", "colleague", "neighbour", "aunt", "uncle")
NAMES = (
    "Clara", "Tomas", "Ines", "Mateo", "Yara", "Jonas", "Lea", "Omar", "Noor", "Elif",
    "Bruno", "Sofia", "Kenji", "Amara", "Pavel", "Lucia", "Hugo", "Mira", "Felix", "Zoe",
)  # fmt: skip
CITIES = (
    "Lisbon", "Porto", "Madrid", "Seville", "Lyon", "Turin", "Krakow", "Ghent", "Malmo",
    "Bergen", "Tallinn", "Riga", "Graz", "Basel", "Bologna", "Leipzig", "Utrecht", "Aarhus",
    "Brno", "Split", "Cork", "Galway", "Nantes", "Bilbao", "Valencia", "Munich", "Vienna",
)  # fmt: skip
EXTRACTORS = ("oracle", "naive")
USER = "ada"


@dataclass
class UpdatesConfig:
    """One run: ``people`` relatives, ``updates`` places each (the first is
    where they lived when first mentioned), recall limit ``k``."""

    people: int = 20
    updates: int = 5
    k: int = 5
    seed: int = 0
    embed: str | None = None  # None: keyword search only; "local": the offline embedder
    extractors: tuple[str, ...] = EXTRACTORS


@dataclass
class Move:
    who: int
    city: str
    at: datetime
    first: bool
    #: A look back at a past home, said after the last move ("lived in ... from ... to ...").
    until: datetime | None = None


def _month(start: datetime, months: int) -> datetime:
    total = start.year * 12 + start.month - 1 + months
    return datetime(total // 12, total % 12 + 1, 1, tzinfo=timezone.utc)


def _story(cfg: UpdatesConfig) -> tuple[list[tuple[str, str]], list[Move]]:
    rng = random.Random(cfg.seed)
    # One relation per person: a second "sister" would make "Ada's sister" ambiguous.
    people = [
        (RELATIONS[i % len(RELATIONS)], NAMES[i % len(NAMES)])
        for i in range(min(cfg.people, len(RELATIONS)))
    ]
    start = datetime(2019, 1, 1, tzinfo=timezone.utc)
    moves: list[Move] = []
    for who in range(len(people)):
        cities = rng.sample(CITIES, cfg.updates)
        month = rng.randint(0, 6)
        mine = []
        for n, city in enumerate(cities):
            mine.append(Move(who, city, _month(start, month), n == 0))
            month += rng.randint(4, 14)
        moves += mine
        if len(mine) >= 3:  # reminiscing about the first home, after the last move
            moves.append(Move(who, mine[0].city, _month(start, month), False, mine[1].at))
    moves.sort(key=lambda m: m.at)
    return people, moves


def _said(people: list[tuple[str, str]], m: Move) -> tuple[str, datetime]:
    """What the user says of a move, and when (the turn's time)."""
    relation, name = people[m.who]
    if m.until is not None:
        first = next(x for x in _HOMES[m.who] if x.city == m.city)
        said = f"{name} lived in {m.city} from {first.at:%B %Y} to {m.until:%B %Y}; what a place."
        return said, m.at
    if m.first:
        return f"My {relation} {name} has lived in {m.city} since {m.at:%B %Y}.", _month(m.at, 2)
    return f"Guess what: {name} moved to {m.city} last month!", _month(m.at, 1) + timedelta(days=4)


def _fact(people: list[tuple[str, str]], m: Move, kind: str) -> dict[str, Any]:
    relation, name = people[m.who]
    content = f"{name} {'lived' if m.until else 'lives'} in {m.city}"
    if kind == "naive":
        return {"content": content, "category": "context", "confidence": 0.9}
    subject = f"my {relation} {name}" if m.first else name
    return {
        "content": content,
        "category": "context",
        "confidence": 0.9,
        "subject": subject,
        "predicate": "lives_in",
        "object": m.city,
    }


def _answer(hits: list[Any]) -> str | None:
    for h in hits:
        for city in CITIES:
            if city in h.content:
                return city
    return None


_HOMES: dict[int, list[Move]] = {}


def run_updates(cfg: UpdatesConfig, store_factory: Any = None) -> dict[str, Any]:
    """Run the benchmark (see the module docs); returns the figures."""
    people, moves = _story(cfg)
    by_person: dict[int, list[Move]] = {}
    for m in moves:
        if m.until is None:
            by_person.setdefault(m.who, []).append(m)
    _HOMES.clear()
    _HOMES.update(by_person)
    result: dict[str, Any] = {"config": asdict(cfg), "turns": len(moves)}
    for kind in cfg.extractors:
        store = store_factory() if store_factory else SQLiteStore(
            index={"embed": cfg.embed, "fields": ["content"]} if cfg.embed else None
        )  # fmt: skip
        engine = MemoryEngine(store)
        ctx = MemoryContext(user_id=USER)
        script = [facts_call([_fact(people, m, kind)]) for m in moves]
        extractor = FactExtractor(ScriptedExtractionModel(script))
        started = time.perf_counter()
        history: list[Any] = []
        for i, m in enumerate(moves):
            text, said = _said(people, m)
            stamp = {"timestamp": said.isoformat()}
            history += [
                HumanMessage(text, id=f"h{i}", additional_kwargs=stamp),
                AIMessage("Noted!", id=f"a{i}", additional_kwargs=stamp),
            ]
            # A fresh environment (and clock) for each turn, as an executor gives.
            steps = reflect_steps(engine.env(ctx), extractor, history, "t1", ReflectionSettings())
            run_sync(steps, store)
        write_s = time.perf_counter() - started
        tallies: dict[str, list[bool]] = {"current": [], "relation": [], "as_of": []}
        latencies: list[float] = []
        for who, mine in sorted(by_person.items()):
            relation, name = people[who]
            asked = [
                ("current", f"Where does {name} live now?", None, mine[-1].city),
                ("relation", f"Where does {USER.title()}'s {relation} live?", None, mine[-1].city),
            ]
            if len(mine) > 1:
                i = len(mine) // 2
                when = mine[i].at + (mine[i + 1].at - mine[i].at) / 2 if i + 1 < len(mine) else None
                if when is not None:
                    asked.append(("as_of", f"Where did {name} live?", when, mine[i].city))
            for what, question, as_of, expected in asked:
                t0 = time.perf_counter()
                hits = engine.recall(ctx, question, limit=cfg.k, as_of=as_of, bump_refs=False)
                latencies.append(time.perf_counter() - t0)
                tallies[what].append(_answer(hits) == expected)
        result[kind] = {
            what: {"accuracy": round(sum(v) / len(v), 3) if v else None, "right": sum(v),
                   "asked": len(v)}
            for what, v in tallies.items()
        }  # fmt: skip
        result[kind]["write_seconds"] = round(write_s, 2)
        result[kind]["recall_ms_median"] = round(sorted(latencies)[len(latencies) // 2] * 1000, 2)
        result["questions"] = {what: len(v) for what, v in tallies.items()}
        if hasattr(store, "close"):
            store.close()
    return result


def write_outputs(result: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "updates.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path
