"""PostgresStore's default vector index, the inverted file: trained once the
store holds ``train_at`` vectors, cells assigned by the writers, searched by
the nearest cells; on a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp

from langmem_ext.errors import ConfigurationError
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore, _ivf

DIMS = 32
N = 3000
# Small enough for a test: 64 cells, trained at 1,000 vectors, ~150 vectors
# read per query (600 under a filter); scopes above 500 vectors use the cells.
IVF = {"lists": 64, "train_at": 1000, "scan_rows": 150, "exact_below": 500, "probes": 2}


@pytest.fixture
def dsn(pg_server):
    return pg_server.fresh_schema()


@pytest.fixture(scope="module")
def data():
    """Clustered vectors (20 topics), as sentence embeddings are."""
    rng = np.random.default_rng(11)
    topics = rng.standard_normal((20, DIMS)).astype(np.float32)
    docs = topics[rng.integers(0, 20, N)] + 0.35 * rng.standard_normal((N, DIMS)).astype(np.float32)
    queries = topics[rng.integers(0, 20, 20)] + 0.35 * rng.standard_normal((20, DIMS)).astype(
        np.float32
    )
    table = {f"doc {i}": v for i, v in enumerate(docs)}
    table.update({f"query {j}": v for j, v in enumerate(queries)})
    unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    return unit, queries, table


def _index(table):
    return {
        "dims": DIMS,
        "embed": lambda texts: [table[t].tolist() for t in texts],
        "fields": ["text"],
        "cache": False,
    }


def _ops(lo: int, hi: int) -> list[PutOp]:
    return [
        PutOp(("user", f"u{i % 10}"), f"k{i}", {"text": f"doc {i}", "b": i % 10})
        for i in range(lo, hi)
    ]


def _cells_count(dsn: str) -> dict[bool, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE lmx_vectors")
        rows = conn.execute("SELECT cell = -1, count(*) FROM lmx_vectors GROUP BY 1").fetchall()
    return dict(rows)


def _recall(store_search, unit, queries, prefix, mask, flt=None) -> float:
    hits = 0
    for j, q in enumerate(queries):
        sims = unit @ (q / np.linalg.norm(q))
        expected = {f"k{i}" for i in np.argsort(-np.where(mask, sims, -9))[:10]}
        got = store_search(prefix, query=f"query {j}", filter=flt, limit=10, mode="vector")
        assert len(got) == 10
        hits += len(expected & {r.key for r in got})
    return hits / (10 * len(queries))


def test_cells_are_trained_at_train_at_and_searched(dsn, data, monkeypatch):
    """No cells below ``train_at``; the put that crosses it trains them and
    assigns every vector; the whole store and filtered searches then read the
    nearest cells (not the exact path) with recall >= 0.95; the store's
    default needs no HNSW index (writes never walk a graph)."""
    unit, queries, table = data
    served: list[bool] = []
    real = _ivf.cell_steps

    def counting(*args, **kwargs):
        page = yield from real(*args, **kwargs)
        served.append(page is not None)
        return page

    monkeypatch.setattr("langmem_ext.stores.postgres._vector_search.cell_steps", counting)
    with PostgresStore.from_conn_string(dsn, index=_index(table), vector_index=IVF) as store:
        assert store.vector_index["kind"] == "ivf"
        store.batch(_ops(0, 900))
        assert store.cells is None
        assert _cells_count(dsn) == {True: 900}
        store.batch(_ops(900, 1200))
        assert store.cells is not None and store.cells.lists >= 64  # big cells split
        assert _cells_count(dsn) == {False: 1200}
        store.batch(_ops(1200, N))
        assert _cells_count(dsn) == {False: N}  # later writes get their cell at once
        everyone = np.ones(N, dtype=bool)
        assert _recall(store.search, unit, queries, ("user",), everyone) >= 0.95
        assert served and all(served)
        served.clear()
        passing = np.arange(N) % 10 == 3
        # The filter passes a tenth: its nearest items lie farther out, and the
        # search reads four times the cells.
        assert _recall(store.search, unit, queries, ("user",), passing, {"b": 3}) >= 0.95
        assert served and all(served)
        with psycopg.connect(dsn) as conn:
            names = {
                r[0]
                for r in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                    "AND tablename = 'lmx_vectors'"
                )
            }
        assert "lmx_vectors_cells" in names
        assert not any(n.startswith("lmx_vectors_hnsw") for n in names)


def test_namespaces_below_exact_below_stay_exact(dsn, data):
    """A namespace of 300 vectors is searched exactly: numpy's own page."""
    unit, queries, table = data
    with PostgresStore.from_conn_string(dsn, index=_index(table), vector_index=IVF) as store:
        store.batch(_ops(0, N))
        _cells_count(dsn)
        in_ns = np.arange(N) % 10 == 4
        for j, q in enumerate(queries[:5]):
            sims = unit @ (q / np.linalg.norm(q))
            expected = [f"k{i}" for i in np.argsort(-np.where(in_ns, sims, -9))[:10]]
            got = store.search(("user", "u4"), query=f"query {j}", limit=10, mode="vector")
            assert [r.key for r in got] == expected


