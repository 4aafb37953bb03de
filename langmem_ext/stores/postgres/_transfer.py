"""Export and import on PostgreSQL beyond the ``BaseStore`` API: pages in id
order (stable while items change, unlike offset paging), with whether each
item is indexed, its TTL and expiry; timestamps restored on import."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._ops import decode_namespace, encode_namespace, format_ts
from ._sql import LIVE, scope_clause
from ._steps import Exec, Steps

__all__ = ["page_steps", "restore_steps"]


def page_steps(namespace_prefix: tuple[str, ...], after: int, limit: int) -> Steps:
    """Up to ``limit`` live items under the prefix with an id above ``after``:
    ``(id, row)`` with the row as an export line holds it."""
    scope, params = scope_clause(encode_namespace(namespace_prefix))
    rows = yield Exec(
        "SELECT i.id, i.prefix, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes, "
        "i.expires_at, i.tsv IS NOT NULL "
        "OR EXISTS (SELECT 1 FROM lmx_vectors v WHERE v.item_id = i.id) "
        f"FROM lmx_items i WHERE {scope} AND i.id > %s AND {LIVE} ORDER BY i.id LIMIT %s",
        [*params, after, limit],
        fetch=True,
    )
    return [
        (
            item_id,
            {
                "namespace": list(decode_namespace(prefix)),
                "key": key,
                "value": value,
                "created_at": format_ts(created),
                "updated_at": format_ts(updated),
                "indexed": bool(indexed),
                "ttl": ttl,
                "expires_at": None if expires is None else format_ts(expires),
            },
        )
        for item_id, prefix, key, value, created, updated, ttl, expires, indexed in rows
    ]


def restore_steps(rows: Sequence[tuple[tuple[str, ...], str, Any]]) -> Steps:
    """Set ``created_at``/``updated_at``/``expires_at`` from an export; rows are
    ``(namespace, key, times)`` with ``times`` a dict of datetimes (or None)."""
    yield Exec(
        "UPDATE lmx_items i SET created_at = coalesce(d.c, i.created_at), "
        "updated_at = coalesce(d.u, i.updated_at), "
        "expires_at = CASE WHEN i.ttl_minutes IS NULL THEN NULL "
        "ELSE coalesce(d.e, i.expires_at) END "
        "FROM unnest(%s::text[], %s::text[], %s::timestamptz[], %s::timestamptz[], "
        "%s::timestamptz[]) AS d(prefix, key, c, u, e) "
        'WHERE i.prefix = d.prefix COLLATE "C" AND i.key = d.key COLLATE "C"',
        [
            [encode_namespace(ns) for ns, _, _ in rows],
            [key for _, key, _ in rows],
            [t.get("created_at") for _, _, t in rows],
            [t.get("updated_at") for _, _, t in rows],
            [t.get("expires_at") for _, _, t in rows],
        ],
    )
    return None
