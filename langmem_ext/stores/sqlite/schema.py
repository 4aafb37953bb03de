"""SQLiteStore schema: append-only migrations, each applied in one transaction
together with its record in ``store_migrations``."""

from __future__ import annotations

import functools
import hashlib
import sqlite3

import numpy as np

__all__ = ["MIGRATIONS", "migrate", "ns_token", "ns_tokens", "register_functions"]

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE items (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            prefix TEXT NOT NULL,           -- namespace labels joined by '.'
            key TEXT NOT NULL,
            value TEXT NOT NULL,            -- JSON object
            created_at TEXT NOT NULL,       -- ISO-8601 UTC, microseconds
            updated_at TEXT NOT NULL,
            expires_at REAL,                -- unix seconds; NULL: never
            ttl_minutes REAL,               -- for refresh on read; fractional allowed
            UNIQUE (prefix, key)
        )""",
        "CREATE INDEX items_updated ON items (prefix, updated_at)",
        "CREATE INDEX items_expires ON items (expires_at) WHERE expires_at IS NOT NULL",
        """CREATE TABLE vectors (
            item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
            field TEXT NOT NULL,
            embedding BLOB NOT NULL,        -- float32, little endian
            PRIMARY KEY (item_id, field)
        ) WITHOUT ROWID""",
        # rowid = items.id. Porter stemming so 'hiking' finds 'hike'.
        """CREATE VIRTUAL TABLE items_fts USING fts5 (
            text, tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
        """CREATE TABLE embedding_cache (
            model TEXT NOT NULL,
            kind TEXT NOT NULL,
            hash TEXT NOT NULL,             -- sha256 of the text, hex
            embedding BLOB NOT NULL,
            PRIMARY KEY (model, kind, hash)
        ) WITHOUT ROWID""",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value)",
        # Bumped by every write; a process reloads its vector cache when it moved.
        "INSERT INTO meta (key, value) VALUES ('generation', 0)",
    ],
    [
        # A second, lower-weighted column for keyword-only context
        # (index["context_fields"]), e.g. the turns around a dialog turn.
        "ALTER TABLE items_fts RENAME TO items_fts_v0",
        """CREATE VIRTUAL TABLE items_fts USING fts5 (
            text, context, tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
        "INSERT INTO items_fts (rowid, text, context) SELECT rowid, text, '' FROM items_fts_v0",
        "DROP TABLE items_fts_v0",
    ],
    [
        # Vectors are searched from memory-mapped segment files beside the
        # database (derived data, rebuilt from `vectors` when missing); the log
        # names the items whose vectors changed since the newest segment.
        """CREATE TABLE vector_log (
            gen INTEGER PRIMARY KEY,        -- meta.generation of the write
            item_ids TEXT NOT NULL          -- JSON list of the items it changed
        )""",
        "INSERT INTO meta (key, value) VALUES ('segments', '[]')",
        "INSERT INTO meta (key, value) VALUES ('log_size', 0)",
        "INSERT INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(8))))",
        # -1: vectors written before this migration are in no segment yet; the
        # first vector search builds one from the table.
        """INSERT INTO meta (key, value) SELECT 'segment_gen', CASE
            WHEN EXISTS (SELECT 1 FROM vectors) THEN -1
            ELSE (SELECT value FROM meta WHERE key = 'generation') END""",
        # Vectors a release without validation stored with NaN or infinite
        # numbers: dropped (the item keeps its keyword index), they would
        # poison every search that meets them.
        "DELETE FROM vectors WHERE NOT lmx_finite(embedding)",
        # Keyword search scoped by namespace inside FTS5: a third column holds
        # one token per namespace prefix of the item (see ns_tokens), so a
        # query of a small namespace never reads other namespaces' matches.
        "ALTER TABLE items_fts RENAME TO items_fts_v1",
        """CREATE VIRTUAL TABLE items_fts USING fts5 (
            text, context, ns, tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
        """INSERT INTO items_fts (rowid, text, context, ns)
            SELECT f.rowid, f.text, f.context, lmx_ns_tokens(i.prefix)
            FROM items_fts_v1 f JOIN items i ON i.id = f.rowid""",
        "DROP TABLE items_fts_v1",
    ],
]


def ns_token(prefix: str) -> str:
    """FTS5 token of a namespace (labels joined by ``.``): 20 decimal digits
    (the tokenizer and the stemmer leave digits alone) from a 64-bit hash.

    Examples:
        >>> len(ns_token("user.u1")), ns_token("user.u1").isdigit()
        (20, True)
    """
    digest = hashlib.blake2b(prefix.encode("utf-8"), digest_size=8).digest()
    return f"{int.from_bytes(digest, 'little'):020d}"


@functools.lru_cache(maxsize=65_536)
def ns_tokens(prefix: str) -> str:
    """Tokens of a namespace and of each of its ancestors, space-separated."""
    labels = prefix.split(".")
    return " ".join(ns_token(".".join(labels[: i + 1])) for i in range(len(labels)))


def _finite(blob: bytes | None) -> int:
    if not isinstance(blob, bytes) or len(blob) % 4:
        return 0
    return int(bool(np.isfinite(np.frombuffer(blob, dtype="<f4")).all()))


def register_functions(conn: sqlite3.Connection) -> None:
    """SQL functions the migrations and the store use."""
    conn.create_function("lmx_ns_tokens", 1, ns_tokens, deterministic=True)
    conn.create_function("lmx_finite", 1, _finite, deterministic=True)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply pending migrations; returns the schema version. Safe to run from
    several processes at once: each migration takes the write lock first and
    re-checks the version under it."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS store_migrations (v INTEGER PRIMARY KEY, applied_at TEXT)"
    )
    for version, statements in enumerate(MIGRATIONS):
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute("SELECT 1 FROM store_migrations WHERE v = ?", (version,)).fetchone()
            if not done:
                for stmt in statements:
                    conn.execute(stmt)
                conn.execute(
                    "INSERT INTO store_migrations (v, applied_at) VALUES (?, datetime('now'))",
                    (version,),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)
