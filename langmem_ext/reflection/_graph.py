"""What reflection's agent faces take from the running graph: its store, and
one :class:`~langmem_ext.engine.MemoryEngine` per store.

Example:
    >>> from langmem_ext import SQLiteStore
    >>> engines, store = EnginesByStore(), SQLiteStore()
    >>> engines.get(store) is engines.get(store), graph_store() is None
    (True, True)
"""

from __future__ import annotations

import threading

from langgraph.store.base import BaseStore

from ..engine import EngineConfig, MemoryEngine

__all__ = ["EnginesByStore", "graph_store"]


def graph_store() -> BaseStore | None:
    """The store of the graph running this code, or None outside a graph."""
    try:
        from langgraph.config import get_store

        return get_store()
    except RuntimeError:
        return None


class EnginesByStore:
    """One engine per store (by identity), built on first use; thread-safe."""

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
