"""Store backends the contract suite runs against.

A backend is a factory plus the capabilities it claims. Tests needing a
capability the backend lacks are skipped (never silently passed). To add a
backend, append one :class:`Backend` to ``BACKENDS``; its ``make`` receives the
pytest ``request`` (to reach session fixtures such as a database server), a
fresh ``tmp_path``, the ``index`` and ``ttl`` configs, and ``is_async`` (whether
the test will call the ``a``-prefixed methods, for backends with separate sync
and async classes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_ext import AsyncSqliteStore, SQLiteStore

# Capabilities beyond LangGraph's shared contract.
OURS = frozenset(
    {
        "ttl",  # ttl on put, refresh on read, sweeper, fractional minutes
        "ttl_at",  # ttl=<aware datetime>: expiry at a date; naive or past refused
        "modes",  # search(mode="hybrid" | "vector" | "keyword")
        "keyword",  # keyword search without an embedder
        "extended_filters",  # $in $nin $exists $contains, dotted keys
        "string_range",  # $gt etc. on strings
        "created_at_preserved",  # created_at survives updates
        "no_stale_vectors",  # re-put with index=False drops the old vector
        "operator_list_in_errors",  # unknown operator errors list supported ones
        "typed_equality",  # "1" != 1 in filters
        "validates_input",  # non-dict / non-JSON values and ops passed to batch are checked
        "context_fields",  # index["context_fields"]: keyword-only text, weighted lower
        "capabilities",  # stores.capabilities: PagedExport, BulkImport, IndexedFields
    }
)


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[..., BaseStore]  # (request, tmp_path, *, index, ttl, is_async) -> store
    caps: frozenset[str]


def _sqlite_file(
    request: Any, tmp_path: Any, *, index: Any = None, ttl: Any = None, is_async: bool = False
) -> BaseStore:
    store = SQLiteStore(tmp_path / "store.db", index=index, ttl=ttl)
    store.setup()
    return store


def _sqlite_memory(
    request: Any, tmp_path: Any, *, index: Any = None, ttl: Any = None, is_async: bool = False
) -> BaseStore:
    return SQLiteStore(":memory:", index=index, ttl=ttl)


def _inmemory(
    request: Any, tmp_path: Any, *, index: Any = None, ttl: Any = None, is_async: bool = False
) -> BaseStore:
    if ttl is not None:
        pytest.skip("InMemoryStore has no TTL")
    return InMemoryStore(index=index)


def _sqlite_async(
    request: Any, tmp_path: Any, *, index: Any = None, ttl: Any = None, is_async: bool = False
) -> BaseStore:
    # LangGraph's async shape for async tests (awaitable sweeper), else the sync store.
    cls = AsyncSqliteStore if is_async else SQLiteStore
    return cls(tmp_path / "store.db", index=index, ttl=ttl)


BACKENDS: list[Backend] = [
    Backend("sqlite-file", _sqlite_file, OURS),
    Backend("sqlite-async", _sqlite_async, OURS),
    Backend("sqlite-memory", _sqlite_memory, OURS),
    Backend("langgraph-inmemory", _inmemory, frozenset()),
]


def _postgres(
    request: Any, tmp_path: Any, *, index: Any = None, ttl: Any = None, is_async: bool = False
) -> BaseStore:
    from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore

    # A fresh schema per store: isolated tables in one shared server.
    dsn = request.getfixturevalue("pg_server").fresh_schema()
    cls = AsyncPostgresStore if is_async else PostgresStore
    return cls(dsn, index=index, ttl=ttl, pool_config={"min_size": 1, "max_size": 4})


BACKENDS.append(Backend("postgres", _postgres, OURS))


def _postgres_partitioned(
    request: Any, tmp_path: Any, *, index: Any = None, ttl: Any = None, is_async: bool = False
) -> BaseStore:
    """The same store with its items and vectors partitioned by tenant, keyed
    by the namespace's first label (every one gets its partition on first
    write: many partitions, where the engine's layout would put these
    namespaces in one)."""
    from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore

    dsn = request.getfixturevalue("pg_server").fresh_schema()
    cls = AsyncPostgresStore if is_async else PostgresStore
    return cls(
        dsn,
        index=index,
        ttl=ttl,
        pool_config={"min_size": 1, "max_size": 4},
        partition_by_tenant=True,
        tenant_key=("{tenant}",),
    )


BACKENDS.append(Backend("postgres-partitioned", _postgres_partitioned, OURS))
