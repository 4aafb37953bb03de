"""LangMem's store manager over the user's one memory.

:func:`create_memory_store_manager` has LangMem's signature and return value
(the puts it made: ``[{"namespace", "key", "value"}]``), and LangMem's
``get``/``search``/``put``/``delete`` helpers. What it does differently:

* It manages the same memories as the tools, reflection and the memory prompt:
  its namespace template resolves to the user's space (identity from the
  authentication, the tenant prefix where there is one; see
  :mod:`langmem_ext.engine.identity.layout`).
* It reads every item there, whatever wrote it: a tool's note, a fact
  reflection extracted, an item of another program (LangMem's manager crashes
  on items without ``kind``). Changes go through the engine: updating a fact
  supersedes it (history kept), every change is an audit event, and the
  item's shape is kept (a fact stays a fact with text content).
* A run is all-or-nothing: every change is planned after the model calls and
  written in one batch (one transaction on our stores), so a model error or a
  refused memory leaves the store as it was (:mod:`.store_changes`). Damaged
  items (see :mod:`langmem_ext.engine.records.decode`) are never shown or changed.
* It always searches: ``query_limit`` below 4 still searches the latest
  messages (LangMem searched nothing, and duplicates piled up); each search
  runs once.
* ``query_model`` asks for search queries with a *named* tool choice, which
  local model servers accept.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> reply = AIMessage("", tool_calls=[{"name": "manage_memories", "id": "c1",
    ...     "args": {"memories": [{"kind": "Memory", "content": {"content": "Likes tea"}}]}}])
    >>> store = SQLiteStore()
    >>> manager = create_memory_store_manager(
    ...     ScriptedExtractionModel([reply]), namespace=("memories", "{user_id}"),
    ...     store=store, method="tool")
    >>> config = {"configurable": {"user_id": "ada"}}
    >>> [p["value"]["content"] for p in manager.invoke({"messages": [("user", "I like tea")]},
    ...                                                  config)]
    [{'content': 'Likes tea'}]
    >>> [i.value["content"]["content"] for i in manager.search(config=config)]
    ['Likes tea']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import convert_to_messages
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.store.base import NOT_PROVIDED, BaseStore, GetOp, Item, SearchItem
from pydantic import BaseModel

from .._langgraph import config_runtime, current_config, graph_store
from ..engine import (
    Batch,
    EngineConfig,
    EnginesByStore,
    MemoryEngine,
    MemoryRecord,
    NamespaceTemplate,
    Note,
    Operation,
    add_fields,
)
from ..errors import ConfigurationError
from ..model_calls.usage import TokenUsage, WithUsage
from ._store_changes import apply_changes
from .managers import (
    MEMORY_INSTRUCTIONS,
    ExtractedMemory,
    Memory,
    MemoryManager,
    Method,
    RemoveDoc,
    conversation,
)
from .queries import QueryWriter
from .schemas import is_empty

__all__ = ["MemoryPhase", "MemoryStoreManager", "create_memory_store_manager"]

DEFAULT_NAMESPACE = ("memories", "{langgraph_user_id}")
#: The key of the memory ``default`` / ``default_factory`` give a user without memories.
DEFAULT_KEY = "default"


class MemoryPhase(TypedDict, total=False):
    """An extra consolidation pass over the memories (LangMem's ``phases``)."""

    instructions: str
    include_messages: bool
    enable_inserts: bool
    enable_deletes: bool


class _Namespace:
    """``manager.namespace(config)``: the user's space for that run (what
    :class:`~langmem_ext.agents.reflection.ReflectionExecutor` keys its work by)."""

    def __init__(self, manager: MemoryStoreManager) -> None:
        self.manager = manager
        self.template = manager.template.template

    def __call__(self, config: RunnableConfig | None = None) -> tuple[str, ...]:
        config = current_config(config)
        engine = self.manager._engine_for(config)
        return engine.env(config).layer("user").ns


class MemoryStoreManager(Runnable[dict[str, Any], list[dict[str, Any]]]):
    """LangMem's store manager (see :func:`create_memory_store_manager`)."""

    def __init__(
        self,
        model: str | BaseChatModel,
        /,
        *,
        schemas: Sequence[type[BaseModel]] | None = None,
        default: str | dict[str, Any] | BaseModel | None = None,
        default_factory: Callable[[RunnableConfig], Any] | None = None,
        instructions: str = MEMORY_INSTRUCTIONS,
        enable_inserts: bool = True,
        enable_deletes: bool = False,
        query_model: str | BaseChatModel | None = None,
        query_limit: int = 5,
        namespace: tuple[str, ...] = DEFAULT_NAMESPACE,
        store: BaseStore | None = None,
        phases: list[MemoryPhase] | None = None,
        default_tenant: str | None = None,
        method: Method = "auto",
    ) -> None:
        if isinstance(query_limit, bool) or not isinstance(query_limit, int) or query_limit < 1:
            raise ConfigurationError(f"query_limit must be an integer >= 1, got {query_limit!r}")
        if default is not None and default_factory is not None:
            raise ConfigurationError("give default or default_factory, not both")
        self.schemas = tuple(schemas or (Memory,))
        self.manager = MemoryManager(
            model,
            schemas=self.schemas,
            instructions=instructions,
            enable_inserts=enable_inserts,
            enable_deletes=enable_deletes,
            method=method,
        )
        self.default_factory = default_factory
        if default is not None:
            coerced = self._coerce_default(default)
            if is_empty(coerced):
                raise ConfigurationError(
                    f"default {default!r:.80} is empty; give a memory that says something, "
                    "or no default"
                )
            self.default_factory = lambda _config: coerced
        self.query_model = query_model
        self._query_writer = QueryWriter(query_model) if query_model is not None else None
        self.query_limit = query_limit
        self.phases = list(phases or [])
        self.phase_settings = dict(instructions=instructions, method=method)
        self.template = NamespaceTemplate(namespace)
        self._store = store
        self._engines = EnginesByStore(
            EngineConfig(namespace=self.template, default_tenant=default_tenant)
        )
        self.namespace = _Namespace(self)

    # -- where ------------------------------------------------------------------------------

    @property
    def store(self) -> BaseStore:
        """The store: given, else the running graph's. As in LangMem, the first
        graph store found is kept, so ``search`` works after the graph ran."""
        store = self._store or graph_store()
        if store is None:
            raise ConfigurationError(
                "the memory store manager has no store: create it with store=..., or call "
                "it inside a graph compiled with a store first"
            )
        self._store = store
        return store

    def _engine_for(self, config: RunnableConfig | None) -> MemoryEngine:
        store = self._store or getattr(config_runtime(config), "store", None) or self.store
        self._store = store
        return self._engines.get(store)

    def get_namespace(self, config: RunnableConfig | None = None) -> tuple[str, ...]:
        """The namespace this manager reads and writes for ``config``'s user."""
        return self.namespace(config)

    # -- the run ------------------------------------------------------------------------------

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Manage the user's memories after ``{"messages", "max_steps"?}``; returns
        the puts made (``namespace``, ``key``, ``value``): a list (LangMem's
        shape) whose ``usage`` is the run's
        :class:`~langmem_ext.model_calls.usage.TokenUsage`."""
        config = current_config(config)
        engine = self._engine_for(config)
        usage = TokenUsage()
        puts = engine.run(self._steps(engine, input, config, usage), "memory_store_manager")
        return WithUsage(puts, usage)

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Async :meth:`invoke`."""
        config = current_config(config)
        engine = self._engine_for(config)
        usage = TokenUsage()
        steps = self._steps(engine, input, config, usage)
        return WithUsage(await engine.arun(steps, "memory_store_manager"), usage)

    async def __call__(self, messages: Sequence[Any]) -> list[dict[str, Any]]:
        return await self.ainvoke({"messages": messages})

    def _steps(
        self,
        engine: MemoryEngine,
        input: dict[str, Any],
        config: RunnableConfig,
        usage: TokenUsage,
    ) -> Operation[list[dict[str, Any]]]:
        if not isinstance(input, dict) or "messages" not in input:
            raise ConfigurationError(
                f"a memory store manager takes {{'messages': [...]}}, got {type(input).__name__}"
            )
        env = engine.env(config)
        user = env.layer("user")
        messages = list(convert_to_messages(input["messages"]))
        queries = yield from self._queries(messages, usage)
        results = yield Batch(
            [
                engine.store_search_op(user.ns, query=q, limit=self.query_limit)
                for q in dict.fromkeys(queries)
            ]
        )
        found = _best(results, user.ns, self.query_limit)
        # A damaged item is never shown to the model (nor changed): see engine.decode.
        records = {i.key: r for i in found if not (r := env.record(i, user)).damaged}
        default: Note | None = None
        if not records and self.default_factory is not None:
            [taken] = yield Batch([GetOp(user.ns, DEFAULT_KEY)])
            if taken is None:
                default = self._default_note(env, config)
                records[default.id] = default
            elif not (record := env.record(taken, user)).damaged:
                records[record.id] = record  # the default memory, written by an earlier run
        existing = [(r.id, *self._shown(r)) for r in records.values()]
        extracted = yield from self.manager.steps(
            {"messages": messages, "existing": existing, "max_steps": input.get("max_steps")},
            config,
            usage,
        )
        for phase in self.phases:
            extracted = yield from self._phase(phase, messages, extracted, config, usage)
        return (yield from apply_changes(env, records, extracted, default, self._shown))

    def _queries(self, messages: list[Any], usage: TokenUsage) -> Operation[list[str]]:
        """What to search for: a query model's queries, else the latest messages
        in windows of 1, 2, 4… (at least one, whatever ``query_limit``)."""
        if self._query_writer is not None:
            asked = yield from self._query_writer.queries(messages, usage)
            if asked:
                return asked
        n = len(messages)
        windows = [messages[n - min(n, 1 << i) :] for i in range(max(1, self.query_limit // 4))]
        return [conversation(w) for w in windows if w] or [""]

    def _shown(self, record: MemoryRecord) -> tuple[str, Any]:
        """How an item is shown to the model: its kind and content as a schema
        would hold them (a tool's text note or a fact as a ``Memory``)."""
        names = {s.__name__ for s in self.schemas}
        if record.kind in names and isinstance(record.content, dict):
            return record.kind, record.content
        if "Memory" in names:
            return "Memory", {"content": record.text}
        return record.kind, record.content

    def _default_note(self, env: Any, config: RunnableConfig) -> Note:
        """The default memory of a user without memories (written with the run's
        other changes, so a failed run leaves none)."""
        value = self._coerce_default(self.default_factory(config))  # type: ignore[misc]
        note = Note(
            **add_fields(env, value.model_dump(mode="json"), None, "global", None),
            stored_kind=type(value).__name__,
        )
        note.id = DEFAULT_KEY
        return note

    def _phase(
        self,
        phase: MemoryPhase,
        messages: list[Any],
        extracted: list[ExtractedMemory],
        config: RunnableConfig,
        usage: TokenUsage,
    ) -> Operation[list[ExtractedMemory]]:
        manager = MemoryManager(
            self.manager.model,
            schemas=self.schemas,
            instructions=phase.get(
                "instructions",
                "You are a memory manager. Deduplicate, consolidate, and enrich these memories.",
            ),
            enable_inserts=phase.get("enable_inserts", True),
            enable_deletes=phase.get("enable_deletes", True),
            method=self.phase_settings["method"],  # type: ignore[arg-type]
            max_tokens=self.manager.max_tokens,
            timeout=self.manager.timeout,
        )
        current = [m for m in extracted if not isinstance(m.content, RemoveDoc)]
        removed = {m.id: m for m in extracted if isinstance(m.content, RemoveDoc)}
        more = yield from manager.steps(
            {
                "messages": messages if phase.get("include_messages") else [],
                "existing": [(m.id, m.content) for m in current],
            },
            config,
            usage,
        )
        return [*more, *(m for i, m in removed.items() if i not in {x.id for x in more})]

    def _coerce_default(self, default: Any) -> BaseModel:
        if isinstance(default, BaseModel):
            return default
        if isinstance(default, str) and self.schemas == (Memory,):
            return Memory(content=default)
        if isinstance(default, dict):
            for schema in self.schemas:
                try:
                    return schema(**default)
                except Exception:
                    continue
        raise ConfigurationError(
            f"the default {default!r} matches none of the schemas "
            f"{[s.__name__ for s in self.schemas]}; give an instance of one of them"
        )

    # -- LangMem's helpers --------------------------------------------------------------------

    def search(
        self,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        config: RunnableConfig | None = None,
    ) -> list[SearchItem]:
        """Search the user's memories (the default item when there is none)."""
        ns = self.get_namespace(config)
        items = self.store.search(
            ns, query=query, filter=filter, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )
        return items or self._default_items(ns, config)

    async def asearch(
        self,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        config: RunnableConfig | None = None,
    ) -> list[SearchItem]:
        """Async :meth:`search`."""
        ns = self.get_namespace(config)
        items = await self.store.asearch(
            ns, query=query, filter=filter, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )
        return items or self._default_items(ns, config)

    def _default_items(self, ns: tuple[str, ...], config: RunnableConfig | None) -> list[Any]:
        if self.default_factory is None:
            return []
        value = self._coerce_default(self.default_factory(current_config(config)))
        now = datetime.now(timezone.utc)
        dumped = {"kind": type(value).__name__, "content": value.model_dump(mode="json")}
        return [SearchItem(ns, DEFAULT_KEY, dumped, now, now)]

    def get(
        self, key: str, *, refresh_ttl: bool | None = None, config: RunnableConfig | None = None
    ) -> Item | None:
        """One item of the user's memories by key."""
        return self.store.get(self.get_namespace(config), key, refresh_ttl=refresh_ttl)

    async def aget(
        self, key: str, *, refresh_ttl: bool | None = None, config: RunnableConfig | None = None
    ) -> Item | None:
        """Async :meth:`get`."""
        return await self.store.aget(self.get_namespace(config), key, refresh_ttl=refresh_ttl)

    def put(
        self,
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
        config: RunnableConfig | None = None,
    ) -> None:
        """Store an item in the user's namespace (as LangMem's ``put``)."""
        self.store.put(self.get_namespace(config), key, value, index=index, ttl=ttl)

    async def aput(
        self,
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
        config: RunnableConfig | None = None,
    ) -> None:
        """Async :meth:`put`."""
        await self.store.aput(self.get_namespace(config), key, value, index=index, ttl=ttl)

    def delete(self, key: str, config: RunnableConfig | None = None) -> None:
        """Delete an item of the user's memories (recorded as an audit event)."""
        engine = self._engine_for(current_config(config))
        engine.delete(current_config(config), key)

    async def adelete(self, key: str, config: RunnableConfig | None = None) -> None:
        """Async :meth:`delete`."""
        engine = self._engine_for(current_config(config))
        await engine.adelete(current_config(config), key)


def _best(results: list[list[Any]], ns: tuple[str, ...], limit: int) -> list[Any]:
    """The best ``limit`` items of several searches, each once, from ``ns`` itself."""
    seen: dict[str, Any] = {}
    for items in results:
        for item in items:
            if tuple(item.namespace) != ns:
                continue
            best = seen.get(item.key)
            if best is None or (item.score or 0) > (best.score or 0):
                seen[item.key] = item
    ranked = sorted(seen.values(), key=lambda i: i.score if i.score is not None else -1e9)
    return ranked[::-1][:limit]


def create_memory_store_manager(
    model: str | BaseChatModel,
    /,
    *,
    schemas: Sequence[type[BaseModel]] | None = None,
    instructions: str = MEMORY_INSTRUCTIONS,
    default: str | dict[str, Any] | BaseModel | None = None,
    default_factory: Callable[[RunnableConfig], Any] | None = None,
    enable_inserts: bool = True,
    enable_deletes: bool = False,
    query_model: str | BaseChatModel | None = None,
    query_limit: int = 5,
    namespace: tuple[str, ...] = DEFAULT_NAMESPACE,
    store: BaseStore | None = None,
    phases: list[MemoryPhase] | None = None,
    default_tenant: str | None = None,
    method: Method = "auto",
) -> MemoryStoreManager:
    """LangMem's ``create_memory_store_manager``: memories kept up to date in the store.

    Args:
        model: chat model or ``"provider:model"`` string.
        schemas: pydantic models of the memories (default: free-text ``Memory``).
        instructions: how to extract and organise memories.
        default: a memory written under key ``"default"`` when the user has
            none yet (e.g. a starting profile).
        default_factory: a function of the config giving that memory instead.
        enable_inserts: the model may add memories.
        enable_deletes: the model may remove memories (updates are always allowed).
        query_model: a model that writes the search queries (named tool choice).
        query_limit: how many existing memories the model sees (at least 1).
        namespace: the user's memory namespace template; use the same one as
            the memory tools and the memory prompt.
        store: the store; default: the running graph's.
        phases: extra consolidation passes.
        default_tenant: tenant of runs without authentication.
        method: call shape, see :func:`create_memory_manager`.

    Returns:
        A runnable: ``invoke({"messages": ...}, config)`` returns the puts made.
    """
    return MemoryStoreManager(
        model,
        schemas=schemas,
        default=default,
        default_factory=default_factory,
        instructions=instructions,
        enable_inserts=enable_inserts,
        enable_deletes=enable_deletes,
        query_model=query_model,
        query_limit=query_limit,
        namespace=namespace,
        store=store,
        phases=phases,
        default_tenant=default_tenant,
        method=method,
    )
