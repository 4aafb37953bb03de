"""The benchmark commands on small synthetic inputs (the real LoCoMo file is
never part of the repository)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from langmem_ext_dev.bench.locomo_data import load_locomo, recall_at_k
from typer.testing import CliRunner

from langmem_ext.cli.app import app

SAMPLE = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten named Pixel!"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Cute! I started pottery classes."},
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "Look at this",
                    "blip_caption": "a photo of a red bicycle",
                },
            ],
            "session_2_date_time": "2:00 pm on 9 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery vase won a prize."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel broke my favourite mug."},
            ],
        },
        "observation": {
            "session_1_observation": {"Ana": [["Ana adopted a kitten called Pixel.", "D1:1"]]},
            "session_2_observation": {"Ben": [["Ben's pottery vase won a prize.", "D2:1"]]},
        },
        "qa": [
            {"question": "What is the name of Ana's kitten?", "evidence": ["D1:1"], "category": 4},
            {"question": "What hobby did Ben start?", "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "What colour is the bicycle?", "evidence": ["D:1:3"], "category": 3},
            {"question": "Unanswerable?", "evidence": [], "category": 5},
            {"question": "Broken?", "evidence": ["D"], "category": 2},
        ],
    }
]


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(SAMPLE))
    return path


def test_loader_builds_documents_and_cleans_evidence(locomo_file):
    convs, counts = load_locomo(locomo_file)
    conv = convs[0]
    assert [d.key for d in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conv.turns[2].text == (
        "[1:00 pm on 8 May, 2023] Ana: Look at this [shares a photo: a photo of a red bicycle]"
    )
    assert [o.dia_ids for o in conv.observations] == [("D1:1",), ("D2:1",)]
    assert [sorted(q.evidence) for q in conv.questions] == [["D1:1"], ["D1:2", "D2:1"], ["D1:3"]]
    assert counts == Counter(
        {"split": 1, "repaired": 1, "dropped_malformed": 1, "questions_without_evidence": 1}
    )


def test_recall_counts_turns_against_k():
    ev = frozenset({"D1:1", "D1:2"})
    assert recall_at_k([("D1:1", "D1:2")], ev, 1) == 0.0  # a 2-turn result does not fit k=1
    assert recall_at_k([("D1:1", "D1:2")], ev, 2) == 1.0
    assert recall_at_k([("D9:9",), ("D1:2",)], ev, 2) == 0.5


def test_bench_locomo_command(locomo_file, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["bench", "locomo", "--data", str(locomo_file), "--out", str(out)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    out_text = result.output
    assert "SQLiteStore hybrid" in out_text and "InMemoryStore" in out_text
    assert "PostgresStore hybrid" in out_text
    assert "repaired 1, split 1, dropped malformed 1" in result.output
    data = json.loads((out / "locomo.json").read_text())
    rows = {(r["doc_set"], r["retriever"]): r for r in data["rows"]}
    assert len(rows) == 14  # 2 document sets x (3 SQLite + 3 Postgres modes + InMemoryStore)
    for (doc_set, _), r in rows.items():
        assert r["questions"] == 3
        assert 0.0 <= r["overall"]["R@1"] <= r["overall"]["R@5"] <= r["overall"]["R@20"] <= 1.0
        if doc_set == "turns":
            assert r["overall"]["R@20"] == 1.0  # 5 turns: all fit within k=20
        else:
            # observations cover D1:1 and D2:1 only: 1 + 1/2 + 0 of the 3 questions
            assert r["overall"]["R@20"] == pytest.approx(0.5)
    for store in ("SQLiteStore", "PostgresStore"):
        kitten = rows[("turns", f"{store} keyword")]["by_category"]["single-hop"]
        assert kitten["R@1"] == 1.0
    assert (out / "locomo.png").stat().st_size > 1000


def test_bench_locomo_measures_reranking_stages_on_hybrid_search(locomo_file, tmp_path):
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(locomo_file), "--out", str(out)]
    args += ["--backends", "sqlite", "--docs", "turns", "--stages", "feedback,group,diversify"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "query embedding" in result.output
    data = json.loads((out / "locomo.json").read_text())
    rows = {r["retriever"]: r for r in data["rows"]}
    staged = [f"SQLiteStore hybrid + {s}" for s in ("feedback", "group", "diversify")]
    assert set(staged) <= set(rows)
    for name in staged:
        assert rows[name]["stage_ms_median"] >= 0.0
        # 5 turns: every stage still finds every evidence turn within k=20
        assert rows[name]["overall"]["R@20"] == 1.0
    assert "stage_ms_median" not in rows["SQLiteStore hybrid"]
    assert data["query_embed_ms_median"] > 0
    bad = CliRunner().invoke(app, [*args[:6], "--stages", "nope"])
    assert bad.exit_code != 0 and "unknown stages" in bad.output


def test_bench_store_command(tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "store",
            "--sizes",
            "300",
            "--queries",
            "3",
            "--kinds",
            "random,clustered",
            "--out",
            str(out),
            "--stores",
            "sqlite,lg-inmemory,lg-sqlite",
        ],
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "store.json").read_text())["rows"]
    assert [(r["store"], r["kind"]) for r in rows] == [
        (store, kind)
        for kind in ("random", "clustered")
        for store in (
            "langmem_ext SQLiteStore",
            "LangGraph InMemoryStore",
            "LangGraph SqliteStore (sqlite-vec)",
        )
    ]
    for r in rows:
        assert "unavailable" not in r, r
        for case in ("whole", "namespace_10pct", "filter", "leaf"):
            assert r[case]["recall_at_10"] == 1.0
        assert r["search_rss_mb"] > 0
    ours = rows[0]
    assert ours["open_to_first_ms"] > 0 and set(ours["modes"]) >= {"solo_keyword", "leaf_hybrid"}
    assert "open_to_first_ms" not in rows[1]  # nothing to reopen in memory
    assert (out / "store.png").stat().st_size > 1000
    # The yardstick of the same run, and every median beside its ratio to it.
    for r in rows:
        assert r["brute_1t_ms"] > 0 and r["brute_all_ms"] > 0 and r["brute_threads"] >= 1
    assert "×)" in result.output  # medians beside their ratio
    bad = CliRunner().invoke(app, ["bench", "store", "--stores", "nope"])
    assert bad.exit_code != 0 and "unknown stores" in bad.output


def test_bench_store_skips_what_would_not_fit():
    from langmem_ext_dev.bench import store_speed

    rate = {"lg-postgres": 100.0}
    row = store_speed._bench_one("lg-postgres", "random", 1_000_000, 3, None, rate, 600, None)
    assert "loading would take ~167 min" in row["unavailable"]
    row = store_speed._bench_one("lg-inmemory", "random", 1_000_000, 3, None, {}, 600, None)
    assert "Python list of floats" in row["unavailable"]


def test_bench_store_with_postgres_contenders(tmp_path):
    """Ours and LangGraph's PostgresStore, one embedded server started by the command."""
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "store",
            "--sizes",
            "200",
            "--queries",
            "3",
            "--kinds",
            "random",
            "--out",
            str(out),
            "--stores",
            "postgres,lg-postgres,lg-postgres-exact",
        ],
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "store.json").read_text())["rows"]
    ours, hnsw, exact = rows
    assert ours["store"] == "langmem_ext PostgresStore" and "unavailable" not in ours
    assert ours["namespace_10pct"]["recall_at_10"] == 1.0
    assert hnsw["store"] == "LangGraph PostgresStore (HNSW)" and hnsw["put_per_s"] > 0
    assert exact["whole"]["recall_at_10"] == 1.0


