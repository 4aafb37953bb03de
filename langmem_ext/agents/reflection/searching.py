"""What the executor checks when it is made, and LangMem's ``search`` on the
executor (the memories it writes: a store manager's namespace, or the caller's
own memories).

Examples:
    >>> check_delay(2.5)
    2.5
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.store.base import BaseStore

from ..._langgraph import config_runtime, graph_store
from ...engine import (
    EngineConfig,
    MemoryEngine,
    check_filter,
    check_int,
    check_number,
    check_text,
    run_config,
    shown,
)
from ...errors import ConfigurationError, InvalidValueError
from .extract import FactExtractor
from .jobs import store_config
from .reflect import ReflectionSettings

__all__ = ["MAX_DELAY", "MAX_PAGE", "LangMemSearch", "check_delay", "check_parts"]


class LangMemSearch:
    """LangMem's ``executor.search`` / ``asearch``, for :class:`ReflectionExecutor`."""

    _store: BaseStore | None
    _engine: MemoryEngine | None
    manager: Runnable | None
    memory_namespace: Any
    default_tenant: str | None

    if TYPE_CHECKING:  # what the executor provides

        def engine_for(self, store: BaseStore | None) -> MemoryEngine: ...

    def search(
        self,
        query: str | None = None,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        namespace: str | tuple[str, ...] | None = None,
        config: RunnableConfig | None = None,
    ) -> list[dict[str, Any]]:
        """Search the memories this executor writes (LangMem's form): the
        manager's namespace, or the caller's own memories; items as dicts."""
        store, ns = self._search_target(namespace, config, query, filter, (limit, offset))
        items = store.search(ns, query=query, filter=filter, limit=limit, offset=offset)
        return [it.dict() for it in items]

    async def asearch(
        self,
        query: str | None = None,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        namespace: str | tuple[str, ...] | None = None,
        config: RunnableConfig | None = None,
    ) -> list[dict[str, Any]]:
        """Async :meth:`search`."""
        store, ns = self._search_target(namespace, config, query, filter, (limit, offset))
        items = await store.asearch(ns, query=query, filter=filter, limit=limit, offset=offset)
        return [it.dict() for it in items]

    def _search_target(
        self, namespace: Any, config: RunnableConfig | None, query: Any, filter: Any, page: Any
    ) -> tuple[BaseStore, tuple[str, ...]]:
        if query is not None and not isinstance(query, str):
            raise InvalidValueError(f"query must be text or None, got {shown(query)}")
        check_filter(filter)
        check_int("limit", page[0], 1, MAX_PAGE)
        check_int("offset", page[1], 0, MAX_PAGE)
        labels = (namespace,) if isinstance(namespace, str) else namespace
        if namespace is not None and not (
            isinstance(labels, tuple)
            and labels
            and all(isinstance(x, str) and x and "." not in x and "\x00" not in x for x in labels)
        ):
            raise InvalidValueError(
                f"namespace must be a tuple of labels such as ('memories', 'ada'), "
                f"got {shown(namespace)}"
            )
        config = run_config(config)
        store = self._store or getattr(config_runtime(config), "store", None) or graph_store()
        if store is None and self._engine is not None:
            store = self._engine.store
        if store is None:
            raise ConfigurationError(
                "ReflectionExecutor has no store to search: create it with store=..."
            )
        if namespace is not None:
            return store, namespace if isinstance(namespace, tuple) else (namespace,)
        if self.manager is not None:
            ns = self.manager.namespace(store_config(config, store))  # type: ignore[attr-defined]
            return store, tuple(ns)
        engine = self.engine_for(store)
        ctx = engine.context(
            config, namespace=self.memory_namespace, default_tenant=self.default_tenant
        )
        return store, engine.env(ctx).layer("user").ns


#: The longest debounce delay accepted, in seconds (a week): longer waits are
#: mistakes, and a timeout beyond the platform's limit would kill the worker.
MAX_DELAY = 7 * 24 * 3600.0
#: The largest limit or offset of :meth:`ReflectionExecutor.search`.
MAX_PAGE = 10_000


def check_delay(delay: Any) -> float:
    return check_number("delay", delay, 0.0, MAX_DELAY, ConfigurationError)


def check_parts(
    reflector: Any,
    engine: Any,
    store: Any,
    settings: Any,
    engine_config: Any,
    default_tenant: Any,
) -> None:
    """The executor's collaborators, checked when it is created."""
    if reflector is not None and not isinstance(
        reflector, str | BaseChatModel | FactExtractor | Runnable
    ):
        raise ConfigurationError(
            "the reflector must be a chat model, a 'provider:model' string, a FactExtractor "
            f"or a store manager, got {type(reflector).__name__}"
        )
    for name, value, kind in (
        ("engine", engine, MemoryEngine),
        ("store", store, BaseStore),
        ("settings", settings, ReflectionSettings),
        ("engine_config", engine_config, EngineConfig),
    ):
        if value is not None and not isinstance(value, kind):
            raise ConfigurationError(
                f"{name} must be a {kind.__name__} or None, got {type(value).__name__}"
            )
    check_text("default_tenant", default_tenant, optional=True, error=ConfigurationError)
