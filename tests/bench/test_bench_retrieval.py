"""``langmem-ext bench retrieval``: retrieval sets of the documented shape,
LoCoMo read as one, bad input named, both stores."""

from __future__ import annotations

import json

import pytest
from langmem_ext_dev.bench.retrieval_data import DataShapeError, load_set
from typer.testing import CliRunner

from langmem_ext.cli.app import app

from .test_bench_cli import SAMPLE


def _turn(i: str, speaker: str, text: str, hour: int, session: int = 1) -> dict:
    return {
        "id": i,
        "speaker": speaker,
        "text": text,
        "timestamp": f"2024-03-0{session}T{hour:02d}:00:00",
        "session": session,
    }


TINY = {
    "name": "tiny",
    "language": "en",
    "conversations": [
        {
            "id": "a",
            "split": "dev",
            "turns": [
                _turn("a1", "user", "My build fails with a segfault in libfoo on ARM.", 9),
                _turn("a2", "assistant", "Rebuild libfoo with -fno-strict-aliasing.", 9),
                _turn("a3", "user", "I also adopted a greyhound called Comet.", 10, 2),
            ],
            "questions": [
                {
                    "question": "Which library crashes with a segfault?",
                    "evidence": ["a1"],
                    "category": "tech",
                },
                {"question": "What is my dog's name?", "evidence": ["a3"], "category": "personal"},
                # one id names no turn: counted, the other still scored
                {"question": "How to fix libfoo?", "evidence": ["a2", "zz"], "category": "tech"},
                # no id names a turn: counted, not scored
                {"question": "Lost?", "evidence": ["nope"], "category": "tech"},
            ],
        },
        {
            "id": "b",
            "split": "held-out",
            "turns": [
                _turn("b1", "user", "Ich lerne Spanisch für meine Reise nach Sevilla.", 8),
                _turn("b2", "user", "Mein Fahrrad wurde gestohlen.", 8),
            ],
            "questions": [
                {"question": "Wohin reise ich?", "evidence": ["b1"], "category": "personal"}
            ],
        },
    ],
}


@pytest.fixture
def tiny_file(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


def test_a_set_is_read_with_splits_and_unknown_evidence_counted(tiny_file):
    s = load_set(tiny_file)
    assert s.name == "tiny"
    assert [(c.id, c.split) for c in s.conversations] == [("a", "dev"), ("b", "held-out")]
    a = s.conversations[0]
    assert a.turns[0].text.startswith("[01 March 2024, 09:00] user: My build fails")
    assert [sorted(q.evidence) for q in a.questions] == [["a1"], ["a3"], ["a2"]]
    assert s.counts["evidence_unknown"] == 2 and s.counts["questions_without_evidence"] == 1
    # context is the same session's neighbours only (a3 is session 2)
    assert "Comet" not in a.turns[1].context and "segfault" in a.turns[1].context


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            lambda d: d["conversations"][1]["turns"][0].pop("timestamp"),
            "conversations[1].turns[0].timestamp",
        ),
        (
            lambda d: d["conversations"][0]["questions"][2].update(evidence="a2"),
            "conversations[0].questions[2].evidence",
        ),
        (
            lambda d: d["conversations"][0]["turns"][1].update(timestamp="soon"),
            "conversations[0].turns[1].timestamp",
        ),
        (lambda d: d["conversations"][0].update(split="test"), "conversations[0].split"),
        (
            lambda d: d["conversations"][0]["turns"][2].update(id="a1"),
            "conversations[0].turns[2].id",
        ),
        (lambda d: d.update(conversations=[]), "conversations"),
        (lambda d: d["conversations"][0].update(turn=[]), "conversations[0].turn"),
    ],
)
def test_a_wrong_shape_names_the_first_wrong_field(tmp_path, change, path):
    data = json.loads(json.dumps(TINY))
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(DataShapeError) as e:
        load_set(bad)
    assert str(e.value).startswith(f"{path}: "), str(e.value)


