"""PostgresStore schema: append-only, versioned migrations. No I/O here.

Each migration runs in one transaction together with its row in
``lmx_migrations``, after ``pg_advisory_xact_lock`` has been taken, so several
processes calling ``setup()`` at once apply each version exactly once (the
others wait, then see it recorded). Never edit a released migration: append a
new one.

Tables live in the first schema of the connection's ``search_path`` (``public``
by default), so one database can hold several stores, one per schema.
"""

from __future__ import annotations

__all__ = [
    "LOCK_KEY",
    "MAX_SCAN_INDEX_DIMS",
    "MIGRATIONS",
    "TRAIN_LOCK_KEY",
    "cells_index_sql",
    "hnsw_index_sql",
    "scan_index_sql",
]

# pg_advisory_xact_lock key: "lmx" + 1, an arbitrary constant shared by every
# process running these migrations.
LOCK_KEY = 0x6C6D7801
# Taken by the one writer that trains the inverted-file cells (see _ivf).
TRAIN_LOCK_KEY = 0x6C6D7802

MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE IF NOT EXISTS lmx_items (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            prefix text COLLATE "C" NOT NULL,   -- namespace labels joined by '.'
            key text COLLATE "C" NOT NULL,
            value jsonb NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz,             -- NULL: never
            ttl_minutes double precision,       -- kept for refresh on read; fractional allowed
            tsv tsvector,                       -- keyword index of the indexed text
            UNIQUE (prefix, key)
        )""",
        "CREATE INDEX IF NOT EXISTS lmx_items_updated ON lmx_items (prefix, updated_at)",
        "CREATE INDEX IF NOT EXISTS lmx_items_expires ON lmx_items (expires_at) "
        "WHERE expires_at IS NOT NULL",
        "CREATE INDEX IF NOT EXISTS lmx_items_tsv ON lmx_items USING gin (tsv)",
        # The namespace is repeated here so a namespace-scoped vector search is a
        # btree range scan over that namespace's vectors only (no join first).
        """CREATE TABLE IF NOT EXISTS lmx_vectors (
            item_id bigint NOT NULL REFERENCES lmx_items (id) ON DELETE CASCADE,
            field text NOT NULL,
            prefix text COLLATE "C" NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (item_id, field)
        )""",
        "CREATE INDEX IF NOT EXISTS lmx_vectors_prefix ON lmx_vectors (prefix)",
        """CREATE TABLE IF NOT EXISTS lmx_embedding_cache (
            model text NOT NULL,
            kind text NOT NULL,
            hash bytea NOT NULL,                -- sha256 of the text
            embedding real[] NOT NULL,
            PRIMARY KEY (model, kind, hash)
        )""",
        "CREATE TABLE IF NOT EXISTS lmx_meta (key text PRIMARY KEY, value text NOT NULL)",
    ],
    [
        # Rows up to 4 kB stay inline: with the half-precision copy below a
        # 384-dim row is ~2.4 kB, over the default 2 kB target, and an
        # out-of-line (TOASTed) embedding made exact scans ~4x slower.
        # (A store partitioned by tenant sets it on each tenant's table: a
        # partitioned table takes no storage parameters.)
        """DO $$ BEGIN
            IF (SELECT relkind FROM pg_class WHERE oid = 'lmx_vectors'::regclass) = 'r' THEN
                ALTER TABLE lmx_vectors SET (toast_tuple_target = 4080);
            END IF; END $$""",
        # Half-precision copy of each vector, scanned (through the covering
        # index of ``scan_index_sql``) to pick candidates that are then
        # re-ranked with the full-precision ``embedding``; see _vector_search.
        "ALTER TABLE lmx_vectors ADD COLUMN IF NOT EXISTS embedding_half halfvec "
        "GENERATED ALWAYS AS (embedding::halfvec) STORED",
    ],
    [
        # The indexed text is weight A, keyword-only context (index
        # "context_fields") weight D, ranked lower; rows written before
        # context existed hold only indexed text, stored unweighted (D).
        "UPDATE lmx_items SET tsv = setweight(tsv, 'A') WHERE tsv IS NOT NULL",
    ],
    [
        # The half-precision candidate scan of the exact vector path, as
        # functions: their SET clauses steer the planner to the index-only scan
        # of lmx_vectors_scan (it prefers a bitmap scan that visits the heap)
        # for this scan only, so other statements of the same transaction (a
        # keyword search needs bitmap scans of the GIN index) are unaffected.
        # [lo, hi) is the namespace range, ``eq`` the namespace itself and
        # ``dlo`` the start of its descendants (``prefix + '.'``).
        """CREATE OR REPLACE FUNCTION lmx_scan_candidates(
            lo text, hi text, eq text, dlo text, q halfvec, k bigint)
        RETURNS TABLE (item_id bigint, hd double precision)
        LANGUAGE sql STABLE PARALLEL SAFE
        SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off
        AS $$ SELECT v.item_id, v.embedding_half <=> q FROM lmx_vectors v
              WHERE v.prefix >= lo AND v.prefix < hi AND (v.prefix = eq OR v.prefix >= dlo)
              ORDER BY 2 LIMIT k $$""",
        """CREATE OR REPLACE FUNCTION lmx_scan_candidates_all(q halfvec, k bigint)
        RETURNS TABLE (item_id bigint, hd double precision)
        LANGUAGE sql STABLE PARALLEL SAFE
        SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off
        AS $$ SELECT v.item_id, v.embedding_half <=> q FROM lmx_vectors v
              ORDER BY 2 LIMIT k $$""",
        # The planner's row estimate for the vectors of a namespace range
        # (from the table's statistics): how the vector search chooses
        # between its exact path and the HNSW index without counting rows.
        """CREATE OR REPLACE FUNCTION lmx_scope_rows(lo text, hi text)
        RETURNS double precision LANGUAGE plpgsql VOLATILE AS $$
        DECLARE plan json;
        BEGIN
            EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM lmx_vectors '
                           'WHERE prefix >= %L AND prefix < %L', lo, hi) INTO plan;
            RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::double precision;
        END $$""",
        # HNSW indexes of earlier releases indexed full-precision vectors; the
        # index is now built on the half-precision copy (half the memory and
        # I/O, candidates re-ranked in full precision), see hnsw_index_sql.
        """DO $$ DECLARE r record; BEGIN
            FOR r IN SELECT c.relname FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid
                     WHERE x.indrelid = 'lmx_vectors'::regclass
                     AND c.relname ~ '^lmx_vectors_hnsw_[0-9]' LOOP
                EXECUTE format('DROP INDEX %I', r.relname);
            END LOOP; END $$""",
    ],
    [
        # The inverted-file vector index (see _ivf): each vector belongs to the
        # cell of its nearest centroid, -1 until the cells are trained. Cells
        # are assigned by the writer from centroids it holds in memory, so a
        # write costs one small matrix product, not an index walk.
        "ALTER TABLE lmx_vectors ADD COLUMN IF NOT EXISTS cell integer NOT NULL DEFAULT -1",
        """CREATE TABLE IF NOT EXISTS lmx_cells (
            cid integer PRIMARY KEY,
            centroid vector NOT NULL,
            share real NOT NULL     -- the cell's share of the training sample
        )""",
        # The candidates of the probed cells inside a namespace range, read
        # from the covering index of cells_index_sql by an index-only scan
        # (the SET clauses as for lmx_scan_candidates). ``k`` NULL: all of them.
        """CREATE OR REPLACE FUNCTION lmx_cell_candidates(
            cells integer[], lo text, hi text, eq text, dlo text, q halfvec, k bigint)
        RETURNS TABLE (item_id bigint, hd double precision)
        LANGUAGE sql STABLE PARALLEL SAFE ROWS 2000
        SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off
        AS $$ SELECT v.item_id, v.embedding_half <=> q FROM lmx_vectors v
              WHERE v.cell = ANY(cells) AND v.prefix >= lo AND v.prefix < hi
              AND (v.prefix = eq OR v.prefix >= dlo)
              ORDER BY 2 LIMIT k $$""",
        """CREATE OR REPLACE FUNCTION lmx_cell_candidates_all(
            cells integer[], q halfvec, k bigint)
        RETURNS TABLE (item_id bigint, hd double precision)
        LANGUAGE sql STABLE PARALLEL SAFE ROWS 2000
        SET enable_bitmapscan = off SET enable_seqscan = off SET jit = off
        AS $$ SELECT v.item_id, v.embedding_half <=> q FROM lmx_vectors v
              WHERE v.cell = ANY(cells) ORDER BY 2 LIMIT k $$""",
    ],
]

BOOTSTRAP = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE IF NOT EXISTS lmx_migrations "
    "(v integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
]


_OPCLASS = {"cosine": "cosine", "inner_product": "ip", "l2": "l2"}


def hnsw_index_sql(dims: int, m: int, ef_construction: int, distance: str = "cosine") -> str:
    """The HNSW index (pgvector), on the half-precision copy of each vector:
    ``embedding_half::halfvec(dims)`` (the column has no fixed length), so
    queries must use that same expression. Candidates it finds are re-ranked
    with the full-precision vectors."""
    d, ops = int(dims), _OPCLASS[distance]
    name = f"lmx_vectors_hnsw_half_{ops}_{d}_{int(m)}_{int(ef_construction)}"
    return (
        f"CREATE INDEX IF NOT EXISTS {name} "
        f"ON lmx_vectors USING hnsw ((embedding_half::halfvec({d})) halfvec_{ops}_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    )


# A btree index tuple holds at most ~2700 bytes; a halfvec takes 2 bytes a
# dimension plus 8, next to the prefix and item id.
MAX_SCAN_INDEX_DIMS = 1200


def scan_index_sql() -> str:
    """The covering index behind the default vector search: one namespace's
    half-precision vectors are contiguous in it (ordered by ``prefix``) and read
    by an index-only scan, never touching the 2.4 kB heap rows. Only created when
    ``dims <= MAX_SCAN_INDEX_DIMS``."""
    return (
        "CREATE INDEX IF NOT EXISTS lmx_vectors_scan ON lmx_vectors (prefix) "
        "INCLUDE (item_id, embedding_half)"
    )


def cells_index_sql() -> str:
    """The covering index of the inverted-file path: a cell's vectors are
    contiguous in it, ordered by namespace inside the cell, and read by an
    index-only scan. Only created when ``dims <= MAX_SCAN_INDEX_DIMS``."""
    return (
        "CREATE INDEX IF NOT EXISTS lmx_vectors_cells ON lmx_vectors (cell, prefix) "
        "INCLUDE (item_id, embedding_half)"
    )
