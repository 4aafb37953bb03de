"""SQLiteStore schema: append-only migrations, each applied in one transaction
together with its record in ``store_migrations``."""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "migrate"]

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
]


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
