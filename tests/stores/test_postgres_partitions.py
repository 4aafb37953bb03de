"""PostgresStore with its items partitioned by tenant (the namespace's first
label), on a real PostgreSQL server: partitions created or refused, every
operation working across them, nothing written by a refused write."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from langgraph.store.base import PutOp

from langmem_ext.errors import ConfigurationError, InvalidNamespaceError
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore

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
    with PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True) as store:
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
    with PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant="refuse") as store:
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
        PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True) as one,
        PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True) as two,
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
            dsn, index=INDEX, partition_by_tenant="refuse"
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
    store = PostgresStore.from_conn_string(dsn, index=INDEX, partition_by_tenant=True)
    with pytest.raises(ConfigurationError, match="applies to a new store"), store as s:
        s.put(("acme", "ada"), "m2", {"text": "likes coffee"})
    with PostgresStore.from_conn_string(dsn, index=INDEX) as plain:
        assert plain.get(("acme", "ada"), "m2") is None  # nothing written


@pytest.mark.parametrize("bad", ["yes", 1, "tenant"])
def test_bad_partition_settings_are_refused_by_name(bad):
    with pytest.raises(ConfigurationError, match="partition_by_tenant"):
        PostgresStore("dbname=x", partition_by_tenant=bad)
