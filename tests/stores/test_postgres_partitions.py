"""PostgresStore with its items and vectors partitioned by tenant, on a real
PostgreSQL server: the tenant found by the engine's layout or a template,
partitions created (outside the writes' transactions) or refused, every
operation working across them, nothing written by a refused write, one
tenant dropped or detached alone."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from typing import Any

import numpy as np
import psycopg
import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_ext.engine import layout
from langmem_ext.errors import ConfigurationError, InvalidNamespaceError
from langmem_ext.stores._ops import encode_namespace
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from langmem_ext.stores.postgres._tenants import TenantKey

DIMS = 8


def embed(texts: list[str]) -> list[list[float]]:
    # A vector per text, the same in every call: one hot on the text's hash.
    out = []
    for t in texts:
        v = [0.1] * DIMS
        v[sum(map(ord, t)) % DIMS] = 1.0
        out.append(v)
    return out


INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"], "cache": False}
#: The tenant is the namespace's first label (the stores' default follows the
#: memory engine's layout instead: see the tests further down).
FIRST = ("{tenant}",)


@pytest.fixture
def dsn(pg_server):
    return pg_server.fresh_schema()


def partitions(dsn: str) -> dict[str, int]:
    """Each partition of the items table (by its bound) and how many items it holds."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.oid::regclass::text, pg_get_expr(c.relpartbound, c.oid) "
            "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass('lmx_items')"
        ).fetchall()
        return {
            bound: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table, bound in rows
        }


def test_each_tenant_gets_its_partition_and_every_operation_works(dsn):
    with PostgresStore.from_conn_string(
        dsn, index=INDEX, partition_by_tenant=True, tenant_key=FIRST
    ) as store:
        store.put(("acme", "ada", "memories"), "m1", {"text": "likes green tea"})
        store.put(("acme", "bob"), "m2", {"text": "runs marathons"})
        store.put(("globex", "cy"), "m3", {"text": "likes green tea too"})
        assert partitions(dsn) == {"FOR VALUES IN ('acme')": 2, "FOR VALUES IN ('globex')": 1}
        # re-put (the upsert), get, search, list, delete, across partitions
        store.put(("acme", "ada", "memories"), "m1", {"text": "likes black tea"})
        assert store.get(("acme", "ada", "memories"), "m1").value == {"text": "likes black tea"}
        assert {r.key for r in store.search(("acme",), query="tea")} == {"m1", "m2"}
        assert {r.key for r in store.search((), query="tea", limit=5)} == {"m1", "m2", "m3"}
        assert {r.key for r in store.search(("globex",), query="tea")} == {"m3"}
        assert sorted(store.list_namespaces()) == [
            ("acme", "ada", "memories"),
            ("acme", "bob"),
            ("globex", "cy"),
        ]
        store.delete(("globex", "cy"), "m3")
        assert store.get(("globex", "cy"), "m3") is None
        with psycopg.connect(dsn) as conn:
            # the item's vectors went with it; ids keep growing across tenants
            assert conn.execute("SELECT count(*) FROM lmx_vectors").fetchone()[0] == 2
            ids = [r[0] for r in conn.execute("SELECT id FROM lmx_items ORDER BY id")]
            assert ids == sorted(set(ids)) and len(ids) == 2
        assert partitions(dsn)["FOR VALUES IN ('globex')"] == 0


def test_a_refused_tenant_writes_nothing_until_it_is_added(dsn):
    with PostgresStore.from_conn_string(
        dsn, index=INDEX, partition_by_tenant="refuse", tenant_key=FIRST
    ) as store:
        store.add_tenant("acme")
        store.add_tenant("acme")  # again: nothing changes
        store.put(("acme", "ada"), "m1", {"text": "likes tea"})
        with pytest.raises(InvalidNamespaceError, match="tenant 'initech'") as err:
            # one batch: a known tenant's put and an unknown one's
            store.batch(
                [
                    PutOp(("acme", "ada"), "m2", {"text": "likes coffee"}),
                    PutOp(("initech", "peter"), "m1", {"text": "hates Mondays"}),
                ]
            )
        assert err.value.code == "INVALID_NAMESPACE"
        assert "store.add_tenant('initech')" in str(err.value)
        assert store.get(("acme", "ada"), "m2") is None  # the whole batch failed
        assert partitions(dsn) == {"FOR VALUES IN ('acme')": 1}
        store.add_tenant("initech")
        store.put(("initech", "peter"), "m1", {"text": "hates Mondays"})
        assert store.get(("initech", "peter"), "m1").value == {"text": "hates Mondays"}
        with pytest.raises(InvalidNamespaceError, match=r"without '\.'"):
            store.add_tenant("a.b")


