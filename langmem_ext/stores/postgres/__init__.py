"""PostgreSQL + pgvector backend: :class:`PostgresStore` (sync) and
:class:`AsyncPostgresStore` (async), one engine (:mod:`._core`) for both."""

from ._core import VectorIndexConfig
from .store import PostgresStore
from .store_async import AsyncPostgresStore

__all__ = ["AsyncPostgresStore", "PostgresStore", "VectorIndexConfig"]
