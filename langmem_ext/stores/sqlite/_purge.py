"""Erasure in a SQLite store: items removed so that their bytes are gone
from the database file, its write-ahead log and the vector segment files.

One write transaction, run with ``PRAGMA secure_delete = ON`` (SQLite then
overwrites deleted content with zeros instead of leaving it in free space),
deletes the items, their vectors, their keyword index entries and the
embedding-cache entries of their texts, writes the caller's record of the
erasure, merges the keyword index into one segment (FTS5 keeps deleted words
in its older segments until a merge) and marks the file ``scrub_pending``.
Either all of that commits or none of it.

The scrub then runs outside the transaction, and again after a crash (on the
next open, or the next erase) until it has finished: the vector segments are
rebuilt from the table and every older segment file is deleted, the WAL is
checkpointed into the file and truncated to zero bytes, and free pages are
released (``incremental_vacuum``, on files created with
``auto_vacuum = INCREMENTAL``, which new stores are).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .._ops import decode_namespace, encode_namespace, texts_to_embed
from .._segment import Segment
from . import _vectors

__all__ = ["collect", "delete", "scrub"]

logger = logging.getLogger("langmem_ext.stores.sqlite")


def _scope_sql(prefixes: Sequence[str]) -> tuple[str, list[Any]]:
    # A namespace and everything below it: the prefix itself or prefix + "." + ...
    # ("/" is the character after "." so the range holds exactly the descendants).
    parts: list[str] = []
    params: list[Any] = []
    for p in prefixes:
        parts.append("(prefix = ? OR (prefix >= ? AND prefix < ?))")
        params += [p, p + ".", p + "/"]
    return " OR ".join(parts), params


def collect(
    conn: sqlite3.Connection,
    prefixes: Sequence[tuple[str, ...]],
    keys: Sequence[tuple[tuple[str, ...], str]],
    fields: Sequence[tuple[str, Any]] | None,
) -> tuple[list[int], dict[tuple[str, ...], int], int, set[bytes]]:
    """What an erase of ``prefixes`` (subtrees) and ``keys`` (single items)
    removes: item ids, items per namespace, vectors, and the hashes of the
    texts that were embedded for them."""
    rows: list[tuple[int, str, str]] = []
    if prefixes:
        where, params = _scope_sql([encode_namespace(p) for p in prefixes])
        rows += conn.execute(
            f"SELECT id, prefix, value FROM items WHERE {where}", params
        ).fetchall()
    if keys:
        rows += conn.execute(
            "SELECT i.id, i.prefix, i.value FROM items i JOIN json_each(?) j "
            "ON i.prefix = json_extract(j.value, '$[0]') AND i.key = json_extract(j.value, '$[1]')",
            [json.dumps([[encode_namespace(ns), k] for ns, k in keys])],
        ).fetchall()
    seen: dict[int, tuple[str, str]] = {i: (p, v) for i, p, v in rows}
    ids = sorted(seen)
    per_ns: dict[tuple[str, ...], int] = {}
    digests: set[bytes] = set()
    paths = list(fields) if fields is not None else [("$", "$")]
    for prefix, value in seen.values():
        ns = decode_namespace(prefix)
        per_ns[ns] = per_ns.get(ns, 0) + 1
        try:
            doc = json.loads(value)
        except ValueError:
            continue
        for _, text in texts_to_embed(doc, None, paths):
            digests.add(_digest(text))
    n_vec = 0
    if ids:
        n_vec = conn.execute(
            "SELECT count(*) FROM vectors WHERE item_id IN (SELECT value FROM json_each(?))",
            [json.dumps(ids)],
        ).fetchone()[0]
    return ids, per_ns, int(n_vec), digests


def _digest(text: str) -> bytes:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).digest()


def cache_entries(conn: sqlite3.Connection, digests: Iterable[bytes]) -> int:
    """Embedding-cache rows an erase removes: the documents' texts and every query."""
    hexes = json.dumps(sorted(d.hex() for d in digests))
    row = conn.execute(
        "SELECT count(*) FROM embedding_cache WHERE kind = 'query' "
        "OR (kind = 'doc' AND hash IN (SELECT value FROM json_each(?)))",
        [hexes],
    ).fetchone()
    return int(row[0])