def test_another_process_creating_the_same_tenant_takes_turns(dsn):
    with (
        PostgresStore.from_conn_string(
            dsn, index=INDEX, partition_by_tenant=True, tenant_key=FIRST
        ) as one,
        PostgresStore.from_conn_string(
            dsn, index=INDEX, partition_by_tenant=True, tenant_key=FIRST
        ) as two,
    ):
        one.put(("acme", "ada"), "m1", {"text": "likes tea"})
        two.put(("acme", "bob"), "m2", {"text": "likes tea"})  # finds the partition
        two.put(("hooli", "gavin"), "m3", {"text": "likes tea"})
        one.put(("hooli", "gavin"), "m4", {"text": "likes tea"})
    assert partitions(dsn) == {"FOR VALUES IN ('acme')": 2, "FOR VALUES IN ('hooli')": 2}
    # opened later without the option: adopts the partitioned table
    with PostgresStore.from_conn_string(dsn, index=INDEX) as later:
        later.put(("umbrella", "alice"), "m5", {"text": "likes tea"})
        assert later.get(("umbrella", "alice"), "m5") is not None
    assert len(partitions(dsn)) == 3


def test_async_store_partitions_by_tenant(dsn):
    async def main():
        async with AsyncPostgresStore.from_conn_string(
            dsn, index=INDEX, partition_by_tenant="refuse", tenant_key=FIRST
        ) as store:
            with pytest.raises(InvalidNamespaceError):
                await store.aput(("acme", "ada"), "m1", {"text": "likes tea"})
            await store.aadd_tenant("acme")
            await store.aput(("acme", "ada"), "m1", {"text": "likes tea"})
            return [r.key for r in await store.asearch(("acme",), query="tea")]

    assert asyncio.run(main()) == ["m1"]
    assert partitions(dsn) == {"FOR VALUES IN ('acme')": 1}


def test_partitioning_is_chosen_when_the_store_is_created(dsn):
    with PostgresStore.from_conn_string(dsn, index=INDEX) as plain:
        plain.put(("acme", "ada"), "m1", {"text": "likes tea"})
        with pytest.raises(ConfigurationError, match="partitioned by tenant"):
            plain.add_tenant("acme")
    store = PostgresStore.from_conn_string(
        dsn, index=INDEX, partition_by_tenant=True, tenant_key=FIRST
    )
    with pytest.raises(ConfigurationError, match="applies to a new store"), store as s:
        s.put(("acme", "ada"), "m2", {"text": "likes coffee"})
    with PostgresStore.from_conn_string(dsn, index=INDEX) as plain:
        assert plain.get(("acme", "ada"), "m2") is None  # nothing written


@pytest.mark.parametrize("bad", ["yes", 1, "tenant"])
def test_bad_partition_settings_are_refused_by_name(bad):
    with pytest.raises(ConfigurationError, match="partition_by_tenant"):
        PostgresStore("dbname=x", partition_by_tenant=bad)


# -- the tenant of the memory engine's layout, or of a template ------------------------


def test_the_engines_tenants_each_get_a_partition(dsn):
    """The engine writes a tenant's namespaces under ("tenant", <tenant>, ...)
    and the single-tenant default's without a prefix: one partition each."""
    with PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True) as store:
        store.put(("tenant", "acme", "user", "ada"), "m1", {"text": "likes tea"})
        store.put(("tenant", "acme", "_meta", "user/ada", "events"), "e1", {"text": "saved"})
        store.put(("tenant", "globex", "user", "cy"), "m2", {"text": "likes coffee"})
        store.put(("user", "solo"), "m3", {"text": "single-tenant app"})
        store.put(("_shared", "company", "_"), "m4", {"text": "company rule"})
        assert {r.key for r in store.search(("tenant", "acme"), query="tea")} == {"m1", "e1"}
    assert partitions(dsn) == {
        "FOR VALUES IN ('acme')": 2,
        "FOR VALUES IN ('globex')": 1,
        "FOR VALUES IN ('default')": 2,
    }
    with psycopg.connect(dsn) as conn:
        # each tenant's vectors sit in that tenant's own vectors partition
        rows = conn.execute(
            "SELECT tenant, count(*) FROM lmx_vectors GROUP BY tenant ORDER BY tenant"
        ).fetchall()
    assert rows == [("acme", 2), ("default", 2), ("globex", 1)]


