"""Open the store a command works on: a SQLite file, or a PostgreSQL URL.

Examples:
    >>> with open_store(":memory:", embed=None) as store:
    ...     type(store).__name__
    'SQLiteStore'
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore

__all__ = ["open_store"]


@contextmanager
def open_store(
    db: str, *, embed: str | None = "local", create: bool = False
) -> Iterator[BaseStore]:
    """The store at ``db`` (``postgresql://...`` → PostgresStore, else a SQLite
    file), set up and closed afterwards; ``embed=None``: keyword search only.

    A SQLite file that does not exist is created only with ``create=True``
    (``--create``): a mistyped ``--db`` is refused, naming the path, instead
    of opening a new, empty store.
    """
    index: Any = {"embed": embed, "fields": ["content"]} if embed else None
    if db.startswith(("postgresql://", "postgres://")):
        from ..stores import PostgresStore

        with PostgresStore.from_conn_string(db, index=index) as store:
            store.setup()
            yield store
        return
    from ..stores import SQLiteStore

    if not create and db != ":memory:" and not db.startswith("file:") and not os.path.exists(db):
        from ..errors import InvalidValueError

        raise InvalidValueError(
            f"no database at {os.path.abspath(db)!r}: check --db (a mistyped path would "
            "start an empty store), or pass --create to make a new one there",
            field="db",
            value=db,
        )
    sqlite = SQLiteStore(db, index=index)
    try:
        sqlite.setup()
        yield sqlite
    finally:
        sqlite.close()
