"""Export and import on PostgreSQL beyond the ``BaseStore`` API: pages in
namespace and key order (stable while items change, unlike offset paging),
with whether each item is indexed, its TTL and expiry; imports in one
transaction with their timestamps restored (see :mod:`..._import`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import psycopg

from .._import import Write, prepare_units
from .._ops import decode_namespace, encode_namespace, format_ts
from ._config import LSN_QUERY
from ._sql import LIVE, scope_clause
from ._steps import Exec, Steps

__all__ = ["BulkImport", "page_steps", "restore_steps"]


def page_steps(
    namespace_prefix: tuple[str, ...], after: tuple[str, str] | None, limit: int
) -> Steps:
    """Up to ``limit`` live items under the prefix after the ``(prefix, key)``
    cursor ``after``: ``(cursor, row)`` with the row as an export line holds it."""
    prefix = encode_namespace(namespace_prefix)
    scope, params = scope_clause(prefix)
    # One range of the (prefix, key) index; the columns compare bytewise (C).
    end, eparams = ("i.prefix < %s", [prefix + "/"]) if prefix else ("TRUE", [])
    rows = yield Exec(
        "SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes, "
        "i.expires_at, i.tsv IS NOT NULL "
        "OR EXISTS (SELECT 1 FROM lmx_vectors v WHERE v.item_id = i.id) "
        f"FROM lmx_items i WHERE (i.prefix, i.key) > (%s, %s) AND {end} AND {scope} "
        f"AND {LIVE} ORDER BY i.prefix, i.key LIMIT %s",
        [*(after or (prefix, "")), *eparams, *params, limit],
        fetch=True,
    )
    return [
        (
            (prefix, key),
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
        for prefix, key, value, created, updated, ttl, expires, indexed in rows
    ]


def restore_steps(rows: Sequence[tuple[tuple[str, ...], str, Any]]) -> Steps:
    """Set ``created_at``/``updated_at``/``expires_at`` from an export; rows are
    ``(namespace, key, times)`` with ``times`` a dict of datetimes (or None)."""
    yield Exec(
        "UPDATE lmx_items i SET created_at = coalesce(d.c, i.created_at), "
        "updated_at = coalesce(d.u, i.updated_at), "
        # An absolute expiry (no ttl_minutes) was set by the put itself.
        "expires_at = CASE WHEN i.ttl_minutes IS NULL THEN i.expires_at "
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


def _write_steps(core: Any, units: list[tuple[Any, Any]], rows: list[Any]) -> Steps:
    vecs = [v for _, v in units if v is not None]
    yield from core._put_steps([p for p, _ in units], np.concatenate(vecs) if vecs else None)
    yield from restore_steps(rows)


class BulkImport:
    """An import into a PostgreSQL store: one transaction on one connection,
    each write in a savepoint of its own. The partitions of the tenants it
    writes are created before that transaction (in short ones of their own:
    see ``_tenants``), and the primary's WAL position is noted after it
    commits (read-your-writes on the replicas)."""

    def __init__(
        self,
        core: Any,
        connection: Callable[[], AbstractContextManager[psycopg.Connection[Any]]],
        drive: Callable[[Steps, psycopg.Connection[Any]], Any],
        run: Callable[..., Any],
    ) -> None:
        self._core, self._connection, self._drive, self._run = core, connection, drive, run
        self._prefixes: set[str] = set()

    def prepare(self, ops: list[Any]) -> list[tuple[Any, Any]]:
        units = prepare_units(self._core, ops)
        prefixes = {encode_namespace(p.namespace) for p, _ in units if p.value_json is not None}
        if self._core._partitions == "refuse":
            # Refused here, before anything is written: these lines are bad lines.
            wanted = self._core._tenants_wanted(prefixes)
            if wanted:
                self._run(self._core._tenant_steps(wanted, create=False), "an import", False, True)
        self._prefixes |= prefixes
        return units

    @contextmanager
    def session(self) -> Iterator[Write]:
        wanted = self._core._tenants_wanted(self._prefixes)
        if wanted:
            self._run(self._core._tenant_steps(wanted), "an import", True, True)
        drive = self._drive
        try:
            with self._connection() as conn:
                with conn.transaction():

                    def write(units: list[tuple[Any, Any]], rows: list[Any]) -> None:
                        try:
                            with conn.transaction():  # a savepoint
                                drive(_write_steps(self._core, units, rows), conn)
                        except psycopg.Error as e:
                            raise self._core._failed(e, "an import") from e

                    yield write
                replicas = self._core._replicas
                if replicas is not None:
                    replicas.wrote(conn.execute(LSN_QUERY).fetchone()[0])  # type: ignore[index]
        except psycopg.Error as e:
            raise self._core._failed(e, "an import") from e