# -- the facts document set ----------------------------------------------------------


def _reflected(locomo_file, window=1, observation=None):
    from langmem_ext_dev.bench.locomo_facts import caller, reflect_conversation

    from langmem_ext import SQLiteStore
    from langmem_ext.engine import MemoryEngine

    data = json.loads(locomo_file.read_text())
    if observation is not None:
        data[0]["observation"]["session_2_observation"]["Ana"] = [observation]
        locomo_file.write_text(json.dumps(data))
    [conv], _ = load_locomo(locomo_file)
    engine = MemoryEngine(SQLiteStore(index={"embed": "local", "fields": ["content"]}))
    tally = reflect_conversation(engine, conv, window)
    return engine, caller(conv.sample_id), conv, tally


def test_facts_are_stored_with_the_turns_they_came_from(locomo_file):
    from langmem_ext_dev.bench.locomo_facts import fact_turns

    engine, ctx, _, tally = _reflected(locomo_file)
    stored = {f.content: fact_turns(f) for f in engine.get_profile(ctx).facts}
    assert stored == {
        "[1:00 pm on 8 May, 2023] Ana adopted a kitten called Pixel.": ("D1:1",),
        "[2:00 pm on 9 June, 2023] Ben's pottery vase won a prize.": ("D2:1",),
    }
    assert (tally.observations, tally.offered, tally.stored, tally.active) == (2, 2, 2, 2)
    assert tally.model_calls == 5  # one per turn
    assert not tally.screened and not tally.skipped and tally.merged == 0