def test_a_tenant_key_template_names_where_the_tenant_is(dsn):
    key = ("org", "{tenant}")  # ("org", <tenant>, ...); anything else is 'default'
    with PostgresStore.from_conn_string(dsn, partition_by_tenant=True, tenant_key=key) as store:
        store.put(("org", "acme", "ada"), "m1", {"text": "a"})
        store.put(("org", "globex"), "m2", {"text": "b"})
        store.put(("org",), "m3", {"text": "no tenant label: default"})
        store.put(("user", "solo"), "m4", {"text": "default"})
    assert partitions(dsn) == {
        "FOR VALUES IN ('acme')": 1,
        "FOR VALUES IN ('globex')": 1,
        "FOR VALUES IN ('default')": 2,
    }
    # Opened without it (the CLI, a server): the store's own key is used.
    with PostgresStore.from_conn_string(dsn) as later:
        later.put(("org", "initech", "peter"), "m5", {"text": "c"})
    assert partitions(dsn)["FOR VALUES IN ('initech')"] == 1
    # Opened with another key: refused, nothing written.
    other = PostgresStore(dsn, partition_by_tenant=True, tenant_key=("{tenant}",))
    with pytest.raises(ConfigurationError, match=r"tenant_key \('org', '\{tenant\}'\)"):
        other.setup()
    other.close()


def test_first_label_and_wildcard_templates(dsn):
    with PostgresStore.from_conn_string(
        dsn, partition_by_tenant=True, tenant_key=("*", "{region}", "{tenant}")
    ) as store:
        store.put(("eu", "west", "acme", "ada"), "m1", {"text": "a"})
        store.put(("us", "east", "acme"), "m2", {"text": "b"})
        store.put(("us", "east"), "m3", {"text": "too short: default"})
    assert partitions(dsn) == {"FOR VALUES IN ('acme')": 2, "FOR VALUES IN ('default')": 1}


@pytest.mark.parametrize("tenant", ["acme", "acme.com", "default"])
def test_the_engine_preset_follows_the_engines_layout(tenant):
    """The stores cannot import the engine: its layout is restated as the
    'engine' tenant key. Every kind of namespace the engine writes for a
    tenant must land in that tenant's partition."""
    key = TenantKey.of("engine")
    space = ("user", "ada")
    written = [
        layout.user_space(tenant, space),
        layout.session_space(tenant, space, "s1"),
        layout.shared_space(tenant, "team", None),
        layout.shared_space(tenant, "company", None),
        layout.meta_space(tenant, layout.user_space(tenant, space), "events"),
    ]
    label = "default" if tenant == layout.DEFAULT_TENANT else layout.tenant_label(tenant)
    assert {key.tenant_of(encode_namespace(ns)) for ns in written} == {label}


@pytest.mark.parametrize(
    "bad",
    [
        ("tenant",),  # no {tenant}
        ("{tenant}", "{tenant}"),
        ("{tenant}", "memories"),  # labels after the tenant decide nothing
        ("a.b", "{tenant}"),
        ("", "{tenant}"),
        "tenant",
        5,
    ],
)
def test_bad_tenant_keys_are_refused_by_name(bad):
    with pytest.raises(ConfigurationError, match="tenant_key"):
        PostgresStore("dbname=x", partition_by_tenant=True, tenant_key=bad)


# -- creating a partition: outside the write's transaction ------------------------------


def _in_process(dsn: str, tenants: list[str], barrier: Any, out: Any) -> None:
    out.put(_read_then_write(dsn, tenants, barrier))


