"""Put langmem_ext's stores where LangGraph's test modules import LangGraph's.

Imported by each suite's ``conftest.py`` before pytest imports the test
module, so ``from langgraph.store.postgres import PostgresStore`` (and the
in-memory and SQLite equivalents) in LangGraph's unchanged tests yield the
classes below: ours, in vector mode (plain cosine scores, as LangGraph's
stores rank), plus the two private members LangGraph's fixtures touch
(``MIGRATIONS``, ``_cursor()``; the tests that use ``_cursor()`` on
LangGraph's own ``store`` table fail, which the report lists).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import AsyncIterator, Iterator
from typing import Any

from psycopg.rows import dict_row

from langmem_ext import AsyncSqliteStore, SQLiteStore
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from langmem_ext.stores.postgres._schema import MIGRATIONS
from langmem_ext.stores.sqlite.schema import MIGRATIONS as SQLITE_MIGRATIONS

_STATEMENTS = tuple(stmt for version in MIGRATIONS for stmt in version)
# LangGraph's TTL tests backdate rows through ``_cursor()`` in LangGraph's
# ``store`` table; this updatable view maps those columns onto ours, so the
# tests check our TTL behaviour instead of failing on a missing table.
_STORE_VIEW = (
    "CREATE OR REPLACE VIEW store AS SELECT prefix, key, value, created_at, updated_at, "
    "expires_at, ttl_minutes FROM lmx_items"
)


def _vector_mode(kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs.get("index") and kwargs["index"].get("embed") is not None:
        kwargs.setdefault("search_mode", "vector")
    return kwargs


class VectorPostgresStore(PostgresStore):
    MIGRATIONS = _STATEMENTS

    def __init__(self, conn: Any, **kwargs: Any) -> None:
        super().__init__(conn, **_vector_mode(kwargs))

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(_STORE_VIEW)
            yield cur


class VectorAsyncPostgresStore(AsyncPostgresStore):
    MIGRATIONS = _STATEMENTS

    def __init__(self, conn: Any, **kwargs: Any) -> None:
        super().__init__(conn, **_vector_mode(kwargs))

    @contextlib.asynccontextmanager
    async def _cursor(self) -> AsyncIterator[Any]:
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(_STORE_VIEW)
            yield cur


class VectorSQLiteStore(SQLiteStore):
    """LangGraph's ``InMemoryStore(index=...)`` and ``SqliteStore(conn)``."""

    MIGRATIONS = tuple(stmt for version in SQLITE_MIGRATIONS for stmt in version)

    def __init__(self, conn: Any = ":memory:", **kwargs: Any) -> None:
        super().__init__(conn, **_vector_mode(kwargs))


class VectorAsyncSQLiteStore(AsyncSqliteStore):
    """LangGraph's ``AsyncSqliteStore``: ours, in vector mode (nothing added)."""

    MIGRATIONS = VectorSQLiteStore.MIGRATIONS

    def __init__(self, conn: Any = ":memory:", **kwargs: Any) -> None:
        super().__init__(conn, **_vector_mode(kwargs))


#: Every module a test may import a LangGraph store from: the packages and the
#: modules that define the classes (``from langgraph.store.sqlite.aio import
#: AsyncSqliteStore`` as well as ``from langgraph.store.sqlite import ...``).
MODULES = (
    "langgraph.store.memory",
    "langgraph.store.sqlite",
    "langgraph.store.sqlite.base",
    "langgraph.store.sqlite.aio",
    "langgraph.store.postgres",
    "langgraph.store.postgres.base",
    "langgraph.store.postgres.aio",
)
#: LangGraph's store classes, by name, and ours in their place.
OURS: dict[str, type] = {
    "InMemoryStore": VectorSQLiteStore,
    "SqliteStore": VectorSQLiteStore,
    "AsyncSqliteStore": VectorAsyncSQLiteStore,
    "PostgresStore": VectorPostgresStore,
    "AsyncPostgresStore": VectorAsyncPostgresStore,
}
#: LangGraph's own classes (id -> the class and its name), to find any left in
#: a test module.
ORIGINALS: dict[int, tuple[type, str]] = {}


def install() -> None:
    """Put our classes under every name and module LangGraph exports its stores from."""
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, ours in OURS.items():
            original = module.__dict__.get(attr)
            if isinstance(original, type) and original is not ours:
                label = f"{original.__module__}.{original.__qualname__}"
                ORIGINALS[id(original)] = (original, label)
                setattr(module, attr, ours)


def unreplaced(module: types.ModuleType) -> list[str]:
    """LangGraph store classes ``module`` holds (imported before :func:`install`,
    or from a path it does not cover), as ``name (LangGraph's module.Class)``."""
    return [
        f"{name} is {ORIGINALS[id(value)][1]}"
        for name, value in vars(module).items()
        if isinstance(value, type) and ORIGINALS.get(id(value), (None,))[0] is value
    ]


def stub_missing() -> None:
    """What the test modules import but this environment may lack."""
    try:
        import pytest_mock  # noqa: F401
    except ImportError:
        # Only the deselected AsyncBatchedBaseStore tests use it; the module
        # imports it at the top.
        stub = types.ModuleType("pytest_mock")
        stub.MockerFixture = object  # type: ignore[attr-defined]
        sys.modules["pytest_mock"] = stub
