"""Switching a SQLite store to another embedder while it serves (see
``SQLiteStore.reindex``).

The new vectors are built beside the old ones, in ``vectors_next``, batch by
batch; ``reindex_done`` records each item embedded with the ``updated_at`` it
had then, so a stopped run resumes where it was and an item changed since is
embedded again. Searches keep using ``vectors`` (the old space) throughout;
writes of the process running the rebuild are embedded in both spaces (other
processes' writes are caught up before the switch). The switch is one write
transaction: ``vectors`` takes the new rows, the helper tables are dropped,
``meta.dims`` takes the new length and the vector segments are rebuilt from
the table at the next search.

Which items are embedded: those the store indexes (they have keyword entries
or old vectors); items put with ``index=False`` stay without vectors.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._ops import texts_to_embed

__all__ = [
    "TABLES",
    "drop",
    "embed_puts",
    "missing",
    "prepare",
    "save",
    "save_puts",
    "switch",
    "todo",
]

#: ``vectors_next`` has the schema of ``vectors`` (see ``schema``): it takes its
#: place at the switch.
TABLES = [
    """CREATE TABLE IF NOT EXISTS vectors_next (
        item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
        field TEXT NOT NULL,
        embedding BLOB NOT NULL,
        PRIMARY KEY (item_id, field)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS reindex_done (
        item_id INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
        made TEXT NOT NULL          -- the item's updated_at when it was embedded
    )""",
]

_TODO = (
    "SELECT i.id, i.value, i.updated_at FROM items i "
    "LEFT JOIN reindex_done d ON d.item_id = i.id "
    "WHERE i.id > ? AND (d.item_id IS NULL OR d.made <> i.updated_at) "
    "AND (EXISTS (SELECT 1 FROM items_fts f WHERE f.rowid = i.id) "
    "OR EXISTS (SELECT 1 FROM vectors v WHERE v.item_id = i.id)) "
    "ORDER BY i.id LIMIT ?"
)


def prepare(conn: sqlite3.Connection, target: dict[str, Any]) -> None:
    """Create the helper tables; a rebuild towards another target (dims or
    model) starts over."""
    for sql in TABLES:
        conn.execute(sql)
    row = conn.execute("SELECT value FROM meta WHERE key = 'reindex'").fetchone()
    if row is not None and json.loads(row[0]) != target:
        conn.execute("DELETE FROM vectors_next")
        conn.execute("DELETE FROM reindex_done")
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('reindex', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [json.dumps(target)],
    )


def todo(conn: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, str, str]]:
    """The next items (by id, after ``after``) without a current new vector."""
    return conn.execute(_TODO, [after, limit]).fetchall()


def missing(conn: sqlite3.Connection) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM items i LEFT JOIN reindex_done d ON d.item_id = i.id "
            "WHERE (d.item_id IS NULL OR d.made <> i.updated_at) "
            "AND (EXISTS (SELECT 1 FROM items_fts f WHERE f.rowid = i.id) "
            "OR EXISTS (SELECT 1 FROM vectors v WHERE v.item_id = i.id))"
        ).fetchone()[0]
    )


def texts(
    rows: Sequence[tuple[int, str, str]], fields: Sequence[tuple[str, Any]]
) -> list[tuple[int, str, list[tuple[str, str]]]]:
    out = []
    for item_id, value, made in rows:
        try:
            doc = json.loads(value)
        except ValueError:
            doc = {}
        out.append((item_id, made, texts_to_embed(doc, None, fields)))
    return out


def save(
    conn: sqlite3.Connection,
    batch: Sequence[tuple[int, str, list[tuple[str, str]]]],
    vectors: np.ndarray | None,
) -> int:
    """Store the new vectors of ``batch`` (in the caller's write transaction),
    skipping items changed since they were read; returns how many were kept."""
    current = dict(
        conn.execute(
            "SELECT id, updated_at FROM items WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps([b[0] for b in batch])],
        ).fetchall()
    )
    pos = 0
    rows, done = [], []
    for item_id, made, fields in batch:
        vecs: Any = vectors[pos : pos + len(fields)] if vectors is not None else []
        pos += len(fields)
        if current.get(item_id) != made:
            continue  # changed or deleted meanwhile: the next pass takes it again
        rows += [
            (item_id, label, np.asarray(v, dtype="<f4").tobytes())
            for (label, _), v in zip(fields, vecs, strict=True)
        ]
        done.append((item_id, made))
    ids = json.dumps([d[0] for d in done])
    conn.execute(
        "DELETE FROM vectors_next WHERE item_id IN (SELECT value FROM json_each(?))", [ids]
    )
    conn.executemany("INSERT INTO vectors_next (item_id, field, embedding) VALUES (?, ?, ?)", rows)
    conn.executemany("INSERT OR REPLACE INTO reindex_done (item_id, made) VALUES (?, ?)", done)
    return len(done)


def embed_puts(puts: Sequence[Any], fields: Sequence[tuple[str, Any]], embed: Any) -> Any:
    """The new-space vectors of a write made during a rebuild (embedded before
    its transaction: the embedding cache writes to the file too)."""
    rows = [
        (p, texts_to_embed(json.loads(p.value_json), None, fields))
        for p in puts
        if p.value_json is not None and p.keyword_text is not None
    ]
    all_texts = [t for _, fs in rows for _, t in fs]
    vecs = embed.embed_documents_array(all_texts) if all_texts else None
    return rows, vecs


def save_puts(conn: sqlite3.Connection, embedded: Any) -> None:
    """Store :func:`embed_puts`'s vectors in the write's own transaction, so
    the two spaces never disagree about it."""
    from .._ops import encode_namespace

    rows, vecs = embedded
    batch = []
    for p, fields in rows:
        row = conn.execute(
            "SELECT id, updated_at FROM items WHERE prefix = ? AND key = ?",
            [encode_namespace(p.namespace), p.key],
        ).fetchone()
        batch.append((row[0], row[1], fields))
    save(conn, batch, vecs)


def switch(conn: sqlite3.Connection, dims: int) -> int:
    """The atomic switch (in the caller's write transaction): the new vectors'
    table becomes ``vectors`` (a rename: no row is copied) and the old one is
    dropped; returns how many vectors the store now has."""
    conn.execute("DROP TABLE vectors")
    conn.execute("ALTER TABLE vectors_next RENAME TO vectors")
    n = int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    drop(conn)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('dims', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [dims],
    )
    # Segments are rebuilt from the table at the next search (old files retire).
    conn.execute("UPDATE meta SET value = '[]' WHERE key = 'segments'")
    conn.execute("UPDATE meta SET value = -1 WHERE key = 'segment_gen'")
    conn.execute("DELETE FROM vector_log")
    conn.execute("UPDATE meta SET value = 0 WHERE key = 'log_size'")
    return n


def drop(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS vectors_next")
    conn.execute("DROP TABLE IF EXISTS reindex_done")
    conn.execute("DELETE FROM meta WHERE key = 'reindex'")
