"""The embedded default store: one SQLite file."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
