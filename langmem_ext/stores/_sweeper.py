"""The TTL sweeper thread shared by every store (one implementation)."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from typing import Any

__all__ = ["TTLSweeperMixin"]

logger = logging.getLogger("langmem_ext.stores")


class TTLSweeperMixin:
    """Adds ``start_ttl_sweeper`` / ``stop_ttl_sweeper`` to a store that has a
    ``sweep_ttl()`` method and a LangGraph ``ttl_config``."""

    ttl_config: Any
    _sweeper: threading.Thread | None = None
    _sweep_stop: threading.Event | None = None

    def sweep_ttl(self) -> int:  # pragma: no cover - provided by the store
        raise NotImplementedError

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items periodically on a daemon thread (it never keeps the
        process alive). Returns a future that completes when the sweeper stops.

        The interval defaults to ``ttl["sweep_interval_minutes"]``, else 5 minutes.

        Example:
            >>> from langmem_ext import SQLiteStore
            >>> store = SQLiteStore()
            >>> done = store.start_ttl_sweeper(0.01)
            >>> store.stop_ttl_sweeper(timeout=5), done.done()
            (True, True)
        """
        interval = sweep_interval_minutes
        if interval is None and self.ttl_config:
            interval = self.ttl_config.get("sweep_interval_minutes")
        interval = 5.0 if interval is None else float(interval)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            done.set_result(None)
            return done
        stop = self._sweep_stop = threading.Event()

        def loop() -> None:
            try:
                while not stop.wait(interval * 60.0):
                    try:
                        n = self.sweep_ttl()
                        if n:
                            logger.info("TTL sweeper deleted %d expired items", n)
                    except Exception:
                        logger.exception("TTL sweep failed; retrying at the next interval")
            finally:
                done.set_result(None)

        name = f"langmem-ext-ttl-{type(self).__name__}"
        self._sweeper = threading.Thread(target=loop, name=name, daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True if it stopped within ``timeout``."""
        if self._sweeper is None or self._sweep_stop is None:
            return True
        self._sweep_stop.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped
