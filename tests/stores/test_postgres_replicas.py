"""PostgresStore reading from a hot standby: a real primary and a real
streaming-replication standby (``pg_basebackup -R`` from the same binaries).

Writes go to the primary; reads go to the standby once it has replayed the
store's own last write; a standby that lags (replay paused) or is down leaves
reads to the primary, with one warning per episode."""

from __future__ import annotations

import asyncio
import logging

import psycopg
import pytest
from langmem_ext_dev.postgres import start_embedded_postgres, start_standby

from langmem_ext.errors import ConfigurationError
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore

LOGGER = "langmem_ext.stores.postgres"


@pytest.fixture(scope="module")
def servers():
    primary = start_embedded_postgres()
    try:
        standby = start_standby(primary)
        try:
            yield primary, standby
        finally:
            standby.stop()
    finally:
        primary.stop()


@pytest.fixture
def dsns(servers):
    """A fresh schema on the primary, and the same schema seen on the standby."""
    primary, standby = servers
    dsn = primary.fresh_schema()
    schema = dsn.split("search_path=")[1].split(",")[0]
    return dsn, standby.conninfo("langmem_test", options=f"-c search_path={schema},public")


def _standby_sessions(standby_dsn: str) -> int:
    with psycopg.connect(standby_dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()"
        ).fetchone()[0]


def test_write_on_primary_read_on_standby_read_your_writes(dsns, caplog, capsys):
    """Every read right after the store's own write sees it, served by the
    standby (its replay is waited for); the standby holds the data too."""
    dsn, standby_dsn = dsns
    transcript = []
    with (
        caplog.at_level(logging.WARNING, logger=LOGGER),
        PostgresStore.from_conn_string(dsn, replicas=standby_dsn) as store,
        psycopg.connect(standby_dsn, autocommit=True) as watch,
    ):
        routing = store._replicas
        assert routing is not None
        for i in range(20):
            store.put(("user", "u1"), f"k{i}", {"text": f"fact number {i}"})
            wrote = routing.written_lsn
            got = store.get(("user", "u1"), f"k{i}")
            assert got is not None and got.value == {"text": f"fact number {i}"}
            found = store.search(("user", "u1"), query=f"fact number {i}", limit=50)
            assert f"k{i}" in {r.key for r in found}
            if i < 3:
                replayed, standby = watch.execute(
                    "SELECT pg_last_wal_replay_lsn()::text, pg_is_in_recovery()"
                ).fetchone()
                transcript.append(
                    f"put k{i} on the primary (WAL {wrote}); get k{i} -> {got.value} and "
                    f"search -> k{i} found, both served by the standby (in recovery: "
                    f"{standby}, replayed to {replayed}); served {routing.served}, "
                    f"primary fallbacks {routing.fell_back}"
                )
        assert (routing.served, routing.fell_back) == (40, 0), caplog.text
        assert _standby_sessions(standby_dsn) >= 1  # the store's pool is connected there
        with (
            pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
            psycopg.connect(standby_dsn) as conn,
        ):
            conn.execute("DELETE FROM lmx_items")  # it really is the standby
    assert caplog.records == []
    with capsys.disabled():
        print("\n--- primary and standby ---\n" + "\n".join(transcript))


def test_a_lagging_standby_leaves_reads_to_the_primary_with_one_warning(dsns, servers, caplog):
    dsn, standby_dsn = dsns
    _, standby = servers
    with PostgresStore.from_conn_string(dsn, replicas=standby_dsn, replica_max_wait=0.2) as store:
        store.put(("user", "u1"), "a", {"text": "before the pause"})
        assert store.get(("user", "u1"), "a") is not None
        with psycopg.connect(standby.conninfo("langmem_test"), autocommit=True) as admin:
            admin.execute("SELECT pg_wal_replay_pause()")
            try:
                with caplog.at_level(logging.WARNING, logger=LOGGER):
                    store.put(("user", "u1"), "b", {"text": "written while the replica lags"})
                    for _ in range(3):  # read-your-writes holds: the primary answers
                        assert store.get(("user", "u1"), "b").value["text"].startswith("written")
                lag = [r for r in caplog.records if "has not replayed" in r.getMessage()]
                assert len(lag) == 1 and "replica_max_wait (200 ms)" in lag[0].getMessage()
                assert store._replicas.fell_back == 3
                # Not on the standby yet: the primary really served those reads.
                with psycopg.connect(standby_dsn, autocommit=True) as conn:
                    assert conn.execute("SELECT count(*) FROM lmx_items").fetchone()[0] == 1
            finally:
                admin.execute("SELECT pg_wal_replay_resume()")
        caplog.clear()
        served = store._replicas.served
        with caplog.at_level(logging.INFO, logger=LOGGER):
            assert store.get(("user", "u1"), "b") is not None
        assert store._replicas.served == served + 1
        assert "has caught up" in caplog.text


