"""Erasure in a PostgreSQL store (see ``PostgresStore.purge``).

One transaction deletes the items (their vectors go by the foreign key), the
embedding-cache entries of their texts and every cached query, writes the
caller's record of the erasure and sets ``scrub_pending`` in ``lmx_meta``.
The scrub then runs outside it (``VACUUM`` cannot run in a transaction), and
again on the next ``setup`` or erase after a crash until it has finished:

* ``VACUUM (FULL)`` of the item, vector and cache tables: each is written
  anew from its live rows, with its indexes, and the old files are deleted.
  A plain ``VACUUM`` is not enough: it frees a dead row's space but does not
  zero it (measured: 323 copies of an erased user's word still in the item
  table's file after ``VACUUM``, none after ``VACUUM (FULL)``), and the GIN
  keyword index keeps the words of deleted rows;
* ``CHECKPOINT`` (when the role may), so the pages on disk are the new ones.

What stays outside the database's data files: the write-ahead log segments
that held the inserts until they are recycled, WAL archives, base backups and
replicas' own copies (the replicas replay the deletes and the vacuum). The
documentation's erasure section says what an operator does about each.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from .._ops import decode_namespace, encode_namespace, texts_to_embed
from ._steps import Exec, Steps

__all__ = ["collect_steps", "delete_steps", "mark_steps", "pending_steps", "scrub_steps"]

_ITEMS = "SELECT i.id, i.prefix, i.value::text FROM lmx_items i WHERE {where}"


def _scope(prefixes: Sequence[tuple[str, ...]]) -> tuple[str, list[Any]]:
    parts, params = [], []
    for ns in prefixes:
        p = encode_namespace(ns)
        parts.append(
            '(i.prefix = %s COLLATE "C" OR (i.prefix >= %s COLLATE "C" '
            'AND i.prefix < %s COLLATE "C"))'
        )
        params += [p, p + ".", p + "/"]
    return " OR ".join(parts), params


def collect_steps(
    prefixes: Sequence[tuple[str, ...]],
    keys: Sequence[tuple[tuple[str, ...], str]],
    fields: Sequence[tuple[str, Any]] | None,
    lock: bool,
) -> Steps:
    """``(ids, items per namespace, vectors, text hashes, cache entries)`` of an
    erase; ``lock`` takes the rows' locks (``FOR UPDATE``) for the delete."""
    rows: list[Any] = []
    suffix = " FOR UPDATE" if lock else ""
    if prefixes:
        where, params = _scope(prefixes)
        rows += yield Exec(_ITEMS.format(where=where) + suffix, params, fetch=True, prepare=False)
    if keys:
        rows += yield Exec(
            "SELECT i.id, i.prefix, i.value::text FROM lmx_items i "
            "JOIN unnest(%s::text[], %s::text[]) AS d(prefix, key) "
            'ON i.prefix = d.prefix COLLATE "C" AND i.key = d.key COLLATE "C"' + suffix,
            [[encode_namespace(ns) for ns, _ in keys], [k for _, k in keys]],
            fetch=True,
            prepare=False,
        )
    seen = {int(i): (p, v) for i, p, v in rows}
    per_ns: dict[tuple[str, ...], int] = {}
    digests: set[bytes] = set()
    paths = list(fields) if fields is not None else [("$", "$")]
    for prefix, value in seen.values():
        ns = decode_namespace(prefix)
        per_ns[ns] = per_ns.get(ns, 0) + 1
        for _, text in texts_to_embed(json.loads(value), None, paths):
            digests.add(hashlib.sha256(text.encode("utf-8")).digest())
    ids = sorted(seen)
    n_vec = 0
    if ids:
        r = yield Exec(
            "SELECT count(*) FROM lmx_vectors WHERE item_id = ANY(%s::bigint[])", [ids], fetch=True
        )
        n_vec = int(r[0][0])
    r = yield Exec(
        "SELECT count(*) FROM lmx_embedding_cache WHERE kind = 'query' "
        "OR (kind = 'doc' AND hash = ANY(%s::bytea[]))",
        [sorted(digests)],
        fetch=True,
    )
    return ids, per_ns, n_vec, digests, int(r[0][0])


def delete_steps(ids: list[int], digests: set[bytes]) -> Steps:
    if ids:
        yield Exec("DELETE FROM lmx_items WHERE id = ANY(%s::bigint[])", [ids])
        # A rebuild in progress (reindex) holds new-space vectors of its own.
        rebuilding = yield Exec("SELECT to_regclass('lmx_vectors_next') IS NOT NULL", fetch=True)
        if rebuilding[0][0]:
            yield Exec("DELETE FROM lmx_vectors_next WHERE item_id = ANY(%s::bigint[])", [ids])
            yield Exec("DELETE FROM lmx_reindex_done WHERE item_id = ANY(%s::bigint[])", [ids])
    yield Exec(
        "DELETE FROM lmx_embedding_cache WHERE kind = 'query' "
        "OR (kind = 'doc' AND hash = ANY(%s::bytea[]))",
        [sorted(digests)],
    )
    yield from mark_steps(True)
    return None


def mark_steps(pending: bool) -> Steps:
    yield Exec(
        "INSERT INTO lmx_meta (key, value) VALUES ('scrub_pending', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        ["1" if pending else "0"],
    )
    return None


def pending_steps() -> Steps:
    rows = yield Exec("SELECT value FROM lmx_meta WHERE key = 'scrub_pending'", fetch=True)
    return bool(rows and rows[0][0] == "1")


def scrub_steps(rewrite: bool = True) -> Steps:
    """Run in autocommit mode (each statement its own transaction).

    ``rewrite`` (the default) is ``VACUUM FULL``: the tables and all their
    indexes are written anew from the live rows and the old files deleted, so
    no byte of a deleted row is left in a data file; it holds an exclusive lock
    on each table while it is copied. Without it, a plain ``VACUUM`` (no lock)
    frees the space but PostgreSQL does not zero it: the bytes stay in the
    file until new rows overwrite them; the keyword and vector indexes are
    still rebuilt (``REINDEX CONCURRENTLY``), since they keep the keys of
    deleted rows."""
    tables = "lmx_items, lmx_vectors, lmx_embedding_cache"
    rebuilding = yield Exec("SELECT to_regclass('lmx_vectors_next') IS NOT NULL", fetch=True)
    if rebuilding[0][0]:
        tables += ", lmx_vectors_next"
    if rewrite:
        yield Exec(f"VACUUM (FULL) {tables}")
    else:
        yield Exec(f"VACUUM (INDEX_CLEANUP ON) {tables}")
        rows = yield Exec(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_index x "
            "JOIN pg_class c ON c.oid = x.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
            "WHERE x.indrelid IN ('lmx_items'::regclass, 'lmx_vectors'::regclass) "
            "AND a.amname IN ('gin', 'hnsw') AND c.relkind = 'i'",
            fetch=True,
        )
        for (name,) in rows:
            yield Exec(f"REINDEX INDEX CONCURRENTLY {name}")
    may = yield Exec(
        "SELECT rolsuper OR pg_has_role(current_user, 'pg_checkpoint', 'member') "
        "FROM pg_roles WHERE rolname = current_user",
        fetch=True,
    )
    if may and may[0][0]:
        yield Exec("CHECKPOINT")
    yield from mark_steps(False)
    return None
