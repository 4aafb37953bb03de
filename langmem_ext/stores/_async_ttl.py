"""The TTL sweeper of the async stores: a task of the running event loop
(LangGraph's async shape, ``task = await store.start_ttl_sweeper()``), where
the sync stores use a daemon thread.

Examples:
    >>> import asyncio
    >>> from langmem_ext.stores.sqlite import AsyncSqliteStore
    >>> async def main():
    ...     async with AsyncSqliteStore.from_conn_string(":memory:", ttl={"default_ttl": 1}) as s:
    ...         task = await s.start_ttl_sweeper(sweep_interval_minutes=1)
    ...         return await s.stop_ttl_sweeper(timeout=5), task.done()
    >>> asyncio.run(main())
    (True, True)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

__all__ = ["AsyncTTLSweeper"]

logger = logging.getLogger("langmem_ext.stores")


class AsyncTTLSweeper:
    """``start_ttl_sweeper`` / ``stop_ttl_sweeper`` as coroutines, for a store
    whose ``sweep_ttl`` is a coroutine."""

    ttl_config: Any
    _sweep_task: asyncio.Task[None] | None = None
    _sweep_event: asyncio.Event | None = None

    if TYPE_CHECKING:  # what each async store provides

        async def sweep_ttl(self) -> int: ...

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep expired items periodically in a task of the running loop
        (LangGraph's shape: ``task = await store.start_ttl_sweeper()``). The
        interval defaults to ``ttl["sweep_interval_minutes"]``, else 5 minutes.
        """
        if self._sweep_task is not None and not self._sweep_task.done():
            return self._sweep_task
        interval = sweep_interval_minutes
        if interval is None and self.ttl_config:
            interval = self.ttl_config.get("sweep_interval_minutes")
        seconds = 60.0 * (5.0 if interval is None else float(interval))
        stop = self._sweep_event = asyncio.Event()

        async def loop() -> None:
            while True:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), seconds)
                if stop.is_set():
                    return
                try:
                    n = await self.sweep_ttl()
                    if n:
                        logger.info("TTL sweeper deleted %d expired items", n)
                except Exception:
                    logger.exception("TTL sweep failed; retrying at the next interval")

        self._sweep_task = asyncio.get_running_loop().create_task(loop(), name="lmx-ttl-sweeper")
        return self._sweep_task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; True if it stopped within ``timeout`` seconds."""
        task = self._sweep_task
        if task is None or task.done():
            self._sweep_task = None
            return True
        assert self._sweep_event is not None
        self._sweep_event.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except asyncio.TimeoutError:
            return False
        self._sweep_task = None
        return True