def _read_then_write(dsn: str, tenants: list[str], barrier: Any) -> list[str]:
    """One store; a thread per tenant, all released at once, each a batch that
    reads and then writes its (new) tenant. Returns the errors."""
    errors: list[str] = []
    with PostgresStore.from_conn_string(
        dsn, partition_by_tenant=True, pool_config={"max_size": len(tenants)}
    ) as store:
        store.get(("tenant", "warm", "user", "u"), "k")

        def one(t: str) -> None:
            ns = ("tenant", t, "user", "u")
            try:
                barrier.wait(timeout=30)
                store.batch(
                    [
                        GetOp(ns, "k"),
                        SearchOp(("tenant",), limit=5),
                        PutOp(ns, "k", {"text": f"written by {t}"}),
                    ]
                )
                assert store.get(ns, "k").value == {"text": f"written by {t}"}
            except Exception as e:
                errors.append(f"{t}: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=one, args=(t,)) for t in tenants]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    return errors


def test_many_batches_that_read_then_write_new_tenants_all_succeed(dsn):
    """Threads in this process and in three others, all at once: none fails
    (creating partitions inside the writes' transactions deadlocked them)."""
    # forked before this process opens any store or pool (no thread to copy)
    ctx = multiprocessing.get_context("fork")
    per, procs = 8, 3
    barrier, out = ctx.Barrier(per * (procs + 1)), ctx.Queue()
    # each process's own new tenants, and one that all of them create at once
    names = [[f"p{p}t{i}" for i in range(per - 1)] + ["shared"] for p in range(procs + 1)]
    others = [
        ctx.Process(target=_in_process, args=(dsn, names[p], barrier, out)) for p in range(procs)
    ]
    for proc in others:
        proc.start()
    try:
        errors = _read_then_write(dsn, names[procs], barrier)
        for _ in others:
            errors += out.get(timeout=90)
    finally:
        for proc in others:
            proc.join(30)
    assert errors == []
    assert len(partitions(dsn)) == (per - 1) * (procs + 1) + 1


def test_a_new_tenant_does_not_wait_for_other_tenants_readers(dsn):
    with PostgresStore.from_conn_string(dsn, partition_by_tenant=True) as store:
        store.put(("tenant", "acme", "user", "ada"), "m1", {"text": "likes tea"})
        with psycopg.connect(dsn) as reader:  # a transaction reading acme, left open
            reader.execute("SELECT count(*) FROM lmx_items WHERE tenant = 'acme'")
            done = threading.Event()

            def write() -> None:
                # a new partition by any tenant key: 'globex' by the first
                # label, the default tenant's by the engine's layout
                store.put(("globex", "cy"), "m2", {"text": "new tenant"})
                done.set()

            th = threading.Thread(target=write)
            th.start()
            try:
                assert done.wait(5), "creating a partition waited for acme's reader"
            finally:
                reader.rollback()
                th.join(30)
        assert store.get(("globex", "cy"), "m2") is not None


def test_other_tenants_are_read_while_an_import_creating_a_tenant_is_open(dsn):
    """An import into a new tenant holds its transaction open while it writes;
    reads of other tenants go on meanwhile (each within a deadline)."""
    with PostgresStore.from_conn_string(
        dsn, index=INDEX, partition_by_tenant=True, pool_config={"max_size": 4}
    ) as store:
        store.put(("tenant", "acme", "user", "ada"), "m1", {"text": "likes tea"})
        importer = store.bulk_import()
        ops = [PutOp(("newco", f"u{i % 7}"), f"k{i}", {"text": f"fact {i}"}) for i in range(300)]
        units = importer.prepare(ops)
        rows = [(op.namespace, op.key, {}) for op in ops]
        latencies: list[float] = []
        with importer.session() as write:
            write(units, rows)  # its partition exists, the import is not committed

            def read() -> None:
                for _ in range(10):
                    t0 = time.perf_counter()
                    assert store.get(("tenant", "acme", "user", "ada"), "m1") is not None
                    assert store.search(("tenant", "acme"), query="tea")
                    latencies.append(time.perf_counter() - t0)

            th = threading.Thread(target=read)
            th.start()
            th.join(5)
            blocked = th.is_alive()
        th.join(30)
        assert not blocked, "reads of acme waited for the import's transaction"
        assert len(latencies) == 10 and max(latencies) < 2.0, latencies
        assert store.get(("newco", "u0"), "k0") is not None


# -- dropping or detaching one tenant -------------------------------------------------------


def _tables_of(dsn: str, tenant: str) -> tuple[str, str]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT 'lmx_items_' || md5(%s), 'lmx_vectors_' || md5(%s)", [tenant, tenant]
        ).fetchone()
    return row[0], row[1]