def test_a_fact_of_a_wider_window_names_every_turn_of_it(locomo_file):
    from langmem_ext_dev.bench.locomo_facts import fact_turns

    engine, ctx, _, tally = _reflected(locomo_file, window=3)
    turns = {fact_turns(f) for f in engine.get_profile(ctx).facts}
    assert turns == {("D1:1", "D1:2", "D1:3"), ("D2:1", "D2:2")}
    assert tally.model_calls == 2  # one per session


def test_an_observation_offered_again_is_skipped_as_a_duplicate(locomo_file):
    from langmem_ext_dev.bench.locomo_facts import fact_turns

    # Two turns in two sessions: offered with each, stored once (the first).
    engine, ctx, _, tally = _reflected(locomo_file, observation=["Ana has a cat.", "D1:1; D2:2"])
    facts = engine.get_profile(ctx).facts
    cat = [f for f in facts if f.content.endswith("Ana has a cat.")]
    assert [fact_turns(f) for f in cat] == [("D1:1",)]
    assert (tally.offered, tally.stored, tally.skipped) == (4, 3, Counter({"duplicate": 1}))


def test_merged_facts_count_for_the_turns_of_every_source():
    from langmem_ext_dev.bench.locomo_facts import fact_turns

    from langmem_ext.engine import Fact

    fact = Fact(
        id="f",
        tenant_id="t",
        layer="user",
        layer_id="u",
        content="x",
        subject="user",
        predicate="f",
        provenance={"message_ids": ["D1:1"], "merged": [{"message_ids": ["D2:1", "D1:1"]}]},
    )
    assert fact_turns(fact) == ("D1:1", "D2:1")


