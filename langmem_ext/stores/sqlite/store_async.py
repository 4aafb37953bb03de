"""``AsyncSqliteStore``: the SQLite store in LangGraph's async shape.

LangGraph's ``langgraph.store.sqlite.aio.AsyncSqliteStore`` is opened with
``async with AsyncSqliteStore.from_conn_string(path) as store`` and set up with
``await store.setup()``; its TTL sweeper is a task of the running loop. This
class has that shape over the same file format and engine as
:class:`~.store.SQLiteStore` (hybrid search, the offline embedder by
default): the SQLite work runs on a worker thread, so the event loop never
waits on disk. Its sync methods (``batch``, ``search``…) work too, from any
thread.

The constructor takes what LangGraph's takes, an open ``aiosqlite``
connection, as well as a path or a ``sqlite3.Connection`` (see
:class:`~.store.SQLiteStore`). Given an ``aiosqlite`` connection to a file,
the store opens its own connection to that file when ``await store.setup()``
runs (it must run before the first sync call; async calls run it themselves):
the two see each other's committed writes, and the caller's connection is
never closed here. An ``aiosqlite`` connection to an in-memory database is
refused, since that database cannot be reached from another connection: use
``AsyncSqliteStore(":memory:")``.

Examples:
    >>> import asyncio
    >>> async def main():
    ...     async with AsyncSqliteStore.from_conn_string(":memory:") as store:
    ...         await store.setup()
    ...         await store.aput(("user", "ada"), "m1", {"content": "prefers tea"})
    ...         return [it.key for it in await store.asearch(("user",), query="tea")]
    >>> asyncio.run(main())
    ['m1']
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import Op, Result

from ...errors import ConfigurationError
from .._async_ttl import AsyncTTLSweeper
from . import _vectors
from .store import SQLiteStore

__all__ = ["AsyncSqliteStore"]


# The sweeper methods are coroutines here, as in LangGraph's async stores.
class AsyncSqliteStore(AsyncTTLSweeper, SQLiteStore):  # type: ignore[misc]
    """:class:`SQLiteStore` with LangGraph's async lifecycle (see the module)."""

    #: The caller's aiosqlite connection whose file is not known yet.
    _aio: Any = None

    def __init__(self, conn: Any = ":memory:", **kwargs: Any) -> None:
        if _is_aiosqlite(conn):
            self._aio = conn
            # The file is read from the connection by setup(), which can await.
            super().__init__(":memory:", **kwargs)
            self.path = ""
        else:
            super().__init__(conn, **kwargs)

    def _connect(self) -> Any:
        if self._aio is not None and not self.path:
            raise ConfigurationError(
                "this AsyncSqliteStore was given an aiosqlite connection: "
                "'await store.setup()' before its first sync call"
            )
        return super()._connect()

    async def _resolve_aiosqlite(self) -> None:
        """The file of the caller's aiosqlite connection (read once)."""
        if self._aio is None or self.path:
            return
        async with self._aio.execute("PRAGMA database_list") as cur:
            rows = await cur.fetchall()
        main = next((r[2] for r in rows if r[1] == "main"), "")
        if not main:
            raise TypeError(
                "AsyncSqliteStore cannot share an aiosqlite connection to an in-memory "
                "database (no other connection can reach it); use "
                "AsyncSqliteStore(':memory:'), or an aiosqlite connection to a file"
            )
        self.path = os.fspath(main)
        self._segdir = _vectors.segment_dir(self.path)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        await self._resolve_aiosqlite()
        return await super().abatch(ops)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, **kwargs: Any
    ) -> AsyncIterator[AsyncSqliteStore]:
        """Open a store on a file path, closed when the block ends; takes the
        :class:`SQLiteStore` options (``index``, ``ttl``, ``search_mode``…)."""
        store = cls(conn_string, **kwargs)
        try:
            await store.setup()
            yield store
        finally:
            await store.aclose()

    async def setup(self) -> None:  # type: ignore[override]
        """Create or migrate the schema (awaitable, as in LangGraph)."""
        await self._resolve_aiosqlite()
        await self._off_loop(SQLiteStore.setup, self)

    asetup = setup

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete expired items now; returns how many (awaitable, as in LangGraph)."""
        await self._resolve_aiosqlite()
        return await self._off_loop(SQLiteStore.sweep_ttl, self)

    asweep_ttl = sweep_ttl

    async def aclose(self) -> None:
        """Stop the sweeper task and close the connection."""
        await self.stop_ttl_sweeper()
        await self._off_loop(self.close)

    def close(self) -> None:
        """Close from sync code; a running sweeper task is told to stop."""
        if self._sweep_event is not None:
            self._sweep_event.set()
        SQLiteStore.stop_ttl_sweeper(self)  # a thread sweeper started through the sync API
        self._close_connection()

    def __enter__(self) -> AsyncSqliteStore:
        raise TypeError(
            "AsyncSqliteStore is opened with 'async with'; use SQLiteStore in sync code"
        )

    async def __aenter__(self) -> AsyncSqliteStore:
        await self.setup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _is_aiosqlite(conn: Any) -> bool:
    return type(conn).__module__.startswith("aiosqlite") and hasattr(conn, "execute")
