"""Scoring extraction on the evaluation set: the scripted oracle scores
perfectly, the scripted naive model's mistakes are screened out (the counts
derived from the set itself), the scorer counts noise, copies, lost facts and
wrong supersessions, and ``langmem-ext eval-extraction`` prints and saves it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langmem_ext_dev.evaluate import (
    EvalCase,
    EvalTurn,
    ExpectedFact,
    _user_sentences,
    evaluate,
    load_cases,
    matches,
    scripted_model,
)
from typer.testing import CliRunner

from langmem_ext.cli.app import app
from langmem_ext.testing.chat import ScriptedExtractionModel

CASES = load_cases()
TURNS = sum(len(c.turns) for c in CASES)


def later_corrections(case: EvalCase) -> list[tuple[ExpectedFact, ExpectedFact]]:
    """(old, new) for each expected fact a later fact of its case retires."""
    facts = [(n, f) for n, t in enumerate(case.turns) for f in t.facts]
    return [
        (old, new)
        for n, old in facts
        for m, new in facts
        if m > n and new.retires and matches(old.content, new.retires)
    ]


CORRECTIONS = sum(len(later_corrections(c)) for c in CASES)
FINAL_FACTS = sum(len(t.facts) for c in CASES for t in c.turns) - CORRECTIONS
# Corrections whose user line names the value they retire ("I quit the bakery"):
# the user's words tie them to the known fact even when the model does not.
NAMED = sum(
    1
    for c in CASES
    for t in c.turns
    for f in t.facts
    if f.retires
    and any(w in text.lower() for role, text in t.messages if role == "user" for w in f.retires)
)


def naive_assistant_statements() -> int:
    """What the naive model files from the assistant's lines: a long reply
    five times whole, a short one sentence by sentence."""
    n = 0
    for c in CASES:
        for t in c.turns:
            for role, text in t.messages:
                if role == "assistant":
                    n += 5 if len(text) > 200 else len(re.split(r"(?<=[.!?])\s+", text))
    return n


def naive_user_lines() -> int:
    """What the naive model files from the user's own lines: sentences that
    match a trap of their turn (small talk, pasted text)."""
    return sum(
        1
        for c in CASES
        for t in c.turns
        for s in _user_sentences(t)
        if matches(s, t.not_facts) and not any(matches(s, f.match) for f in t.facts)
    )


def test_the_set_is_what_the_scores_below_are_derived_from():
    assert len(CASES) == 12 and TURNS == 17
    assert (FINAL_FACTS, CORRECTIONS) == (15, 3)
    assert naive_assistant_statements() == 37 and naive_user_lines() == 1


def test_the_oracle_scores_perfectly():
    totals = evaluate(scripted_model("oracle"), label="oracle").totals()
    assert totals["expected"] == totals["right"] == FINAL_FACTS
    assert totals["corrections"] == totals["applied"] == CORRECTIONS
    assert (totals["lost"], totals["noise"], totals["copies"]) == (0, 0, 0)
    assert (totals["wrong_supersessions"], totals["screened_out"]) == (0, 0)
    assert totals["model_calls"] == totals["turns"] == TURNS
    assert totals["failed_turns"] == 0


def test_the_naive_models_mistakes_are_screened_out():
    """Every assistant statement it files is dropped (none stored: noise 0),
    plural categories cost no second call, its one-slot-per-category facts
    retire nothing, and its corrections (a value instead of an id) are
    applied only where the user's own words name what changed."""
    report = evaluate(scripted_model("naive"), embed=None, label="naive")
    totals = report.totals()
    assert totals["screened_out"] == naive_assistant_statements() + naive_user_lines()
    assert (totals["noise"], totals["copies"], totals["wrong_supersessions"]) == (0, 0, 0)
    assert totals["right"] == totals["expected"] == FINAL_FACTS and totals["lost"] == 0
    assert (totals["corrections"], totals["applied"]) == (CORRECTIONS, NAMED)
    assert 0 < NAMED < CORRECTIONS
    assert totals["model_calls"] == totals["turns"] == TURNS
    assert report.problems() == []


# -- the scorer --------------------------------------------------------------------------

CAFE = EvalCase(
    "cafe",
    "zoe",
    (
        EvalTurn(
            messages=(
                ("user", "I'm Zoe, I run a cafe in Lyon and I keep bees. Have a nice day!"),
                ("assistant", "Lyon is known for its food."),
            ),
            facts=(
                ExpectedFact("Runs a cafe in Lyon", "context", ("cafe",)),
                ExpectedFact("Keeps bees", "behavior", ("bees",)),
            ),
            also=("zoe",),
            not_facts=("nice day",),
        ),
        EvalTurn(
            messages=(("user", "I also started pottery."), ("assistant", "Fun!")),
            facts=(ExpectedFact("Does pottery", "behavior", ("pottery",)),),
        ),
    ),
)


def known_id(messages: list[BaseMessage], word: str) -> str:
    [fid] = re.findall(rf"id=(fact_[0-9a-f]+)\b.*{word}", str(messages[0].content), re.I)
    return fid


def item(content: str, **kw: Any) -> dict[str, Any]:
    return {"content": content, "category": "context", "confidence": 0.9, **kw}


