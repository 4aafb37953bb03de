"""SQLiteStore beyond the shared contract: files, processes, crashes, cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from langgraph.store.base import PutOp

from langmem_ext import SQLiteStore
from langmem_ext.errors import ConfigurationError, StoreError
from tests.embeddings import WordEmbeddings

ROOT = Path(__file__).resolve().parents[2]
IDX = '{"dims": 16, "embed": WordEmbeddings(16), "fields": ["text"]}'


def run_py(
    code: str, *, user: int | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        user=user,
        check=check,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_data_and_vectors_survive_reopen(tmp_path):
    path = tmp_path / "m.db"
    index = {"dims": 32, "embed": WordEmbeddings(32), "fields": ["text"]}
    with SQLiteStore(path, index=index) as store:
        store.put(("u",), "a", {"text": "green tea"})
        store.put(("u",), "b", {"text": "black coffee"})
    with SQLiteStore(path, index=index) as store:
        assert store.get(("u",), "a").value == {"text": "green tea"}
        got = store.search(("u",), query="black coffee", mode="vector")
        assert [r.key for r in got] == ["b", "a"]
        assert got[0].score == pytest.approx(1.0, abs=1e-6)


def test_corrupt_file_is_a_clear_error_and_untouched(tmp_path):
    path = tmp_path / "bad.db"
    junk = b"this is not a database" * 100
    path.write_bytes(junk)
    with pytest.raises(StoreError, match="not a usable SQLite database") as e:
        SQLiteStore(path).setup()
    assert str(path) in str(e.value)
    assert path.read_bytes() == junk


def _make_read_only(paths: list[Path]) -> None:
    if os.geteuid() != 0:
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return
    # root ignores file modes; the immutable attribute binds root too
    proc = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"cannot make files read-only here: {proc.stderr}")


def _make_writable(paths: list[Path]) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
    for p in paths:
        p.chmod(0o755 if p.is_dir() else 0o644)


def test_read_only_file_is_a_clear_error_and_unchanged(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    path = d / "ro.db"
    with SQLiteStore(path) as store:
        store.put(("u",), "a", {"v": 1})
    before = path.read_bytes()
    _make_read_only([path, d])
    try:
        with pytest.raises(StoreError, match="read-only") as e, SQLiteStore(path) as store:
            store.put(("u",), "a", {"v": 2})
        assert str(path) in str(e.value)
    finally:
        _make_writable([path, d])
    assert path.read_bytes() == before
    with SQLiteStore(path) as store:
        assert store.get(("u",), "a").value == {"v": 1}


def test_reopen_with_other_dims_is_rejected(tmp_path):
    path = tmp_path / "m.db"
    with SQLiteStore(path, index={"dims": 32, "embed": WordEmbeddings(32)}) as store:
        store.put(("u",), "a", {"text": "x"})
    with pytest.raises(ConfigurationError, match="32-dimensional"):
        SQLiteStore(path, index={"dims": 48, "embed": WordEmbeddings(48)}).setup()


def test_threads_share_one_store(tmp_path):
    store = SQLiteStore(tmp_path / "t.db", index={"dims": 16, "embed": WordEmbeddings(16)})
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(60):
                store.put(("t", str(t)), f"k{i}", {"text": f"thread {t} item {i}"})
                store.search(("t",), query=f"item {i}", limit=3)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(store.search(("t",), limit=1000)) == 360
    store.close()


@pytest.mark.slow
def test_processes_write_one_file_and_see_each_other(tmp_path):
    path = tmp_path / "p.db"
    SQLiteStore(path).setup()
    writer = """
        import sys
        from langmem_ext import SQLiteStore
        from tests.embeddings import WordEmbeddings
        s = SQLiteStore({path!r}, index={index})
        for i in range(150):
            s.put(("p", "{name}"), f"k{{i}}", {{"text": "{name} note " + str(i)}})
            if i % 10 == 0:
                s.search(("p",), query="note", limit=5)
        print(len(s.search(("p", "{name}"), limit=1000)))
    """
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(writer.format(path=str(path), name=n, index=IDX)),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in ("alpha", "beta")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o[0].strip() for o in outs] == ["150", "150"]
    store = SQLiteStore(path, index={"dims": 16, "embed": WordEmbeddings(16), "fields": ["text"]})
    assert len(store.search(("p",), limit=1000)) == 300
    # this process's vector cache follows writes made by another process
    assert store.search(("p",), query="alpha note 3", mode="vector", limit=1)[0].key == "k3"
    run_py(
        f"""
        from langmem_ext import SQLiteStore
        from tests.embeddings import WordEmbeddings
        s = SQLiteStore({str(path)!r}, index={IDX})
        s.put(("p", "gamma"), "new", {{"text": "zebra crossing"}})
        """
    )
    top = store.search(("p",), query="zebra crossing", mode="vector", limit=1)[0]
    assert (top.namespace, top.key) == (("p", "gamma"), "new")
    store.close()


@pytest.mark.slow
def test_crash_mid_write_loses_nothing_committed(tmp_path):
    path = tmp_path / "c.db"
    code = f"""
        import os, signal
        from langgraph.store.base import PutOp
        from langmem_ext import SQLiteStore
        from langmem_ext.stores.sqlite import _exec
        s = SQLiteStore({str(path)!r})
        s.batch([PutOp(("c",), f"a{{i}}", {{"v": i}}) for i in range(100)])
        original = _exec.apply_puts
        def crash(*args, **kwargs):
            original(*args, **kwargs)  # rows written inside the open transaction...
            os.kill(os.getpid(), signal.SIGKILL)  # ...and the process dies before COMMIT
        _exec.apply_puts = crash
        s.batch([PutOp(("c",), f"b{{i}}", {{"v": i}}) for i in range(5000)]
                + [PutOp(("c",), "a0", {{"v": "overwritten"}})])
    """
    proc = run_py(code, check=False)
    assert proc.returncode == -9, proc.stderr
    with SQLiteStore(path) as store:
        items = store.search(("c",), limit=10_000)
        assert sorted(r.key for r in items) == sorted(f"a{i}" for i in range(100))
        assert store.get(("c",), "a0").value == {"v": 0}
        conn = store._connect()
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_embedding_cache_skips_repeated_text_and_persists(tmp_path):
    path = tmp_path / "cache.db"
    emb = WordEmbeddings(16)
    with SQLiteStore(path, index={"dims": 16, "embed": emb}) as store:
        store.put(("u",), "a", {"text": "same words"})
        store.put(("u",), "b", {"text": "same words"})
        store.batch([PutOp(("u",), f"c{i}", {"text": "same words"}) for i in range(5)])
        assert emb.calls == 1
        store.search(("u",), query="words")
        store.search(("u",), query="words")
        assert emb.calls == 2
    emb2 = WordEmbeddings(16)  # same model identity, fresh process state
    with SQLiteStore(path, index={"dims": 16, "embed": emb2}) as store:
        store.put(("u",), "d", {"text": "same words"})
        store.search(("u",), query="words")
        assert emb2.calls == 0
        assert store.embeddings.hits >= 2


def test_exact_results_match_numpy_at_scale(tmp_path):
    rng = np.random.default_rng(7)
    n, dims = 3000, 48
    vecs = rng.standard_normal((n, dims)).astype(np.float32)
    table = {f"doc {i}": vecs[i].tolist() for i in range(n)}
    queries = rng.standard_normal((10, dims)).astype(np.float32)
    table.update({f"q{j}": queries[j].tolist() for j in range(10)})

    def lookup(texts):
        return [table[t] for t in texts]

    store = SQLiteStore(tmp_path / "x.db", index={"dims": dims, "embed": lookup, "fields": ["t"]})
    store.batch(
        [PutOp(("u", f"n{i % 10}"), f"k{i}", {"t": f"doc {i}", "b": i % 7}) for i in range(n)]
    )
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    ns = np.arange(n) % 10
    b = np.arange(n) % 7
    for j in range(10):
        sims = unit @ (queries[j] / np.linalg.norm(queries[j]))
        for prefix, mask, flt in [
            ((), np.ones(n, bool), None),
            (("u", "n4"), ns == 4, None),
            (("u",), b >= 5, {"b": {"$gte": 5}}),
        ]:
            exp = np.argsort(-np.where(mask, sims, -np.inf), kind="stable")[:25]
            got = store.search(
                prefix, query=f"q{j}", filter=flt, limit=10, offset=15, mode="vector"
            )
            assert [r.key for r in got] == [f"k{i}" for i in exp[15:25]]
            assert [r.score for r in got] == pytest.approx(sims[exp[15:25]].tolist(), abs=1e-5)
    store.close()


def test_local_embedder_offline(tmp_path):
    with SQLiteStore(tmp_path / "l.db", index={"embed": "local", "fields": ["content"]}) as store:
        store.put(("u",), "1", {"content": "Is allergic to peanuts"})
        store.put(("u",), "2", {"content": "Prefers dark mode in the editor"})
        store.put(("u",), "3", {"content": "Lives in Lisbon"})
        assert store.search(("u",), query="food allergy", mode="vector")[0].key == "1"
        assert store.search(("u",), query="which city does she live in?")[0].key == "3"
        vec = store.embeddings.embed_query("hello")
        assert len(vec) == 384 and abs(np.linalg.norm(vec) - 1) < 1e-3


async def test_async_faces_share_the_store(tmp_path):
    async with SQLiteStore(tmp_path / "a.db", index={"dims": 16, "embed": WordEmbeddings(16)}) as s:
        await s.aput(("u",), "a", {"text": "tea"})
        assert (await s.aget(("u",), "a")).value == {"text": "tea"}
        assert s.get(("u",), "a").value == {"text": "tea"}
        assert [r.key for r in await s.asearch(("u",), query="tea")] == ["a"]
        assert await s.alist_namespaces() == [("u",)]


def test_store_error_codes_and_pickling():
    import pickle

    err = StoreError("boom", path="/x")
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.retryable, again.details, str(again)) == (
        "PROVIDER_ERROR",
        False,
        {"path": "/x"},
        "boom",
    )
    assert json.dumps(err.details)


def test_context_fields_are_never_embedded(tmp_path):
    index = {
        "dims": 16,
        "embed": WordEmbeddings(16),
        "fields": ["text"],
        "context_fields": ["context"],
    }
    with SQLiteStore(tmp_path / "ctx.db", index=index) as store:
        # (weighting: tests/conformance/test_search.py, on every backend)
        store.put(("c",), "own", {"text": "we adopted a kitten", "context": "nice weather"})
        store.put(("c",), "near", {"text": "so cute", "context": "we adopted a kitten"})
        # context is never embedded: only the text field's vector exists
        rows = store._connect().execute("SELECT DISTINCT field FROM vectors").fetchall()
        assert rows == [("text",)]


def test_schema_v0_file_is_migrated_keeping_keyword_index(tmp_path):
    import sqlite3

    from langmem_ext.stores.sqlite import schema

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    saved = schema.MIGRATIONS[:]
    try:
        schema.MIGRATIONS[:] = saved[:1]
        schema.migrate(conn)
        conn.execute(
            "INSERT INTO items (id, prefix, key, value, created_at, updated_at) VALUES "
            "(1, 'a', 'k', '{\"t\": \"green tea\"}', '2026-01-01T00:00:00.000000+00:00', "
            "'2026-01-01T00:00:00.000000+00:00')"
        )
        conn.execute("INSERT INTO items_fts (rowid, text) VALUES (1, 'green tea')")
    finally:
        schema.MIGRATIONS[:] = saved
        conn.close()
    with SQLiteStore(path) as store:
        assert [r.key for r in store.search(("a",), query="tea")] == ["k"]
        versions = store._connect().execute("SELECT v FROM store_migrations").fetchall()
        assert versions == [(v,) for v in range(len(schema.MIGRATIONS))]


def test_which_queries_narrow_to_keyword_matches():
    # mode="keyword", or a store made keyword-only on purpose: matches only.
    # No mode on a store without an embedder: LangGraph's contract (a query
    # without an index narrows nothing), the matches ranked first.
    plain, keyword = SQLiteStore(), SQLiteStore(search_mode="keyword")
    for store in (plain, keyword):
        store.put(("n",), "a", {"content": "zebra crossing"})
        store.put(("n",), "b", {"content": "green tea"})
        assert [r.key for r in store.search(("n",), query="zebra", mode="keyword")] == ["a"]
    assert [r.key for r in keyword.search(("n",), query="zebra")] == ["a"]
    assert keyword.search(("n",), query="okapi") == []
    assert [(r.key, r.score) for r in plain.search(("n",), query="zebra")] == [
        ("a", 1.0),
        ("b", None),
    ]