def test_dropping_one_tenant_takes_its_vectors_and_leaves_the_others(dsn):
    with PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True) as store:
        for t in ("acme", "globex", "initech"):
            for k in ("m1", "m2"):
                store.put(("tenant", t, "user", "ada"), k, {"text": f"{t} likes tea {k}"})
        store.drop_tenant("acme")
        assert store.get(("tenant", "acme", "user", "ada"), "m1") is None
        assert {r.namespace[1] for r in store.search((), query="tea", limit=10)} == {
            "globex",
            "initech",
        }
        with psycopg.connect(dsn) as conn:
            assert conn.execute(
                "SELECT to_regclass(%s), to_regclass(%s)", _tables_of(dsn, "acme")
            ).fetchone() == (None, None)
            tenants = conn.execute("SELECT tenant FROM lmx_tenants ORDER BY 1").fetchall()
            assert tenants == [("globex",), ("initech",)]
            assert conn.execute("SELECT count(*) FROM lmx_vectors").fetchone()[0] == 4
        store.drop_tenant("acme")  # again: nothing to drop, no error

        # Detached: out of the store, kept as two tables of their own.
        items, vectors = store.detach_tenant("globex")
        assert store.get(("tenant", "globex", "user", "ada"), "m1") is None
        with psycopg.connect(dsn) as conn:
            assert conn.execute(f"SELECT count(*) FROM {items}").fetchone()[0] == 2
            assert conn.execute(f"SELECT count(*) FROM {vectors}").fetchone()[0] == 2
            assert conn.execute("SELECT count(*) FROM lmx_vectors").fetchone()[0] == 2

        # A later write for a dropped or detached tenant starts it again, empty.
        store.put(("tenant", "acme", "user", "bo"), "m9", {"text": "back again"})
        assert [r.key for r in store.search(("tenant", "acme"), query="again")] == ["m9"]
        store.put(("tenant", "globex", "user", "bo"), "m9", {"text": "back again"})
        assert store.get(("tenant", "globex", "user", "ada"), "m1") is None
        assert store.get(("tenant", "initech", "user", "ada"), "m2") is not None


def test_the_documented_sql_drops_one_tenant(dsn):
    """The SQL the docs give for an operator: both partitions of the tenant."""
    with PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True) as store:
        store.put(("tenant", "acme", "user", "ada"), "m1", {"text": "likes tea"})
        store.put(("tenant", "globex", "user", "cy"), "m2", {"text": "likes tea"})
    items, vectors = _tables_of(dsn, "acme")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE lmx_items DETACH PARTITION {items} CONCURRENTLY")
        conn.execute(f"ALTER TABLE lmx_vectors DETACH PARTITION {vectors} CONCURRENTLY")
        conn.execute("DELETE FROM lmx_tenants WHERE tenant = 'acme'")
        conn.execute(f"DROP TABLE {vectors}, {items}")
    with PostgresStore.from_conn_string(dsn, index=INDEX) as store:
        assert [r.key for r in store.search((), query="tea")] == ["m2"]
        store.put(("tenant", "acme", "user", "ada"), "m3", {"text": "likes tea"})
        assert {r.key for r in store.search((), query="tea")} == {"m2", "m3"}


def test_dropping_needs_a_partitioned_store_and_a_tenant_label(pg_server):
    plain = PostgresStore.from_conn_string(pg_server.fresh_schema())
    with plain as s, pytest.raises(ConfigurationError, match="partitioned by tenant"):
        s.drop_tenant("acme")
    store = PostgresStore.from_conn_string(pg_server.fresh_schema(), partition_by_tenant=True)
    with store as s, pytest.raises(InvalidNamespaceError, match="a tenant is one namespace label"):
        s.drop_tenant("a.b")
    with PostgresStore.from_conn_string(pg_server.fresh_schema(), partition_by_tenant=True) as s:
        assert s.detach_tenant("nobody") is None  # no partition: nothing to detach


def test_async_store_drops_a_tenant(dsn):
    async def main():
        async with AsyncPostgresStore.from_conn_string(
            dsn, index=INDEX, partition_by_tenant=True
        ) as store:
            await store.aput(("tenant", "acme", "user", "ada"), "m1", {"text": "likes tea"})
            await store.aput(("tenant", "globex", "user", "ada"), "m1", {"text": "likes tea"})
            await store.adrop_tenant("acme")
            items, _ = await store.adetach_tenant("globex")
            return await store.asearch((), query="tea"), items

    found, items = asyncio.run(main())
    assert found == [] and items.startswith("lmx_")


