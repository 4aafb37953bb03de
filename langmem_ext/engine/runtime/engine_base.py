"""The engine's machinery under its operations: the store and its
capabilities, the settings, metrics, the caller's environment and the two
runners. :class:`~langmem_ext.engine.MemoryEngine` adds one sync and one async
method per declared operation (see :func:`.catalogue.bind_all`).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine = MemoryEngine(SQLiteStore())
    >>> engine.env(MemoryContext("acme", user_id="ada")).tenant
    'acme'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, SearchOp

from ...errors import ConfigurationError
from ...stores import SEARCH_MODES, HybridSearchOp
from ..identity.layers import check_layer
from ..identity.namespaces import NamespaceTemplate
from ..identity.tenancy import MemoryContext, fill_space
from ..records.checks import check_int, check_number, check_text, shown
from .config import EngineConfig, capabilities, detect_caps
from .env import Env
from .metrics import EngineMetrics
from .requests import Operation, run_async, run_sync

__all__ = ["Ctx", "EngineBase"]

T = TypeVar("T")
#: The caller of an operation: a MemoryContext or a LangGraph RunnableConfig.
Ctx = MemoryContext | Mapping[str, Any]
# generate_embedding needs no caller: only the content limit is checked.
_NO_CALLER = MemoryContext("_")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class EngineBase:
    """The engine without its operations (see :class:`~langmem_ext.engine.MemoryEngine`)."""

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
            >>> from langmem_ext.engine import MemoryEngine
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
        return capabilities(self.store, self.caps)

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


def _check_settings(cfg: EngineConfig) -> None:
    """Refuse settings that would only fail later, at some call."""
    NamespaceTemplate(cfg.namespace)
    check_text("default_tenant", cfg.default_tenant, optional=True, error=ConfigurationError)
    check_int("max_content_length", cfg.max_content_length, 1, 10**9, ConfigurationError)
    check_number("threshold", cfg.threshold, -1.0, 1.0, ConfigurationError)
    check_layer(cfg.default_layer)
    check_int("graph_hops", cfg.graph_hops, 0, 2, ConfigurationError)
    if not isinstance(cfg.episode_ttl, timedelta):
        raise ConfigurationError(f"episode_ttl must be a timedelta, got {shown(cfg.episode_ttl)}")
    if cfg.recall_mode is not None and cfg.recall_mode not in SEARCH_MODES:
        raise ConfigurationError(
            f"recall_mode must be None or one of {', '.join(SEARCH_MODES)}, "
            f"got {shown(cfg.recall_mode)}"
        )
