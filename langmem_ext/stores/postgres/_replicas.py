"""Reads from hot-standby replicas, shared by both PostgresStores.

A batch with no writes (and no TTL refresh to write) goes to a replica. The
store remembers the primary's WAL position after each of its own writes
(every path: batches, TTL refreshes, imports, tenants created or dropped,
setup), and a replica serves its reads only once it has replayed that far
(:meth:`ReplicaRouting.wait_query`, waiting up to ``replica_max_wait``
seconds): what a store wrote, it reads back.

A replica is trusted only while it is what it claims to be. Every read checks,
in the same statement as the wait, that it is still in recovery (a promoted
standby no longer receives the primary's writes) and a standby of the same
server (PostgreSQL's system identifier, from ``pg_control_system()``, where
the role may read it). Before its first read, every ``VERIFY_EVERY_S``
seconds and after it was unreachable, it must also hold this very store: the
random store id the primary wrote into ``lmx_meta`` at setup (a connection
string naming another database or schema holds another, or none).

A read on a replica takes at most ``replica_timeout`` seconds, connecting
included: past it the connection's socket is shut down (see
:mod:`._deadline`) and the primary answers. A replica that lags, cannot be
reached, does not answer or fails a check leaves the read to the primary
with one logged warning per episode; one found down or failing a check is
tried again after ``RETRY_AFTER_S``. No I/O here: the stores' drivers run
the statements.
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

__all__ = [
    "IDENTITY_SQL",
    "RETRY_AFTER_S",
    "VERIFY_EVERY_S",
    "ReplicaReads",
    "ReplicaRouting",
    "lsn_value",
]

logger = logging.getLogger("langmem_ext.stores.postgres")

#: Seconds before a replica found down (or failing a check) is tried again.
RETRY_AFTER_S = 30.0
#: Seconds between checks that a replica holds this store.
VERIFY_EVERY_S = 30.0
#: ``replica_timeout`` when none is given: this much beyond ``replica_max_wait``.
TIMEOUT_MARGIN_S = 2.0

#: The primary's identity, read at setup: its system identifier (NULL when the
#: role may not read it) and the store's id, created by the first setup.
IDENTITY_SQL = (
    "WITH made AS (INSERT INTO lmx_meta (key, value) VALUES ('store_id', gen_random_uuid()::text) "
    "ON CONFLICT (key) DO NOTHING RETURNING value) "
    "SELECT CASE WHEN has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') "
    "THEN (SELECT system_identifier::text FROM pg_control_system()) END, "
    "coalesce((SELECT value FROM made), (SELECT value FROM lmx_meta WHERE key = 'store_id'))"
)

#: The store id a replica holds (only once it has the table; see _replica_steps).
STORE_ID_SQL = "SELECT value FROM lmx_meta WHERE key = 'store_id'"
HAS_META_SQL = "SELECT to_regclass('lmx_meta') IS NOT NULL"


def lsn_value(lsn: str) -> int:
    """A ``pg_lsn`` text (``'16/B374D848'``) as a number, to keep the largest.

    Examples:
        >>> lsn_value("0/10") < lsn_value("1/0")
        True
    """
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _seconds(value: Any, name: str, low: float, high: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigurationError(
            f"{name} must be a number of seconds from {low:g} to {high:g} ({what}), got {value!r}"
        )
    return float(value)


class ReplicaRouting:
    """Which replica a read goes to, this store's last write position, the
    checks a replica must pass, and the warnings when one cannot serve.

    Examples:
        >>> r = ReplicaRouting("host=standby dbname=app", 0.5)
        >>> r.conninfos, r.max_wait_ms, r.timeout_s
        (['host=standby dbname=app'], 500, 2.5)
    """

    def __init__(
        self, replicas: str | Sequence[str], max_wait: float, timeout: float | None = None
    ) -> None:
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
        max_wait = _seconds(
            max_wait,
            "replica_max_wait",
            0,
            60,
            "how long a read waits for a replica to replay this store's writes",
        )
        if timeout is None:
            timeout = max_wait + TIMEOUT_MARGIN_S
        timeout = _seconds(
            timeout,
            "replica_timeout",
            0.1,
            600,
            "the longest a read may take on a replica before the primary answers it",
        )
        if timeout <= max_wait:
            raise ConfigurationError(
                f"replica_timeout ({timeout:g} s) must be longer than replica_max_wait "
                f"({max_wait:g} s): a read on a replica may first wait that long for it to "
                "replay this store's writes"
            )
        self.conninfos = list(items)
        self.max_wait_ms = round(max_wait * 1000)
        self.timeout_s = timeout
        self._lock = threading.Lock()
        self._turn = itertools.cycle(range(len(self.conninfos)))
        n = len(self.conninfos)
        self._down_until = [0.0] * n
        self._lagging = [False] * n
        #: What is wrong with each replica (one warning per episode), or None.
        self._problem: list[str | None] = [None] * n
        self._verified_until = [0.0] * n
        self._written = 0
        self.written_lsn: str | None = None
        #: The primary's system identifier (None: not readable) and store id.
        self.system_id: str | None = None
        self.store_id: str | None = None
        #: Reads served by a replica, and by the primary instead of one.
        self.served = 0
        self.fell_back = 0

    def expect(self, system_id: str | None, store_id: str) -> None:
        """The primary's identity, learnt at setup: what a replica must match."""
        self.system_id, self.store_id = system_id, store_id

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

    def failed(self, i: int, error: BaseException, timed_out: bool = False) -> Any:
        """A read on replica ``i`` raised ``error``: the primary answers. A
        replica that did not answer in time, or whose connection was lost or
        refused, is marked down; any other error (a query cancelled by a
        conflict with recovery, or the batch's own error, which the primary
        then reports) is not."""
        if timed_out:
            self.down(
                i, f"did not answer within replica_timeout ({self.timeout_s:g} s)", error=None
            )
        elif isinstance(error, psycopg.OperationalError | PoolTimeout):
            self.down(i, "cannot be reached", error)
        else:
            with self._lock:
                self.fell_back += 1
        return ON_PRIMARY

    def wait_query(self) -> tuple[str, list[Any]]:
        """The statement a replica answers before the read: whether it is in
        recovery, its system identifier, and whether it has replayed this
        store's last write, polling every 2 ms for up to ``max_wait_ms`` (no
        wait once it is found out of recovery). It also bounds the read's
        later statements by ``statement_timeout``. Plain SQL (no function of
        ours: the replica may not have replayed the schema yet)."""
        return (
            "SELECT pg_is_in_recovery(), "
            "CASE WHEN has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') "
            "THEN (SELECT system_identifier::text FROM pg_control_system()) END, "
            "EXISTS (SELECT 1 FROM generate_series(0, %s) AS g WHERE CASE "
            "WHEN NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= %s::pg_lsn THEN true "
            "ELSE pg_sleep(0.002)::text IS NULL END), "
            "set_config('statement_timeout', %s, true)",
            [
                self.max_wait_ms // 2,
                self.written_lsn or "0/0",
                str(max(1, round(self.timeout_s * 1000))),
            ],
        )

    def standby_problem(self, in_recovery: bool, system_id: str | None) -> str | None:
        """What makes a replica unfit to serve this store's reads, by the
        wait query's answer, or None."""
        if not in_recovery:
            return (
                "is not in recovery (promoted to a primary?), so it no longer replays "
                "this store's writes"
            )
        if self.system_id and system_id and system_id != self.system_id:
            return (
                f"is a standby of another server (system identifier {system_id}, the "
                f"primary's is {self.system_id})"
            )
        return None

    def store_problem(self, store_id: str | None) -> str | None:
        if store_id != self.store_id:
            return (
                "holds another store ("
                + ("no store" if store_id is None else "another store id")
                + " in the database and schema its connection string reaches; check its "
                "dbname and search_path)"
            )
        return None

    def verify_due(self, i: int) -> bool:
        return self._verified_until[i] <= time.monotonic()

    def verified(self, i: int) -> None:
        self._verified_until[i] = time.monotonic() + VERIFY_EVERY_S

    def wrote(self, lsn: str) -> None:
        """Remember the primary's WAL position after one of this store's writes."""
        value = lsn_value(lsn)
        with self._lock:
            if value > self._written:
                self._written, self.written_lsn = value, lsn

    def served_by(self, i: int) -> None:
        """Replica ``i`` served a read: it is up, checked and caught up."""
        with self._lock:
            self.served += 1
            was_down, self._down_until[i] = self._down_until[i] != 0.0, 0.0
            problem, self._problem[i] = self._problem[i], None
            was_lagging, self._lagging[i] = self._lagging[i], False
        if was_down or problem:
            logger.info("replica %d serves reads again", i)
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

    def down(self, i: int, problem: str, error: BaseException | None) -> None:
        """Replica ``i`` cannot serve (``problem``): reads go to the primary,
        and it is tried (and checked) again after ``RETRY_AFTER_S``."""
        with self._lock:
            self.fell_back += 1
            first = self._problem[i] != problem
            self._problem[i] = problem
            self._down_until[i] = time.monotonic() + RETRY_AFTER_S
            self._verified_until[i] = 0.0
        if first:
            detail = ""
            if error is not None:
                text = str(error).strip()
                detail = f" ({text.splitlines()[0] if text else type(error).__name__})"
            logger.warning(
                "replica %d %s%s; reading from the primary, trying the replica again every %d s",
                i,
                problem,
                detail,
                RETRY_AFTER_S,
            )


