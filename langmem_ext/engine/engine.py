"""MemoryEngine: typed memories over any LangGraph ``BaseStore``, sync and async.

Its operations are the catalogue's (:mod:`.operations`): each is declared and
written once, as a generator of store requests; ``engine.op(ctx, ...)`` runs it
with ``store.batch`` and ``await engine.aop(ctx, ...)`` with ``store.abatch``
(:func:`.catalogue.bind`). The agent tools, MCP, the command line and the
memory browser run the same declarations.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, SearchOp

from ..errors import ConfigurationError
from ..stores import SEARCH_MODES, HybridSearchOp
from . import ops_profile as op
from . import ops_read as orr
from . import ops_write as ow
from . import provider as pv
from ._core import EngineConfig, detect_caps
from .catalogue import bind, bind_plain
from .checks import check_int, check_number, check_text, shown
from .env import Env
from .layers import check_layer
from .metrics import EngineMetrics
from .namespaces import NamespaceTemplate
from .requests import Operation, run_async, run_sync
from .tenancy import MemoryContext, fill_space

__all__ = ["EnginesByStore", "MemoryEngine"]

T = TypeVar("T")
Ctx = MemoryContext | Mapping[str, Any]
# generate_embedding needs no caller: only the content limit is checked.
_NO_CALLER = MemoryContext("_")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class MemoryEngine:
    """Facts, episodes, rules and notes with lifecycles, over any ``BaseStore``.

    Every operation takes the caller first: a :class:`MemoryContext` or a
    LangGraph ``RunnableConfig`` holding the auth user (the tenant comes from
    there, never from arguments; ``tenant=`` is an admin's explicit selector).

    Args:
        store: any LangGraph ``BaseStore``; ours gets hybrid search and every
            filter operator, others degrade (see ``docs/engine.md``).
        config: :class:`EngineConfig`; keyword overrides are applied to it.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine = MemoryEngine(SQLiteStore())
        >>> ctx = MemoryContext("acme", user_id="ada")
        >>> old = engine.store_fact(ctx, "user", "favorite_color", "Favorite color: blue")
        >>> new = engine.store_fact(ctx, "user", "favorite_color", "Favorite color: green")
        >>> engine.get(ctx, old.id).validity, engine.get(ctx, old.id).superseded_by == new.id
        ('superseded', True)
        >>> [h.content for h in engine.recall(ctx, "favorite color")]
        ['Favorite color: green']
    """

    def __init__(
        self, store: BaseStore, config: EngineConfig | None = None, **overrides: Any
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a LangGraph BaseStore (SQLiteStore(), InMemoryStore(), ...), "
                f"got {type(store).__name__}"
            )
        self.store = store
        cfg = EngineConfig() if config is None else config
        if not isinstance(cfg, EngineConfig):
            raise ConfigurationError(f"config must be an EngineConfig, got {type(cfg).__name__}")
        if overrides:
            import dataclasses

            unknown = set(overrides) - {f.name for f in dataclasses.fields(EngineConfig)}
            if unknown:
                raise ConfigurationError(
                    f"unknown engine settings {sorted(unknown)}; see EngineConfig for the settings"
                )
            cfg = dataclasses.replace(cfg, **overrides)
        _check_settings(cfg)
        self.config = cfg
        self.caps = detect_caps(store, cfg)
        self.metrics = EngineMetrics(cfg.meter_provider)

    def context(
        self, ctx: Ctx, *, namespace: Any = None, default_tenant: str | None = None
    ) -> MemoryContext:
        """The caller: ``ctx`` itself, or the context of a ``RunnableConfig``,
        built with ``namespace`` and ``default_tenant`` (default: the engine's).

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> engine = MemoryEngine(SQLiteStore(), namespace=("memories", "{user_id}"))
            >>> engine.context({"configurable": {"user_id": "ada"}}).space
            ('memories', 'ada')
        """
        cfg = self.config
        namespace = cfg.namespace if namespace is None else namespace
        if isinstance(ctx, MemoryContext):
            return fill_space(ctx, namespace)
        return MemoryContext.from_config(
            ctx, namespace=namespace, default_tenant=default_tenant or cfg.default_tenant
        )

    def env(self, ctx: Ctx, tenant: str | None = None) -> Env:
        """The per-call environment (tenant checked here, before any store op)."""
        return Env.make(self.config, self.caps, self.context(ctx), tenant, self.metrics)

    def plain_env(self) -> Env:
        """The environment of an operation without a caller (only the engine's
        limits apply)."""
        return Env(self.config, self.caps, _NO_CALLER, "", _EPOCH)

    def store_search_op(
        self,
        namespace: tuple[str, ...],
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        mode: str | None = None,
    ) -> Any:
        """A store search op for this store: with a ranking ``mode`` where the
        store supports it (``supports_hybrid``), LangGraph's ``SearchOp`` otherwise."""
        if self.caps.modes:
            return HybridSearchOp(namespace, filter, limit, offset, query, True, mode)  # type: ignore[arg-type]
        return SearchOp(namespace, filter, limit, offset, query, True)

    def run(self, step: Operation[T], operation: str = "custom") -> T:
        """Run an operation written as a generator of store requests (the engine's
        own operations are; so are the memory tools') with ``store.batch``,
        measured as ``operation``."""
        with self.metrics.measure(operation):
            return run_sync(step, self.store, self.config)

    async def arun(self, step: Operation[T], operation: str = "custom") -> T:
        """Async :meth:`run` (``store.abatch``)."""
        with self.metrics.measure(operation):
            return await run_async(step, self.store, self.config)

    def capabilities(self) -> dict[str, Any]:
        """What the store actually used offers (provider capabilities):
        ``vectorSearch``, ``embeddingDimensions``, ``distanceMetrics``,
        ``bulkOperations`` (True when one batch is one transaction), plus
        ``keywordSearch`` and ``filterOperators``.

        Examples:
            >>> from langgraph.store.memory import InMemoryStore
            >>> from langmem_ext.engine import MemoryEngine
            >>> MemoryEngine(InMemoryStore()).capabilities()["bulkOperations"]
            False
        """
        return pv.capabilities(self.store, self.caps)

    def setup(self) -> None:
        """``initialize``: the store's ``setup()`` (migrations), if it has one."""
        if hasattr(self.store, "setup"):
            self.store.setup()

    async def asetup(self) -> None:
        """Async :meth:`setup` (``store.asetup()``, else ``store.setup()``)."""
        if hasattr(self.store, "asetup"):
            await self.store.asetup()
        elif hasattr(self.store, "setup"):
            self.store.setup()

    def close(self) -> None:
        """``shutdown``: the store's ``close()``, if it has one."""
        if hasattr(self.store, "close"):
            self.store.close()

    async def aclose(self) -> None:
        """Async :meth:`close` (``store.aclose()``, else ``store.close()``)."""
        if hasattr(self.store, "aclose"):
            await self.store.aclose()
        elif hasattr(self.store, "close"):
            self.store.close()

    # -- the operations of the catalogue (engine.operations), sync and async ----------

    add, aadd = bind(ow.add)
    store_fact, astore_fact = bind(ow.store_fact)
    store_episode, astore_episode = bind(ow.store_episode)
    store_rule, astore_rule = bind(ow.store_rule)
    confirm, aconfirm = bind(ow.confirm)
    mark_helpful, amark_helpful = bind(ow.mark_helpful)
    mark_harmful, amark_harmful = bind(ow.mark_harmful)
    forget, aforget = bind(ow.forget)
    update, aupdate = bind(ow.update)
    revise, arevise = bind(ow.revise)
    delete, adelete = bind(ow.delete)
    sweep, asweep = bind(ow.sweep)
    bulk_add, abulk_add = bind(ow.bulk_add)
    bulk_delete, abulk_delete = bind(ow.bulk_delete)
    get, aget = bind(orr.get)
    get_memory, aget_memory = bind(orr.get_memory)
    history, ahistory = bind(orr.history)
    versions, aversions = bind(orr.versions)
    search, asearch = bind(orr.search)
    search_layers, asearch_layers = bind(orr.search_layers)
    recall, arecall = bind(orr.recall)
    list, alist = bind(orr.list_memories)
    stats, astats = bind(orr.stats)
    storage_size, astorage_size = bind(orr.storage_size)
    search_items, asearch_items = bind(orr.search_items)
    generate_embedding, agenerate_embedding = bind_plain(orr.generate_embedding)
    health_check, ahealth_check = bind_plain(orr.health_check)
    get_profile, aget_profile = bind(op.get_profile)
    update_profile, aupdate_profile = bind(op.update_profile)
    add_facts, aadd_facts = bind(op.add_facts)
    add_fact, aadd_fact = bind(op.add_fact)
    update_fact, aupdate_fact = bind(op.update_fact)
    delete_fact, adelete_fact = bind(op.delete_fact)


def _check_settings(cfg: EngineConfig) -> None:
    """Refuse settings that would only fail later, at some call."""
    NamespaceTemplate(cfg.namespace)
    check_text("default_tenant", cfg.default_tenant, optional=True, error=ConfigurationError)
    check_int("max_content_length", cfg.max_content_length, 1, 10**9, ConfigurationError)
    check_number("threshold", cfg.threshold, -1.0, 1.0, ConfigurationError)
    check_layer(cfg.default_layer)
    if not isinstance(cfg.episode_ttl, timedelta):
        raise ConfigurationError(f"episode_ttl must be a timedelta, got {shown(cfg.episode_ttl)}")
    if cfg.recall_mode is not None and cfg.recall_mode not in SEARCH_MODES:
        raise ConfigurationError(
            f"recall_mode must be None or one of {', '.join(SEARCH_MODES)}, "
            f"got {shown(cfg.recall_mode)}"
        )


class EnginesByStore:
    """One engine per store (by identity), built on first use; thread-safe. For
    faces that take the store from the running graph.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> engines, store = EnginesByStore(), SQLiteStore()
        >>> engines.get(store) is engines.get(store)
        True
    """

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._engines: dict[int, MemoryEngine] = {}

    def get(self, store: BaseStore) -> MemoryEngine:
        with self._lock:
            engine = self._engines.get(id(store))
            # ids are reused after a store is collected: check it is the same one
            if engine is None or engine.store is not store:
                engine = self._engines[id(store)] = MemoryEngine(store, self.config)
            return engine
