"""Export and import on SQLite beyond the ``BaseStore`` API: pages in
namespace and key order (stable while items change, unlike offset paging),
with whether each item is indexed, its TTL and expiry; imports in one
transaction with their timestamps restored (see :mod:`..._import`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from ...errors import InvalidValueError
from .._import import Write, prepare_units
from .._ops import decode_namespace, encode_namespace, format_ts, iso_now
from . import _exec, _vectors
from ._sql import scope_clause

__all__ = ["BulkImport", "page", "restore"]


def page(
    conn: sqlite3.Connection,
    namespace_prefix: tuple[str, ...],
    after: tuple[str, str] | None,
    limit: int,
    now: float,
) -> list[tuple[tuple[str, str], dict[str, Any]]]:
    """Up to ``limit`` live items under the prefix after the ``(prefix, key)``
    cursor ``after``: ``(cursor, row)`` with the row as an export line holds it."""
    prefix = encode_namespace(namespace_prefix)
    scope, params = scope_clause(prefix)
    # Written as one range of the (prefix, key) index (the scope's OR alone
    # would sort the whole scope for every page).
    end, eparams = ("i.prefix < ?", [prefix + "/"]) if prefix else ("1", [])
    rows = conn.execute(
        "SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes, "
        "i.expires_at, EXISTS (SELECT 1 FROM vectors v WHERE v.item_id = i.id) "
        "OR EXISTS (SELECT 1 FROM items_fts f WHERE f.rowid = i.id) "
        f"FROM items i WHERE (i.prefix, i.key) > (?, ?) AND {end} AND {scope} "
        "AND (i.expires_at IS NULL OR i.expires_at > ?) ORDER BY i.prefix, i.key LIMIT ?",
        [*(after or (prefix, "")), *eparams, *params, now, limit],
    ).fetchall()
    return [
        (
            (prefix, key),
            {
                "namespace": list(decode_namespace(prefix)),
                "key": key,
                "value": json.loads(value),
                "created_at": created,
                "updated_at": updated,
                "indexed": bool(indexed),
                "ttl": ttl,
                "expires_at": None
                if expires is None
                else format_ts(datetime.fromtimestamp(expires, timezone.utc)),
            },
        )
        for prefix, key, value, created, updated, ttl, expires, indexed in rows
    ]


def restore(conn: sqlite3.Connection, rows: Sequence[tuple[tuple[str, ...], str, Any]]) -> None:
    """Set ``created_at``/``updated_at``/``expires_at`` from an export; rows are
    ``(namespace, key, times)`` with ``times`` a dict of datetimes (or None)."""
    conn.executemany(
        "UPDATE items SET created_at = coalesce(?, created_at), "
        "updated_at = coalesce(?, updated_at), "
        # An absolute expiry (no ttl_minutes) was set by the put itself.
        "expires_at = CASE WHEN ttl_minutes IS NULL THEN expires_at "
        "ELSE coalesce(?, expires_at) END "
        "WHERE prefix = ? AND key = ?",
        [
            (
                _text(t.get("created_at")),
                _text(t.get("updated_at")),
                None if t.get("expires_at") is None else t["expires_at"].timestamp(),
                encode_namespace(ns),
                key,
            )
            for ns, key, t in rows
        ],
    )


def _text(ts: datetime | None) -> str | None:
    return None if ts is None else format_ts(ts)


class BulkImport:
    """An import into a :class:`~langmem_ext.SQLiteStore`: every write in one
    ``BEGIN IMMEDIATE`` transaction, each in a savepoint of its own."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def prepare(self, ops: list[Any]) -> list[tuple[Any, Any]]:
        return prepare_units(self._store, ops)

    @contextmanager
    def session(self) -> Iterator[Write]:
        store = self._store
        changes: dict[int, Any] = {}  # vector changes per item id (None: dropped)
        with store._lock:
            with store._txn(immediate=True) as conn:
                before = _exec.generation(conn)

                def write(units: list[tuple[Any, Any]], rows: list[Any]) -> None:
                    conn.execute("SAVEPOINT lmx_import")
                    try:
                        vectors = {i: v for i, (_, v) in enumerate(units) if v is not None}
                        puts = [p for p, _ in units]
                        cache, dropped = _exec.apply_puts(
                            conn, puts, vectors, iso_now(), time.time()
                        )
                        restore(conn, rows)
                    except BaseException as e:
                        conn.execute("ROLLBACK TO lmx_import")
                        conn.execute("RELEASE lmx_import")
                        if isinstance(e, sqlite3.DataError | OverflowError):
                            # the one item is too big for SQLite, not the file unusable
                            raise InvalidValueError(f"SQLite refused the item ({e})") from e
                        raise
                    conn.execute("RELEASE lmx_import")
                    changes.update(dict.fromkeys(dropped))
                    changes.update(cache)

                yield write
                after = _exec.bump_generation(conn)
                log_size = _vectors.log_changes(conn, after, list(changes))
            cache = {i: c for i, c in changes.items() if c is not None}
            dropped = [i for i, c in changes.items() if c is None]
            store._apply_to_cache(before, after, cache, dropped)
            store._maybe_flush(log_size)