def delete(conn: sqlite3.Connection, ids: list[int], digests: set[bytes]) -> None:
    """Delete the items, their vectors, keyword entries and cache entries, in
    the caller's transaction (which runs with ``secure_delete`` on)."""
    chunk = json.dumps(ids)
    conn.execute("DELETE FROM vectors WHERE item_id IN (SELECT value FROM json_each(?))", [chunk])
    conn.execute("DELETE FROM items_fts WHERE rowid IN (SELECT value FROM json_each(?))", [chunk])
    conn.execute("DELETE FROM items WHERE id IN (SELECT value FROM json_each(?))", [chunk])
    conn.execute(
        "DELETE FROM embedding_cache WHERE kind = 'query' "
        "OR (kind = 'doc' AND hash IN (SELECT value FROM json_each(?)))",
        [json.dumps(sorted(d.hex() for d in digests))],
    )
    # FTS5 records a deletion as a marker in a new segment; the words stay in
    # the older segments until they are merged into one.
    conn.execute("INSERT INTO items_fts (items_fts) VALUES ('optimize')")
    mark(conn, True)


def mark(conn: sqlite3.Connection, pending: bool) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('scrub_pending', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [1 if pending else 0],
    )


def pending(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT value FROM meta WHERE key = 'scrub_pending'").fetchone()
    return bool(row and int(row[0]))


def scrub(
    conn: sqlite3.Connection,
    write_txn: Callable[[], Any],
    segdir: Path | None,
    memory: dict[str, Segment],
    dims: int | None,
) -> bool:
    """Finish an erase: vector segments rebuilt without the erased vectors and
    older files deleted, WAL checkpointed and truncated, free pages released.
    Returns True when every step completed (the mark is then cleared)."""
    with write_txn() as c:
        _rebuild_segments(c, segdir, memory, dims)
        mark(c, False)
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        conn.execute("PRAGMA incremental_vacuum").fetchall()
        busy2, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        busy = busy or busy2
    if busy:
        # Another connection is reading an older snapshot: its frames stay in
        # the WAL until it ends. Marked again, so the next open finishes it.
        with write_txn() as c:
            mark(c, True)
        logger.warning(
            "erase: the write-ahead log could not be truncated (another connection is "
            "reading); it is retried when the store is next opened or erased from"
        )
        return False
    return True


def _rebuild_segments(
    conn: sqlite3.Connection,
    segdir: Path | None,
    memory: dict[str, Segment],
    dims: int | None,
) -> None:
    """One segment built from the table, published at the current generation,
    every other segment file deleted now (no grace period: the erased vectors
    must not outlive the erase). Other processes reload from the new list at
    their next search (the generation moved)."""
    if dims is None:
        row = conn.execute("SELECT length(embedding) FROM vectors LIMIT 1").fetchone()
        dims = row[0] // 4 if row else None
    gen = int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]) + 1
    conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", [gen])
    names: list[dict[str, Any]] = []
    if dims is not None:
        seg = _vectors._full_segment(conn, dims, gen)
        if len(seg):
            name = f"seg-{gen}-erased.lmxv"
            seg.meta["file"] = name
            if segdir is not None:
                segdir.mkdir(exist_ok=True)
                seg.save(segdir / name)
            else:
                memory[name] = seg
            names.append({"file": name, "rows": len(seg)})
    conn.execute("UPDATE meta SET value = ? WHERE key = 'segments'", [json.dumps(names)])
    conn.execute("UPDATE meta SET value = ? WHERE key = 'segment_gen'", [gen])
    conn.execute("DELETE FROM vector_log")
    conn.execute("UPDATE meta SET value = 0 WHERE key = 'log_size'")
    keep = {n["file"] for n in names}
    for name in list(memory):
        if name not in keep:
            del memory[name]
    if segdir is not None and segdir.exists():
        for p in segdir.iterdir():
            # A writer's temporary file is its own: its publish fails against
            # the new list and it deletes the file itself.
            if p.name not in keep and p.suffix == ".lmxv":
                p.unlink(missing_ok=True)
