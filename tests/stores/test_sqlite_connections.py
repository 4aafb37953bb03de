"""``SQLiteStore(conn)`` and ``AsyncSqliteStore(conn)``: LangGraph's first
documented constructor, ``SqliteStore(sqlite3.connect(":memory:"))``, works
with ours; what cannot work is refused with a TypeError naming what is
accepted."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import aiosqlite
import pytest

from langmem_ext import AsyncSqliteStore, SQLiteStore
from langmem_ext.errors import ConfigurationError


def test_langgraphs_documented_constructor_works() -> None:
    conn = sqlite3.connect(":memory:")
    store = SQLiteStore(conn)
    store.setup()
    store.put(("users", "123"), "prefs", {"theme": "dark"})
    assert store.get(("users", "123"), "prefs").value == {"theme": "dark"}
    assert store.conn is conn
    # Async calls run on the connection's own thread (it is bound to it).
    assert asyncio.run(store.aget(("users", "123"), "prefs")).value == {"theme": "dark"}
    store.close()
    # The caller's connection stays open, with the store's data in it.
    assert conn.execute("SELECT count(*) FROM items").fetchone() == (1,)
    store.put(("users", "123"), "more", {"theme": "light"})  # usable again
    assert conn.execute("SELECT count(*) FROM items").fetchone() == (2,)


def test_a_legacy_mode_connection_is_never_left_in_a_transaction(tmp_path: Path) -> None:
    # Python's default isolation level begins transactions implicitly; the
    # store's own statements must not leave one open (the next BEGIN would fail).
    conn = sqlite3.connect(tmp_path / "m.db")
    store = SQLiteStore(conn, index={"dims": 4, "embed": _embed, "fields": ["content"]})
    for i in range(4):
        store.put(("a", str(i % 2)), f"k{i}", {"content": f"tea {i}"})
        assert not conn.in_transaction
    assert store.search(("a",), query="tea 3", mode="vector")[0].key == "k3"
    store.delete(("a", "0"), "k0")
    assert not conn.in_transaction
    assert store.list_namespaces() == [("a", "0"), ("a", "1")]
    store.close()
    # Another connection to the file sees what was written.
    assert (
        sqlite3.connect(tmp_path / "m.db").execute("SELECT count(*) FROM items").fetchone()[0] == 3
    )


def test_a_shared_connection_serves_several_threads(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.db", check_same_thread=False, isolation_level=None)
    store = SQLiteStore(conn, ttl={"default_ttl": 10})
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                store.put(("t", str(n)), str(i), {"n": i})
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.search(("t",), limit=100)) == 80
    done = store.start_ttl_sweeper(0.01)  # allowed: the connection is shared
    assert store.stop_ttl_sweeper(timeout=5) and done.done()


def test_a_thread_bound_connection_refuses_the_sweeper_thread() -> None:
    store = SQLiteStore(sqlite3.connect(":memory:"))
    with pytest.raises(ConfigurationError, match="check_same_thread=False"):
        store.start_ttl_sweeper(0.01)
    assert store.sweep_ttl() == 0  # sweeping from the caller's thread works


@pytest.mark.parametrize(
    "bad, says",
    [
        (42, "got builtins.int"),
        (b"memories.db", "got builtins.bytes"),
        (None, "got builtins.NoneType"),
    ],
)
def test_the_wrong_kind_of_connection_is_a_type_error(bad: object, says: str) -> None:
    with pytest.raises(TypeError, match="a database file path, ':memory:' or an open sqlite3"):
        SQLiteStore(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=says):
        AsyncSqliteStore(bad)


def test_a_closed_connection_is_a_type_error() -> None:
    conn = sqlite3.connect(":memory:")
    conn.close()
    with pytest.raises(TypeError, match="cannot be used here"):
        SQLiteStore(conn)


def test_an_aiosqlite_connection_to_a_file(tmp_path: Path) -> None:
    path = tmp_path / "a.db"

    async def main() -> None:
        async with aiosqlite.connect(path) as aconn:
            with pytest.raises(TypeError, match="an aiosqlite connection is for AsyncSqliteStore"):
                SQLiteStore(aconn)  # type: ignore[arg-type]
            store = AsyncSqliteStore(aconn)
            with pytest.raises(ConfigurationError, match=r"await store\.setup\(\)"):
                store.put(("a",), "k", {"v": 1})
            await store.setup()
            await store.aput(("a",), "k", {"v": 1})
            assert (await store.aget(("a",), "k")).value == {"v": 1}
            # The caller's connection sees the committed write, and stays open.
            async with aconn.execute("SELECT count(*) FROM items") as cur:
                assert await cur.fetchone() == (1,)
            await store.aclose()
            async with aconn.execute("SELECT count(*) FROM items") as cur:
                assert await cur.fetchone() == (1,)
        # Async calls before setup() set it up themselves.
        async with aiosqlite.connect(path) as aconn:
            store = AsyncSqliteStore(aconn)
            assert (await store.aget(("a",), "k")).value == {"v": 1}
            await store.aclose()

    asyncio.run(main())


def test_an_aiosqlite_connection_to_memory_is_refused() -> None:
    async def main() -> None:
        async with aiosqlite.connect(":memory:") as aconn:
            with pytest.raises(
                TypeError, match=r"in-memory database .* AsyncSqliteStore\(':memory:'\)"
            ):
                await AsyncSqliteStore(aconn).setup()

    asyncio.run(main())


def test_async_store_takes_a_sqlite3_connection() -> None:
    conn = sqlite3.connect(":memory:", check_same_thread=False)

    async def main() -> None:
        async with AsyncSqliteStore(conn) as store:
            await store.aput(("a",), "k", {"v": 1})
            assert (await store.asearch(("a",)))[0].key == "k"

    asyncio.run(main())
    assert conn.execute("SELECT count(*) FROM items").fetchone() == (1,)


def _embed(texts: list[str]) -> list[list[float]]:
    return [[float(t.count(c)) + 0.1 for c in "tea3"] for t in texts]
