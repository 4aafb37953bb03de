"""PostgresStore reading from a hot standby: a real primary and a real
streaming-replication standby (``pg_basebackup -R`` from the same binaries).

Writes go to the primary; reads go to the standby once it has replayed the
store's own last write; a standby that lags (replay paused) or is down leaves
reads to the primary, with one warning per episode."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from langmem_ext_dev.postgres import start_embedded_postgres, start_standby

from langmem_ext.errors import ConfigurationError
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from langmem_ext.stores.postgres._replicas import lsn_value
from langmem_ext.stores.transfer import import_jsonl

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


# -- replicas are verified before they serve, and bounded in time ----------------------


@contextmanager
def _replay_paused(standby):
    with psycopg.connect(standby.conninfo("langmem_test"), autocommit=True) as admin:
        admin.execute("SELECT pg_wal_replay_pause()")
        try:
            yield
        finally:
            admin.execute("SELECT pg_wal_replay_resume()")


def _replayed(store, standby_dsn: str) -> None:
    """Wait (with a deadline) until the standby has replayed the store's last write."""
    deadline = time.monotonic() + 10
    with psycopg.connect(standby_dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            lsn = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()[0]
            if lsn_value(lsn) >= lsn_value(store._replicas.written_lsn):
                return
            time.sleep(0.01)
    raise AssertionError("the standby did not replay the store's write in 10 s")


def test_a_promoted_standby_serves_no_more_reads(servers, caplog):
    """Promoted, a standby is a server of its own that the primary's writes
    never reach: every read after the promotion comes from the primary."""
    primary, _ = servers
    standby = start_standby(primary)
    try:
        dsn = primary.fresh_schema()
        schema = dsn.split("search_path=")[1].split(",")[0]
        standby_dsn = standby.conninfo("langmem_test", options=f"-c search_path={schema},public")
        with PostgresStore.from_conn_string(dsn, replicas=standby_dsn) as store:
            store.put(("user", "u1"), "a", {"text": "before the promotion"})
            assert store.get(("user", "u1"), "a") is not None
            assert store._replicas.served == 1
            with psycopg.connect(standby.dsn, autocommit=True) as conn:
                assert conn.execute("SELECT pg_promote()").fetchone()[0] is True
            with caplog.at_level(logging.WARNING, logger=LOGGER):
                missed = []
                for i in range(20):
                    store.put(("user", "u1"), f"k{i}", {"text": f"after {i}"})
                    if store.get(("user", "u1"), f"k{i}") is None:
                        missed.append(i)
            assert missed == []
            assert store._replicas.served == 1
            warned = [r.getMessage() for r in caplog.records if r.name == LOGGER]
            assert len(warned) == 1 and "is not in recovery" in warned[0], warned
    finally:
        standby.stop()


@pytest.mark.parametrize("other", ["another database", "another store's schema"])
def test_a_replica_string_reaching_another_store_serves_no_reads(servers, dsns, other, caplog):
    """A standby of the right server, but the connection string names another
    database (or another schema): its rows are never returned."""
    primary, standby = servers
    dsn, standby_dsn = dsns
    if other == "another database":
        with psycopg.connect(primary.dsn, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'lmx_other'").fetchone():
                conn.execute("CREATE DATABASE lmx_other")
        other_dsn, wrong = primary.conninfo("lmx_other"), standby.conninfo("lmx_other")
    else:
        other_dsn = primary.fresh_schema()
        schema = other_dsn.split("search_path=")[1].split(",")[0]
        wrong = standby.conninfo("langmem_test", options=f"-c search_path={schema},public")
    with PostgresStore.from_conn_string(other_dsn) as elsewhere:
        elsewhere.put(("user", "u1"), "a", {"text": f"from {other}"})
    with PostgresStore.from_conn_string(dsn, replicas=wrong) as store:
        store.put(("user", "u1"), "a", {"text": "ours"})
        _replayed(store, standby_dsn)
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            for _ in range(5):
                assert store.get(("user", "u1"), "a").value == {"text": "ours"}
                assert [r.value for r in store.search(("user",))] == [{"text": "ours"}]
        assert store._replicas.served == 0
        warned = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert len(warned) == 1 and "holds another store" in warned[0], warned


def test_a_frozen_standby_costs_a_read_at_most_the_replica_timeout(dsns, servers, caplog):
    """The standby's processes stopped: its connections stay open and never
    answer. The read comes back from the primary within the time-out."""
    dsn, standby_dsn = dsns
    _, standby = servers
    with PostgresStore.from_conn_string(dsn, replicas=standby_dsn) as store:
        store.put(("user", "u1"), "a", {"text": "kept"})
        assert store.get(("user", "u1"), "a") is not None  # connected to the standby
        assert store._replicas.served == 1
        timeout = 0.5 + 2.0  # replica_timeout's default: replica_max_wait + 2 s
        got: dict[str, Any] = {}

        def read() -> None:
            t0 = time.monotonic()
            got["item"] = store.get(("user", "u1"), "a")
            got["took"] = time.monotonic() - t0
            got["next"] = store.get(("user", "u1"), "a")  # the standby is now known down

        standby.freeze()
        try:
            with caplog.at_level(logging.WARNING, logger=LOGGER):
                th = threading.Thread(target=read)
                th.start()
                th.join(timeout + 8)
                hung = th.is_alive()
        finally:
            standby.thaw()
            th.join(30)
        assert not hung, "a read on the frozen standby never came back"
        assert got["item"].value == {"text": "kept"} and got["next"] is not None
        assert timeout <= got["took"] < timeout + 2, got
        warned = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert len(warned) == 1 and "did not answer within replica_timeout" in warned[0], warned


def test_async_store_a_frozen_standby_costs_a_read_at_most_the_replica_timeout(dsns, servers):
    dsn, standby_dsn = dsns
    _, standby = servers
    got: dict[str, Any] = {}

    async def main():
        async with AsyncPostgresStore.from_conn_string(
            dsn, replicas=standby_dsn, replica_max_wait=0.2
        ) as store:  # replica_timeout: 2.2 s
            await store.aput(("user", "u1"), "a", {"text": "kept"})
            assert await store.aget(("user", "u1"), "a") is not None
            assert store._replicas.served == 1
            standby.freeze()
            t0 = time.monotonic()
            got["item"] = await store.aget(("user", "u1"), "a")
            got["took"] = time.monotonic() - t0

    th = threading.Thread(target=asyncio.run, args=(main(),))
    th.start()
    try:
        th.join(12)
        hung = th.is_alive()
    finally:
        standby.thaw()
        th.join(30)
    assert not hung, "a read on the frozen standby never came back"
    assert got["item"].value == {"text": "kept"} and 2.2 <= got["took"] < 4.2, got


def test_a_replica_that_accepts_connections_and_never_answers(dsns, caplog):
    dsn, _ = dsns
    with socket.socket() as listener:  # the kernel accepts; nobody ever reads or answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        replica = f"host=127.0.0.1 port={listener.getsockname()[1]} dbname=x user=postgres"
        with PostgresStore.from_conn_string(dsn, replicas=replica, replica_max_wait=0) as store:
            store.put(("user", "u1"), "a", {"text": "kept"})
            t0 = time.monotonic()
            assert store.get(("user", "u1"), "a").value == {"text": "kept"}
            assert time.monotonic() - t0 < 2.0 + 1.5  # replica_timeout: 2 s
            assert store._replicas.fell_back == 1


def test_reads_after_an_import_see_it_while_the_standby_lags(dsns, servers):
    dsn, standby_dsn = dsns
    _, standby = servers
    lines = [
        json.dumps(
            {"namespace": ["user", "u1"], "key": f"b{i}", "value": {"text": f"imported {i}"}}
        )
        for i in range(5)
    ]
    with PostgresStore.from_conn_string(dsn, replicas=standby_dsn, replica_max_wait=0.1) as store:
        store.put(("user", "u1"), "a", {"text": "before"})
        _replayed(store, standby_dsn)
        with _replay_paused(standby):
            assert import_jsonl(store, lines).imported == 5
            for i in range(5):
                assert store.get(("user", "u1"), f"b{i}") is not None, f"b{i} not read back"
            found = {r.key for r in store.search(("user", "u1"), limit=20)}
            assert found == {"a", "b0", "b1", "b2", "b3", "b4"}


def test_reads_after_a_ttl_refresh_see_it_while_the_standby_lags(dsns, servers):
    """A read that refreshes an item's expiry is a write: a later read must
    not find the item expired on a lagging standby."""
    dsn, standby_dsn = dsns
    _, standby = servers
    ttl = {"refresh_on_read": True}
    with PostgresStore.from_conn_string(
        dsn, replicas=standby_dsn, replica_max_wait=0.1, ttl=ttl
    ) as store:
        t0 = time.monotonic()
        store.put(("user", "u1"), "a", {"text": "kept alive"}, ttl=0.02)  # 1.2 s
        _replayed(store, standby_dsn)
        with _replay_paused(standby):
            _until(t0 + 0.7)
            assert store.get(("user", "u1"), "a") is not None  # refreshed on the primary
            _until(t0 + 1.4)  # the expiry the standby holds has passed
            assert store.get(("user", "u1"), "a", refresh_ttl=False) is not None


def _until(when: float) -> None:
    """Let the clock reach ``when`` (a TTL's expiry is a time, not an event)."""
    while time.monotonic() < when:
        time.sleep(0.02)


def test_reads_after_dropping_a_tenant_see_it_while_the_standby_lags(dsns, servers):
    dsn, standby_dsn = dsns
    _, standby = servers
    with PostgresStore.from_conn_string(
        dsn, replicas=standby_dsn, replica_max_wait=0.1, partition_by_tenant=True
    ) as store:
        store.put(("tenant", "acme", "user", "ada"), "a", {"text": "dropped soon"})
        store.put(("tenant", "globex", "user", "cy"), "b", {"text": "kept"})
        assert store.get(("tenant", "acme", "user", "ada"), "a") is not None
        with _replay_paused(standby):
            store.drop_tenant("acme")
            assert store.get(("tenant", "acme", "user", "ada"), "a") is None
            assert store.get(("tenant", "globex", "user", "cy"), "b") is not None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"replica_timeout": 0}, "replica_timeout must be"),
        ({"replica_timeout": "2"}, "replica_timeout must be"),
        ({"replica_timeout": 0.4}, "longer than replica_max_wait"),
    ],
)
def test_bad_replica_timeouts_are_refused_by_name(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        PostgresStore("host=primary", replicas="host=x", **kwargs)