# -- partition pruning: a scoped read names its tenant --------------------------------


def _relations(plan: Any) -> set[str]:
    """Every table an EXPLAIN (FORMAT JSON) plan reads."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "Relation Name" in node:
                found.add(node["Relation Name"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(plan)
    return found


def _explained(dsn: str, sql: str, params: Any) -> set[str]:
    from pgvector.psycopg import register_vector

    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        conn.execute("SET plan_cache_mode = force_custom_plan")
        plan = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchone()[0]
    return {r for r in _relations(plan) if r.startswith(("lmx_items_", "lmx_vectors_"))}


def _first_exec(store: Any, op: SearchOp, mode: str) -> Any:
    from langmem_ext.stores.postgres import _sql

    qvecs = {op.query: np.asarray(embed([op.query])[0], dtype=np.float32)} if op.query else {}
    steps = store._search_steps(op, mode, qvecs, _sql.live_clause(True), ("TRUE", []))
    return next(steps)


class _Unpruned:
    """The store as before pruning: its scopes name no tenant."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _scope_tenant(self, prefix: str) -> None:
        return None

    def _search_steps(self, *args: Any) -> Any:
        return type(self._store)._search_steps(self, *args)  # type: ignore[arg-type]


def test_a_scoped_search_reads_only_its_tenants_partition(dsn):
    """EXPLAIN of the statements a scoped search runs: before, every tenant's
    partitions (the scope named only the namespace); now only the tenant's."""
    import hashlib

    from langmem_ext.stores.postgres import _sql

    def tables(t: str) -> set[str]:
        h = hashlib.md5(t.encode()).hexdigest()
        return {f"lmx_items_{h}", f"lmx_vectors_{h}"}

    with PostgresStore.from_conn_string(
        dsn, index=INDEX, partition_by_tenant=True, tenant_key=FIRST
    ) as store:
        store.setup()
        for t in ("acme", "globex", "initech"):
            store.batch([PutOp((t, "u"), f"k{i}", {"text": f"{t} tea {i}"}) for i in range(5)])
        every = set().union(*(tables(t) for t in ("acme", "globex", "initech")))
        for query, mode in (("tea", "hybrid"), ("tea", "keyword"), (None, "hybrid")):
            op = SearchOp(("acme",), query=query, limit=3)
            ex = _first_exec(store, op, mode)
            read = _explained(dsn, ex.sql, ex.params)
            assert read and read <= tables("acme"), (query, mode, read)
            # Before: the scope named only the namespace, and the plan read
            # every tenant's partitions.
            before = _first_exec(_Unpruned(store), op, mode)
            others = _explained(dsn, before.sql, before.params) - tables("acme")
            assert {t[-32:] for t in others} == {t[-32:] for t in every - tables("acme")}
        # The vector paths' statements name the tenant too.
        qvec = np.asarray(embed(["tea"])[0], dtype=np.float32)
        q = _sql.VectorQuery("acme", ("TRUE", []), _sql.live_clause(True), qvec, DIMS, "cosine")
        assert _explained(dsn, *_sql.hnsw_query(q._replace(tenant="acme"), 10, 3)) <= tables("acme")
        assert _explained(dsn, *_sql.hnsw_query(q, 10, 3)) == every
        # And the answers are the same.
        got = store.search(("acme",), query="tea", limit=10)
        assert {r.key for r in got} == {f"k{i}" for i in range(5)}
        assert {r.namespace for r in got} == {("acme", "u")}
        assert {r.key for r in store.search(("acme", "u"), limit=10)} == {f"k{i}" for i in range(5)}


def test_scope_tenant_names_one_tenant_or_none():
    first, engine = TenantKey.of(FIRST), TenantKey.of(None)
    assert first.scope_tenant("acme.u") == "acme"
    assert first.scope_tenant("") is None
    assert engine.scope_tenant(encode_namespace(("tenant", "acme", "user"))) == "acme"
    assert engine.scope_tenant(encode_namespace(("tenant",))) is None
    assert engine.scope_tenant(encode_namespace(("user", "ada"))) == "default"