def test_bench_locomo_facts(locomo_file, tmp_path):
    """Reflected facts recalled through the engine on every backend, one
    window per turn and one per session."""
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(locomo_file), "--out", str(out), "--docs", "facts"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "scripted" in result.output and "not a model" in result.output
    assert "facts (SQLiteStore recall): 2 offered for 2 observations" in result.output
    data = json.loads((out / "locomo.json").read_text())
    rows = {r["retriever"]: r for r in data["rows"]}
    assert set(rows) == {
        f"{s} recall" for s in ("SQLiteStore", "PostgresStore", "LangGraph InMemoryStore")
    }
    for r in rows.values():
        assert r["doc_set"] == "facts"
        by = r["by_category"]
        assert by["single-hop"]["R@1"] == 1.0  # the kitten question: its fact comes first
        assert by["multi-hop"]["R@20"] == 0.5  # D2:1 has a fact, D1:2 none
        assert by["open-domain"]["R@20"] == 0.0  # the bicycle photo has no fact
    assert data["facts"]["SQLiteStore recall"]["stored"] == 2
    assert data["settings"]["facts_window"] == 1

    wide = CliRunner().invoke(app, [*args, "--backends", "sqlite", "--facts-window", "3"])
    assert wide.exit_code == 0, wide.output
    [row] = json.loads((out / "locomo.json").read_text())["rows"]
    # The kitten's fact now names the session's 3 turns: it fills k=3 alone.
    assert row["by_category"]["single-hop"]["R@1"] == 0.0
    assert row["by_category"]["single-hop"]["R@5"] == 1.0

    bad = CliRunner().invoke(app, [*args[:6], "--docs", "turns,fact"])
    assert bad.exit_code != 0 and "unknown document sets" in bad.output


