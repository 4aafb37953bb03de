"""PostgresStore: the synchronous shell. It only runs the conversations that
:mod:`._core` writes once (and :class:`AsyncPostgresStore` runs too)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from langgraph.store.base import Op, PutOp, Result, TTLConfig
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import InvalidValueError, StoreError
from .._base import PurgeReport
from .._ops import SearchMode
from ..embeddings import IndexInput
from . import _purge, _reindex, _transfer
from ._adapt import adapt, dumper_for
from ._config import (
    LSN_QUERY,
    ON_PRIMARY,
    check_conn,
    check_pipeline,
    check_replica_conn,
    pool_options,
    replica_pool_options,
)
from ._core import (
    Copy,
    Many,
    PostgresCore,
    Steps,
    VectorIndexConfig,
)
from ._deadline import WATCHDOG
from ._errors import one_line, translate
from ._tenants import PartitionMode

__all__ = ["PoolConfig", "PostgresStore"]

logger = logging.getLogger(__name__)

PoolConfig = dict[str, Any]  # min_size, max_size, timeout, kwargs… (psycopg_pool options)

#: libpq can pipeline (version 14 and later).
PIPELINE = psycopg.Pipeline.is_supported()


def drive(steps: Steps, conn: psycopg.Connection[Any]) -> Any:
    """Run a conversation generator on a connection; returns its result."""
    with conn.cursor() as cur:
        try:
            step = next(steps)
            while True:
                if isinstance(step, Copy):
                    with cur.copy(step.sql) as cp:
                        cp.set_types(step.types)
                        for row in step.rows:
                            cp.write_row(row)
                    out: Any = None
                elif isinstance(step, Many):
                    out = _many(conn, step)
                else:
                    cur.execute(step.sql, step.params, prepare=step.prepare)
                    out = cur.fetchall() if step.fetch else None
                step = steps.send(out)
        except StopIteration as stop:
            return stop.value


def run_on(conn: psycopg.Connection[Any], steps: Steps, autocommit: bool = False) -> Any:
    """Drive ``steps`` in one transaction, or (``autocommit``) each statement
    in its own: DDL that must not run inside a write's transaction, and
    ``DETACH PARTITION CONCURRENTLY``, which cannot run in any."""
    if not autocommit:
        with conn.transaction():
            return drive(steps, conn)
    if conn.autocommit:
        return drive(steps, conn)
    conn.autocommit = True  # a connection you passed in; set back after
    try:
        return drive(steps, conn)
    finally:
        conn.autocommit = False


def note_written(core: PostgresCore, conn: psycopg.Connection[Any]) -> None:
    """After a write: the primary's WAL position, which a replica must have
    replayed before it serves this store's reads (read-your-writes)."""
    if core._replicas is not None:
        core._replicas.wrote(conn.execute(LSN_QUERY).fetchone()[0])  # type: ignore[index]


def setup_on(core: PostgresCore, conn: psycopg.Connection[Any]) -> None:
    """Create or migrate ``core``'s schema on ``conn`` and learn the server's
    ``vector`` type (both stores' sync setup)."""
    try:
        with conn.transaction():
            drive(core._setup_steps(), conn)
        note_written(core, conn)  # replicas serve reads once they have the schema
        info = TypeInfo.fetch(conn, "vector")
    except psycopg.Error as e:
        raise translate(e, "setup") from e
    assert info is not None
    core._dumper = dumper_for(info)
    core._info = info


def connect_error(e: psycopg.Error) -> StoreError:
    """The error for a server that cannot be reached at setup (both stores)."""
    return StoreError(
        f"cannot connect to PostgreSQL ({one_line(e)}); check the connection "
        "string: host (or socket directory), port, dbname, user and password",
        sqlstate=e.sqlstate,
    )


def _many(conn: psycopg.Connection[Any], many: Many) -> list[Any]:
    # Pipeline mode: every statement is sent before any result is read, one
    # round trip for all (psycopg syncs on the first fetch).
    with conn.pipeline() if len(many.steps) > 1 and PIPELINE else contextlib.nullcontext():
        curs = [conn.cursor() for _ in many.steps]
        for cur, step in zip(curs, many.steps, strict=True):
            cur.execute(step.sql, step.params, prepare=step.prepare)
        return [cur.fetchall() if s.fetch else None for cur, s in zip(curs, many.steps)]


