"""What every store of this package shares: declared capabilities, the search
configuration, the batch plan, ``search`` with a ranking mode, and the TTL
sweeper. Backends supply the I/O (``batch``/``abatch`` and ``sweep_ttl``).

Capabilities are declared, like LangGraph's ``supports_ttl``: callers (the
memory engine) check ``supports_hybrid`` rather than the class's module, so a
user's subclass keeps hybrid search.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> store = SQLiteStore()
    >>> store.supports_hybrid, store.supports_ttl
    (True, True)
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import logging
import math
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from langgraph.store.base import BaseStore, Op, SearchItem, TTLConfig, ensure_embeddings

from .._langgraph import ensure_refresh
from ..errors import ConfigurationError, InvalidValueError
from ._filters import normalize_filter
from ._ops import (
    KEYWORD_THEN_REST,
    MAX_TTL,
    SEARCH_MODES,
    HybridSearchOp,
    PreparedPut,
    SearchMode,
    check_namespace,
    prepare_ops,
    prepare_put,
    shown,
)
from ._wrappers import ameasured, areranked, measured, reranked
from .embeddings import IndexInput, resolve_index
from .rerankers import Reranker, reranker_from
from .retriever import as_retriever

__all__ = [
    "BatchPlan",
    "HybridStore",
    "PurgeReport",
    "UnembeddedItemsWarning",
    "langgraph_index",
    "supports_hybrid",
]

logger = logging.getLogger("langmem_ext.stores")


def supports_hybrid(store: Any) -> bool:
    """Whether ``store`` accepts :class:`HybridSearchOp` (hybrid, vector and
    keyword modes, and every filter operator of :mod:`._filters`).

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> supports_hybrid(InMemoryStore())
        False
    """
    return bool(getattr(store, "supports_hybrid", False))


_TTL_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}


def check_ttl_config(ttl: Any) -> TTLConfig | None:
    """LangGraph's ``TTLConfig`` checked: minutes are positive numbers, flags bools."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping) or set(ttl) - _TTL_KEYS:
        raise ConfigurationError(
            f"ttl must be a dict with keys among {sorted(_TTL_KEYS)}, got {ttl!r}"
        )
    for key in ("default_ttl", "sweep_interval_minutes"):
        v = ttl.get(key)
        if v is not None and (
            isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < math.inf
        ):
            raise ConfigurationError(
                f"ttl[{key!r}] must be a positive number of minutes, got {shown(v)}"
            )
    if ttl.get("default_ttl") is not None and ttl["default_ttl"] > MAX_TTL:
        raise ConfigurationError(
            f"ttl['default_ttl'] must be at most {MAX_TTL:,.0f} minutes (about 1,900 years), "
            f"got {shown(ttl['default_ttl'])}; leave it out for items that never expire"
        )
    for key in ("refresh_on_read", "omit_expired"):
        if not isinstance(ttl.get(key, True), bool):
            raise ConfigurationError(f"ttl[{key!r}] must be True or False, got {ttl[key]!r}")
    return ttl  # type: ignore[return-value]


DISTANCE_TYPES = ("cosine", "inner_product", "l2")