def test_locomo_ideas_script_reproduces_the_store_and_runs_every_idea(locomo_file, tmp_path):
    # benchmarks/locomo_ideas.py re-creates the default search in numpy: its
    # default row must equal SQLiteStore's hybrid search on the same cache.
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    from langmem_ext import SQLiteStore

    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(locomo_file), "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--backends", "sqlite", "--docs", "turns"])
    assert result.exit_code == 0, result.output
    [store_row] = [
        r
        for r in json.loads((out / "locomo.json").read_text())["rows"]
        if r["retriever"] == "SQLiteStore hybrid"
    ]
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "locomo_ideas.py"
    spec = importlib.util.spec_from_file_location("locomo_ideas", script)
    assert spec is not None and spec.loader is not None
    ideas = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ideas)
    cache = out / "embeddings.db"
    raw, _ = load_locomo(locomo_file)
    with SQLiteStore(str(cache), index={"embed": "local"}) as holder:
        emb = ideas.embed_all(raw, holder.embeddings)
        convs = [ideas.Conv(c, emb, holder.embeddings) for c in raw]
        for k in (1, 5):
            overall, _ = ideas.evaluate(convs, ideas.default, k=k)
            assert overall == pytest.approx(store_row["overall"][f"R@{k}"])
    run = subprocess.run(
        [sys.executable, str(script), "--data", str(locomo_file), "--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    printed = [line.split("|")[1].strip() for line in run.stdout.splitlines()[2:]]
    assert printed == list(ideas.IDEAS)


def test_bench_locomo_oracle_reranker_goes_through_the_stores_stage(locomo_file, tmp_path):
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(locomo_file), "--out", str(out)]
    args += ["--backends", "sqlite", "--docs", "turns", "--rerank", "oracle@2,feedback@5"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = {r["retriever"]: r for r in json.loads((out / "locomo.json").read_text())["rows"]}
    oracle, plain = rows["SQLiteStore hybrid + oracle@2"], rows["SQLiteStore hybrid"]
    # Evidence among the best 2 moves to the top: R@1 reaches the R@2 the
    # store's own order has, never below the store's R@1; R@20 cannot change.
    assert oracle["overall"]["R@1"] >= plain["overall"]["R@1"]
    assert oracle["overall"]["R@20"] == plain["overall"]["R@20"]
    assert "SQLiteStore hybrid + feedback@5" in rows
    for bad_spec, message in [("nope@5", "expected oracle@N"), ("oracle@0", "1 to 1000")]:
        bad = CliRunner().invoke(app, [*args[:8], "--rerank", bad_spec])
        assert bad.exit_code != 0 and message in bad.output


def test_the_oracle_moves_only_the_evidence_among_the_candidates_to_the_top():
    from types import SimpleNamespace

    from langmem_ext_dev.bench.locomo import Oracle

    from langmem_ext import SQLiteStore

    docs = [
        SimpleNamespace(text="tea at noon with Ada", dia_ids=("D1:1",)),
        SimpleNamespace(text="tea and cake with Ada", dia_ids=("D1:2",)),
        SimpleNamespace(text="tea in the garden", dia_ids=("D1:3",)),
        SimpleNamespace(text="a walk by the river", dia_ids=("D1:4",)),
    ]
    oracle = Oracle(docs)
    store = SQLiteStore(index={"fields": ["text"], "rerank": oracle, "rerank_candidates": 3})
    for i, d in enumerate(docs):
        store.put(("c",), str(i), {"text": d.text})
    plain = [it.key for it in SQLiteStore.search(store, ("c",), query="tea with Ada", limit=3)]
    oracle.evidence = {"D1:3", "D1:4"}  # D1:4 is not among the 3 candidates
    got = [it.key for it in store.search(("c",), query="tea with Ada", limit=3)]
    assert got[0] == "2" and got[1:] == [k for k in plain if k != "2"]


def test_bench_store_with_neighbours_and_kept_files(tmp_path):
    """--neighbours searches again beside CPU-bound processes (the yardstick
    re-measured beside them); --keep loads once and reuses the store."""
    out, keep = tmp_path / "out", tmp_path / "keep"
    args = ["bench", "store", "--sizes", "300", "--queries", "3", "--kinds", "clustered"]
    args += ["--stores", "sqlite", "--out", str(out), "--keep", str(keep), "--neighbours", "1"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    (row,) = json.loads((out / "store.json").read_text())["rows"]
    busy = row["neighbours"]
    assert busy["count"] == 1 and busy["brute_all_ms"] > 0
    assert busy["whole"]["recall_at_10"] == 1.0 and busy["open_to_first_ms"] > 0
    assert "Beside CPU-bound neighbours" in result.output
    assert (keep / "sqlite-clustered-300-q3" / "ours.db").exists()
    again = CliRunner().invoke(app, args[:-2], env={"COLUMNS": "240"})
    assert again.exit_code == 0, again.output
    (row2,) = json.loads((out / "store.json").read_text())["rows"]
    assert row2["reused"] is True and row2["put_per_s"] == row["put_per_s"]


def test_neighbours_run_during_the_block_and_stop_after():
    import multiprocessing

    from langmem_ext_dev.bench.store_speed import neighbours

    before = set(multiprocessing.active_children())
    with neighbours(2):
        spinning = [p for p in multiprocessing.active_children() if p not in before]
        assert len(spinning) == 2 and all(p.is_alive() for p in spinning)
    assert not any(p.is_alive() for p in spinning)


def test_brute_force_split_over_threads_is_the_one_thread_answer():
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from langmem_ext_dev.bench.store_speed import _brute_force

    rng = np.random.default_rng(0)
    docs = rng.standard_normal((5003, 16)).astype(np.float32)
    with ThreadPoolExecutor(3) as pool:
        for q in docs[:5]:
            one = _brute_force(docs, q, 1, pool)
            assert one.tolist() == _brute_force(docs, q, 3, pool).tolist()
            assert one.tolist() == np.argsort(-(docs @ q))[:10].tolist()


def test_bench_store_refuses_what_the_disk_cannot_hold(tmp_path):
    from langmem_ext_dev.bench import store_speed

    from langmem_ext.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"needs about [\d,.]+ GB of disk .* GB is free"):
        store_speed.check_disk([10**12], ["sqlite"], tmp_path)
    store_speed.check_disk([1000], ["sqlite", "postgres"], tmp_path)  # fits
    # Refused before anything starts: no scratch directory, no server.
    big = ["--sizes", str(10**12), "--large", "--stores", "sqlite,postgres"]
    result = CliRunner().invoke(app, ["bench", "store", *big, "--keep", str(tmp_path / "k")])
    assert result.exit_code != 0 and "GB of disk" in result.output
    assert not (tmp_path / "k").exists()
    result = CliRunner().invoke(app, ["bench", "store", "--sizes", "10000000"])
    assert result.exit_code != 0 and "--large" in result.output
