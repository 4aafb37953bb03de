"""Reads from hot-standby replicas, shared by both PostgresStores.

A batch with no writes (and no TTL refresh to write) goes to a replica. The
store remembers the primary's WAL position after each of its own writes (and
after setup), and a replica serves its reads only once it has replayed that
far (:meth:`ReplicaRouting.wait_query`, waiting up to ``replica_max_wait``
seconds): what a store wrote, it reads back. A replica that lags beyond that, or cannot be reached,
leaves the read to the primary with one logged warning per episode; a replica
found down is tried again after ``RETRY_AFTER_S``. No I/O here: the stores'
drivers run the statements.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from ...errors import ConfigurationError
from ._config import ON_PRIMARY
from ._steps import Exec, Steps

__all__ = ["RETRY_AFTER_S", "ReplicaReads", "ReplicaRouting", "lsn_value"]

logger = logging.getLogger("langmem_ext.stores.postgres")

#: Seconds before a replica found down is tried again.
RETRY_AFTER_S = 30.0


def lsn_value(lsn: str) -> int:
    """A ``pg_lsn`` text (``'16/B374D848'``) as a number, to keep the largest.

    Examples:
        >>> lsn_value("0/10") < lsn_value("1/0")
        True
    """
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


class ReplicaRouting:
    """Which replica a read goes to, this store's last write position, and
    the warnings when a replica cannot serve.

    Examples:
        >>> r = ReplicaRouting("host=standby dbname=app", 0.5)
        >>> r.conninfos, r.max_wait_ms
        (['host=standby dbname=app'], 500)
    """

    def __init__(self, replicas: str | Sequence[str], max_wait: float) -> None:
        items = [replicas] if isinstance(replicas, str) else replicas
        if (
            not isinstance(items, Sequence)
            or not items
            or not all(isinstance(c, str) and c.strip() for c in items)
        ):
            raise ConfigurationError(
                "replicas must be a connection string of a hot standby or a list of them, "
                f"got {replicas!r}"
            )
        if (
            isinstance(max_wait, bool)
            or not isinstance(max_wait, int | float)
            or not 0 <= max_wait <= 60
        ):
            raise ConfigurationError(
                "replica_max_wait must be a number of seconds from 0 to 60 (how long a read "
                f"waits for a replica to replay this store's writes), got {max_wait!r}"
            )
        self.conninfos = list(items)
        self.max_wait_ms = round(max_wait * 1000)
        self._lock = threading.Lock()
        self._turn = itertools.cycle(range(len(self.conninfos)))
        self._down_until = [0.0] * len(self.conninfos)
        self._lagging = [False] * len(self.conninfos)
        self._written = 0
        self.written_lsn: str | None = None
        #: Reads served by a replica, and by the primary instead of one.
        self.served = 0
        self.fell_back = 0

    def choose(self) -> int | None:
        """The next replica not known to be down, or ``None`` (counted as a
        read the primary serves)."""
        now = time.monotonic()
        with self._lock:
            for _ in range(len(self.conninfos)):
                i = next(self._turn)
                if self._down_until[i] <= now:
                    return i
            self.fell_back += 1
        return None

    def failed(self, i: int, error: BaseException) -> Any:
        """A read on replica ``i`` raised ``error``: the primary answers. A lost
        or refused connection marks the replica down; any other error (a query
        cancelled by a conflict with recovery, or the batch's own error, which
        the primary then reports) does not."""
        if isinstance(error, psycopg.OperationalError | PoolTimeout):
            self.down(i, error)
        else:
            with self._lock:
                self.fell_back += 1
        return ON_PRIMARY

    def wait_query(self) -> tuple[str, list[Any]]:
        """The statement a replica answers before the read: one row once it
        has replayed this store's last write, polling every 2 ms for up to
        ``max_wait_ms``; no row if it has not. Plain SQL (no function of ours:
        the replica may not have replayed the schema yet); the scan stops at
        the first row that passes."""
        return (
            "SELECT 1 FROM generate_series(0, %s) AS g WHERE CASE WHEN NOT pg_is_in_recovery() "
            "OR pg_last_wal_replay_lsn() >= %s::pg_lsn THEN true "
            "ELSE pg_sleep(0.002)::text IS NULL END LIMIT 1",
            [self.max_wait_ms // 2, self.written_lsn or "0/0"],
        )

    def wrote(self, lsn: str) -> None:
        """Remember the primary's WAL position after one of this store's writes."""
        value = lsn_value(lsn)
        with self._lock:
            if value > self._written:
                self._written, self.written_lsn = value, lsn

    def served_by(self, i: int) -> None:
        """Replica ``i`` served a read: it is up, and caught up."""
        with self._lock:
            self.served += 1
            was_down, self._down_until[i] = self._down_until[i] != 0.0, 0.0
            was_lagging, self._lagging[i] = self._lagging[i], False
        if was_down:
            logger.info("replica %d is reachable again", i)
        if was_lagging:
            logger.info("replica %d has caught up; reads go to it again", i)

    def lagging(self, i: int) -> None:
        with self._lock:
            self.fell_back += 1
            first, self._lagging[i] = not self._lagging[i], True
        if first:
            logger.warning(
                "replica %d has not replayed this store's last write (%s) within "
                "replica_max_wait (%d ms); reading from the primary until it catches up",
                i,
                self.written_lsn,
                self.max_wait_ms,
            )

    def down(self, i: int, error: BaseException) -> None:
        with self._lock:
            self.fell_back += 1
            first = self._down_until[i] == 0.0
            self._down_until[i] = time.monotonic() + RETRY_AFTER_S
        if first:
            logger.warning(
                "replica %d cannot be reached (%s); reading from the primary, trying the "
                "replica again every %d s",
                i,
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__,
                RETRY_AFTER_S,
            )


class ReplicaReads:
    """The stores' side of the replicas: which batches may go to one, and the
    conversation a replica runs (its drivers only bring the connection)."""

    ttl_config: Any
    #: Read replicas (``replicas=`` of the stores), or ``None``.
    _replicas: ReplicaRouting | None = None

    def _configure_replicas(self, replicas: Any, max_wait: float) -> None:
        self._replicas = None if replicas is None else ReplicaRouting(replicas, max_wait)

    def _replica_readable(self, plan: Any) -> bool:
        """A batch a replica can serve: it writes nothing, TTL refresh included."""
        if self._replicas is None or plan.puts:
            return False
        return self.ttl_config is None or not any(
            getattr(op, "refresh_ttl", False) for _, op in plan.reads
        )

    def _replica_steps(self, i: int, make_steps: Callable[[], Steps]) -> Steps:
        """A read batch on replica ``i``, once it has replayed this store's last
        write; ``ON_PRIMARY`` when it has not within ``replica_max_wait``."""
        routing = self._replicas
        assert routing is not None
        if not (yield Exec(*routing.wait_query(), fetch=True)):
            routing.lagging(i)
            return ON_PRIMARY
        out = yield from make_steps()
        routing.served_by(i)
        return out
