"""SQLiteStore's vector index: memory-mapped segments, the delta, the log.

Thresholds are shrunk so a few thousand items exercise every path: quantized
scans with exact re-rank, delta flushes, tier merges, masking of replaced and
deleted items, reopening, lost segment files, other processes' writes.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib

import numpy as np
import pytest
from langgraph.store.base import PutOp

from langmem_ext import SQLiteStore
from langmem_ext.stores import _vector_index
from langmem_ext.stores._segment import FileRows, Segment
from langmem_ext.stores.sqlite import _exec, _vectors, schema
from tests.stores.test_sqlite import run_py

DIMS = 24


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(_vector_index, "EXACT_ROWS", 8)
    monkeypatch.setattr(_vectors, "FLUSH", 40)
    monkeypatch.setattr(_vectors, "TIER", 2)


class Table:
    """A vector per text, the same in every process, so tests know each item's
    exact embedding. Clustered, like real embeddings: texts sharing their first
    two characters share a centre."""

    def __call__(self, texts):
        out = []
        for t in texts:
            centre = np.random.default_rng(zlib.crc32(t[:2].encode())).standard_normal(DIMS)
            noise = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIMS)
            out.append((centre + 0.6 * noise).astype(np.float32).tolist())
        return out


def _store(path, table):
    return SQLiteStore(
        path, index={"dims": DIMS, "embed": table, "fields": ["t", "tags[*]"]}, search_mode="vector"
    )


def _expected(state, table, prefix, query, flt=None):
    """Exact ranking by numpy: item score = best cosine over its texts."""
    q = np.asarray(table([query])[0], dtype=np.float64)
    q /= np.linalg.norm(q)
    scored = []
    for (ns, key), value in state.items():
        if ns[: len(prefix)] != prefix:
            continue
        if flt and not value["b"] >= flt:
            continue
        texts = [value["t"], *value.get("tags", [])]
        vs = np.asarray(table(texts), dtype=np.float64)
        sims = vs @ q / np.linalg.norm(vs, axis=1)
        scored.append((float(sims.max()), key))
    return scored


def _check(store, state, table, rng, n_queries=6):
    for j in range(n_queries):
        query = f"{'abcdefgh'[j % 8]}{'xyz'[j % 3]}query {j}"
        for prefix, flt in [((), None), (("u", "n1"), None), (("u",), 2)]:
            exp = _expected(state, table, prefix, query, flt)
            offset = int(rng.integers(0, 5))
            got = store.search(
                prefix,
                query=query,
                filter={"b": {"$gte": flt}} if flt else None,
                limit=7,
                offset=offset,
            )
            scores = sorted((s for s, _ in exp), reverse=True)[offset : offset + 7]
            assert [r.score for r in got] == pytest.approx(scores, abs=1e-5)
            by_key = dict((k, s) for s, k in exp)
            for r in got:
                assert by_key[r.key] == pytest.approx(r.score, abs=1e-5)


def _random_writes(store, state, rng, n, start=0):
    ops = []
    for i in range(start, start + n):
        ns = ("u", f"n{int(rng.integers(0, 4))}")
        if state and rng.random() < 0.15:  # delete or re-put an existing item
            victim = list(state)[int(rng.integers(0, len(state)))]
            if rng.random() < 0.5:
                ops.append(PutOp(victim[0], victim[1], None))
                state.pop(victim)
                continue
            ns, key = victim
        else:
            key = f"k{i}"
        stem = "abcdefgh"[int(rng.integers(0, 8))] + "xyz"[int(rng.integers(0, 3))]
        value = {"t": f"{stem} doc {i}", "b": int(rng.integers(0, 4))}
        if rng.random() < 0.2:
            value["tags"] = [f"{stem} tag {i} {t}" for t in range(2)]
        ops.append(PutOp(ns, key, value))
        state[(ns, key)] = value
    for chunk in range(0, len(ops), 25):
        store.batch(ops[chunk : chunk + 25])


def test_exact_through_flushes_merges_and_masks(tmp_path, small):
    rng = np.random.default_rng(0)
    table, state = Table(), {}
    store = _store(tmp_path / "v.db", table)
    _random_writes(store, state, rng, 150)
    _check(store, state, table, rng)  # index loaded; later writes update it in place
    for round_ in range(4):
        _random_writes(store, state, rng, 120, start=1000 * (round_ + 1))
        _check(store, state, table, rng, n_queries=3)
    seg_dir = _vectors.segment_dir(str(tmp_path / "v.db"))
    meta = dict(store._connect().execute("SELECT key, value FROM meta").fetchall())
    files = [m["file"] for m in json.loads(meta["segments"])]
    assert files and all((seg_dir / f).exists() for f in files)
    assert int(meta["log_size"]) < _vectors.FLUSH
    store.close()
    # A fresh process state: mapped segments + the logged delta, same answers.
    reopened = _store(tmp_path / "v.db", table)
    _check(reopened, state, table, rng)
    reopened.close()


def test_lost_segment_files_are_rebuilt(tmp_path, small):
    rng = np.random.default_rng(1)
    table, state = Table(), {}
    path = tmp_path / "r.db"
    with _store(path, table) as store:
        _random_writes(store, state, rng, 200)
    shutil.rmtree(_vectors.segment_dir(str(path)))
    with _store(path, table) as store:
        _check(store, state, table, rng)
        meta = dict(store._connect().execute("SELECT key, value FROM meta").fetchall())
        files = [m["file"] for m in json.loads(meta["segments"])]
        assert len(files) == 1 and (_vectors.segment_dir(str(path)) / files[0]).exists()
    # A torn file (a crash while writing it) is rebuilt too.
    seg = _vectors.segment_dir(str(path)) / files[0]
    seg.write_bytes(seg.read_bytes()[:100])
    with _store(path, table) as store:
        _check(store, state, table, rng, n_queries=2)


def test_in_memory_store_flushes_too(small):
    rng = np.random.default_rng(2)
    table, state = Table(), {}
    store = _store(":memory:", table)
    _random_writes(store, state, rng, 100)
    _check(store, state, table, rng, n_queries=2)
    _random_writes(store, state, rng, 200, start=500)
    _check(store, state, table, rng, n_queries=3)
    assert store._segments


def test_other_process_writes_are_read_from_the_log(tmp_path, small):
    rng = np.random.default_rng(4)
    table, state = Table(), {}
    path = tmp_path / "p.db"
    store = _store(path, table)
    _random_writes(store, state, rng, 120)
    _check(store, state, table, rng, n_queries=2)
    code = f"""
        import numpy as np
        from langmem_ext.stores.sqlite import _vectors
        from tests.stores.test_sqlite_vectors import Table, _store, _random_writes
        _vectors.FLUSH = 40
        _vectors.TIER = 2
        table, state = Table(), {{}}
        store = _store({str(path)!r}, table)
        rng = np.random.default_rng(99)
        _random_writes(store, state, rng, 90, start=5000)
        print(__import__("json").dumps([[list(k[0]), k[1], v] for k, v in state.items()]))
        store.close()
    """
    out = run_py(code).stdout.strip().splitlines()[-1]
    for ns, key, value in json.loads(out):
        state[(tuple(ns), key)] = value
    # Deletes in the child only touched items it knew (its own): state stays right.
    _check(store, state, table, rng, n_queries=3)
    store.close()


def test_migrated_file_drops_nan_vectors_and_scopes_keywords(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    saved = schema.MIGRATIONS[:]
    try:
        schema.MIGRATIONS[:] = saved[:2]
        schema.migrate(conn)
        ts = "'2026-01-01T00:00:00.000000+00:00'"
        for i, (ns, text) in enumerate([("a.x", "green tea"), ("a.y", "black tea"), ("b", "tea")]):
            conn.execute(
                f"INSERT INTO items (id, prefix, key, value, created_at, updated_at) VALUES "
                f"({i + 1}, '{ns}', 'k{i}', json_object('t', '{text}'), {ts}, {ts})"
            )
            conn.execute(
                "INSERT INTO items_fts (rowid, text, context) VALUES (?, ?, '')", [i + 1, text]
            )
            vec = np.full(DIMS, 1.0 + i, dtype="<f4")
            if i == 1:
                vec[0] = np.nan  # what an unvalidated embedder could leave behind
            conn.execute(
                "INSERT INTO vectors (item_id, field, embedding) VALUES (?, 't', ?)",
                [i + 1, vec.tobytes()],
            )
        conn.execute("UPDATE meta SET value = 3 WHERE key = 'generation'")
    finally:
        schema.MIGRATIONS[:] = saved
        conn.close()
    table = {"q": [1.0] * DIMS}
    embed = lambda texts: [table.get(t, [1.0] * DIMS) for t in texts]  # noqa: E731
    index = {"dims": DIMS, "embed": embed, "fields": ["t"]}
    with SQLiteStore(path, index=index) as store:
        assert store._connect().execute("SELECT count(*) FROM vectors").fetchone()[0] == 2
        got = store.search(("a",), query="tea", mode="keyword")
        assert sorted(r.key for r in got) == ["k0", "k1"]  # never b's
        got = store.search(("a",), query="q", mode="hybrid")
        assert [(r.key, r.score) for r in got] == [("k0", 0.5), ("k1", None)]
        got = store.search((), query="q", mode="vector")
        assert sorted(r.key for r in got if r.score is not None) == ["k0", "k2"]


def test_keyword_search_reads_only_its_namespace(tmp_path):
    with SQLiteStore(tmp_path / "k.db") as store:
        store.batch([PutOp(("u", f"n{i}"), "m", {"text": f"tea number {i}"}) for i in range(300)])
        store.put(("u", "n7", "sub"), "deep", {"text": "tea below"})
        got = store.search(("u", "n7"), query="tea", mode="keyword")
        assert sorted(r.key for r in got) == ["deep", "m"]
        # Keyword mode returns only matches: no unscored tail, in or out of scope.
        assert store.search(("u", "n7"), query="coffee", mode="keyword") == []
        plan = " ".join(
            str(r)
            for r in store._connect().execute(
                "EXPLAIN QUERY PLAN SELECT rowid FROM items_fts WHERE items_fts MATCH ?",
                [f'ns : "{schema.ns_token("u.n7")}" AND ("tea")'],
            )
        )
        assert "VIRTUAL TABLE INDEX" in plan


# -- a large scope: two tiers, full-precision rows read on demand --------------------


@pytest.mark.parametrize("flt", [None, 50, 99])
def test_a_large_scope_is_walked_in_tiers_and_stays_exact(tmp_path, monkeypatch, flt):
    """The items with the highest bounds first, the rest only when the page
    is not settled by them (a filter passing 1 % reaches the second tier)."""
    monkeypatch.setattr(_exec, "TIER_FIRST", 16)
    monkeypatch.setattr(_exec, "TIER_ROWS", 64)
    reached: list[int] = []
    tiers = _exec._tiers

    def spy(upper, need):
        for n, tier in enumerate(tiers(upper, need)):
            reached.append(n)
            yield tier

    monkeypatch.setattr(_exec, "_tiers", spy)
    rng = np.random.default_rng(7)
    table, state, ops = Table(), {}, []
    for i in range(3000):
        stem = "abcdefgh"[int(rng.integers(0, 8))] + "xyz"[int(rng.integers(0, 3))]
        ns, value = ("u", f"n{i % 4}"), {"t": f"{stem} doc {i}", "b": int(rng.integers(0, 100))}
        state[(ns, f"k{i}")] = value
        ops.append(PutOp(ns, f"k{i}", value))
    store = _store(tmp_path / "t.db", table)
    store.batch(ops)
    for j in range(6):
        query, offset = f"{'abcdefgh'[j]}x query {j}", j % 3
        got = store.search(
            (), query=query, filter={"b": {"$gte": flt}} if flt else None, limit=3, offset=offset
        )
        exp = sorted((s for s, _ in _expected(state, table, (), query, flt)), reverse=True)
        assert [r.score for r in got] == pytest.approx(exp[offset : offset + 3], abs=1e-5)
    assert 0 in reached
    assert (1 in reached) == (flt == 99)
    store.close()


def test_full_precision_rows_are_read_not_mapped(tmp_path):
    """A search re-ranks a few float32 rows: reading them must not bring the
    file's pages around them into the process (at a million vectors, mapped
    reads made 1.4 GB resident after one whole-store search)."""
    rows = np.random.default_rng(0).standard_normal((60_000, 384)).astype(np.float32)
    seg = Segment.build([("u", i, rows[i : i + 1]) for i in range(len(rows))], (), dims=384)
    seg.save(tmp_path / "s.lmxv")
    loaded = Segment.load(tmp_path / "s.lmxv")
    assert isinstance(loaded.unit, FileRows)
    pick = np.random.default_rng(1).choice(len(rows), 800, replace=False)
    resident = _resident_file_mb()
    got = loaded.unit[pick]
    np.testing.assert_array_equal(got, seg.unit[pick])
    if resident is not None:
        assert _resident_file_mb() - resident < 8  # mapped: most of the 88 MB file
    # every way a segment reads its rows
    np.testing.assert_array_equal(loaded.unit[10:20], seg.unit[10:20])
    np.testing.assert_array_equal(loaded.unit[[5, 3, 5]], seg.unit[[5, 3, 5]])
    np.testing.assert_array_equal(loaded.unit[seg.ids % 7 == 0], seg.unit[seg.ids % 7 == 0])
    np.testing.assert_array_equal(loaded.unit[-1], seg.unit[-1])
    np.testing.assert_array_equal(np.asarray(loaded.unit), seg.unit)
    with pytest.raises(IndexError):
        loaded.unit[np.array([len(rows)])]
    # a merge reads its parts through the same rows, and a deleted file stays readable
    (tmp_path / "s.lmxv").unlink()
    merged = Segment.merge([loaded])
    np.testing.assert_array_equal(merged.unit, seg.unit)


def _resident_file_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssFile:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_chunked_scan_gives_the_exact_integer_dots(monkeypatch, threads):
    from langmem_ext.stores import _segment
    from langmem_ext.stores.threads import set_threads

    monkeypatch.setattr(_segment, "_PARALLEL_ROWS", 10)
    monkeypatch.setattr(_segment, "_CHUNK_ROWS", 7)
    rng = np.random.default_rng(threads)
    codes = rng.integers(-127, 128, (1001, 384), dtype=np.int8)
    q = rng.integers(-127, 128, 384, dtype=np.int8)
    set_threads(threads)
    try:
        got = _segment.int8_dots(codes, q)
    finally:
        set_threads(None)
    assert got.dtype == np.float32
    assert np.array_equal(got.astype(np.int64), codes.astype(np.int64) @ q.astype(np.int64))


def test_parallel_scan_returns_the_brute_force_top_k_with_ties_and_filters(
    tmp_path, small, monkeypatch
):
    """The scan cut in chunks over threads, many segments, items sharing
    identical vectors (ties), filters and offsets: every page is the numpy
    brute-force page."""
    from langmem_ext.stores import _segment
    from langmem_ext.stores.threads import set_threads

    monkeypatch.setattr(_segment, "_PARALLEL_ROWS", 16)
    monkeypatch.setattr(_segment, "_CHUNK_ROWS", 5)
    monkeypatch.setattr(_exec, "TIER_FIRST", 16)
    monkeypatch.setattr(_exec, "TIER_ROWS", 64)
    rng = np.random.default_rng(7)
    table, state = Table(), {}
    store = _store(tmp_path / "p.db", table)
    _random_writes(store, state, rng, 200)
    # Ties: the same text under several keys and namespaces.
    twins = [
        PutOp(("u", f"n{i % 4}"), f"twin{i}", {"t": "az doc 5", "b": i % 4}) for i in range(12)
    ]
    store.batch(twins)
    state.update({(op.namespace, op.key): op.value for op in twins})
    set_threads(2)
    try:
        _check(store, state, table, rng, n_queries=8)
        _random_writes(store, state, rng, 90, start=5000)
        _check(store, state, table, rng, n_queries=4)
    finally:
        set_threads(None)
        store.close()


# -- approximate mode: coarse cells ---------------------------------------------------


def _clustered(n, dims, seed=0, topics=40):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dims)).astype(np.float32)
    x = centres[rng.integers(0, topics, n)] + 0.5 * rng.standard_normal((n, dims)).astype(
        np.float32
    )
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_cells_mode_recall_on_a_small_set(tmp_path, monkeypatch):
    """Approximate mode reads a fraction of the rows and still finds nearly
    every exact neighbour; more probes, more recall; all probes, exact."""
    from langmem_ext.stores import _cells

    monkeypatch.setattr(_vectors, "FLUSH", 1000)
    docs = _clustered(6000, 32)
    queries = _clustered(30, 32, seed=1)
    rows = {f"d{i}": docs[i] for i in range(len(docs))}
    rows.update({f"query {j}": queries[j] for j in range(len(queries))})

    def embed(texts):
        return [rows[t].tolist() for t in texts]

    index = {"dims": 32, "embed": embed, "fields": ["t"], "cache": False}
    path = tmp_path / "c.db"
    with SQLiteStore(path, index=index, search_mode="vector") as store:
        for a in range(0, len(docs), 500):
            store.batch([PutOp(("u",), f"k{i}", {"t": f"d{i}"}) for i in range(a, a + 500)])
    truth = np.argsort(-(queries @ docs.T), axis=1)[:, :10]
    recall = {}
    for probes in (2, 8, 64):
        setting = {"kind": "cells", "lists": 64, "probes": probes, "min_rows": 1000}
        if probes == 2:
            SQLiteStore.rebuild_vector_index(path, setting)
        with SQLiteStore(path, index=index, search_mode="vector", vector_index=setting) as s:
            hits = 0
            for j in range(len(queries)):
                got = {r.key for r in s.search(("u",), query=f"query {j}", limit=10)}
                hits += len(got & {f"k{i}" for i in truth[j]})
            recall[probes] = hits / (10 * len(queries))
    assert recall[2] <= recall[8] <= recall[64] == 1.0
    assert recall[8] >= 0.9
    seg_dir = _vectors.segment_dir(str(path))
    assert list(seg_dir.glob("*.cells64.npz")), "cells are saved beside their segment"
    assert _cells.cells_setting({"kind": "exact"}) is None


def test_a_store_opened_with_other_cells_says_how_to_rebuild(tmp_path):
    from langmem_ext.errors import ConfigurationError

    table = Table()
    path = tmp_path / "m.db"
    cells = {"kind": "cells", "lists": 16, "probes": 4, "min_rows": 10}
    store = SQLiteStore(
        path, index={"dims": DIMS, "embed": table, "fields": ["t"]}, vector_index=cells
    )
    store.batch([PutOp(("u",), f"k{i}", {"t": f"ab doc {i}"}) for i in range(50)])
    assert store.search(("u",), query="ab doc 1", limit=3)
    store.close()
    other = SQLiteStore(
        path,
        index={"dims": DIMS, "embed": table, "fields": ["t"]},
        vector_index={"kind": "cells", "lists": 32},
    )
    with pytest.raises(ConfigurationError, match="rebuild_vector_index"):
        other.search(("u",), query="ab doc 1", limit=3)
    other.close()
    # Without a setting, the one the file was built with; after a rebuild, the new one.
    with SQLiteStore(path, index={"dims": DIMS, "embed": table, "fields": ["t"]}) as s:
        assert len(s.search(("u",), query="ab doc 1", limit=3)) == 3
    SQLiteStore.rebuild_vector_index(path, {"kind": "cells", "lists": 32})
    with SQLiteStore(
        path,
        index={"dims": DIMS, "embed": table, "fields": ["t"]},
        vector_index={"kind": "cells", "lists": 32},
    ) as s:
        assert len(s.search(("u",), query="ab doc 1", limit=3)) == 3
    with pytest.raises(ConfigurationError, match="vector_index"):
        SQLiteStore(path, vector_index={"kind": "ivf"})


def test_closing_leaves_the_recent_vectors_in_a_segment(tmp_path, monkeypatch):
    """The next open maps a segment instead of reading the log back."""
    monkeypatch.setattr(_vectors, "CLOSE_FLUSH", 50)
    table, state = Table(), {}
    rng = np.random.default_rng(3)
    store = _store(tmp_path / "c.db", table)
    _random_writes(store, state, rng, 120)
    assert int(dict(store._connect().execute("SELECT key, value FROM meta"))["log_size"]) >= 50
    store.close()
    conn = sqlite3.connect(tmp_path / "c.db")
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    conn.close()
    assert int(meta["log_size"]) == 0 and json.loads(meta["segments"])
    reopened = _store(tmp_path / "c.db", table)
    _check(reopened, state, table, rng, n_queries=3)
    reopened.close()
