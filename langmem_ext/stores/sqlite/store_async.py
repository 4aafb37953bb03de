"""``AsyncSqliteStore``: the SQLite store in LangGraph's async shape.

LangGraph's ``langgraph.store.sqlite.aio.AsyncSqliteStore`` is opened with
``async with AsyncSqliteStore.from_conn_string(path) as store`` and set up with
``await store.setup()``; its TTL sweeper is a task of the running loop. This
class has that shape over the same file format and engine as
:class:`~.store.SQLiteStore` (hybrid search, the offline embedder by
default): the SQLite work runs on a worker thread, so the event loop never
waits on disk. Its sync methods (``batch``, ``search``…) work too, from any
thread.

One difference: LangGraph's constructor takes an ``aiosqlite`` connection;
this one takes a path (``from_conn_string`` is the same).

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

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .._async_ttl import AsyncTTLSweeper
from .store import SQLiteStore

__all__ = ["AsyncSqliteStore"]


# The sweeper methods are coroutines here, as in LangGraph's async stores.
class AsyncSqliteStore(AsyncTTLSweeper, SQLiteStore):  # type: ignore[misc]
    """:class:`SQLiteStore` with LangGraph's async lifecycle (see the module)."""

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
        await asyncio.to_thread(SQLiteStore.setup, self)

    asetup = setup

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete expired items now; returns how many (awaitable, as in LangGraph)."""
        return await asyncio.to_thread(SQLiteStore.sweep_ttl, self)

    asweep_ttl = sweep_ttl

    async def aclose(self) -> None:
        """Stop the sweeper task and close the connection."""
        await self.stop_ttl_sweeper()
        await asyncio.to_thread(self.close)

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