def test_locomo_is_read_as_a_retrieval_set(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    s = load_set(path)
    [c] = s.conversations
    assert [d.key for d in c.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert c.turns[2].text.endswith("Look at this [shares a photo: a photo of a red bicycle]")
    assert [(q.category, sorted(q.evidence)) for q in c.questions] == [
        ("single-hop", ["D1:1"]),
        ("multi-hop", ["D1:2", "D2:1"]),
        ("open-domain", ["D1:3"]),
    ]
    # "D" names no turn: counted, and its question is not scored
    assert s.counts["evidence_unknown"] == 1 and s.counts["questions_without_evidence"] == 1
    assert s.counts["evidence_repaired"] == 1 and s.counts["evidence_split"] == 1


def test_bench_retrieval_on_both_stores_per_split_and_category(tiny_file, tmp_path):
    out = tmp_path / "out"
    args = ["bench", "retrieval", "--data", str(tiny_file), "--out", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    assert "evidence ids naming no turn 2" in result.output
    assert "questions left without evidence (not scored) 1" in result.output
    data = json.loads((out / "retrieval.json").read_text())
    rows = {(r["split"], r["store"], r["mode"]): r for r in data["rows"]}
    assert set(rows) == {
        (sp, st, m)
        for sp in ("dev", "held-out")
        for st in ("sqlite", "postgres")
        for m in ("keyword", "vector", "hybrid")
    }
    for (split, _, mode), r in rows.items():
        assert r["questions"] == (3 if split == "dev" else 1)
        if mode != "keyword":  # keyword search returns only turns sharing a word
            assert r["overall"]["R@20"] == 1.0  # a handful of turns: all fit in k=20
        assert r["search_ms_median"] > 0
    for store in ("sqlite", "postgres"):
        tech = rows[("dev", store, "keyword")]["by_category"]["tech"]
        assert tech["questions"] == 2 and tech["R@5"] == 1.0  # segfault, libfoo: shared words
    assert data["sets"]["tiny"]["evidence"]["evidence_unknown"] == 2
    assert len(data["load"]["before"]) == 3


def test_bench_retrieval_scores_only_the_split_asked_for(tiny_file, tmp_path):
    out = tmp_path / "out"
    args = ["bench", "retrieval", "--data", str(tiny_file), "--out", str(out)]
    args += ["--backends", "sqlite", "--split", "held-out", "--modes", "keyword"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "retrieval.json").read_text())["rows"]
    assert [(r["split"], r["mode"], r["questions"]) for r in rows] == [("held-out", "keyword", 1)]


def test_bench_retrieval_refuses_bad_input(tiny_file, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"conversations": [{"id": "x", "turns": [], "questions": []}]}))
    base = ["bench", "retrieval", "--out", str(tmp_path / "o"), "--backends", "sqlite"]
    r = CliRunner().invoke(app, [*base, "--data", str(bad)], env={"COLUMNS": "220"})
    assert r.exit_code != 0 and "conversations[0].turns" in r.output
    r = CliRunner().invoke(app, [*base, "--data", str(tiny_file), "--split", "test"])
    assert r.exit_code != 0 and "--split" in r.output
    r = CliRunner().invoke(app, [*base, "--data", str(tiny_file), "--modes", "fuzzy"])
    assert r.exit_code != 0 and "unknown modes" in r.output


def test_fusion_rules_on_the_stores_own_rankings(tiny_file, tmp_path):
    # "fixed" re-fuses each store's vector and keyword rankings as its hybrid
    # does: its recall must equal the store's own hybrid row.
    out = tmp_path / "out"
    args = ["bench", "retrieval", "--data", str(tiny_file), "--out", str(out)]
    args += ["--fusions", "fixed,zscore,rrf,adaptive", "--split", "dev", "--tune-fusion"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    data = json.loads((out / "retrieval.json").read_text())
    rows = {(r["store"], r["mode"]): r for r in data["rows"]}
    for store in ("sqlite", "postgres"):
        assert rows[(store, "fused:fixed")]["overall"] == rows[(store, "hybrid")]["overall"]
        for rule in ("zscore", "rrf", "adaptive"):
            assert rows[(store, f"fused:{rule}")]["questions"] == 3
    assert len(data["tuned_fusion"]["constants"]) == 4
    bad = CliRunner().invoke(app, [*args[:6], "--tune-fusion", "--split", "held-out"])
    assert bad.exit_code != 0 and "dev split only" in bad.output


def test_scope_set_puts_every_conversation_of_a_split_in_one_store(tmp_path):
    data = json.loads(json.dumps(TINY))
    data["conversations"][1]["split"] = "dev"
    data["scope"] = "set"
    path = tmp_path / "pooled.json"
    path.write_text(json.dumps(data))
    [pool] = load_set(path).conversations
    assert pool.split == "dev" and len(pool.turns) == 5 and len(pool.questions) == 4
    data["conversations"][1]["turns"][0]["id"] = "a1"  # unique per conversation only
    path.write_text(json.dumps(data))
    with pytest.raises(DataShapeError, match=r"conversations\[1\].turns: id 'a1'"):
        load_set(path)


def test_the_written_sets_load_with_every_evidence_id_known():
    from pathlib import Path

    import langmem_ext_dev.bench.sets as sets

    here = Path(sets.__file__).parent
    for name in ("technical_long.json", "multilingual_sessions.json"):
        s = load_set(here / name)
        assert s.counts["evidence_unknown"] == 0
        by_split = {c.split: len(c.questions) for c in s.conversations}
        assert sum(by_split.values()) >= 40 and by_split["held-out"] >= 15