def test_another_process_sees_the_trained_cells(dsn, data, monkeypatch):
    """A store opened before the cells existed writes to cell -1 (still found
    by every search), picks the cells up at its next search or training check,
    and its vectors then get their cells: none is left behind."""
    unit, queries, table = data
    index = _index(table)
    with (
        PostgresStore.from_conn_string(dsn, index=index, vector_index=IVF) as early,
        PostgresStore.from_conn_string(dsn, index=index, vector_index=IVF) as trainer,
    ):
        early.batch(_ops(0, 500))
        trainer.batch(_ops(500, 1100))  # crosses train_at: trains
        assert trainer.cells is not None and early.cells is None
        # early's ids are past train_at too: its check finds the cells, loads
        # them and assigns what it wrote.
        early.batch(_ops(1100, 1200))
        assert early.cells is not None and early.cells.version == trainer.cells.version
        assert _cells_count(dsn) == {False: 1200}
    with PostgresStore.from_conn_string(dsn, index=index, vector_index=IVF) as stale:
        # A process that has not seen the cells (it checked moments ago):
        # its vectors wait in cell -1, and searches still find them.
        stale.cells, stale._train_check_at = None, 10**9
        stale.batch(_ops(1200, 1700))
        assert _cells_count(dsn) == {False: 1200, True: 500}
        sims = unit[:1700] @ (queries[0] / np.linalg.norm(queries[0]))
        in_new = np.arange(1700) >= 1200
        expected = {f"k{i}" for i in np.argsort(-np.where(in_new, sims, -9))[:3]}
        found = stale.search(("user",), query="query 0", limit=50, mode="vector")
        assert stale.cells is not None  # the search picked the cells up
        assert expected <= {r.key for r in found}
        stale._waiting = False
        stale.batch(_ops(1700, 1710))  # written with the cells it now holds
        assert _cells_count(dsn) == {False: 1210, True: 500}
    # A process that loads the cells (at setup, or at its training check)
    # assigns the waiting vectors, a chunk per write.
    monkeypatch.setattr(_ivf, "ASSIGN_CHUNK", 200)
    with PostgresStore.from_conn_string(dsn, index=index, vector_index=IVF) as late:
        late.cells, late._train_check_at = None, 0
        late.batch(_ops(1710, 1720))
        assert late.cells is not None
        assert _cells_count(dsn) == {False: 1410, True: 310}  # its own 10 waited too
        late.batch(_ops(1720, 1721))
        late.batch(_ops(1721, 1722))
        assert _cells_count(dsn) == {False: 1722}
        assert late._waiting is False


def test_async_store_trains_and_searches(dsn, data):
    unit, queries, table = data

    async def main():
        async with AsyncPostgresStore.from_conn_string(
            dsn, index=_index(table), vector_index=IVF
        ) as store:
            ops = _ops(0, N)
            for a in range(0, N, 500):
                await store.abatch(ops[a : a + 500])
            assert store.cells is not None
            _cells_count(dsn)

            hits = 0
            for j, q in enumerate(queries):
                sims = unit @ (q / np.linalg.norm(q))
                expected = {f"k{i}" for i in np.argsort(-sims)[:10]}
                got = await store.asearch(("user",), query=f"query {j}", limit=10, mode="vector")
                hits += len(expected & {r.key for r in got})
            return hits / (10 * len(queries))

    assert asyncio.run(main()) >= 0.95


def test_a_leftover_hnsw_index_is_reported(dsn, data, caplog):
    """An HNSW index from an earlier setting still costs every write: setup
    says so, with the statement that removes it."""
    _, _, table = data
    with PostgresStore.from_conn_string(dsn, index=_index(table), vector_index={"kind": "hnsw"}):
        pass
    with (
        caplog.at_level(logging.WARNING, logger="langmem_ext.stores.postgres"),
        PostgresStore.from_conn_string(dsn, index=_index(table)) as store,
    ):
        assert store.vector_index["kind"] == "ivf"
    text = caplog.text
    assert "HNSW index lmx_vectors_hnsw_half_cosine_" in text
    assert "DROP INDEX CONCURRENTLY lmx_vectors_hnsw_half_cosine_" in text


