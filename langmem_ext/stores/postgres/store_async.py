"""AsyncPostgresStore: the asyncio shell over the same conversations as
:class:`PostgresStore` (see :mod:`._core`); real async I/O, no worker threads
for the database, and concurrent calls merged into shared batches
(:mod:`._merge`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import numpy as np
import psycopg
from langgraph.store.base import Op, PutOp, Result, TTLConfig
from psycopg.types import TypeInfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from ...errors import InvalidStateError, InvalidValueError
from .._async_ttl import AsyncTTLSweeper
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
from ._deadline import arm_async
from ._errors import translate
from ._merge import CallMerger, dedupe_reads, spread
from ._tenants import PartitionMode
from .store import PIPELINE, PoolConfig, connect_error, drive, note_written, run_on, setup_on

__all__ = ["AsyncPostgresStore"]

logger = logging.getLogger(__name__)


async def adrive(steps: Steps, conn: psycopg.AsyncConnection[Any]) -> Any:
    """Async twin of :func:`~.store.drive`."""
    async with conn.cursor() as cur:
        try:
            step = next(steps)
            while True:
                if isinstance(step, Copy):
                    async with cur.copy(step.sql) as cp:
                        cp.set_types(step.types)
                        for row in step.rows:
                            await cp.write_row(row)
                    out: Any = None
                elif isinstance(step, Many):
                    out = await _amany(conn, step)
                else:
                    await cur.execute(step.sql, step.params, prepare=step.prepare)
                    out = await cur.fetchall() if step.fetch else None
                step = steps.send(out)
        except StopIteration as stop:
            return stop.value


async def _amany(conn: psycopg.AsyncConnection[Any], many: Many) -> list[Any]:
    pipe = conn.pipeline() if len(many.steps) > 1 and PIPELINE else contextlib.nullcontext()
    async with pipe:
        curs = [conn.cursor() for _ in many.steps]
        for cur, step in zip(curs, many.steps, strict=True):
            await cur.execute(step.sql, step.params, prepare=step.prepare)
        return [await cur.fetchall() if s.fetch else None for cur, s in zip(curs, many.steps)]


class AsyncPostgresStore(AsyncTTLSweeper, PostgresCore):  # type: ignore[misc]
    """Async :class:`~langmem_ext.PostgresStore`: same arguments, but ``conn`` is a
    connection string (an owned ``AsyncConnectionPool``), a
    ``psycopg.AsyncConnection`` or an ``AsyncConnectionPool``.

    Concurrent calls (``aget``, ``aput``, ``asearch``… from many tasks) are
    merged into shared batches, at most ``max_batches`` transactions at a time
    (see :mod:`langmem_ext.stores.postgres._merge`), so thousands of concurrent
    calls need a handful of connections. LangGraph's call shapes work as they
    are: ``await store.setup()``, ``async with AsyncPostgresStore.from_conn_string(...)``,
    ``await store.start_ttl_sweeper()``.

    Sync methods (``get``, ``put``, ``search``…) run the same conversations on
    a small sync pool of their own (needs a connection string or a pool), from
    any thread. The persistent embedding cache uses that sync side too (the
    embedder's cache interface is synchronous); with a bare ``AsyncConnection``
    the cache stays in memory.

    Examples:
        >>> async with AsyncPostgresStore.from_conn_string(dsn) as store:  # doctest: +SKIP
        ...     await store.aput(("user", "u1"), "m1", {"content": "likes tea"})
        ...     [r.key for r in await store.asearch(("user",), query="tea")]
        ['m1']
    """

    def __init__(
        self,
        conn: str | psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any],
        *,
        index: IndexInput | None = None,
        ttl: TTLConfig | None = None,
        search_mode: SearchMode | None = None,
        vector_index: VectorIndexConfig | None = None,
        pool_config: PoolConfig | None = None,
        text_search_config: str = "english",
        pipeline: bool = False,
        max_batches: int | None = None,
        replicas: str | Sequence[str] | None = None,
        replica_max_wait: float = 0.5,
        replica_timeout: float | None = None,
        partition_by_tenant: bool | PartitionMode = False,
        tenant_key: str | Sequence[str] | None = None,
    ) -> None:
        check_conn(conn, (str, psycopg.AsyncConnection, AsyncConnectionPool))
        self._configure_partitions(partition_by_tenant, tenant_key)
        check_replica_conn(replicas, isinstance(conn, psycopg.AsyncConnection))
        self._configure_replicas(replicas, replica_max_wait, replica_timeout)
        self._replica_pools: dict[int, AsyncConnectionPool[Any]] = {}
        self._pool_config = pool_options(pool_config)
        self.pipeline = check_pipeline(pipeline)
        self._conninfo = conn if isinstance(conn, str) else None
        self._conn = conn if isinstance(conn, psycopg.AsyncConnection) else None
        self._pool = conn if isinstance(conn, AsyncConnectionPool) else None
        pool_dsn = self._pool.conninfo if self._pool is not None else None
        cache_dsn = self._conninfo or (pool_dsn if isinstance(pool_dsn, str) else None)
        self._sync = _SyncSide(self, cache_dsn)
        self._configure(index, ttl, search_mode, vector_index, text_search_config, self._sync)
        self._owns_pool = self._conninfo is not None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._info: TypeInfo | None = None
        self._dumper: type | None = None
        if self._conn is not None:
            slots = 1
        elif self._pool is not None:
            slots = max(1, min(2, self._pool.max_size))
        else:
            slots = max(1, min(2, self._pool_config["max_size"]))
        self._merger = CallMerger(self._abatch_now, max_batches=max_batches or slots)
        self._sweep_task: asyncio.Task[None] | None = None
        self._sweep_event: asyncio.Event | None = None

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: PoolConfig | None = None,
        index: IndexInput | None = None,
        ttl: TTLConfig | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AsyncPostgresStore]:
        """Open a store on a connection string, set it up, close it after
        (LangGraph's ``AsyncPostgresStore.from_conn_string`` arguments as they
        are, plus this store's own).

        Examples:
            >>> async with AsyncPostgresStore.from_conn_string(dsn) as store:  # doctest: +SKIP
            ...     await store.aput(("a",), "k", {"v": 1})
        """
        store = cls(
            conn_string, pipeline=pipeline, pool_config=pool_config, index=index, ttl=ttl, **kwargs
        )
        try:
            await store.setup()
            yield store
        finally:
            await store.aclose()

    # -- lifecycle ---------------------------------------------------------------

    async def setup(self) -> None:
        """Create or migrate the schema; see :meth:`PostgresStore.setup
        <langmem_ext.PostgresStore.setup>` (same errors). Awaitable, as in
        LangGraph's ``AsyncPostgresStore``; also run on first use."""
        await self.asetup()

    async def asetup(self) -> None:
        """Same as :meth:`setup`."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._info is not None and (self._pool is not None or not self._owns_pool):
                return
            if self._info is not None:
                pass  # set up through the sync side; only the pool is missing
            elif self._conninfo is not None:
                try:
                    conn = await psycopg.AsyncConnection.connect(
                        self._conninfo, autocommit=True, connect_timeout=10
                    )
                except psycopg.Error as e:
                    raise connect_error(e) from e
                async with conn:
                    await self._setup_on(conn)
            elif self._conn is not None:
                await self._setup_on(self._conn)
            else:
                assert self._pool is not None
                async with self._pool.connection() as conn:
                    await self._setup_on(conn)
            if self._owns_pool and self._pool is None:
                await self._open_pool()
            self._loop = asyncio.get_running_loop()

    async def _setup_on(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            async with conn.transaction():
                await adrive(self._setup_steps(), conn)
            await self._note_written(conn)
            info = await TypeInfo.fetch(conn, "vector")
        except psycopg.Error as e:
            raise translate(e, "setup") from e
        assert info is not None
        self._dumper = dumper_for(info)
        self._info = info

    async def _open_pool(self) -> None:
        pc = dict(self._pool_config)
        info, dumper = self._info, self._dumper

        async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
            adapt(conn, info, dumper)  # type: ignore[arg-type]

        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._conninfo,  # type: ignore[arg-type]
            configure=configure,
            open=False,
            **pc,
        )
        await pool.open(wait=True, timeout=pc["timeout"])
        self._pool = pool

    async def aclose(self) -> None:
        """Stop the sweeper, close the owned pool and the sync side."""
        await self.stop_ttl_sweeper()
        for replica in self._replica_pools.values():
            await replica.close()
        self._replica_pools.clear()
        if self._owns_pool and self._pool is not None:
            await self._pool.close()
            self._pool = None
            self._info = None
        self._sync.close()

    def close(self) -> None:
        """Close from sync code (e.g. a test teardown) when the loop that opened
        the pool is not running; inside a running loop use ``await aclose()``."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and not loop.is_running():
            loop.run_until_complete(self.aclose())
            return
        if loop is not None and loop.is_running():
            raise InvalidStateError(
                "AsyncPostgresStore.close() inside its event loop; use aclose()"
            )
        # The loop is gone: its tasks cannot run again, so just drop the sockets.
        pool = self._pool if self._owns_pool else None
        if pool is not None:
            for c in list(getattr(pool, "_pool", ())):
                with contextlib.suppress(Exception):
                    c.pgconn.finish()
            self._pool = None
            self._info = None
        self._sync.close()

    async def __aenter__(self) -> AsyncPostgresStore:
        await self.asetup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        await self.asetup()
        assert self._lock is not None
        if self._conn is not None:
            async with self._lock:
                adapt(self._conn, self._info, self._dumper)  # type: ignore[arg-type]
                yield self._conn
            return
        assert self._pool is not None
        async with self._pool.connection() as conn:
            adapt(conn, self._info, self._dumper)  # type: ignore[arg-type]
            yield conn

    async def _run(
        self, steps: Steps, where: str, write: bool = True, autocommit: bool = False
    ) -> Any:
        """See :meth:`PostgresStore._run <langmem_ext.PostgresStore._run>`."""
        try:
            async with self._connection() as conn:
                if not autocommit:
                    async with conn.transaction():
                        out = await adrive(steps, conn)
                elif conn.autocommit:
                    out = await adrive(steps, conn)
                else:
                    await conn.set_autocommit(True)  # a connection you passed in
                    try:
                        out = await adrive(steps, conn)
                    finally:
                        await conn.set_autocommit(False)
                if write:
                    await self._note_written(conn)
                return out
        except psycopg.Error as e:
            raise self._failed(e, where) from e

    async def _note_written(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """See :func:`~.store.note_written`."""
        if self._replicas is not None:
            row = await (await conn.execute(LSN_QUERY)).fetchone()
            self._replicas.wrote(row[0])  # type: ignore[index]

    async def _replica_pool(self, i: int) -> AsyncConnectionPool[Any]:
        pool = self._replica_pools.get(i)
        if pool is None:
            assert self._replicas is not None
            pool = AsyncConnectionPool(
                self._replicas.conninfos[i], open=False, **replica_pool_options(self)
            )
            await pool.open(wait=False)
            self._replica_pools[i] = pool
        return pool

    async def _read_on_replica(self, make_steps: Callable[[], Steps]) -> Any:
        """See :meth:`PostgresStore._read_on_replica`."""
        routing = self._replicas
        assert routing is not None
        await self.asetup()
        i = routing.choose()
        if i is None:
            return ON_PRIMARY
        deadline = time.monotonic() + routing.timeout_s
        alarm = None
        try:
            pool = await self._replica_pool(i)
            async with pool.connection(timeout=routing.timeout_s) as conn:
                alarm, timer = arm_async(conn.pgconn.socket, deadline)
                try:
                    adapt(conn, self._info, self._dumper)  # type: ignore[arg-type]
                    async with conn.transaction():
                        return await adrive(self._replica_steps(i, make_steps), conn)
                finally:
                    timer.cancel()
                    alarm.disarm()
        except (psycopg.Error, PoolTimeout) as e:
            late = (alarm is not None and alarm.fired) or time.monotonic() >= deadline
            return routing.failed(i, e, timed_out=late)

    # -- batch -------------------------------------------------------------------

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`PostgresStore.batch <langmem_ext.PostgresStore.batch>`:
        one transaction, shared with the calls made concurrently (see the class
        docs); embeddings use the embedder's async methods."""
        if not isinstance(ops, Iterable) or isinstance(ops, str | bytes | Mapping):
            raise InvalidValueError(
                f"abatch() needs a list of operations, got {type(ops).__name__}"
            )
        return await self._merger.submit(list(ops))

    async def _abatch_now(self, ops: list[Op], again: bool = True) -> list[Result]:
        unique, where = dedupe_reads(ops)
        plan = self._plan(unique)
        doc_vecs, qvecs = await self._embed_async(plan)
        if self._replica_readable(plan):
            results = await self._read_on_replica(lambda: self._batch_steps(plan, doc_vecs, qvecs))
            if results is not ON_PRIMARY:
                return spread(results, where)
        prefixes = self._write_prefixes(plan)
        if prefixes:  # the partitions it needs, before its transaction (see _tenants)
            await self.asetup()
            wanted = self._tenants_wanted(prefixes)
            if wanted:
                await self._run(self._tenant_steps(wanted), _CREATING, autocommit=True)
        steps = self._batch_steps(plan, doc_vecs, qvecs)
        try:
            results = await self._run(steps, "a batch", self._notes_writes(plan))
        except InvalidValueError:
            # Embedded with the old embedder, run just after reindex's switch
            # committed: once this object uses the new one, run it again.
            switch = self._switch
            if not again or switch is None:
                raise
            if not await asyncio.to_thread(switch.wait, 60):
                raise
            return await self._abatch_now(ops, again=False)
        return spread(results, where)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Sync :meth:`abatch` for code that is not async (the same engine on a
        small sync pool); works from any thread. Needs a connection string or
        an ``AsyncConnectionPool``."""
        plan = self._plan(ops)
        vecs = self._embed_sync(plan)
        self._sync.ensure_tenants(self._write_prefixes(plan))
        steps = self._batch_steps(plan, *vecs)
        return self._sync.run(steps, "a batch", self._notes_writes(plan))

    # -- export/import (see stores.transfer), on the sync side ----------------------

    def transfer_page(
        self, namespace_prefix: tuple[str, ...], after: tuple[str, str] | None, limit: int
    ) -> list[tuple[tuple[str, str], dict[str, Any]]]:
        steps = _transfer.page_steps(namespace_prefix, after, limit)
        return self._sync.run(steps, "an export", write=False)

    def bulk_import(self) -> _transfer.BulkImport:
        return _transfer.BulkImport(self, self._sync.connection, drive, self._sync.run)

    # -- TTL ---------------------------------------------------------------------

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete expired items now; returns how many (awaitable, as in LangGraph)."""
        return int(await self._run(self._sweep_steps(), "the TTL sweep"))

    asweep_ttl = sweep_ttl

    # -- changing the embedder ----------------------------------------------------

    async def reindex(
        self,
        index: Any = None,
        *,
        batch_size: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """See :meth:`PostgresStore.reindex <langmem_ext.PostgresStore.reindex>`
        (awaitable): the same rebuild, its transactions on the async pool and
        the new embedder's async methods; the store serves other tasks'
        searches and writes meanwhile.

        Examples:
            >>> await store.reindex({"embed": "local", "fields": ["content"]})  # doctest: +SKIP
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
                    out = await request.embeddings.aembed_documents_array(request.texts)
                else:
                    out = await self._run(*request)
            except BaseException as e:  # into the job: its cleanup runs, then it re-raises
                error = e

    areindex = reindex

    # -- erasure -----------------------------------------------------------------

    async def purge(
        self,
        prefixes: Sequence[tuple[str, ...]] = (),
        keys: Sequence[tuple[tuple[str, ...], str]] = (),
        *,
        puts: Sequence[PutOp] = (),
        dry_run: bool = False,
        rewrite: bool = True,
    ) -> PurgeReport:
        """See :meth:`PostgresStore.purge <langmem_ext.PostgresStore.purge>` (awaitable)."""
        prepared: list[Any] = []
        doc_vecs = None
        if puts:
            plan = self._plan(list(puts))
            prepared = list(plan.puts)
            doc_vecs, _ = await self._embed_async(plan)
        steps = self._purge_steps(list(prefixes), list(keys), prepared, doc_vecs, dry_run)
        report: PurgeReport = await self._run(steps, "an erase", write=not dry_run)
        if dry_run:
            return report
        await self._run(_purge.scrub_steps(rewrite), "an erase's vacuum", autocommit=True)
        return report._replace(scrubbed=True)

    apurge = purge

    # -- tenants -----------------------------------------------------------------

    async def aadd_tenant(self, tenant: str) -> None:
        """Create the partition of ``tenant`` in a store partitioned by tenant
        (see :meth:`PostgresStore.add_tenant`); nothing changes when it exists.

        Examples:
            >>> await store.aadd_tenant("acme")  # doctest: +SKIP
        """
        await self._run(self._add_tenant_steps(tenant), _CREATING)

    def add_tenant(self, tenant: str) -> None:
        """:meth:`aadd_tenant` from sync code (the store's sync side)."""
        self._sync.run(self._add_tenant_steps(tenant), _CREATING)

    async def adrop_tenant(self, tenant: str) -> None:
        """Delete everything of ``tenant``; see :meth:`PostgresStore.drop_tenant
        <langmem_ext.PostgresStore.drop_tenant>`.

        Examples:
            >>> await store.adrop_tenant("acme")  # doctest: +SKIP
        """
        steps = self._remove_tenant_steps(tenant, keep=False)
        await self._run(steps, "dropping a tenant", autocommit=True)

    async def adetach_tenant(self, tenant: str) -> tuple[str, str] | None:
        """Take ``tenant`` out of the store, keeping its two tables; see
        :meth:`PostgresStore.detach_tenant <langmem_ext.PostgresStore.detach_tenant>`.

        Examples:
            >>> await store.adetach_tenant("acme")  # doctest: +SKIP
            ('lmx_detached_items_…', 'lmx_detached_vectors_…')
        """
        steps = self._remove_tenant_steps(tenant, keep=True)
        return await self._run(steps, "detaching a tenant", autocommit=True)

    def drop_tenant(self, tenant: str) -> None:
        """:meth:`adrop_tenant` from sync code (the store's sync side)."""
        steps = self._remove_tenant_steps(tenant, keep=False)
        self._sync.run(steps, "dropping a tenant", autocommit=True)

    def detach_tenant(self, tenant: str) -> tuple[str, str] | None:
        """:meth:`adetach_tenant` from sync code (the store's sync side)."""
        steps = self._remove_tenant_steps(tenant, keep=True)
        return self._sync.run(steps, "detaching a tenant", autocommit=True)


_CREATING = "creating a tenant's partition"


class _SyncSide:
    """The async store's sync face: sync calls and the embedding cache (which
    the embedder calls from a worker thread) run the same conversations on one
    small sync pool of their own."""

    def __init__(self, store: AsyncPostgresStore, dsn: str | None) -> None:
        self._store = store
        self.dsn = dsn
        self._pool: ConnectionPool[Any] | None = None

    def _conn_pool(self) -> ConnectionPool[Any] | None:
        if self.dsn is None or self._store._info is None:
            return None
        if self._pool is None:
            self._pool = ConnectionPool(
                self.dsn, min_size=0, max_size=2, kwargs={"autocommit": True}, open=True
            )
        return self._pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled sync connection, set up and adapted (autocommit)."""
        if self._store._info is None and self.dsn is not None:
            # setup through a sync connection, same generator as asetup
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                setup_on(self._store, conn)
        pool = self._conn_pool()
        if pool is None:
            raise InvalidStateError(
                "this AsyncPostgresStore was given a bare AsyncConnection, so it has no "
                "sync methods; await the a-prefixed ones (abatch, aget, asearch...)"
            )
        with pool.connection() as conn:
            adapt(conn, self._store._info, self._store._dumper)  # type: ignore[arg-type]
            yield conn

    def run(self, steps: Steps, where: str, write: bool = True, autocommit: bool = False) -> Any:
        """See :meth:`PostgresStore._run <langmem_ext.PostgresStore._run>`."""
        try:
            with self.connection() as conn:
                out = run_on(conn, steps, autocommit)
                if write:
                    note_written(self._store, conn)
                return out
        except psycopg.Error as e:
            raise self._store._failed(e, where) from e

    def ensure_tenants(self, prefixes: list[str]) -> None:
        """See :meth:`PostgresStore._ensure_tenants`."""
        if not prefixes:
            return
        if self._store._info is None:
            with self.connection():
                pass  # sets the store up: its partitioning is learnt there
        wanted = self._store._tenants_wanted(prefixes)
        if wanted:
            self.run(self._store._tenant_steps(wanted), _CREATING, autocommit=True)

    def get_many(self, keys: Sequence[tuple[str, str, bytes]]) -> dict:
        if self._conn_pool() is None:
            return {}
        return self.run(self._store._cache_get_steps(keys), "an embedding cache read", False)

    def put_many(self, entries: dict[tuple[str, str, bytes], np.ndarray]) -> None:
        if self._conn_pool() is not None:
            self.run(self._store._cache_put_steps(entries), "an embedding cache write", False)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


AsyncPostgresStore.__module__ = "langmem_ext"
