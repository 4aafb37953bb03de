"""PostgresStore specifics, on the session's embedded PostgreSQL server."""

from __future__ import annotations

import threading
import time

import numpy as np
import psycopg
import pytest
from langgraph.store.base import PutOp

from langmem_ext.errors import StoreError
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from langmem_ext.stores.postgres._schema import MIGRATIONS

EVIL = "'); DROP TABLE lmx_items; --"


@pytest.fixture
def dsn(pg_server):
    return pg_server.fresh_schema()


def test_sql_significant_characters_are_data(dsn):
    with PostgresStore.from_conn_string(dsn) as store:
        ns = (EVIL, "%", "_", 'q"uote', "back\\slash")
        value = {EVIL: EVIL, "it's": ["a'b", 'c"d'], "n": 1}
        store.put(ns, EVIL, value)
        store.put(("plain",), "k", {"n": 2})
        assert store.get(ns, EVIL).value == value
        assert [r.key for r in store.search((EVIL,))] == [EVIL]
        assert [r.key for r in store.search((EVIL, "%"))] == [EVIL]
        assert store.search(("%",)) == [] and store.search(("_",)) == []
        assert [r.key for r in store.search((), filter={EVIL: EVIL})] == [EVIL]
        assert [r.key for r in store.search((), filter={"it's": {"$contains": "a'b"}})] == [EVIL]
        assert store.search((), query=EVIL, mode="keyword")[0].key == EVIL
        assert store.list_namespaces(prefix=(EVIL,)) == [ns]
        store.delete(ns, EVIL)
        assert store.get(ns, EVIL) is None
        assert store.get(("plain",), "k").value == {"n": 2}  # the table is still there


def test_wrong_connection_string_is_a_clear_error_at_setup(pg_server, tmp_path):
    store = PostgresStore(f"host={tmp_path} dbname=nope user=postgres connect_timeout=2")
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL.*connection string"):
        store.setup()
    bad_db = pg_server.conninfo("no_such_database")
    with pytest.raises(StoreError, match="no_such_database"):
        PostgresStore(bad_db).setup()


async def test_wrong_connection_string_async(tmp_path):
    store = AsyncPostgresStore(f"host={tmp_path} dbname=nope connect_timeout=2")
    with pytest.raises(StoreError, match="cannot connect"):
        await store.asetup()


def test_database_without_the_extension_is_a_clear_error(pg_server):
    # The embedded server ships pgvector, so "not installed" cannot be staged
    # without deleting its files; what we stage is the common production case: a
    # fresh database where the extension was never created, and an application
    # role that may not create it (pgvector is not a trusted extension).
    dsn = pg_server.fresh_database()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS lmx_app")
        conn.execute("CREATE ROLE lmx_app LOGIN")
        conn.execute("GRANT CREATE ON SCHEMA public TO lmx_app")
    app_dsn = psycopg.conninfo.make_conninfo(dsn, user="lmx_app")
    with pytest.raises(StoreError, match="CREATE EXTENSION vector"):
        PostgresStore(app_dsn).setup()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")  # what the message asks a superuser to do
    with PostgresStore.from_conn_string(app_dsn) as store:
        store.put(("a",), "k", {"v": 1})
        assert store.get(("a",), "k").value == {"v": 1}


def test_dropped_connection_mid_batch_applies_nothing(pg_server, dsn):
    with PostgresStore.from_conn_string(dsn) as store:
        store.put(("a",), "locked", {"v": 0})
        store.put(("a",), "b", {"v": 0})
        blocker = psycopg.connect(dsn)
        blocker.execute("SELECT 1 FROM lmx_items WHERE key = 'locked' FOR UPDATE")
        errors: list[BaseException] = []

        def run() -> None:
            try:  # deletes b, then waits on the locked row's upsert
                store.batch([PutOp(("a",), "b", None), PutOp(("a",), "locked", {"v": 1})])
            except BaseException as e:
                errors.append(e)

        t = threading.Thread(target=run)
        t.start()
        with psycopg.connect(pg_server.dsn, autocommit=True) as admin:
            for _ in range(100):
                pids = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'INSERT INTO lmx_items%%'"
                ).fetchall()
                if pids:
                    break
                time.sleep(0.05)
            assert pids, "the batch never blocked on the locked row"
            admin.execute("SELECT pg_terminate_backend(%s)", [pids[0][0]])
        t.join(10)
        blocker.rollback()
        blocker.close()
        assert errors and isinstance(errors[0], StoreError)
        assert "nothing from it was applied" in str(errors[0])
        assert store.get(("a",), "b").value == {"v": 0}  # the delete was rolled back
        assert store.get(("a",), "locked").value == {"v": 0}
        store.put(("a",), "c", {"v": 2})  # the pool replaced the dead connection
        assert store.get(("a",), "c").value == {"v": 2}


