"""A SQLite that can load extensions, for LangGraph's own ``SqliteStore``.

LangGraph's SQLite store loads the ``sqlite-vec`` extension for vector search,
and its CI runs on a Python whose ``sqlite3`` allows that. Many Python builds
(this project's machine's included) do not: there LangGraph's vector tests
would fail on LangGraph's own store and flatter ours. ``pysqlite3`` (the
``pysqlite3-binary`` wheel, in the ``test`` extra) bundles a SQLite that can;
it is put in place of the standard ``sqlite3`` module before LangGraph's stores
or ``aiosqlite`` import it, as our store benchmark does for the same reason.
"""

from __future__ import annotations

import sys


def loadable_sqlite() -> str:
    """Make ``import sqlite3`` give a module that can load ``sqlite-vec``;
    returns which module that is (``"sqlite3"`` when the standard one can)."""
    early = [m for m in ("langgraph.store.sqlite.base", "aiosqlite") if m in sys.modules]
    if early:
        raise RuntimeError(
            f"{', '.join(early)} imported sqlite3 before the suite could replace it; "
            "run the suite through scripts/langgraph-suites"
        )
    import sqlite3

    if _can_load(sqlite3):
        return "sqlite3"
    try:
        import sqlite_vec  # noqa: F401
        from pysqlite3 import dbapi2
    except ImportError as e:
        raise RuntimeError(
            "LangGraph's SqliteStore needs a SQLite that can load the sqlite-vec "
            "extension and this Python's cannot: install the 'pysqlite3-binary' and "
            "'sqlite-vec' packages (pip install -e '.[test]')"
        ) from e
    sys.modules["sqlite3"] = dbapi2
    sys.modules["sqlite3.dbapi2"] = dbapi2
    return "pysqlite3"


def which_sqlite() -> str | None:
    """Which SQLite module :func:`loadable_sqlite` would use (``"sqlite3"`` or
    ``"pysqlite3"``), or None when neither can load ``sqlite-vec``; changes nothing."""
    import importlib.util
    import sqlite3

    if importlib.util.find_spec("sqlite_vec") is None:
        return None
    if _can_load(sqlite3):
        return "sqlite3"
    return "pysqlite3" if importlib.util.find_spec("pysqlite3") is not None else None


def _can_load(module: object) -> bool:
    return hasattr(getattr(module, "Connection", None), "enable_load_extension")
