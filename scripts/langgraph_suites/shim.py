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
import sys
import types
from collections.abc import AsyncIterator, Iterator
from typing import Any

import langgraph.store.memory
import langgraph.store.postgres
import langgraph.store.sqlite
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


def install() -> None:
    langgraph.store.postgres.PostgresStore = VectorPostgresStore  # type: ignore[misc]
    langgraph.store.postgres.AsyncPostgresStore = VectorAsyncPostgresStore  # type: ignore[misc]
    langgraph.store.memory.InMemoryStore = VectorSQLiteStore  # type: ignore[misc]
    langgraph.store.sqlite.SqliteStore = VectorSQLiteStore  # type: ignore[misc]
    langgraph.store.sqlite.AsyncSqliteStore = VectorAsyncSQLiteStore  # type: ignore[misc]


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