def langgraph_index(index: Any) -> tuple[Any, dict[str, Any] | None, str]:
    """LangGraph's own ``index`` keys, accepted as they are: ``text_fields``
    (``SqliteStore``'s name for ``fields``), ``distance_type`` and
    ``ann_index_config`` (``PostgresStore``'s; returned for the backend to
    map). Without ``dims``, a non-local embedder is asked once for a vector to
    learn its length.

    Returns the config for :func:`resolve_index`, the ``ann_index_config`` and
    the distance type.

    Examples:
        >>> cfg, ann, distance = langgraph_index(
        ...     {"embed": "local", "text_fields": ["text"], "distance_type": "cosine"})
        >>> cfg["fields"], ann, distance
        (['text'], None, 'cosine')
    """
    if not isinstance(index, Mapping):
        return index, None, "cosine"
    idx = dict(index)
    if "text_fields" in idx:
        text_fields = idx.pop("text_fields")
        if text_fields is not None and idx.get("fields") is not None:
            raise ConfigurationError(
                "index has both 'fields' and 'text_fields' (LangGraph SqliteStore's name for "
                "the same thing); keep one"
            )
        if text_fields is not None:
            idx["fields"] = [text_fields] if isinstance(text_fields, str) else text_fields
    distance = idx.pop("distance_type", "cosine")
    if distance not in DISTANCE_TYPES:
        raise ConfigurationError(
            f"index['distance_type'] must be one of {', '.join(DISTANCE_TYPES)}, got {distance!r}"
        )
    ann = idx.pop("ann_index_config", None)
    if ann is not None and not isinstance(ann, Mapping):
        raise ConfigurationError(
            f"index['ann_index_config'] must be a dict such as {{'kind': 'hnsw'}}, got {ann!r}"
        )
    embed = idx.get("embed")
    local = isinstance(embed, str) and embed.split(":", 1)[0] == "local"
    if idx.get("dims") is None and embed is not None and not local:
        idx["dims"] = _probe_dims(embed)
    return idx, dict(ann) if ann is not None else None, distance


def _probe_dims(embed: Any) -> int:
    try:
        vec = ensure_embeddings(embed).embed_query("dimension probe")
    except Exception as e:
        raise ConfigurationError(
            f"index has no 'dims' and the embedder could not be asked for one vector to "
            f"learn it ({type(e).__name__}: {e}); pass index['dims'] (its vector length)"
        ) from e
    return len(vec)


class UnembeddedItemsWarning(UserWarning):
    """A store opened with an embedder holds items that were stored without
    one: vector search cannot find them until ``store.reindex()`` embeds them."""


class PurgeReport(NamedTuple):
    """What a store's ``purge`` removed (or, in a dry run, would remove)."""

    #: Items removed, by namespace.
    namespaces: dict[tuple[str, ...], int]
    #: Vectors removed with them.
    vectors: int
    #: Embedding-cache entries removed: their texts' and every cached query's.
    cache_entries: int
    #: Whether the bytes were overwritten too (files, logs, vector segments).
    scrubbed: bool

    def __getitem__(self, key: Any) -> Any:  # report["namespaces"] as well as .namespaces
        return getattr(self, key) if isinstance(key, str) else tuple.__getitem__(self, key)


class BatchPlan(NamedTuple):
    """A validated batch: what to read, what to write, what to embed."""

    n: int
    reads: list[tuple[int, Op]]
    puts: list[PreparedPut]
    modes: dict[int, str]
    queries: list[str]
    doc_texts: list[str]


