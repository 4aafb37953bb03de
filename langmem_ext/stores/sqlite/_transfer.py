"""Export and import on SQLite beyond the ``BaseStore`` API: pages in id
order (stable while items change, unlike offset paging), with whether each
item is indexed, its TTL and expiry; timestamps restored on import."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from .._ops import decode_namespace, encode_namespace, format_ts
from ._sql import scope_clause

__all__ = ["page", "restore"]


def page(
    conn: sqlite3.Connection, namespace_prefix: tuple[str, ...], after: int, limit: int, now: float
) -> list[tuple[int, dict[str, Any]]]:
    """Up to ``limit`` live items under the prefix with an id above ``after``:
    ``(id, row)`` with the row as an export line holds it."""
    scope, params = scope_clause(encode_namespace(namespace_prefix))
    rows = conn.execute(
        "SELECT i.id, i.prefix, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes, "
        "i.expires_at, EXISTS (SELECT 1 FROM vectors v WHERE v.item_id = i.id) "
        "OR EXISTS (SELECT 1 FROM items_fts f WHERE f.rowid = i.id) "
        f"FROM items i WHERE {scope} AND i.id > ? "
        "AND (i.expires_at IS NULL OR i.expires_at > ?) ORDER BY i.id LIMIT ?",
        [*params, after, now, limit],
    ).fetchall()
    return [
        (
            item_id,
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
        for item_id, prefix, key, value, created, updated, ttl, expires, indexed in rows
    ]


def restore(conn: sqlite3.Connection, rows: Sequence[tuple[tuple[str, ...], str, Any]]) -> None:
    """Set ``created_at``/``updated_at``/``expires_at`` from an export; rows are
    ``(namespace, key, times)`` with ``times`` a dict of datetimes (or None)."""
    conn.executemany(
        "UPDATE items SET created_at = coalesce(?, created_at), "
        "updated_at = coalesce(?, updated_at), "
        "expires_at = CASE WHEN ttl_minutes IS NULL THEN NULL ELSE coalesce(?, expires_at) END "
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
