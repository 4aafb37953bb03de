"""Switching a PostgreSQL store to another embedder while it serves (see
``PostgresStore.reindex``).

As on SQLite: new vectors are built beside the old ones in
``lmx_vectors_next``, batch by batch, each item recorded in
``lmx_reindex_done`` with the ``updated_at`` it had when it was embedded (a
stopped run resumes; an item changed since is embedded again). Searches use
``lmx_vectors`` until the switch. Writes of the store object running the
rebuild are embedded in both spaces; other writers' items are caught up by
the next pass, and the switch re-checks under a lock that holds writers
(``SHARE ROW EXCLUSIVE`` on the items; searches go on) and embeds any last
ones itself. With the inverted-file index, the new space's cells are trained
on the new vectors before the switch and every new vector placed in its cell.
At the switch the old vectors are deleted, the new ones copied in with their
cells, the old cells replaced by the new, an HNSW index of the old dimension
count dropped (and built again for the new one after the switch), and
``lmx_meta.dims`` set.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._ops import encode_namespace, texts_to_embed
from ._ivf import (
    ASSIGN_CHUNK,
    MAX_SAMPLE,
    SAMPLE_PER_CELL,
    CellIndex,
    _vectors,
    assign_cells,
    kmeans,
)
from ._steps import Copy, Exec, Steps

__all__ = [
    "Embed",
    "Job",
    "Run",
    "missing_steps",
    "prepare_steps",
    "save_steps",
    "switch_steps",
    "todo_steps",
    "train_steps",
]


class Run(NamedTuple):
    """Run ``steps`` in a transaction of their own (``autocommit``: each
    statement in its own); the job receives their result."""

    steps: Steps
    where: str
    write: bool = True
    autocommit: bool = False


class Embed(NamedTuple):
    """Embed ``texts`` as documents with ``embeddings``; the job receives the array."""

    embeddings: Any
    texts: list[str]


#: A whole reindex as one generator (``PostgresCore._reindex_job``): it yields
#: transactions and embedding calls, so the sync store runs it with blocking
#: calls and the async store awaits the same requests.
Job = Generator[Run | Embed, Any, Any]


_TABLES = [
    """CREATE TABLE IF NOT EXISTS lmx_vectors_next (
        item_id bigint NOT NULL,
        field text NOT NULL,
        prefix text COLLATE "C" NOT NULL,
        embedding vector NOT NULL,
        cell integer NOT NULL DEFAULT -1,   -- in the new space's cells (inverted file)
        PRIMARY KEY (item_id, field)
    )""",
    """CREATE TABLE IF NOT EXISTS lmx_reindex_done (
        item_id bigint PRIMARY KEY,
        made timestamptz NOT NULL
    )""",
    # The new space's inverted-file cells, trained before the switch.
    """CREATE TABLE IF NOT EXISTS lmx_cells_next (
        cid integer PRIMARY KEY,
        centroid vector NOT NULL,
        share real NOT NULL
    )""",
]

_PENDING = (
    "FROM lmx_items i LEFT JOIN lmx_reindex_done d ON d.item_id = i.id "
    "WHERE (d.item_id IS NULL OR d.made <> i.updated_at) "
    "AND (i.tsv IS NOT NULL OR EXISTS (SELECT 1 FROM lmx_vectors v WHERE v.item_id = i.id))"
)


def prepare_steps(target: dict[str, Any]) -> Steps:
    for sql in _TABLES:
        yield Exec(sql)
    rows = yield Exec("SELECT value FROM lmx_meta WHERE key = 'reindex'", fetch=True)
    if rows and json.loads(rows[0][0]) != target:
        yield Exec("TRUNCATE lmx_vectors_next, lmx_reindex_done, lmx_cells_next")
    yield Exec(
        "INSERT INTO lmx_meta (key, value) VALUES ('reindex', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [json.dumps(target)],
    )
    return None


def missing_steps() -> Steps:
    rows = yield Exec(f"SELECT count(*) {_PENDING}", fetch=True)
    return int(rows[0][0])


def todo_steps(after: int, limit: int) -> Steps:
    rows = yield Exec(
        f"SELECT i.id, i.prefix, i.value::text, i.updated_at {_PENDING} AND i.id > %s "
        "ORDER BY i.id LIMIT %s",
        [after, limit],
        fetch=True,
        prepare=False,
    )
    return rows


def texts(rows: Sequence[Any], fields: Sequence[tuple[str, Any]]) -> list[Any]:
    """``(id, prefix, updated_at, [(field, text)])`` of rows from :func:`todo_steps`."""
    return [
        (int(i), prefix, made, texts_to_embed(json.loads(value), None, fields))
        for i, prefix, value, made in rows
    ]


def save_steps(batch: Sequence[Any], vectors: np.ndarray | None) -> Steps:
    """Store the new vectors of ``batch``, skipping items changed since."""
    ids, labels, prefixes, vecs, made = [], [], [], [], {}
    pos = 0
    for item_id, prefix, when, fields in batch:
        made[item_id] = when
        for label, _ in fields:
            assert vectors is not None
            ids.append(item_id)
            labels.append(label)
            prefixes.append(prefix)
            vecs.append(vectors[pos])
            pos += 1
    current = yield Exec(
        "SELECT id, updated_at FROM lmx_items WHERE id = ANY(%s::bigint[])",
        [list(made)],
        fetch=True,
    )
    keep = {int(i) for i, u in current if made.get(int(i)) == u}
    yield Exec("DELETE FROM lmx_vectors_next WHERE item_id = ANY(%s::bigint[])", [sorted(keep)])
    rows = [
        (i, label, prefix, v)
        for i, label, prefix, v in zip(ids, labels, prefixes, vecs, strict=True)
        if i in keep
    ]
    if rows:
        yield Copy(
            "COPY lmx_vectors_next (item_id, field, prefix, embedding) FROM STDIN (FORMAT BINARY)",
            ["int8", "text", "text", "vector"],
            [(i, label, prefix, np.asarray(v, dtype=np.float32)) for i, label, prefix, v in rows],
        )
    yield Exec(
        "INSERT INTO lmx_reindex_done (item_id, made) "
        "SELECT * FROM unnest(%s::bigint[], %s::timestamptz[]) "
        "ON CONFLICT (item_id) DO UPDATE SET made = excluded.made",
        [sorted(keep), [made[i] for i in sorted(keep)]],
    )
    return len(keep)


def put_batch_steps(puts: Sequence[Any], fields: Sequence[tuple[str, Any]]) -> Steps:
    """The just-written puts of a batch as a rebuild batch (their ids and
    ``updated_at``), with their new-space texts."""
    live = [p for p in puts if p.value_json is not None and p.keyword_text is not None]
    if not live:
        return []
    rows = yield Exec(
        "SELECT i.id, i.prefix, i.value::text, i.updated_at FROM lmx_items i "
        "JOIN unnest(%s::text[], %s::text[]) AS d(prefix, key) "
        'ON i.prefix = d.prefix COLLATE "C" AND i.key = d.key COLLATE "C"',
        [[encode_namespace(p.namespace) for p in live], [p.key for p in live]],
        fetch=True,
        prepare=False,
    )
    return texts(rows, fields)


def train_steps(lists: int, dims: int) -> Steps:
    """Train the new space's cells on a sample of the new vectors and give
    every new vector its cell (in chunks), before the switch, so the inverted
    file answers at once after it. Returns how many vectors were placed."""
    rows = yield Exec(
        "SELECT item_id, field, vector_send(embedding) FROM lmx_vectors_next "
        "ORDER BY random() LIMIT %s",
        [MAX_SAMPLE],
        fetch=True,
    )
    if not rows:
        return 0
    rows.sort(key=lambda r: (r[0], r[1]))
    vecs = _vectors(r[2] for r in rows)
    size = min(len(vecs), SAMPLE_PER_CELL * lists)
    cent, shares = kmeans(vecs[:size], lists)
    yield Exec("TRUNCATE lmx_cells_next")
    yield Exec(
        "INSERT INTO lmx_cells_next (cid, centroid, share) "
        f"SELECT n - 1, c::vector({int(dims)}), s FROM unnest(%s::text[], %s::real[]) "
        "WITH ORDINALITY AS d(c, s, n)",
        [["[" + ",".join(map(repr, c.tolist())) + "]" for c in cent], shares.tolist()],
    )
    cells = CellIndex(cent, shares, "next")
    placed = 0
    while True:
        chunk = yield Exec(
            "SELECT item_id, field, vector_send(embedding) FROM lmx_vectors_next "
            "WHERE cell = -1 LIMIT %s",
            [ASSIGN_CHUNK],
            fetch=True,
        )
        if not chunk:
            return placed
        assigned = assign_cells(cells, _vectors(r[2] for r in chunk))
        yield Exec(
            "UPDATE lmx_vectors_next v SET cell = d.cell "
            "FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS d(item_id, field, cell) "
            "WHERE v.item_id = d.item_id AND v.field = d.field",
            [[r[0] for r in chunk], [r[1] for r in chunk], assigned],
        )
        placed += len(chunk)


def switch_steps(dims: int) -> Steps:
    """The atomic switch (one transaction); returns the vectors now stored,
    or None when items are still missing (the caller embeds them and retries)."""
    yield Exec("LOCK TABLE lmx_items IN SHARE ROW EXCLUSIVE MODE")
    if (yield from missing_steps()):
        return None
    old = yield Exec(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename = 'lmx_vectors' AND indexname LIKE 'lmx_vectors_hnsw_half_%%'",
        fetch=True,
    )
    for (name,) in old:
        if not name.endswith(f"_{dims}") and f"_{dims}_" not in name:
            yield Exec(f'DROP INDEX "{name}"')
    tenant = yield Exec(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = 'lmx_vectors' AND column_name = 'tenant')",
        fetch=True,
    )
    yield Exec("DELETE FROM lmx_vectors")
    if tenant[0][0]:
        yield Exec(
            "INSERT INTO lmx_vectors (item_id, field, prefix, embedding, cell, tenant) "
            "SELECT n.item_id, n.field, n.prefix, n.embedding, n.cell, i.tenant "
            "FROM lmx_vectors_next n JOIN lmx_items i ON i.id = n.item_id"
        )
    else:
        yield Exec(
            "INSERT INTO lmx_vectors (item_id, field, prefix, embedding, cell) "
            "SELECT n.item_id, n.field, n.prefix, n.embedding, n.cell "
            "FROM lmx_vectors_next n JOIN lmx_items i ON i.id = n.item_id"
        )
    n = yield Exec("SELECT count(*) FROM lmx_vectors", fetch=True)
    # The new space's cells (trained before the switch), or none: then the
    # first writes past train_at train them, as on a new store.
    yield Exec("DELETE FROM lmx_cells")
    yield Exec("INSERT INTO lmx_cells (cid, centroid, share) SELECT * FROM lmx_cells_next")
    yield Exec("DELETE FROM lmx_meta WHERE key IN ('ivf_version', 'reindex')")
    yield Exec(
        "INSERT INTO lmx_meta (key, value) SELECT 'ivf_version', txid_current()::text "
        "WHERE EXISTS (SELECT 1 FROM lmx_cells)"
    )
    yield Exec(
        "INSERT INTO lmx_meta (key, value) VALUES ('dims', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [str(dims)],
    )
    yield Exec("DROP TABLE lmx_vectors_next, lmx_reindex_done, lmx_cells_next")
    return int(n[0][0])


def index_steps(sql: str) -> Steps:
    """One statement (the vector index of the new dimension count)."""
    yield Exec(sql)
    return None