class PostgresStore(PostgresCore):
    """LangGraph store on PostgreSQL + pgvector, with hybrid search and exact
    recall inside namespaces.

    Args:
        conn: a connection string (the store then owns a ``psycopg_pool``
            ``ConnectionPool``), a ``psycopg.Connection`` (used under a lock),
            or a ``ConnectionPool`` you own.
        index: LangGraph-style ``{"dims", "embed", "fields"}`` (see
            :class:`~langmem_ext.stores.IndexConfig`); without ``embed``, search
            is keyword-only (PostgreSQL full text).
        ttl: LangGraph ``TTLConfig``; expiry uses the server's clock.
        search_mode: default ``"hybrid"`` with an embedder, else ``"keyword"``.
        vector_index: :class:`VectorIndexConfig`: by default exact for small
            namespaces and an inverted file for large scopes, chosen per query.
            LangGraph's ``index["ann_index_config"]`` is accepted instead.
        pool_config: options for the owned pool (``min_size`` 1, ``max_size`` 10,
            ``timeout`` 30 s, ``kwargs``, any other ``psycopg_pool`` option).
        text_search_config: PostgreSQL text search configuration (``"english"``).
        pipeline: accepted for LangGraph compatibility; the independent
            statements of a batch are always sent in pipeline mode.
        replicas: connection string(s) of hot-standby replicas: batches that
            write nothing are read there, in turn, once the replica has
            replayed this store's own last write (read-your-writes, after
            every write path, imports included), and only while it is a
            standby in recovery holding this very store (checked); a replica
            that lags, is down, fails a check or is too slow leaves the read
            to the primary, with one logged warning. Not with a single
            ``psycopg.Connection``.
        replica_max_wait: seconds a read waits for a replica to replay this
            store's last write before reading from the primary (0.5).
        replica_timeout: the longest a read may take on a replica, connecting
            and waiting included, before the primary answers it (default
            ``replica_max_wait`` + 2 s); a replica that does not answer in
            time is left alone for 30 s, with a logged warning.
        partition_by_tenant: keep the items and their vectors in tables
            partitioned by tenant, one partition per tenant, chosen when the
            store is created. ``True`` or ``"create"``: a write for a new
            tenant creates its partition; ``"refuse"``: it is refused
            (``InvalidNamespaceError``, nothing written) until
            :meth:`add_tenant` creates it.
        tenant_key: which label of a namespace is its tenant, for
            ``partition_by_tenant``: ``"engine"`` (the default: the memory
            engine's layout, ``("tenant", <tenant>, ...)``; other namespaces
            are tenant ``"default"``), or a template such as ``("{tenant}",)``
            (the first label) or ``("org", "{tenant}")``. Kept by the store:
            opened later without it, the store uses its own.

    Examples:
        >>> with PostgresStore.from_conn_string(dsn) as store:  # doctest: +SKIP
        ...     store.put(("user", "u1"), "m1", {"content": "prefers dark mode"})
        ...     [r.key for r in store.search(("user",), query="dark mode")]
        ['m1']
    """

    def __init__(
        self,
        conn: str | psycopg.Connection[Any] | ConnectionPool[Any],
        *,
        index: IndexInput | None = None,
        ttl: TTLConfig | None = None,
        search_mode: SearchMode | None = None,
        vector_index: VectorIndexConfig | None = None,
        pool_config: PoolConfig | None = None,
        text_search_config: str = "english",
        pipeline: bool = False,
        replicas: str | Sequence[str] | None = None,
        replica_max_wait: float = 0.5,
        replica_timeout: float | None = None,
        partition_by_tenant: bool | PartitionMode = False,
        tenant_key: str | Sequence[str] | None = None,
    ) -> None:
        check_conn(conn, (str, psycopg.Connection, ConnectionPool))
        self._configure_partitions(partition_by_tenant, tenant_key)
        self._pool_config = pool_options(pool_config)
        self.pipeline = check_pipeline(pipeline)
        self._configure(index, ttl, search_mode, vector_index, text_search_config, _Cache(self))
        check_replica_conn(replicas, isinstance(conn, psycopg.Connection))
        self._configure_replicas(replicas, replica_max_wait, replica_timeout)
        self._replica_pools: dict[int, ConnectionPool[Any]] = {}
        self._conninfo = conn if isinstance(conn, str) else None
        self._conn = conn if isinstance(conn, psycopg.Connection) else None
        self._pool = conn if isinstance(conn, ConnectionPool) else None
        self._owns_pool = self._conninfo is not None
        self._lock = threading.RLock()
        self._info: TypeInfo | None = None
        self._dumper: type | None = None

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: PoolConfig | None = None,
        index: IndexInput | None = None,
        ttl: TTLConfig | None = None,
        **kwargs: Any,
    ) -> Iterator[PostgresStore]:
        """Open a store on a connection string, set it up, close it after.

        Takes LangGraph's ``PostgresStore.from_conn_string`` arguments as they
        are (``pipeline``, ``pool_config``, ``index``, ``ttl``) and this
        store's own (``search_mode``, ``vector_index``, ``text_search_config``).

        Examples:
            >>> with PostgresStore.from_conn_string("postgresql:///app") as s:  # doctest: +SKIP
            ...     s.put(("a",), "k", {"v": 1})
        """
        store = cls(
            conn_string, pipeline=pipeline, pool_config=pool_config, index=index, ttl=ttl, **kwargs
        )
        try:
            store.setup()
            yield store
        finally:
            store.close()

    # -- lifecycle ---------------------------------------------------------------

    def setup(self) -> None:
        """Create or migrate the schema (idempotent, safe from many processes at
        once); also called on first use.

        Raises:
            StoreError: the server cannot be reached (bad connection string), the
                ``vector`` extension is not installed or cannot be created.
            ConfigurationError: the database holds vectors of another dimension.
        """
        with self._lock:
            if self._info is not None:
                return
            if self._conninfo is not None:
                try:
                    conn = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10)
                except psycopg.Error as e:
                    raise connect_error(e) from e
                with conn:
                    self._setup_on(conn)
                self._open_pool()
            elif self._conn is not None:
                self._setup_on(self._conn)
            else:
                assert self._pool is not None
                with self._pool.connection() as conn:
                    self._setup_on(conn)

    def _setup_on(self, conn: psycopg.Connection[Any]) -> None:
        setup_on(self, conn)

    def _open_pool(self) -> None:
        pc = dict(self._pool_config)
        info, dumper = self._info, self._dumper

        def configure(conn: psycopg.Connection[Any]) -> None:
            adapt(conn, info, dumper)  # type: ignore[arg-type]

        self._pool = ConnectionPool(self._conninfo, configure=configure, open=False, **pc)  # type: ignore[arg-type]
        self._pool.open(wait=True, timeout=pc["timeout"])

    def close(self) -> None:
        """Stop the sweeper and close the pool the store owns (never a connection
        or pool you passed in)."""
        self.stop_ttl_sweeper()
        with self._lock:
            for pool in self._replica_pools.values():
                pool.close()
            self._replica_pools.clear()
            if self._owns_pool and self._pool is not None:
                self._pool.close()
                self._pool = None
                self._info = None

    def __enter__(self) -> PostgresStore:
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        self.setup()
        if self._conn is not None:
            with self._lock:
                adapt(self._conn, self._info, self._dumper)  # type: ignore[arg-type]
                yield self._conn
            return
        assert self._pool is not None
        with self._pool.connection() as conn:
            adapt(conn, self._info, self._dumper)  # type: ignore[arg-type]
            yield conn

    def _run(self, steps: Steps, where: str, write: bool = True, autocommit: bool = False) -> Any:
        """Run a conversation in one transaction (``autocommit``: each
        statement in its own); after a ``write``, note the primary's WAL
        position for the replicas' read-your-writes."""
        try:
            with self._connection() as conn:
                out = run_on(conn, steps, autocommit)
                if write:
                    note_written(self, conn)
                return out
        except psycopg.Error as e:
            raise self._failed(e, where) from e

    def _replica_pool(self, i: int) -> ConnectionPool[Any]:
        with self._lock:
            pool = self._replica_pools.get(i)
            if pool is None:
                assert self._replicas is not None
                pool = ConnectionPool(
                    self._replicas.conninfos[i], open=False, **replica_pool_options(self)
                )
                pool.open(wait=False)
                self._replica_pools[i] = pool
            return pool

    def _read_on_replica(self, make_steps: Callable[[], Steps]) -> Any:
        """The batch's result from a replica, or ``ON_PRIMARY`` when none can
        serve it now (lagging, down, failing a check, too slow: see
        ``_replicas``); never longer than ``replica_timeout``."""
        routing = self._replicas
        assert routing is not None
        self.setup()  # what a replica must match, and the last write, are learnt there
        i = routing.choose()
        if i is None:
            return ON_PRIMARY
        deadline = time.monotonic() + routing.timeout_s
        alarm = None
        try:
            with self._replica_pool(i).connection(timeout=routing.timeout_s) as conn:
                alarm = WATCHDOG.arm(conn.pgconn.socket, deadline)
                try:
                    adapt(conn, self._info, self._dumper)  # type: ignore[arg-type]
                    with conn.transaction():
                        return drive(self._replica_steps(i, make_steps), conn)
                finally:
                    alarm.disarm()  # before the connection goes back to the pool
        except (psycopg.Error, PoolTimeout) as e:
            late = (alarm is not None and alarm.fired) or time.monotonic() >= deadline
            return routing.failed(i, e, timed_out=late)

    # -- batch -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations as LangGraph's stores do (reads, then writes; the last
        put to a key wins), all in one transaction.

        Raises:
            StoreError: the connection dropped or the server failed; nothing of
                the batch was applied.
        """
        return self._batch(ops, again=True)

    def _batch(self, ops: Iterable[Op], again: bool) -> list[Result]:
        plan = self._plan(ops)
        vecs = self._embed_sync(plan)
        if self._replica_readable(plan):
            out = self._read_on_replica(lambda: self._batch_steps(plan, *vecs))
            if out is not ON_PRIMARY:
                return out
        self._ensure_tenants(self._write_prefixes(plan))
        try:
            return self._run(self._batch_steps(plan, *vecs), "a batch", self._notes_writes(plan))
        except InvalidValueError:
            # Embedded with the old embedder, run just after reindex's switch
            # committed: once this object uses the new one, run it again.
            switch = self._switch
            if not again or not isinstance(ops, Sequence) or switch is None:
                raise
            if not switch.wait(60):
                raise
            return self._batch(ops, again=False)

    def _ensure_tenants(self, prefixes: list[str]) -> None:
        """The partitions a write needs, created before its transaction (see
        ``_tenants``), or the write refused."""
        if not prefixes:
            return
        self.setup()  # the store's partitioning is learnt there
        wanted = self._tenants_wanted(prefixes)
        if wanted:
            self._run(self._tenant_steps(wanted), "creating a tenant's partition", autocommit=True)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs :meth:`batch` in a worker thread; prefer :class:`AsyncPostgresStore`
        in async code."""
        import asyncio

        return await asyncio.to_thread(self.batch, ops)

    # -- TTL ---------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete expired items now (with their vectors); returns how many."""
        return int(self._run(self._sweep_steps(), "the TTL sweep"))

    # -- changing the embedder ----------------------------------------------------

    def reindex(
        self,
        index: Any = None,
        *,
        batch_size: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Switch the store to the embedder of ``index`` while it serves (see
        :meth:`SQLiteStore.reindex <langmem_ext.SQLiteStore.reindex>` and
        :mod:`._reindex`): new vectors beside the old ones in batches,
        searches on the old ones until one atomic switch, writes through this
        store object embedded in both, resumable after a failure. Without
        ``index``, embeds the items stored before the store had an embedder.
        Other processes must reopen the store with the new ``index`` after
        the switch. Returns ``{"embedded", "vectors", "dims"}``.

        Examples:
            >>> store.reindex({"embed": "local", "fields": ["content"]})  # doctest: +SKIP
            {'embedded': 1000, 'vectors': 1000, 'dims': 384}
        """
        job = self._reindex_job(index, batch_size, progress)
        out: Any = None
        error: BaseException | None = None
        while True:
            try:
                request = job.send(out) if error is None else job.throw(error)
            except StopIteration as stop:
                return dict(stop.value)
            out, error = None, None
            try:
                if isinstance(request, _reindex.Embed):
                    out = request.embeddings.embed_documents_array(request.texts)
                else:
                    out = self._run(*request)
            except BaseException as e:  # into the job: its cleanup runs, then it re-raises
                error = e

    # -- erasure -----------------------------------------------------------------

    def purge(
        self,
        prefixes: Sequence[tuple[str, ...]] = (),
        keys: Sequence[tuple[tuple[str, ...], str]] = (),
        *,
        puts: Sequence[PutOp] = (),
        dry_run: bool = False,
        rewrite: bool = True,
    ) -> PurgeReport:
        """Erase for good: every item in each namespace of ``prefixes`` and
        below it and the items ``keys`` names, with their vectors, the
        embedding-cache entries of their texts and every cached query, then
        ``puts`` (a record of the erasure), in one transaction; then a vacuum
        of the touched tables and a rebuild of the keyword and vector indexes
        (see :mod:`._purge`; an erase run again after a crash finishes it).
        ``dry_run`` counts without changing anything. ``rewrite=False`` skips
        the table rewrite (``VACUUM FULL``, which locks each table while it is
        copied): nothing is locked, but the freed bytes stay in the files
        until new rows overwrite them.

        Examples:
            >>> store.put(("user", "ada"), "m1", {"text": "allergic to peanuts"})  # doctest: +SKIP
            >>> store.purge([("user", "ada")]).namespaces  # doctest: +SKIP
            {('user', 'ada'): 1}
        """
        prepared: list[Any] = []
        doc_vecs = None
        if puts:
            plan = self._plan(list(puts))
            prepared = list(plan.puts)
            doc_vecs, _ = self._embed_sync(plan)
        steps = self._purge_steps(list(prefixes), list(keys), prepared, doc_vecs, dry_run)
        report: PurgeReport = self._run(steps, "an erase", write=not dry_run)
        if dry_run:
            return report
        self._run(_purge.scrub_steps(rewrite), "an erase's vacuum", autocommit=True)
        return report._replace(scrubbed=True)

    async def apurge(
        self,
        prefixes: Sequence[tuple[str, ...]] = (),
        keys: Sequence[tuple[tuple[str, ...], str]] = (),
        *,
        puts: Sequence[PutOp] = (),
        dry_run: bool = False,
        rewrite: bool = True,
    ) -> PurgeReport:
        """Async :meth:`purge` (in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(
            self.purge, prefixes, keys, puts=puts, dry_run=dry_run, rewrite=rewrite
        )

    # -- tenants -----------------------------------------------------------------

    def add_tenant(self, tenant: str) -> None:
        """Create the partition of ``tenant`` (a namespace's first label) in a
        store partitioned by tenant; nothing changes when it exists.

        Examples:
            >>> store = PostgresStore(dsn, partition_by_tenant="refuse")  # doctest: +SKIP
            >>> store.add_tenant("acme")  # doctest: +SKIP
            >>> store.put(("acme", "ada"), "m1", {"text": "likes tea"})  # doctest: +SKIP
        """
        self._run(self._add_tenant_steps(tenant), "creating a tenant's partition")

    def drop_tenant(self, tenant: str) -> None:
        """Delete everything of ``tenant`` (its items and their vectors, i.e.
        its two partitions) in a store partitioned by tenant; nothing changes
        when it has none. Other tenants' reads and writes go on meanwhile (the
        partitions are detached ``CONCURRENTLY``: it waits for transactions
        already running). A later write for the tenant starts it again, empty
        (with ``partition_by_tenant=True``).

        Examples:
            >>> store.drop_tenant("acme")  # doctest: +SKIP
        """
        self._run(self._remove_tenant_steps(tenant, keep=False), "dropping a tenant", True, True)

    def detach_tenant(self, tenant: str) -> tuple[str, str] | None:
        """Take ``tenant`` out of the store but keep its data: its items and
        vectors become two tables of their own, ``lmx_detached_items_…`` and
        ``lmx_detached_vectors_…`` (returned, in that order; ``None`` when it
        has no partition), to back up, move or drop. Otherwise as
        :meth:`drop_tenant`.

        Examples:
            >>> store.detach_tenant("acme")  # doctest: +SKIP
            ('lmx_detached_items_…', 'lmx_detached_vectors_…')
        """
        return self._run(
            self._remove_tenant_steps(tenant, keep=True), "detaching a tenant", True, True
        )

    # -- export/import (see stores.transfer) ------------------------------------

    def transfer_page(
        self, namespace_prefix: tuple[str, ...], after: tuple[str, str] | None, limit: int
    ) -> list[tuple[tuple[str, str], dict[str, Any]]]:
        steps = _transfer.page_steps(namespace_prefix, after, limit)
        return self._run(steps, "an export", write=False)

    def bulk_import(self) -> _transfer.BulkImport:
        return _transfer.BulkImport(self, self._connection, drive, self._run)


class _Cache:
    """Persistent embedding cache in the ``lmx_embedding_cache`` table."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def get_many(self, keys: Sequence[tuple[str, str, bytes]]) -> dict:
        steps = self._store._cache_get_steps(keys)
        return self._store._run(steps, "an embedding cache read", write=False)

    def put_many(self, entries: dict[tuple[str, str, bytes], np.ndarray]) -> None:
        # No replica reads the cache: nothing to note for read-your-writes.
        steps = self._store._cache_put_steps(entries)
        self._store._run(steps, "an embedding cache write", write=False)


PostgresStore.__module__ = "langmem_ext"