def test_concurrent_setup_from_threads_is_safe(dsn):
    stores = [PostgresStore(dsn, pool_config={"max_size": 1}) for _ in range(4)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(stores))

    def run(s: PostgresStore) -> None:
        barrier.wait()
        try:
            s.setup()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT v, count(*) FROM lmx_migrations GROUP BY v ORDER BY v")
        assert rows.fetchall() == [(v, 1) for v in range(len(MIGRATIONS))]
    for s in stores:
        s.close()


DIMS = 32


@pytest.fixture(scope="module")
def vectors():
    rng = np.random.default_rng(7)
    docs = rng.standard_normal((3000, DIMS)).astype(np.float32)
    queries = rng.standard_normal((20, DIMS)).astype(np.float32)
    table = {f"doc {i}": v for i, v in enumerate(docs)}
    table.update({f"query {j}": v for j, v in enumerate(queries)})
    return docs, queries, table


@pytest.mark.parametrize(
    "vector_index",
    [{"kind": "exact"}, {"kind": "hnsw", "exact_below": 1000, "cost_ratio": 1}],
    ids=["exact", "hnsw"],
)
def test_full_exact_recall_inside_a_namespace(dsn, vectors, vector_index, monkeypatch):
    """Namespace scopes (300 vectors here, below ``exact_below``) are searched
    exactly even with an HNSW index; the whole-store filtered query (3000) uses
    HNSW with an iterative scan when configured: full pages, recall >= 0.95."""
    from langmem_ext.stores.postgres import _vector_search

    walked: list[bool] = []
    real = _vector_search.hnsw_steps

    def counting(*args, **kwargs):
        page = yield from real(*args, **kwargs)
        walked.append(page is not None)
        return page

    monkeypatch.setattr(_vector_search, "hnsw_steps", counting)
    docs, queries, table = vectors

    def embed(texts):
        return [table[t].tolist() for t in texts]

    index = {"dims": DIMS, "embed": embed, "fields": ["text"], "cache": False}
    with PostgresStore.from_conn_string(dsn, index=index, vector_index=vector_index) as store:
        ops = [
            PutOp(("user", f"u{i % 10}"), f"k{i}", {"text": f"doc {i}", "n": i})
            for i in range(len(docs))
        ]
        for start in range(0, len(ops), 500):
            store.batch(ops[start : start + 500])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")  # the statistics the choice reads (autovacuum's job)
        unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        ns_rows = np.arange(len(docs)) % 10 == 3
        hits = 0
        for j, q in enumerate(queries):
            sims = unit @ (q / np.linalg.norm(q))
            # 10 % namespace
            expected = [f"k{i}" for i in np.argsort(-np.where(ns_rows, sims, -9))[:10]]
            got = store.search(("user", "u3"), query=f"query {j}", limit=10, mode="vector")
            assert [r.key for r in got] == expected
            assert [r.score for r in got] == pytest.approx(sorted(sims[ns_rows])[::-1][:10])
            # whole store with a filter keeping ~10 % of rows (the HNSW path)
            keep = np.arange(len(docs)) % 10 == 7
            expected = [f"k{i}" for i in np.argsort(-np.where(keep, sims, -9))[:10]]
            got = store.search(
                ("user",),
                query=f"query {j}",
                filter={"n": {"$in": list(range(7, 3000, 10))}},
                limit=10,
                mode="vector",
            )
            assert len(got) == 10
            if vector_index["kind"] == "exact":
                assert [r.key for r in got] == expected
            hits += len(set(expected) & {r.key for r in got})
        assert hits / (10 * len(queries)) >= 0.95
        # HNSW served exactly the whole-store queries, never the namespace ones.
        assert walked == ([True] * len(queries) if vector_index["kind"] == "hnsw" else [])
        # A deep page: 1020 candidates, beyond hnsw.ef_search's maximum of 1000.
        deep = store.search(("user",), query="query 0", offset=500, limit=10, mode="vector")
        assert len(deep) == 10


