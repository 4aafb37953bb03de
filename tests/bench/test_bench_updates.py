"""``langmem-ext bench updates``: the knowledge-update benchmark runs offline,
its answers are exact, and the memory with slots, entities and world times
answers every kind of question where content-only facts fail."""

from __future__ import annotations

import json

from langmem_ext_dev.bench.updates import UpdatesConfig, _answer, _story, run_updates
from typer.testing import CliRunner

from langmem_ext.cli.app import app


def test_the_story_has_one_relation_per_person_and_dated_moves():
    people, moves = _story(UpdatesConfig(people=8, updates=4, seed=3))
    assert len({r for r, _ in people}) == len(people) == 8
    homes = [m for m in moves if m.until is None]
    assert len(homes) == 8 * 4 and all(m.at.day == 1 for m in homes)
    looks_back = [m for m in moves if m.until is not None]
    assert len(looks_back) == 8  # one look back per person with three homes or more


def test_an_answer_is_the_first_city_the_top_memories_name():
    class Hit:
        def __init__(self, content: str) -> None:
            self.content = content

    assert _answer([Hit("Clara likes tea"), Hit("Clara lives in Porto"), Hit("Lisbon")]) == "Porto"
    assert _answer([Hit("nothing here")]) is None


def test_slots_entities_and_times_answer_every_kind_of_question():
    result = run_updates(UpdatesConfig(people=4, updates=4, seed=7))
    oracle, naive = result["oracle"], result["naive"]
    assert result["questions"] == {"current": 4, "relation": 4, "as_of": 4}
    assert {w: oracle[w]["accuracy"] for w in ("current", "relation", "as_of")} == {
        "current": 1.0, "relation": 1.0, "as_of": 1.0
    }  # fmt: skip
    assert naive["current"]["accuracy"] < 1.0 and naive["relation"]["accuracy"] == 0.0


def test_the_command_prints_the_table_and_writes_the_figures(tmp_path):
    out = CliRunner().invoke(
        app, ["bench", "updates", "--people", "2", "--updates", "3", "--out", str(tmp_path)],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "oracle" in out.output and "naive" in out.output and "relation (2)" in out.output
    saved = json.loads((tmp_path / "updates.json").read_text())
    assert saved["oracle"]["current"]["asked"] == 2
    bad = CliRunner().invoke(app, ["bench", "updates", "--people", "99"])
    assert bad.exit_code == 2 and "--people must be from 1 to 8" in bad.output
