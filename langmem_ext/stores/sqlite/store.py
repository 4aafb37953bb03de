"""SQLiteStore: the embedded default LangGraph ``BaseStore`` (one SQLite file)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    TTLConfig,
)

from ...errors import ConfigurationError, InvalidValueError, StoreError
from .. import _cells
from .._base import BatchPlan, HybridStore, PurgeReport, UnembeddedItemsWarning, langgraph_index
from .._ops import (
    HybridSearchOp,
    PreparedPut,
    SearchMode,
    check_count,
    iso_now,
)
from .._vector_index import VectorIndex
from ..embeddings import IndexInput, resolve_index
from ..rerankers import reranker_from
from . import _exec, _purge, _reindex, _transfer, _vectors
from ._sql import sql_json_equal
from .schema import migrate, register_functions

__all__ = ["SQLiteStore"]

T = TypeVar("T")
logger = logging.getLogger("langmem_ext.stores.sqlite")


class SQLiteStore(HybridStore):
    """LangGraph store in one SQLite file, with hybrid (vector + keyword) search.

    Sync (``get``, ``put``, ``search``, ``batch``…) and async (``aget``, ``aput``,
    ``asearch``, ``abatch``…) share one implementation. Safe for several threads
    and several processes on one file (WAL mode, one transaction per batch).
    Vector search is exact (numpy over an in-memory cache of the vectors), so it
    needs no SQLite extension.

    Args:
        path: database file, or ``":memory:"``. Parent directories must exist.
            Or, as LangGraph's ``SqliteStore(conn)``, an open
            ``sqlite3.Connection``: the store then works through it (and leaves
            it open when closed); its journal mode and ``synchronous`` setting
            stay the connection's. A connection made with Python's default
            ``check_same_thread=True`` is used only from the thread that made it:
            async calls then run on the event loop's thread and the TTL sweeper
            thread is refused; open it with ``check_same_thread=False`` for both.
        index: LangGraph-style index config: ``{"dims", "embed", "fields"}``;
            ``embed`` may be ``"local"`` (offline default), a LangChain
            ``Embeddings``, a function, or ``"provider:model"``. Extra keys:
            ``vector_weight`` (hybrid fusion weight, 0.5) and ``cache`` (cache
            embeddings in the file, True). Without ``embed``, search is keyword-only.
        ttl: LangGraph ``TTLConfig`` (``default_ttl`` and ``sweep_interval_minutes``
            in minutes, ``refresh_on_read``); expired items are never returned.
        search_mode: default ranking for queries: ``"hybrid"`` (default with an
            embedder), ``"vector"`` (plain cosine, like LangGraph) or ``"keyword"``.
        synchronous: SQLite ``synchronous`` pragma. ``"NORMAL"`` (default) never
            loses a committed transaction when the process crashes; ``"FULL"``
            also survives power loss, at one fsync per commit.
        timeout: seconds to wait for another process's write lock.
        vector_index: ``{"kind": "exact"}`` (the default: every vector search
            exact) or, opt-in, approximate search by coarse cells:
            ``{"kind": "cells", "lists": 1024, "probes": 8, "min_rows": 50000}``
            (each segment of at least ``min_rows`` rows is split in ``lists``
            cells; a search reads the ``probes`` cells nearest the query and
            re-ranks them exactly; smaller scopes are scanned whole, exactly).
            The file records the ``lists`` its cells were built with; opening
            it with another setting is refused with how to rebuild
            (:meth:`rebuild_vector_index`). ``probes`` may change at any open.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> with SQLiteStore(":memory:") as store:
        ...     store.put(("user", "u1"), "m1", {"content": "prefers dark mode"})
        ...     [r.key for r in store.search(("user",), query="dark mode")]
        ['m1']
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | sqlite3.Connection = ":memory:",
        *,
        index: IndexInput | None = None,
        ttl: TTLConfig | None = None,
        search_mode: SearchMode | None = None,
        synchronous: str = "NORMAL",
        timeout: float = 30.0,
        vector_index: dict[str, Any] | None = None,
    ) -> None:
        #: The caller's connection, when the store was given one (never closed here).
        self._given: sqlite3.Connection | None = None
        #: Whether that connection may only be used from the thread that made it.
        self._thread_bound = False
        if isinstance(path, sqlite3.Connection):
            self._given = path
            self._thread_bound = _bound_to_its_thread(path)
            self.path = _database_file(path)
        else:
            self.path = _path_of(path, type(self).__name__)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._configure_search(index, ttl, search_mode, _CacheBackend(self))
        dims = self._index.dims if self._index is not None else None
        self._vectors = VectorIndex(dims) if self.embeddings and dims else None
        self._segdir = _vectors.segment_dir(self.path)
        # Vector segments by file name, mapped once (":memory:" stores keep theirs here).
        self._segments: dict[str, Any] = {}
        self._rebuilt: Any = None
        # The index being built by reindex(), while it runs.
        self._next: Any = None
        self.synchronous = synchronous.upper()
        if self.synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ConfigurationError(
                f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}"
            )
        self.timeout = timeout
        self._cells_asked = _cells.cells_setting(vector_index)
        self._cells_given = vector_index is not None
        self._cells_settled = False
        self._cells_record: str | None = None

    @staticmethod
    def rebuild_vector_index(
        path: str | os.PathLike[str], vector_index: dict[str, Any] | None
    ) -> None:
        """Make a closed store's file searchable with another ``vector_index``
        setting: records it and drops the cells built for the old one (the
        new cells are built by the first searches that need them).

        Examples:
            >>> import tempfile, pathlib
            >>> db = pathlib.Path(tempfile.mkdtemp()) / "m.db"
            >>> with SQLiteStore(db) as store:
            ...     store.put(("docs",), "a", {"text": "hello"})
            >>> SQLiteStore.rebuild_vector_index(db, {"kind": "cells", "lists": 256})
            >>> SQLiteStore(db, vector_index={"kind": "cells", "lists": 256}).close()
        """
        setting = _cells.cells_setting(vector_index)
        db = os.fspath(path)
        if not os.path.exists(db):
            raise InvalidValueError(
                f"no database at {db!r}: give the path of the store's file to rebuild"
            )
        conn = sqlite3.connect(db, timeout=30.0)
        try:
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('vector_index', ?)",
                    [json.dumps(setting or {"kind": "exact"})],
                )
        finally:
            conn.close()
        segdir = _vectors.segment_dir(db)
        if segdir is not None and segdir.exists():
            for p in segdir.glob("*.cells*.npz"):
                p.unlink(missing_ok=True)

    # -- lifecycle ---------------------------------------------------------------

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator[SQLiteStore]:
        """Open a store on a file path (LangGraph's constructor shape).

        Examples:
            >>> with SQLiteStore.from_conn_string(":memory:") as store:
            ...     store.put(("a",), "k", {"v": 1})
        """
        store = cls(conn_string, **kwargs)
        try:
            store.setup()
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """Create or migrate the schema. Idempotent; called on first use anyway.

        Raises:
            StoreError: the file is not a SQLite database, is corrupt, or cannot
                be written (read-only file or directory).
        """
        with self._lock:
            self._connect()

    async def asetup(self) -> None:
        """Async :meth:`setup`."""
        await self._off_loop(self.setup)

    def close(self) -> None:
        """Stop the TTL sweeper and close the connection. The store can be reopened
        by using it again."""
        self.stop_ttl_sweeper()
        self._flush_on_close()
        self._close_connection()

    def _flush_on_close(self) -> None:
        """Leave the recent writes' vectors in a segment when there are more
        than a few: the next process to open the file maps them instead of
        reading them back from the table and sorting them (at a million
        items, a log of 8,000 vectors cost ~0.6 s of the first search)."""
        if self._vectors is None or self._conn is None or self._segdir is None:
            return
        try:
            with self._lock:
                row = self._conn.execute("SELECT value FROM meta WHERE key = 'log_size'").fetchone()
                log_size = int(row[0]) if row else 0
                if log_size >= _vectors.CLOSE_FLUSH:
                    self._maybe_flush(log_size, at=_vectors.CLOSE_FLUSH)
        except (sqlite3.Error, OSError) as e:  # the writes are in the table either way
            logger.warning("vector segment not written at close (%s); the log stays", e)

    def _close_connection(self) -> None:
        with self._lock:
            if self._conn is not None and self._conn is not self._given:
                self._conn.close()
            self._conn = None
            if self._vectors is not None:
                self._vectors.clear()
            self._segments.clear()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        await self._off_loop(self.close)

    def __enter__(self) -> SQLiteStore:
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> SQLiteStore:
        await self.asetup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection the store works through (opened and set up if needed),
        as LangGraph's ``SqliteStore.conn``.

        Examples:
            >>> with SQLiteStore() as store:
            ...     store.conn.execute("SELECT count(*) FROM items").fetchone()[0]
            0
        """
        with self._lock:
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        given = self._given
        try:
            conn = given or sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise StoreError(f"cannot open SQLite database {self.path!r}: {e}") from e
        try:
            conn.create_function("lmx_json_eq", 3, sql_json_equal, deterministic=True)
            register_functions(conn)
            # A connection the caller gave keeps the caller's journal mode and
            # durability: changing the journal mode would commit its open
            # transaction behind its back.
            if given is None:
                if self.path != ":memory:":
                    # Only takes effect on a new file: free pages can then be
                    # released (an erase does), without rewriting the whole file.
                    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
            self._check_meta(conn)
            # Vectors are not loaded here: the first vector search maps the
            # segment files (see _vectors), so opening costs the same at any size.
        except sqlite3.Error as e:
            if given is None:
                conn.close()
            raise _translate(e, self.path) from e
        except BaseException:
            if given is None:
                conn.close()
            raise
        self._conn = conn
        if _purge.pending(conn):
            # An erase committed but did not finish overwriting (a crash): finish now.
            self._scrub()
        return conn

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread, so the event loop never waits on
        disk; on the calling thread for a connection bound to its thread."""
        if self._thread_bound:
            return fn(*args)
        return await asyncio.to_thread(fn, *args)

    def _check_meta(self, conn: sqlite3.Connection) -> None:
        if self._index is None or self._index.dims is None:
            return
        if (
            self.embeddings is not None
            and conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is None
            and conn.execute("SELECT 1 FROM items_fts LIMIT 1").fetchone() is not None
        ):
            warnings.warn(
                f"{self.path!r} holds items stored without an embedder: vector and hybrid "
                "search do not find them until they are embedded. Run store.reindex() once to "
                f"embed them (from a shell: langmem-ext store reindex --db {self.path} --to "
                "<embedder>)",
                UnembeddedItemsWarning,
                stacklevel=4,
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'dims'").fetchone()
        stored = conn.execute("SELECT length(embedding) FROM vectors LIMIT 1").fetchone()
        if stored is not None and stored[0] != 4 * self._index.dims:
            raise ConfigurationError(
                f"{self.path!r} holds {stored[0] // 4}-dimensional vectors but index['dims'] "
                f"is {self._index.dims}; open it with the embedder it was built with"
            )
        if row is None:
            # An explicit transaction: a connection the caller gave may be in
            # Python's implicit-transaction mode, which would leave one open.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('dims', ?)",
                    [self._index.dims],
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    @contextmanager
    def _txn(self, immediate: bool) -> Iterator[sqlite3.Connection]:
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        except sqlite3.Error as e:
            raise _translate(e, self.path) from e
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                raise _translate(e, self.path) from e
            raise

    # -- batch -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order of LangGraph's stores: reads, then writes (one
        transaction; the last put to a key wins)."""
        plan = self._plan(ops)
        emb = self.embeddings
        doc_vecs = emb.embed_documents_array(plan.doc_texts) if plan.doc_texts else None  # type: ignore[union-attr]
        query_vecs = {q: emb.embed_query_array(q) for q in plan.queries}  # type: ignore[union-attr]
        return self._run(plan, doc_vecs, query_vecs, emb)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`: embeddings use the embedder's async methods; the
        SQLite work runs in a worker thread so the event loop never blocks on disk."""
        plan = self._plan(ops)
        emb = self.embeddings
        doc_vecs = await emb.aembed_documents_array(plan.doc_texts) if plan.doc_texts else None  # type: ignore[union-attr]
        qs = list(plan.queries)
        vecs = await asyncio.gather(*(emb.aembed_query_array(q) for q in qs)) if qs else []  # type: ignore[union-attr]
        queries = dict(zip(qs, vecs, strict=True))
        return await self._off_loop(self._run, plan, doc_vecs, queries, emb)

    def _run(
        self,
        plan: BatchPlan,
        doc_vecs: np.ndarray | None,
        qarrays: dict[str, np.ndarray],
        emb: Any = None,
    ) -> list[Result]:
        results: list[Result] = [None] * plan.n
        omit = self.ttl_config is None or self.ttl_config.get("omit_expired", True)
        vectors: dict[int, np.ndarray] = {}
        pos = 0
        for i, p in enumerate(plan.puts):
            if p.fields and doc_vecs is not None:
                vectors[i] = doc_vecs[pos : pos + len(p.fields)]
                pos += len(p.fields)
        with self._lock:
            if emb is not self.embeddings and self.embeddings is not None and qarrays:
                # reindex() switched embedders since these queries were embedded.
                qarrays = {q: self.embeddings.embed_query_array(q) for q in qarrays}
            now = time.time()
            live_now = now if omit else None
            refresh: list[int] = []
            if plan.reads:
                with self._txn(immediate=False) as conn:
                    for i, op in plan.reads:
                        results[i], ids = self._read(conn, op, plan.modes.get(i), qarrays, live_now)
                        refresh.extend(ids)
                self._after_read()
                if refresh:
                    with self._txn(immediate=True) as conn:
                        _exec.refresh_ttl(conn, refresh, now)
            if plan.puts:
                self._write(plan.puts, vectors)
        return results

    def _read(
        self,
        conn: sqlite3.Connection,
        op: Op,
        mode: str | None,
        qarrays: dict[str, np.ndarray],
        now: float | None,
    ) -> tuple[Result, list[int]]:
        if isinstance(op, GetOp):
            return _exec.get(conn, op, now)
        if isinstance(op, ListNamespacesOp):
            return _exec.list_namespaces(conn, op, now), []
        assert isinstance(op, HybridSearchOp) and mode is not None
        qvec = qarrays.get(op.query) if op.query else None
        if qvec is not None:
            self._sync_vectors(conn)
        ix = self._index
        weight = ix.vector_weight if ix else 0.5
        cweight = ix.context_weight if ix else 0.5
        return _exec.search(conn, op, mode, qvec, self._vectors, weight, now, cweight)

    def _sync_vectors(self, conn: sqlite3.Connection) -> None:
        vix = self._vectors
        if vix is not None and not self._cells_settled:
            vix.cells, self._cells_record = _cells.settle(
                conn, self._cells_asked, self._cells_given
            )
            self._cells_settled = True
        if vix is not None:
            rebuilt = _vectors.sync(conn, vix, self._segdir, self._segments)
            if rebuilt is not None:
                self._rebuilt = rebuilt  # published once the read transaction ends

    def _after_read(self) -> None:
        if self._cells_record is not None:
            record, self._cells_record = self._cells_record, None
            with self._write_txn() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('vector_index', ?)", [record]
                )
        if self._rebuilt is not None:
            segments, expected = self._rebuilt
            self._rebuilt = None
            _vectors.publish(
                self._write_txn,
                self._segdir,
                self._segments,
                segments,
                expected,
                self._vectors,
            )

    def _write_txn(self) -> Any:
        return self._txn(immediate=True)

    def _write(self, puts: list[PreparedPut], vectors: dict[int, np.ndarray]) -> None:
        nxt = self._next
        # A rebuild is running: the new space gets this write too.
        pre = _reindex.embed_puts(puts, nxt.fields, nxt.embeddings) if nxt is not None else None
        with self._txn(immediate=True) as conn:
            before = _exec.generation(conn)
            cache, dropped = _exec.apply_puts(conn, puts, vectors, iso_now(), time.time())
            if pre is not None and self._next is not None:
                _reindex.save_puts(conn, pre)
            after = _exec.bump_generation(conn)
            log_size = _vectors.log_changes(conn, after, [*cache, *dropped])
        self._apply_to_cache(before, after, cache, dropped)
        self._maybe_flush(log_size)

    def _maybe_flush(self, log_size: int, at: int | None = None) -> None:
        vix = self._vectors
        if vix is None or log_size < (at or _vectors.FLUSH):
            return
        with self._txn(immediate=False) as conn:
            self._sync_vectors(conn)
        self._after_read()
        if vix.generation is not None and not self._rebuilt:
            _vectors.flush(self._write_txn, vix, self._segdir, self._segments)

    def _apply_to_cache(
        self,
        before: int,
        after: int,
        cache: dict[int, tuple[str, np.ndarray]],
        dropped: list[int],
    ) -> None:
        vix = self._vectors
        if vix is None or vix.generation != before:
            return  # not loaded yet, or another process wrote meanwhile: synced on next search
        changes: dict[int, Any] = dict.fromkeys(dropped)
        changes.update(cache)
        vix.apply(changes)
        vix.generation = after

    # -- TTL ---------------------------------------------------------------------

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items periodically on a daemon thread (see
        :meth:`HybridStore.start_ttl_sweeper`).

        Raises:
            ConfigurationError: the store works through a connection bound to
                the thread that opened it, which the sweeper thread cannot use.
        """
        if self._thread_bound:
            raise ConfigurationError(
                "the TTL sweeper runs on a thread of its own, and the sqlite3.Connection "
                "given to this store may only be used by the thread that opened it: open "
                "it with sqlite3.connect(..., check_same_thread=False), or call "
                "store.sweep_ttl() yourself"
            )
        return super().start_ttl_sweeper(sweep_interval_minutes)

    def sweep_ttl(self) -> int:
        """Delete expired items now; returns how many were deleted.

        Examples:
            >>> SQLiteStore().sweep_ttl()
            0
        """
        with self._lock:
            with self._txn(immediate=True) as conn:
                before = _exec.generation(conn)
                n, ids = _exec.sweep_expired(conn, time.time())
                after = _exec.bump_generation(conn) if n else before
                log_size = _vectors.log_changes(conn, after, ids)
            if n:
                self._apply_to_cache(before, after, {}, ids)
                self._maybe_flush(log_size)
        return n

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        return await self._off_loop(self.sweep_ttl)

    # -- changing the embedder --------------------------------------------------

    def reindex(
        self,
        index: IndexInput | None = None,
        *,
        batch_size: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Switch the store to the embedder of ``index`` while it serves: new
        vectors are built beside the old ones in batches, searches use the old
        ones until one atomic switch, writes made meanwhile (by this store
        object) are embedded in both, and the old vectors are dropped at the
        switch. Items, keys and timestamps are untouched. A run that stops
        (an embedder failure, a crash) leaves the store serving the old
        vectors; calling it again resumes where it stopped.

        Without ``index``, the store's own embedder embeds what it lacks
        vectors for: items stored before the store had an embedder.
        ``progress(done, total)`` is called after each batch. Other processes
        must reopen the store with the new ``index`` after the switch.

        Returns ``{"embedded", "vectors", "dims"}``.

        Examples:
            >>> store = SQLiteStore()  # no embedder: keyword search only
            >>> store.put(("user", "ada"), "m1", {"content": "Allergic to peanuts"})
            >>> store.reindex({"embed": "local", "fields": ["content"]})["embedded"]
            1
            >>> store.search(("user", "ada"), query="food allergy", mode="vector")[0].key
            'm1'
        """
        target_cfg = self.index_config if index is None else index
        if target_cfg is None:
            raise ConfigurationError(
                "reindex needs an index with an embedder, e.g. {'embed': 'local'}: this "
                "store has none"
            )
        _, reranker = reranker_from(target_cfg)
        resolved, _, _ = langgraph_index(target_cfg)
        new = resolve_index(resolved, backend=_CacheBackend(self))
        if new is None or new.embeddings is None or new.dims is None:
            raise ConfigurationError(
                f"reindex needs an index with an embedder and its dims, got {target_cfg!r}"
            )
        check_count(batch_size, "batch_size")
        # An embedder that cannot be named (a function, an unnamed object)
        # matches a stopped run by its dims alone.
        model = new.embeddings.model_id if new.embeddings.persistent else None
        target = {"dims": new.dims, "model": model}
        with self._lock, self._txn(immediate=True) as conn:
            _reindex.prepare(conn, target)
            total = _reindex.missing(conn)
            self._next = new
        done = embedded = 0
        # The rebuild reads and writes on a connection of its own, so this
        # store object's searches never wait for it (WAL: readers go on
        # beside a writer); only the switch takes the store's lock.
        side = self._side_connection()
        try:
            # Passes until nothing is left: writes of other processes during a
            # pass are picked up by the next one.
            for _ in range(100):
                after = 0
                while True:
                    rows = _reindex.todo(side, after, max(batch_size, 1))
                    if not rows:
                        break
                    after = rows[-1][0]
                    batch = _reindex.texts(rows, new.fields)
                    texts = [t for _, _, fs in batch for _, t in fs]
                    vecs = new.embeddings.embed_documents_array(texts) if texts else None
                    with _side_txn(side, self.path):
                        n = _reindex.save(side, batch, vecs)
                    embedded += n
                    done = min(done + n, total)
                    if progress is not None:
                        progress(done, total)
                if _reindex.missing(side):
                    continue
                with self._lock, self._txn(immediate=True) as conn:
                    if _reindex.missing(conn):
                        continue
                    n_vec = _reindex.switch(conn, new.dims)
                    _exec.bump_generation(conn)
                    self._adopt(target_cfg, new, reranker)
                    break
            else:  # pragma: no cover - writers outpacing the rebuild 100 times
                raise StoreError("reindex could not catch up with the writes; run it again")
        finally:
            self._next = None
            side.close()
        if progress is not None:
            progress(total, total)
        return {"embedded": embedded, "vectors": n_vec, "dims": new.dims}

    def _side_connection(self) -> sqlite3.Connection:
        """Another connection to the file (a ``:memory:`` store has only its own)."""
        if self.path == ":memory:" or self.path.startswith("file:"):
            return _Shared(self)  # type: ignore[return-value]
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        register_functions(conn)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    async def areindex(
        self,
        index: IndexInput | None = None,
        *,
        batch_size: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Async :meth:`reindex` (in a worker thread)."""
        return await asyncio.to_thread(
            self.reindex, index, batch_size=batch_size, progress=progress
        )

    def _adopt(self, index: Any, new: Any, reranker: Any) -> None:
        """Use the new embedder from the switch on (under the store's lock)."""
        self.index_config = dict(index) if isinstance(index, dict) else index
        if isinstance(self.index_config, dict):
            self.index_config.setdefault("dims", new.dims)
        self._index = new
        self.embeddings = new.embeddings
        self._reranker = reranker or self._reranker
        self._vectors = VectorIndex(new.dims)
        self._segments.clear()
        if self.search_mode == "keyword" and getattr(self, "_keyword_by_default", True):
            self.search_mode = "hybrid"

    # -- erasure ---------------------------------------------------------------

    def purge(
        self,
        prefixes: Sequence[tuple[str, ...]] = (),
        keys: Sequence[tuple[tuple[str, ...], str]] = (),
        *,
        puts: Sequence[PutOp] = (),
        dry_run: bool = False,
    ) -> PurgeReport:
        """Erase for good: every item in each namespace of ``prefixes`` and
        below it, and the items ``keys`` names, with their vectors, keyword
        entries and the embedding-cache entries of their texts (and every
        cached query), then ``puts`` (a record of the erasure), all in one
        transaction. The deleted bytes are overwritten in the file, the WAL is
        truncated and the vector segment files are rewritten (see
        :mod:`._purge`; after a crash the next open finishes that).
        ``dry_run`` counts without changing anything.

        Examples:
            >>> store = SQLiteStore()
            >>> store.put(("user", "ada"), "m1", {"text": "allergic to peanuts"})
            >>> store.purge([("user", "ada")])["namespaces"]
            {('user', 'ada'): 1}
            >>> store.get(("user", "ada"), "m1") is None
            True
        """
        plan = self._plan(list(puts)) if puts else None
        doc_vecs = None
        if plan is not None and plan.doc_texts and self.embeddings is not None:
            doc_vecs = self.embeddings.embed_documents_array(plan.doc_texts)
        return self._purge(list(prefixes), list(keys), plan, doc_vecs, dry_run)

    async def apurge(
        self,
        prefixes: Sequence[tuple[str, ...]] = (),
        keys: Sequence[tuple[tuple[str, ...], str]] = (),
        *,
        puts: Sequence[PutOp] = (),
        dry_run: bool = False,
    ) -> PurgeReport:
        """Async :meth:`purge`."""
        return await asyncio.to_thread(self.purge, prefixes, keys, puts=puts, dry_run=dry_run)

    def _purge(
        self,
        prefixes: list[tuple[str, ...]],
        keys: list[tuple[tuple[str, ...], str]],
        plan: BatchPlan | None,
        doc_vecs: np.ndarray | None,
        dry_run: bool,
    ) -> PurgeReport:
        fields = self._index.fields if self._index else None
        with self._lock:
            conn = self._connect()
            if dry_run:
                with self._txn(immediate=False) as c:
                    ids, per_ns, n_vec, digests = _purge.collect(c, prefixes, keys, fields)
                    n_cache = _purge.cache_entries(c, digests)
                return PurgeReport(per_ns, n_vec, n_cache, False)
            conn.execute("PRAGMA secure_delete = ON")
            try:
                with self._txn(immediate=True) as c:
                    ids, per_ns, n_vec, digests = _purge.collect(c, prefixes, keys, fields)
                    n_cache = _purge.cache_entries(c, digests)
                    if ids:
                        _purge.delete(c, ids, digests)
                        after = _exec.bump_generation(c)
                        _vectors.log_changes(c, after, ids)
                    if plan is not None and plan.puts:
                        vectors: dict[int, np.ndarray] = {}
                        pos = 0
                        for i, p in enumerate(plan.puts):
                            if p.fields and doc_vecs is not None:
                                vectors[i] = doc_vecs[pos : pos + len(p.fields)]
                                pos += len(p.fields)
                        _exec.apply_puts(c, plan.puts, vectors, iso_now(), time.time())
                        _exec.bump_generation(c)
                forget = getattr(self.embeddings, "forget", None)
                if forget is not None:
                    forget(digests)
                scrubbed = self._scrub()
            finally:
                conn.execute("PRAGMA secure_delete = OFF")
        return PurgeReport(per_ns, n_vec, n_cache, scrubbed)

    def _scrub(self) -> bool:
        conn = self._connect()
        conn.execute("PRAGMA secure_delete = ON")
        try:
            dims = self._index.dims if self._index is not None else None
            done = _purge.scrub(conn, self._write_txn, self._segdir, self._segments, dims)
        finally:
            conn.execute("PRAGMA secure_delete = OFF")
        if self._vectors is not None:
            self._vectors.clear()
        return done

    # -- export/import (see stores.transfer) ------------------------------------

    def transfer_page(
        self, namespace_prefix: tuple[str, ...], after: tuple[str, str] | None, limit: int
    ) -> list[tuple[tuple[str, str], dict[str, Any]]]:
        with self._lock:
            return _transfer.page(self._connect(), namespace_prefix, after, limit, time.time())

    def bulk_import(self) -> _transfer.BulkImport:
        return _transfer.BulkImport(self)

    # -- embedding cache backend -------------------------------------------------

    def _cache_get(self, keys: Sequence[tuple[str, str, bytes]]) -> dict:
        import json

        with self._lock:
            conn = self._connect()
            rows = conn.execute(
                "SELECT c.model, c.kind, c.hash, c.embedding FROM embedding_cache c "
                "JOIN json_each(?) j ON c.model = json_extract(j.value, '$[0]') "
                "AND c.kind = json_extract(j.value, '$[1]') "
                "AND c.hash = json_extract(j.value, '$[2]')",
                [json.dumps([[m, k, h.hex()] for m, k, h in keys])],
            ).fetchall()
        # Blobs of a length no vector has are skipped: the text is embedded again.
        return {
            (m, k, bytes.fromhex(h)): np.frombuffer(e, dtype="<f4")
            for m, k, h, e in rows
            if isinstance(e, bytes) and len(e) % 4 == 0
        }

    def _cache_put(self, entries: dict[tuple[str, str, bytes], np.ndarray]) -> None:
        rows = [
            (m, k, h.hex(), np.asarray(v, dtype="<f4").tobytes())
            for (m, k, h), v in entries.items()
        ]
        with self._lock, self._txn(immediate=True) as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO embedding_cache (model, kind, hash, embedding) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )


class _Shared:
    """The store's own connection, used under its lock (an in-memory store has
    no other connection to its data)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def execute(self, *args: Any) -> Any:
        with self._store._lock:
            return self._store._connect().execute(*args)

    def executemany(self, *args: Any) -> Any:
        with self._store._lock:
            return self._store._connect().executemany(*args)

    def close(self) -> None:
        pass


@contextmanager
def _side_txn(conn: Any, path: str) -> Iterator[Any]:
    if isinstance(conn, _Shared):
        with conn._store._lock, conn._store._txn(immediate=True) as c:
            yield c
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as e:
        raise _translate(e, path) from e
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException as e:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(e, sqlite3.Error):
            raise _translate(e, path) from e
        raise


class _CacheBackend:
    """Persistent embedding cache inside the store's own file."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def get_many(self, keys: Sequence[tuple[str, str, bytes]]) -> dict:
        return self._store._cache_get(keys)

    def put_many(self, entries: dict[tuple[str, str, bytes], np.ndarray]) -> None:
        self._store._cache_put(entries)


def _path_of(path: Any, cls: str) -> str:
    """``path`` as a file name, or a TypeError naming what is accepted."""
    if isinstance(path, str | os.PathLike):
        return os.fspath(path)
    got = f"{type(path).__module__}.{type(path).__qualname__}"
    hint = ""
    if type(path).__module__.startswith("aiosqlite"):
        hint = "; an aiosqlite connection is for AsyncSqliteStore"
    elif type(path).__name__ == "Connection":
        hint = "; pass the file's path instead (this store needs no SQLite extension)"
    raise TypeError(
        f"{cls} takes a database file path, ':memory:' or an open sqlite3.Connection, "
        f"got {got}{hint}"
    )


def _database_file(conn: sqlite3.Connection) -> str:
    """The file behind ``conn`` (``":memory:"`` for an in-memory database)."""
    try:
        rows = conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.ProgrammingError as e:  # closed, or bound to another thread
        raise TypeError(f"the sqlite3.Connection given cannot be used here: {e}") from e
    main = next((r[2] for r in rows if r[1] == "main"), "")
    return main or ":memory:"


def _bound_to_its_thread(conn: sqlite3.Connection) -> bool:
    """Whether ``conn`` was opened with ``check_same_thread=True`` (Python's
    default): a statement from another thread is then refused."""
    refused: list[bool] = []

    def probe() -> None:
        try:
            conn.execute("SELECT 1").fetchone()
        except sqlite3.ProgrammingError:
            refused.append(True)

    thread = threading.Thread(target=probe, name="langmem-ext-sqlite-probe")
    thread.start()
    thread.join()
    return bool(refused)


def _translate(e: sqlite3.Error, path: str) -> Exception:
    msg = str(e)
    if isinstance(e, sqlite3.DatabaseError) and (
        "not a database" in msg or "malformed" in msg or "corrupt" in msg
    ):
        return StoreError(
            f"{path!r} is not a usable SQLite database ({msg}); restore it from a backup "
            "or point the store at a new file",
            path=path,
        )
    if "readonly" in msg or "read-only" in msg:
        return StoreError(
            f"cannot write to {path!r} ({msg}); the file or its directory is read-only. "
            "Fix the permissions or use a writable path",
            path=path,
        )
    if "locked" in msg or "busy" in msg:
        err = StoreError(
            f"{path!r} stayed locked by another connection ({msg}); retry, or raise "
            "SQLiteStore(timeout=...)",
            path=path,
        )
        return err
    if "unable to open" in msg:
        return StoreError(
            f"cannot open {path!r} ({msg}): the file or its directory is missing or "
            "read-only; SQLite must be able to write the file and create its '-wal' and "
            "'-shm' files beside it",
            path=path,
        )
    return StoreError(f"SQLite error on {path!r}: {msg}", path=path)


# Pin public names on the class the docs show.
SQLiteStore.__module__ = "langmem_ext"