def _guarded(name: str) -> Any:
    """LangGraph's ``BaseStore.<name>`` with its arguments checked first, so a
    wrong type is an :class:`InvalidNamespaceError` or :class:`InvalidValueError`
    (both ``ValueError``), never a raw ``TypeError`` from inside LangGraph."""
    base = getattr(BaseStore, name)

    def check(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if name.lstrip("a") == "list_namespaces":
            for k in ("prefix", "suffix"):
                if kwargs.get(k) is not None:
                    check_namespace(kwargs[k], allow_empty=True)
            return
        ns = args[0] if args else kwargs.get("namespace")
        check_namespace(ns, allow_empty=name.lstrip("a") == "get")
        key = args[1] if len(args) > 1 else kwargs.get("key")
        if not isinstance(key, str):
            # LangGraph would store str(key): get(ns, None) would look up "None"
            # and batch([GetOp(ns, 1)]) would be refused where get(ns, 1) is not.
            raise InvalidValueError(
                f"key must be a string, got {type(key).__name__} {shown(key)}; "
                "pass str(key) if that text is the key"
            )

    if inspect.iscoroutinefunction(base):

        async def amethod(self: Any, *args: Any, **kwargs: Any) -> Any:
            check(args, kwargs)
            return await base(self, *args, **kwargs)

        return functools.wraps(base)(amethod)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        check(args, kwargs)
        return base(self, *args, **kwargs)

    return functools.wraps(base)(method)


class HybridStore(BaseStore):
    """Base of this package's stores (not used directly).

    Subclasses call :meth:`_configure_search` in ``__init__``, implement
    ``batch``/``abatch`` on top of :meth:`_plan`, and ``sweep_ttl``.
    """

    supports_ttl: bool = True
    #: Accepts :class:`HybridSearchOp` and the full filter language.
    supports_hybrid: bool = True
    #: ``index["distance_type"]`` values the backend scores by.
    distance_types: tuple[str, ...] = ("cosine",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every backend's batch/abatch is measured (store.* metrics) without the
        # backends knowing: wrapped once, where the subclass defines them.
        super().__init_subclass__(**kwargs)
        # The re-ranking stage, when configured, works the same way.
        if "batch" in cls.__dict__:
            cls.batch = measured(reranked(cls.__dict__["batch"]))  # type: ignore[method-assign]
        if "abatch" in cls.__dict__:
            cls.abatch = ameasured(areranked(cls.__dict__["abatch"]))  # type: ignore[method-assign]

    ttl_config: TTLConfig | None
    search_mode: SearchMode
    _sweeper: threading.Thread | None = None
    _reranker: Reranker | None = None
    _sweep_stop: threading.Event | None = None

    def _configure_search(
        self,
        index: IndexInput | None,
        ttl: TTLConfig | None,
        search_mode: SearchMode | None,
        cache_backend: Any,
    ) -> None:
        index, self._reranker = reranker_from(index)
        resolved, self._ann_index_config, self.distance_type = langgraph_index(index)
        if self.distance_type not in self.distance_types:
            raise ConfigurationError(
                f"index['distance_type']={self.distance_type!r} is not supported by "
                f"{type(self).__name__}: it scores by {' or '.join(self.distance_types)}. Use "
                "'cosine' (the default); for unit-length embeddings, which most embedders "
                "return, 'inner_product' and 'l2' rank results in the same order"
            )
        self.index_config = dict(index) if isinstance(index, Mapping) else index
        if isinstance(resolved, Mapping) and resolved.get("dims") is not None:
            self.index_config.setdefault("dims", resolved["dims"])
        self._index = resolve_index(resolved, backend=cache_backend)
        self.embeddings = self._index.embeddings if self._index else None
        if search_mode is not None and search_mode not in SEARCH_MODES:
            raise ConfigurationError(
                f"unknown search_mode {search_mode!r}; use one of {', '.join(SEARCH_MODES)}"
            )
        if search_mode in ("vector", "hybrid") and self.embeddings is None:
            raise ConfigurationError(
                f"search_mode={search_mode!r} needs an embedder: pass index={{'embed': 'local'}} "
                "or another embedder, or use search_mode='keyword'"
            )
        self.search_mode = search_mode or ("hybrid" if self.embeddings else "keyword")
        # LangGraph's contract for a store without an index: a query does not
        # narrow the results (see KEYWORD_THEN_REST).
        self._query_lists_all = search_mode is None and self.embeddings is None
        self.ttl_config = check_ttl_config(ttl)

    def _omit_expired(self) -> bool:
        return self.ttl_config is None or self.ttl_config.get("omit_expired", True)

    @property
    def indexed_fields(self) -> tuple[Any, ...]:
        """The tokenized field paths the index embeds, as this store resolved
        them (``"$"`` left out; empty without an index): the
        :class:`~langmem_ext.stores.capabilities.IndexedFields` capability."""
        if self._index is None:
            return ()
        return tuple(tokens for path, tokens in self._index.fields if path != "$")

    # -- the batch plan ------------------------------------------------------------

    def _check_put(self, put: PreparedPut) -> None:
        """Backend-specific rejection of a put, before anything runs (override)."""

    def _plan(self, ops: Iterable[Op]) -> BatchPlan:
        # Everything that can reject input happens here, before any embedding
        # call or write, so a rejected batch changes nothing.
        all_ops, reads, puts = prepare_ops(ops)
        embeds = self.embeddings is not None
        fields = self._index.fields if self._index else None
        context = self._index.context_fields if self._index else None
        prepared = [prepare_put(op, fields, embeds, context) for op in puts.values()]
        for p in prepared:
            self._check_put(p)
        modes: dict[int, str] = {}
        queries: dict[str, None] = {}
        for i, op in reads:
            if isinstance(op, HybridSearchOp):
                normalize_filter(op.filter)
                mode = op.mode or self.search_mode
                if mode == "vector" and not embeds:
                    raise ConfigurationError(
                        "mode='vector' needs an embedder; configure index={'embed': ...} "
                        "or use mode='keyword'"
                    )
                if mode == "hybrid" and not embeds:
                    mode = "keyword"
                if op.mode is None and self._query_lists_all:
                    mode = KEYWORD_THEN_REST
                modes[i] = mode
                if op.query and mode in ("vector", "hybrid"):
                    queries[op.query] = None
        doc_texts = [t for p in prepared for _, t in p.fields]
        return BatchPlan(len(all_ops), reads, prepared, modes, list(queries), doc_texts)

    get = _guarded("get")
    aget = _guarded("aget")
    put = _guarded("put")
    aput = _guarded("aput")
    delete = _guarded("delete")
    adelete = _guarded("adelete")
    list_namespaces = _guarded("list_namespaces")
    alist_namespaces = _guarded("alist_namespaces")

    # -- search with a mode ------------------------------------------------------

    def _search_op(
        self,
        namespace_prefix: tuple[str, ...],
        query: str | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
        mode: SearchMode | None,
    ) -> HybridSearchOp:
        check_namespace(namespace_prefix, allow_empty=True)
        refresh = ensure_refresh(self.ttl_config, refresh_ttl)
        return HybridSearchOp(namespace_prefix, filter, limit, offset, query, refresh, mode)

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        mode: SearchMode | None = None,
    ) -> list[SearchItem]:
        """Search items under a namespace prefix, ranked by ``query`` if given.

        Args:
            namespace_prefix: e.g. ``("user", "u-123")``; ``()`` searches everything.
            query: natural-language query; without it, items come newest first.
            filter: conditions on the value (see :mod:`langmem_ext.stores._filters`):
                ``{"category": "preference", "importance": {"$gte": 3}}``.
            limit, offset: the page.
            refresh_ttl: refresh the TTL of returned items (default: store setting).
            mode: ``"hybrid"``, ``"vector"`` or ``"keyword"``; default: the store's
                ``search_mode``. See :mod:`langmem_ext.stores._hybrid` for scores.

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> store = SQLiteStore()
            >>> store.put(("docs",), "1", {"text": "the cat sat"})
            >>> store.search(("docs",), query="cat", mode="keyword")[0].score
            1.0
        """
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl, mode)
        return self.batch([op])[0]  # type: ignore[list-item, return-value]

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        mode: SearchMode | None = None,
    ) -> list[SearchItem]:
        """Async :meth:`search` (same arguments)."""
        op = self._search_op(namespace_prefix, query, filter, limit, offset, refresh_ttl, mode)
        return (await self.abatch([op]))[0]  # type: ignore[list-item, return-value]

    def as_retriever(
        self,
        namespace_prefix: tuple[str, ...],
        *,
        k: int = 4,
        mode: SearchMode | None = None,
        filter: dict[str, Any] | None = None,
    ) -> Any:
        """This store as a LangChain ``BaseRetriever`` (sync and async): each
        query searches ``namespace_prefix`` and returns ``k`` ``Document``s with
        ``namespace``, ``key``, ``score`` and the ``value`` in their metadata
        (see :mod:`langmem_ext.stores.retriever`).

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> store = SQLiteStore()
            >>> store.put(("docs",), "1", {"text": "the cat sat"})
            >>> store.as_retriever(("docs",), mode="keyword").invoke("cat")[0].page_content
            'the cat sat'
        """
        return as_retriever(self, namespace_prefix, k=k, mode=mode, filter=filter)

    # -- TTL sweeper ---------------------------------------------------------------

    def sweep_ttl(self) -> int:  # pragma: no cover - provided by the backend
        """Delete expired items now; returns how many were deleted."""
        raise NotImplementedError

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items periodically on a daemon thread (it never keeps the
        process alive). Returns a future that completes when the sweeper stops.

        The interval defaults to ``ttl["sweep_interval_minutes"]``, else 5 minutes.

        Examples:
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