def test_the_scorer_counts_noise_copies_lost_facts_and_wrong_supersessions():
    model = ScriptedExtractionModel(
        [
            # the small talk as a fact (a trap, in the user's words), an
            # invented fact, and one of the two expected facts
            [item("Runs a cafe in Lyon"), item("Wishes a nice day"), item("Owns a bakery")],
            # the new fact "corrects" the cafe, whose id it was shown
            lambda messages: [item("Does pottery", replaces=known_id(messages, "cafe"))],
        ]
    )
    report = evaluate(model, cases=[CAFE], embed=None, label="scripted")
    [score] = report.cases
    assert score.expected == 3 and score.right == 1
    assert score.lost == ["Runs a cafe in Lyon", "Keeps bees"]
    assert sorted(score.noise) == ["Owns a bakery", "Wishes a nice day"] and score.copies == 1
    assert score.wrong_supersessions == ["Runs a cafe in Lyon"]
    assert (score.model_calls, score.turns, score.failed_turns) == (2, 2, 0)
    assert "| **total** (scripted) | 1/3 | 2 | 2 (1) | 0/0 | 1 | 0 | 2/2 | 0 |" in report.table()


# -- the command ---------------------------------------------------------------------------


def test_eval_extraction_prints_the_table_and_writes_the_scores(tmp_path):
    out = tmp_path / "scores.json"
    result = CliRunner().invoke(
        app, ["eval-extraction", "--model", "naive", "--embed", "none", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"| **total** (naive) | {FINAL_FACTS}/{FINAL_FACTS} | 0 | 0 (0) |" in result.output
    saved = json.loads(out.read_text())
    assert saved["model"] == "naive"
    assert saved["totals"]["screened_out"] == naive_assistant_statements() + naive_user_lines()
    assert [c["case"] for c in saved["cases"]] == [c.id for c in CASES]


def test_eval_extraction_prints_tokens_per_turn(tmp_path):
    out = tmp_path / "scores.json"
    result = CliRunner().invoke(
        app, ["eval-extraction", "--model", "oracle", "--embed", "none", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    totals = json.loads(out.read_text())["totals"]
    # The scripted model reports no usage: every call is counted by estimate.
    assert totals["estimated_calls"] == totals["model_calls"] == TURNS
    assert totals["input_tokens"] > totals["output_tokens"] > 0
    per_turn = round(totals["input_tokens"] / TURNS, 1)
    assert totals["input_tokens_per_turn"] == per_turn
    assert f"tokens per turn: {per_turn} in" in result.output
    assert f"estimated for {TURNS} of {TURNS} calls" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "grammar"], "--method must be auto, tool or json"),
        (["--data", "missing.json"], "missing.json"),
        (["--context-tokens", "100"], "context_tokens must be an integer >= 512"),
    ],
)
def test_eval_extraction_rejects_bad_options(args, message):
    result = CliRunner().invoke(app, ["eval-extraction", "--model", "oracle", *args])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize("mode", ["oracle", "naive"])
def test_eval_extraction_runs_without_the_postgres_extra(mode):
    """A plain install has no psycopg; the command once died importing it."""
    code = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "from langmem_ext.cli import main\n"
        f"sys.argv = ['langmem-ext', 'eval-extraction', '--model', '{mode}', '--embed', 'none']\n"
        "main()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"**total** ({mode}) | 15/15" in out.stdout


# -- the larger set, its halves, dates ----------------------------------------------------


def test_the_general_set_has_a_dev_and_a_heldout_half_of_every_kind():
    from langmem_ext_dev.evaluate import EVAL_GENERAL

    every = load_cases(EVAL_GENERAL)
    halves = {s: load_cases(EVAL_GENERAL, split=s) for s in ("dev", "heldout")}
    assert len(every) >= 40 and sum(len(c.turns) for c in every) >= 100
    assert {c.id for c in halves["dev"]} | {c.id for c in halves["heldout"]} == {
        c.id for c in every
    }
    assert not {c.id for c in halves["dev"]} & {c.id for c in halves["heldout"]}
    for cases in halves.values():
        turns = [t for c in cases for t in c.turns]
        kinds = {k for t in turns for k in t.kinds}
        assert {"paste", "small_talk", "question", "correction", "dated", "long", "short"} <= kinds
        assert len({t.language for t in turns}) >= 5
    with pytest.raises(ValueError, match="no case in split 'test'"):
        load_cases(EVAL_GENERAL, split="test")


DATED = EvalCase(
    "dated",
    "ada",
    (
        EvalTurn(
            messages=(("user", "I moved to Munich last month."), ("assistant", "Nice!")),
            facts=(
                ExpectedFact(
                    "Lives in Munich",
                    "context",
                    ("munich",),
                    valid_at={"date": "2026-02-01", "precision": "month"},
                ),
            ),
            at="2026-03-10T15:00:00+00:00",
        ),
        EvalTurn(
            messages=(("user", "I'm vegetarian."), ("assistant", "Noted.")),
            facts=(ExpectedFact("Is vegetarian", "preference", ("vegetarian",), valid_at=None),),
            at="2026-03-10T15:05:00+00:00",
        ),
    ),
)


def test_dates_are_scored_against_the_turns_time():
    """The turn's time is its messages' timestamp; "last month" is February."""
    [score] = evaluate(scripted_model("oracle", [DATED]), cases=[DATED], embed=None).cases
    assert (score.dates, score.dates_right, score.dates_wrong) == (2, 2, [])
    wrong = ScriptedExtractionModel([[item("Lives in Munich since 2019")], [item("Is vegetarian")]])
    [score] = evaluate(wrong, cases=[DATED], embed=None).cases
    assert score.dates_right == 1
    assert score.dates_wrong == [
        "'Lives in Munich': stored 2019-01-01 (year), expected 2026-02-01 (month)"
    ]


def test_each_screened_candidate_says_which_screen_dropped_it_and_what_it_was():
    report = evaluate(scripted_model("naive", [CAFE]), cases=[CAFE], embed=None)
    [score] = report.cases
    assert ("Lyon is known for its food.", "assistant_copy", "trap") in score.screened
    assert report.screens()["assistant_copy"]["trap"] >= 1
