"""MemoryEngine: typed memories over any LangGraph ``BaseStore``, sync and async.

Its operations are the catalogue's (:mod:`.operations`): each is declared and
written once, as a generator of store requests; ``engine.op(ctx, ...)`` runs it
with ``store.batch`` and ``await engine.aop(ctx, ...)`` with ``store.abatch``.
Every operation is bound here, in one loop (:func:`.runtime.catalogue.bind_all`);
``engine.pyi`` beside this file spells the bound methods out for type checkers
and editors (generated: ``python scripts/engine_stub.py``). The agent tools,
MCP, the command line and the memory browser run the same declarations.
"""

from __future__ import annotations

import threading

from langgraph.store.base import BaseStore

from .operations import OPERATIONS
from .runtime.catalogue import bind_all
from .runtime.config import EngineConfig
from .runtime.engine_base import EngineBase

__all__ = ["EnginesByStore", "MemoryEngine"]


class MemoryEngine(EngineBase):
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


bind_all(MemoryEngine, OPERATIONS.values())


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
