"""Fixtures for the surfaces tests: stores with a deterministic embedder."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore
from tests.embeddings import WordEmbeddings


def sqlite_store() -> SQLiteStore:
    return SQLiteStore(
        ":memory:", index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    )


def memory_store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]})


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    s = sqlite_store()
    yield s
    s.close()


@pytest.fixture(params=["sqlite", "inmemory"])
def any_store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    """Our store and LangGraph's InMemoryStore (what LangMem users have)."""
    s = sqlite_store() if request.param == "sqlite" else memory_store()
    yield s
    if isinstance(s, SQLiteStore):
        s.close()


@pytest.fixture(autouse=True)
def _quiet_deprecations() -> Iterator[None]:
    # create_react_agent is deprecated in LangGraph 1.x but still what many use.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*create_react_agent.*")
        yield


def snapshot(store: BaseStore) -> list[tuple]:
    """Everything stored, to assert that a failed call changed nothing."""
    out = []
    for ns in store.list_namespaces(limit=1000):
        for item in store.search(ns, limit=1000):
            if tuple(item.namespace) == tuple(ns):
                out.append((tuple(item.namespace), item.key, item.value))
    return sorted(out, key=repr)


def memories(store: BaseStore) -> list[tuple]:
    """What is stored as memories (the audit trail and other bookkeeping left out)."""
    return [row for row in snapshot(store) if "_meta" not in row[0]]


#: What the engine adds to every value it writes (a tool's note included).
ENGINE_KEYS = frozenset({"kind", "created_at", "updated_at", "created_by"})


def plain(value: dict) -> dict:
    """``value`` without the keys the engine adds: what the caller gave."""
    return {k: v for k, v in value.items() if k not in ENGINE_KEYS}