def test_a_standby_that_is_down_leaves_reads_to_the_primary_with_one_warning(dsns, servers, caplog):
    dsn, standby_dsn = dsns
    _, standby = servers
    with PostgresStore.from_conn_string(dsn, replicas=standby_dsn) as store:
        store.put(("user", "u1"), "a", {"text": "kept"})
        assert store.get(("user", "u1"), "a") is not None
        standby.pause()
        try:
            with caplog.at_level(logging.WARNING, logger=LOGGER):
                for _ in range(5):
                    assert store.get(("user", "u1"), "a").value == {"text": "kept"}
                    store.put(("user", "u1"), "b", {"text": "writes go on"})
            down = [r for r in caplog.records if "cannot be reached" in r.getMessage()]
            assert len(down) == 1
            assert store._replicas.fell_back == 5
        finally:
            standby.resume()


def test_async_store_reads_its_writes_from_the_standby(dsns):
    dsn, standby_dsn = dsns

    async def main():
        async with AsyncPostgresStore.from_conn_string(dsn, replicas=[standby_dsn]) as store:
            for i in range(10):
                await store.aput(("user", "u2"), f"k{i}", {"text": f"async fact {i}"})
                got = await store.aget(("user", "u2"), f"k{i}")
                assert got is not None and got.value == {"text": f"async fact {i}"}
            # A write through the sync face counts for read-your-writes too.
            await asyncio.to_thread(store.put, ("user", "u2"), "sync", {"text": "from sync"})
            got = await store.aget(("user", "u2"), "sync")
            assert got is not None
            return store._replicas.served, store._replicas.fell_back

    served, fell_back = asyncio.run(main())
    assert served == 11 and fell_back == 0


def test_ttl_refresh_on_read_goes_to_the_primary(dsns):
    dsn, standby_dsn = dsns
    ttl = {"default_ttl": 10, "refresh_on_read": True}
    with PostgresStore.from_conn_string(dsn, replicas=standby_dsn, ttl=ttl) as store:
        store.put(("user", "u1"), "a", {"text": "refreshed"})
        assert store.get(("user", "u1"), "a") is not None
        assert store._replicas.served == 0  # the refresh is a write
        assert store.get(("user", "u1"), "a", refresh_ttl=False) is not None
        assert store._replicas.served == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"replicas": ""}, "replicas must be a connection string of a hot standby"),
        ({"replicas": [5]}, "replicas must be a connection string of a hot standby"),
        ({"replicas": []}, "replicas must be a connection string of a hot standby"),
        ({"replicas": "host=x", "replica_max_wait": -1}, "replica_max_wait must be a number"),
        ({"replicas": "host=x", "replica_max_wait": "1"}, "replica_max_wait must be a number"),
        ({"replicas": "host=x", "replica_max_wait": 61}, "replica_max_wait must be a number"),
    ],
)
def test_bad_replica_settings_are_refused_by_name(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        PostgresStore("host=primary", **kwargs)
    with pytest.raises(ConfigurationError, match=message):
        AsyncPostgresStore("host=primary", **kwargs)


def test_replicas_need_a_pool_not_a_single_connection(dsns):
    dsn, standby_dsn = dsns
    with (
        psycopg.connect(dsn, autocommit=True) as conn,
        pytest.raises(ConfigurationError, match="not a single connection"),
    ):
        PostgresStore(conn, replicas=standby_dsn)
