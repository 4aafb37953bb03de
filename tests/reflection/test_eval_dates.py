"""The dated evaluation set: it has the extraction set's shape (the scorer can
load it), every turn says when it was said, every fact says when it began to
hold (or that it must stay unknown) at the first day of its period, and the
date resolver, given the turn's time, reads exactly those dates from the
user's words."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import langmem_ext_dev.evaluate as evaluate
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langmem_ext.agents.reflection.when import DEFAULT_LANGUAGES, resolve_when, turn_time

EVAL_DATES = Path(evaluate.__file__).with_name("eval_dates.json")
DATA = json.loads(EVAL_DATES.read_text(encoding="utf-8"))
TURNS = [(case["id"], turn) for case in DATA["cases"] for turn in case["turns"]]
PRECISIONS = ("day", "week", "month", "year")


def _first_day(value: dict) -> bool:
    d = date.fromisoformat(value["date"])
    return {
        "day": True,
        "week": d.weekday() == 0,
        "month": d.day == 1,
        "year": (d.month, d.day) == (1, 1),
    }[value["precision"]]


def test_the_extraction_scorer_loads_it():
    cases = evaluate.load_cases(EVAL_DATES)
    assert len(cases) == len(DATA["cases"]) and all(c.turns for c in cases)
    assert len({c.id for c in cases}) == len(cases)


def test_its_shape():
    assert DATA["version"] == 1 and DATA["about"]
    dated = 0
    for _, turn in TURNS:
        at = datetime.fromisoformat(turn["at"])
        assert at.utcoffset() is not None
        assert turn["language"] in DEFAULT_LANGUAGES
        assert turn["messages"][0][0] == "user"
        assert turn["facts"]
        for fact in turn["facts"]:
            assert "valid_at" in fact
            for key in ("valid_at", "invalid_at"):
                value = fact.get(key)
                if value is None:
                    continue
                assert set(value) == {"date", "precision"}
                assert value["precision"] in PRECISIONS and _first_day(value), value
            assert isinstance(fact.get("open_ended", False), bool)
            dated += fact["valid_at"] is not None
    assert dated >= 12
    assert len({t["language"] for _, t in TURNS}) >= 5
    assert any(f["valid_at"] is None for _, t in TURNS for f in t["facts"])


@pytest.mark.parametrize(("case", "turn"), TURNS, ids=[c for c, _ in TURNS])
def test_the_resolver_reads_the_expected_dates(case, turn):
    # The turn's time as a message timestamp, the way a chat app sends it.
    messages = [
        (HumanMessage if role == "user" else AIMessage)(
            text, additional_kwargs={"timestamp": turn["at"]}
        )
        for role, text in turn["messages"]
    ]
    said = " ".join(text for role, text in turn["messages"] if role == "user")
    when = resolve_when(said, turn_time(messages), languages=[turn["language"]])
    (fact,) = turn["facts"]
    if fact["valid_at"] is None:
        assert when is None
        return
    assert when is not None and when.start is not None
    assert (when.start.date().isoformat(), when.precision) == (
        fact["valid_at"]["date"],
        fact["valid_at"]["precision"],
    )
    end = fact.get("invalid_at")
    assert (when.end and (when.end.date().isoformat(), when.end_precision)) == (
        end and (end["date"], end["precision"])
    )
    assert when.open_ended == fact.get("open_ended", False)