class ReplicaReads:
    """The stores' side of the replicas: which batches may go to one, and the
    conversation a replica runs (its drivers only bring the connection and
    the deadline)."""

    ttl_config: Any
    #: Read replicas (``replicas=`` of the stores), or ``None``.
    _replicas: ReplicaRouting | None = None

    def _configure_replicas(
        self, replicas: Any, max_wait: float, timeout: float | None = None
    ) -> None:
        self._replicas = None if replicas is None else ReplicaRouting(replicas, max_wait, timeout)

    def _replica_readable(self, plan: Any) -> bool:
        """A batch a replica can serve: it writes nothing, TTL refresh included."""
        if self._replicas is None or plan.puts:
            return False
        return self.ttl_config is None or not any(
            getattr(op, "refresh_ttl", False) for _, op in plan.reads
        )

    def _notes_writes(self, plan: Any) -> bool:
        """Whether the primary's WAL position is noted after the batch: it may
        write (puts, TTL refresh), and replicas read."""
        return self._replicas is not None and not self._replica_readable(plan)

    def _replica_steps(self, i: int, make_steps: Callable[[], Steps]) -> Steps:
        """A read batch on replica ``i``, once it is checked and has replayed
        this store's last write; ``ON_PRIMARY`` when it fails a check, or has
        not caught up within ``replica_max_wait``."""
        routing = self._replicas
        assert routing is not None
        in_recovery, system_id, caught_up, _ = (yield Exec(*routing.wait_query(), fetch=True))[0]
        problem = routing.standby_problem(in_recovery, system_id)
        if problem is None and not caught_up:
            routing.lagging(i)
            return ON_PRIMARY
        if problem is None and routing.verify_due(i):
            # Caught up, so it has replayed the store id written at setup.
            has_meta = (yield Exec(HAS_META_SQL, fetch=True))[0][0]
            rows = (yield Exec(STORE_ID_SQL, fetch=True)) if has_meta else []
            problem = routing.store_problem(rows[0][0] if rows else None)
            if problem is None:
                routing.verified(i)
        if problem is not None:
            routing.down(i, problem, None)
            return ON_PRIMARY
        out = yield from make_steps()
        routing.served_by(i)
        return out