def test_default_path_is_proven_exact_and_falls_back(dsn, vectors, monkeypatch):
    """The default path (half-precision candidates from the covering index,
    re-ranked in full precision) serves namespace and whole-store pages itself,
    and gives exactly numpy's pages at deep offsets and under filters; when it
    cannot prove a page (too few items pass) the exact query answers."""
    from langmem_ext.stores.postgres import _vector_search

    served: list[bool] = []
    real = _vector_search.candidate_steps

    def counting(*args, **kwargs):
        page = yield from real(*args, **kwargs)
        served.append(page is not None)
        return page

    monkeypatch.setattr(_vector_search, "candidate_steps", counting)
    docs, queries, table = vectors
    index = {"dims": DIMS, "embed": lambda t: [table[x].tolist() for x in t], "fields": ["text"]}
    exact = {"kind": "exact"}
    with PostgresStore.from_conn_string(
        dsn, index={**index, "cache": False}, vector_index=exact
    ) as store:
        ops = [
            PutOp(("user", f"u{i % 10}"), f"k{i}", {"text": f"doc {i}", "n": i})
            for i in range(len(docs))
        ]
        for start in range(0, len(ops), 500):
            store.batch(ops[start : start + 500])
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")  # index-only scans need the visibility map
        unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        n = np.arange(len(docs))
        for j, q in enumerate(queries[:8]):
            sims = unit @ (q / np.linalg.norm(q))
            for prefix, mask, offset in [
                (("user", "u3"), n % 10 == 3, 0),
                (("user", "u3"), n % 10 == 3, 37),
                (("user",), n >= 0, 0),
                (("user",), n >= 0, 250),
            ]:
                order = np.argsort(-np.where(mask, sims, -9), kind="stable")
                expected = [f"k{i}" for i in order[offset : offset + 10]]
                got = store.search(
                    prefix, query=f"query {j}", limit=10, offset=offset, mode="vector"
                )
                assert [r.key for r in got] == expected
            assert all(served) and len(served) == 4 * (j + 1)
            # A selective filter is proven on the 10x larger candidate set; when
            # fewer items pass than the page holds, the exact query answers.
            for step, proven in ((100, True), (600, False)):
                rare = list(range(3, 3000, step))
                expected = [f"k{i}" for i in sorted(rare, key=lambda i: -sims[i])[:10]]
                got = store.search(
                    ("user", "u3"), query=f"query {j}", filter={"n": {"$in": rare}}, mode="vector"
                )
                assert [r.key for r in got] == expected
                assert served.pop() is proven


@pytest.mark.parametrize("distance", ["cosine", "inner_product", "l2"])
def test_langgraph_index_keys_and_distances(dsn, distance):
    """LangGraph's index config as is: no dims (probed once), text_fields,
    distance_type scored as LangGraph scores it, ann_index_config."""
    from tests.embeddings import WordEmbeddings

    emb = WordEmbeddings(16)
    index = {
        "embed": emb,
        "text_fields": ["text"],
        "distance_type": distance,
        "ann_index_config": {"kind": "hnsw", "vector_type": "halfvec", "m": 8},
    }
    with PostgresStore.from_conn_string(dsn, index=index, search_mode="vector") as store:
        assert store.index_config["dims"] == 16 and store.vector_index["m"] == 8
        store.put(("d",), "a", {"text": "red apple pie", "other": "zzz"})
        store.put(("d",), "b", {"text": "blue car", "other": "red apple pie"})
        got = store.search(("d",), query="red apple")
        q = np.asarray(emb._embed("red apple"))
        docs = {
            k: np.asarray(emb._embed(t)) for k, t in [("a", "red apple pie"), ("b", "blue car")]
        }
        expected = {
            "cosine": lambda v: float(q @ v / np.linalg.norm(q) / np.linalg.norm(v)),
            "inner_product": lambda v: float(q @ v),
            "l2": lambda v: -float(np.linalg.norm(q - v)),
        }[distance]
        assert [r.key for r in got] == ["a", "b"]
        assert [r.score for r in got] == pytest.approx(
            [expected(docs["a"]), expected(docs["b"])], abs=1e-5
        )
        with psycopg.connect(dsn) as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                    "AND indexname LIKE 'lmx_vectors_hnsw%'"
                )
            ]
        ops = {"cosine": "cosine", "inner_product": "ip", "l2": "l2"}[distance]
        assert names == [f"lmx_vectors_hnsw_half_{ops}_16_8_64"]


def test_flat_ann_index_config_means_exact(dsn):
    index = {
        "dims": 4,
        "embed": lambda t: [[1.0, 0, 0, 0]] * len(t),
        "ann_index_config": {"kind": "flat"},
    }
    with PostgresStore.from_conn_string(dsn, index=index) as store:
        assert store.vector_index["kind"] == "exact"
        with psycopg.connect(dsn) as conn:
            rows = conn.execute(
                "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexname LIKE 'lmx_vectors_hnsw%'"
            )
            assert rows.fetchall() == []
