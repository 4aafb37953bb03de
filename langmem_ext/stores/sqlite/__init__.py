"""The embedded default store: one SQLite file (sync, and LangGraph's async shape)."""

from .store import SQLiteStore
from .store_async import AsyncSqliteStore

__all__ = ["AsyncSqliteStore", "SQLiteStore"]