@pytest.mark.parametrize(
    ("vector_index", "index_extra", "message"),
    [
        ({"kind": "ivfflat"}, {}, "kind must be 'ivf', 'hnsw' or 'exact'"),
        ({"kind": "ivf", "lists": 0}, {}, "vector_index['lists'] must be a positive int"),
        ({"kind": "ivf", "probes": "8"}, {}, "vector_index['probes'] must be a positive int"),
        ({"kind": "ivf", "scan_rows": -1}, {}, "vector_index['scan_rows']"),
        ({"kind": "ivf", "train_at": 1.5}, {}, "vector_index['train_at']"),
        ({"kind": "ivf"}, {"distance_type": "l2"}, "needs cosine distance"),
    ],
)
def test_bad_ivf_settings_are_refused_by_name(dsn, vector_index, index_extra, message):
    index = {"dims": 4, "embed": lambda t: [[1.0, 0, 0, 0]] * len(t), **index_extra}
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        PostgresStore.from_conn_string(dsn, index=index, vector_index=vector_index).__enter__()


def test_other_distances_default_to_hnsw(dsn):
    index = {"dims": 4, "embed": lambda t: [[1.0, 0, 0, 0]] * len(t), "distance_type": "l2"}
    with PostgresStore.from_conn_string(dsn, index=index) as store:
        assert store.vector_index["kind"] == "hnsw"


def test_kmeans_cells_cover_every_topic():
    rng = np.random.default_rng(0)
    topics = np.eye(8, dtype=np.float32)
    pts = topics[rng.integers(0, 8, 800)] + 0.05 * rng.standard_normal((800, 8)).astype(np.float32)
    cent, shares = _ivf.kmeans(pts, 8)
    assert sorted(np.argmax(cent, axis=1).tolist()) == list(range(8))
    assert shares.sum() == pytest.approx(1.0)
    cells = _ivf.CellIndex(cent, shares, "v")
    assert _ivf.assign_cells(cells, topics) == np.argmax(cent @ topics.T, axis=0).tolist()


def test_an_upgraded_store_samples_its_vectors_by_pages(dsn, data, monkeypatch):
    """A store that already holds many vectors (written under another index)
    trains on a page sample, not a sort of the whole table, and every vector
    then gets its cell."""
    unit, queries, table = data
    index = _index(table)
    with PostgresStore.from_conn_string(dsn, index=index, vector_index={"kind": "exact"}) as old:
        old.batch(_ops(0, N))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE lmx_vectors")
    monkeypatch.setattr(_ivf, "MAX_SAMPLE", 600)
    monkeypatch.setattr(_ivf, "SAMPLE_BY_PAGES", 2)  # 3,000 vectors > 2 x 600
    sent: list[str] = []
    real = _ivf.Exec

    def spy(sql, *args, **kwargs):
        sent.append(sql)
        return real(sql, *args, **kwargs)

    monkeypatch.setattr(_ivf, "Exec", spy)
    with PostgresStore.from_conn_string(dsn, index=index, vector_index=IVF) as up:
        up._train_check_at = 0
        up.batch(_ops(0, 1))  # a write: trains on the sample, assigns it
        assert up.cells is not None
        [sample] = [
            s
            for s in sent
            if "vector_send(embedding) FROM lmx_vectors" in s
            and "LIMIT" in s
            and "cell = -1" not in s
        ]
        assert "TABLESAMPLE SYSTEM (40.0000)" in sample
        up.batch(_ops(1, 2))  # the waiting rest: one chunk
        assert _cells_count(dsn) == {False: N}
        assert _recall(up.search, unit, queries, ("user",), np.ones(N, dtype=bool)) >= 0.95


def test_cells_trained_by_a_failed_write_are_not_kept(dsn, data, monkeypatch, caplog):
    """The write that trains the cells fails after training: its centroids
    never reach the database, so the process drops them at its next write
    (whose vectors wait in cell -1) and a later write trains the cells again;
    no vector is left in a cell that no stored centroid owns."""
    unit, queries, table = data
    real = _ivf.assign_waiting_steps

    def failing(*args, **kwargs):
        yield _ivf.Exec("SELECT 1 / 0")  # after training, the rest of the write fails
        return (yield from real(*args, **kwargs))

    with PostgresStore.from_conn_string(dsn, index=_index(table), vector_index=IVF) as store:
        store.batch(_ops(0, 900))
        monkeypatch.setattr(_ivf, "assign_waiting_steps", failing)
        with pytest.raises(Exception, match="division by zero"):
            store.batch(_ops(900, 1200))
        assert store.cells is not None  # trained, in this process only
        monkeypatch.setattr(_ivf, "assign_waiting_steps", real)
        assert _cells_count(dsn) == {True: 900}  # the failed write left nothing
        with caplog.at_level(logging.WARNING, logger="langmem_ext.stores.postgres"):
            store.batch(_ops(900, 1200))
        assert "were not stored (that write failed)" in caplog.text
        # This write trained them again (and placed everything).
        with psycopg.connect(dsn) as conn:
            [(version,)] = conn.execute(
                "SELECT value FROM lmx_meta WHERE key = 'ivf_version'"
            ).fetchall()
        assert store.cells is not None and store.cells.version == version
        store.batch(_ops(1200, N))
        assert _cells_count(dsn) == {False: N}
        assert _recall(store.search, unit, queries, ("user",), np.ones(N, dtype=bool)) >= 0.95
