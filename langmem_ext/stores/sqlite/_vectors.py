"""The vector index of a SQLite store, kept in step with the database file.

The ``vectors`` table is the source of truth. Searches use a
:class:`~langmem_ext.stores._vector_index.VectorIndex`: memory-mapped segment
files in ``<database>-vectors/`` (named in ``meta.segments``, covering every
write up to ``meta.segment_gen``) plus a delta of the items named in
``vector_log`` after that. Every process follows the file:

* ``sync`` (inside a search's read transaction) loads segments it has not
  mapped yet and the log entries newer than its own generation: a process
  reads what changed, never the whole table;
* after a write whose log has grown past ``FLUSH`` items, ``flush`` writes the
  delta as a new segment, merges segments of a size (``TIER`` of one size make
  one of the next), then publishes the new list and trims the log in one
  write transaction; if another process published first, its work wins;
* a missing or torn segment file (deleted, copied without it, a crash while
  writing) is rebuilt from the table on the next search.

Old segment files are deleted a while after they leave the list (``RETIRE_S``),
so a process that read the old list can still map them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .._vector_index import Segment, VectorIndex, key_of, mask_superseded, normalize_rows

__all__ = ["FLUSH", "TIER", "flush", "log_changes", "segment_dir", "sync"]

logger = logging.getLogger("langmem_ext.stores.sqlite")

FLUSH = 8_192
"""Logged items that make the delta a segment."""
CLOSE_FLUSH = 1_024
"""Logged items that closing a store turns into a segment."""
TIER = 4
"""Segments of one size tier merged into one of the next."""
RETIRE_S = 120.0


def segment_dir(path: str) -> Path | None:
    """Where the segment files of the database at ``path`` live (None in memory)."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    return Path(f"{os.path.abspath(path)}-vectors")


def _meta(conn: sqlite3.Connection) -> dict[str, Any]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def log_changes(conn: sqlite3.Connection, gen: int, item_ids: Iterable[int]) -> int:
    """Record that the vectors of ``item_ids`` changed at ``gen``; returns the
    log size (items since the newest segment), in the caller's transaction."""
    ids = list(item_ids)
    if ids:
        conn.execute("INSERT INTO vector_log (gen, item_ids) VALUES (?, ?)", [gen, json.dumps(ids)])
        conn.execute("UPDATE meta SET value = value + ? WHERE key = 'log_size'", [len(ids)])
    return int(conn.execute("SELECT value FROM meta WHERE key = 'log_size'").fetchone()[0])


def _read_vectors(
    conn: sqlite3.Connection, item_ids: list[int] | None, dims: int
) -> dict[int, tuple[str, np.ndarray]]:
    """Current vectors (unit rows) of ``item_ids`` (all items if None)."""
    sql = "SELECT i.prefix, v.item_id, v.embedding FROM vectors v JOIN items i ON i.id = v.item_id"
    params: list[Any] = []
    if item_ids is not None:
        sql += " WHERE v.item_id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(item_ids))
    ids: list[int] = []
    prefixes: list[str] = []
    blobs: list[bytes] = []
    for prefix, item_id, blob in conn.execute(sql + " ORDER BY v.item_id, v.field", params):
        if len(blob) == 4 * dims:
            ids.append(item_id)
            prefixes.append(prefix)
            blobs.append(blob)
    if not ids:
        return {}
    unit = normalize_rows(np.frombuffer(b"".join(blobs), "<f4").reshape(len(blobs), dims))
    # Rows of one item (one per field) are adjacent: split at item boundaries.
    id_arr = np.asarray(ids, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], id_arr[1:] != id_arr[:-1]]))
    ends = [*starts[1:].tolist(), len(ids)]
    return {
        ids[a]: (key_of(prefixes[a]), unit[a:b]) for a, b in zip(starts.tolist(), ends, strict=True)
    }


def _load_segments(
    segdir: Path | None, names: list[str], cache: dict[str, Segment]
) -> list[Segment]:
    """The segments ``names``, mapped from ``segdir`` once and then kept in
    ``cache`` (where in-memory stores keep theirs)."""
    segs = []
    for name in names:
        seg = cache.get(name)
        if seg is None:
            if segdir is None:
                raise FileNotFoundError(name)
            seg = cache[name] = Segment.load(segdir / name)
        segs.append(seg)
    return segs


def sync(
    conn: sqlite3.Connection,
    vix: VectorIndex,
    segdir: Path | None,
    memory: dict[str, Segment],
) -> tuple[list[Segment], Any] | None:
    """Bring ``vix`` to the generation of the caller's read transaction.

    When no usable segments existed, returns ``(segments, manifest seen)``
    built from the whole table, for the caller to :func:`publish` once its
    read transaction ends; else None.
    """
    meta = _meta(conn)
    gen = int(meta["generation"])
    if vix.generation == gen:
        return None
    manifest = json.loads(meta["segments"])
    seg_gen = int(meta["segment_gen"])
    names = [m["file"] for m in manifest]
    if vix.manifest != (seg_gen, names) or vix.generation is None:
        seen = (seg_gen, names)
        try:
            segments = [] if seg_gen < 0 else _load_segments(segdir, names, memory)
        except (OSError, ValueError) as e:
            logger.warning("vector segments unusable (%s); rebuilding from the database", e)
            seg_gen = -1
        if seg_gen < 0:
            built = _full_segment(conn, vix.dims, gen)
            vix.clear()
            vix.set_segments([built])
            vix.manifest = ("rebuilt", gen)
            vix.generation = gen
            return [built], seen
        vix.clear()
        vix.manifest = (seg_gen, names)
        since = seg_gen
    else:
        segments = None
        since = vix.generation
    changed = list(
        dict.fromkeys(
            i
            for (ids,) in conn.execute(
                "SELECT item_ids FROM vector_log WHERE gen > ? AND gen <= ? ORDER BY gen",
                [since, gen],
            )
            for i in json.loads(ids)
        )
    )
    current = _read_vectors(conn, changed, vix.dims) if changed else {}
    changes = {i: current.get(i) for i in changed}
    if segments is not None:
        vix.delta.apply(changes)
        vix.set_segments(segments)
    else:
        vix.apply(changes, prepared=True)
    vix.generation = gen
    return None


def _full_segment(conn: sqlite3.Connection, dims: int, gen: int) -> Segment:
    rows = _read_vectors(conn, None, dims)
    return Segment.build(
        ((k, i, u) for i, (k, u) in rows.items()), rows.keys(), {"gen": gen}, dims=dims
    )


def publish(
    conn_factory: Any,
    segdir: Path | None,
    memory: dict[str, Segment],
    segments: list[Segment],
    expected: Any,
    vix: VectorIndex | None = None,
) -> bool:
    """Publish segments built from the whole table by :func:`sync`, unless
    another process changed the segment list since ``expected`` was seen."""
    return _publish(
        conn_factory, segdir, memory, expected, segments, int(segments[-1].meta["gen"]), vix
    )


def flush(
    conn_factory: Any, vix: VectorIndex, segdir: Path | None, memory: dict[str, Segment]
) -> bool:
    """Turn the delta of an up-to-date ``vix`` into a segment and merge tiers.

    ``conn_factory()`` is a context manager yielding a connection inside a
    write transaction. Returns whether this call published.
    """
    assert vix.generation is not None and vix.manifest is not None
    if isinstance(vix.manifest[0], str):
        return False  # a rebuilt index not yet published: the next sync settles it
    gen = vix.generation
    delta = vix.delta
    seg = Segment.build(
        ((k, i, u) for i, (k, u) in delta.items.items()), delta.touched, {"gen": gen}, dims=vix.dims
    )
    segments = [*(_fresh_copy(s) for s in vix.segments), seg]
    merged = _merge_tiers(segments)
    return _publish(conn_factory, segdir, memory, vix.manifest, merged, gen, vix)


def _fresh_copy(seg: Segment) -> Segment:
    """The same rows (arrays shared, mapped once) with a mask of its own."""
    return seg.copy()


def _tier(seg: Segment) -> int:
    n = max(len(seg), 1)
    t = 0
    while n >= FLUSH * TIER ** (t + 1):
        t += 1
    return t


def _merge_tiers(segments: list[Segment]) -> list[Segment]:
    # Masks first: each segment loses the rows newer segments replaced.
    mask_superseded(segments)
    while len(segments) >= TIER and len({_tier(s) for s in segments[-TIER:]}) == 1:
        parts = segments[-TIER:]
        merged = Segment.merge(parts, {"gen": parts[-1].meta["gen"]})
        segments = [*segments[:-TIER], merged]
    if len(segments) > 1 and segments[0].alive == 0:
        segments = segments[1:]
    return segments


def _publish(
    conn_factory: Any,
    segdir: Path | None,
    memory: dict[str, Segment],
    expected: Any,
    segments: list[Segment],
    gen: int,
    vix: VectorIndex | None = None,
) -> bool:
    names: list[str] = []
    written: list[Path] = []
    for seg in segments:
        name = seg.meta.get("file")
        if name is None:
            name = f"seg-{gen}-{uuid.uuid4().hex[:12]}.lmxv"
            seg.meta["file"] = name
            if segdir is not None:
                segdir.mkdir(exist_ok=True)
                seg.save(segdir / name)
                written.append(segdir / name)
            else:
                memory[name] = seg
        names.append(name)
    with conn_factory() as conn:
        meta = _meta(conn)
        current = (int(meta["segment_gen"]), [m["file"] for m in json.loads(meta["segments"])])
        ok = current == (expected[0], list(expected[1]))
        if ok:
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'segments'",
                [
                    json.dumps(
                        [{"file": n, "rows": len(s)} for n, s in zip(names, segments, strict=True)]
                    )
                ],
            )
            conn.execute("UPDATE meta SET value = ? WHERE key = 'segment_gen'", [gen])
            conn.execute("DELETE FROM vector_log WHERE gen <= ?", [gen])
            left = sum(
                len(json.loads(ids)) for (ids,) in conn.execute("SELECT item_ids FROM vector_log")
            )
            conn.execute("UPDATE meta SET value = ? WHERE key = 'log_size'", [left])
    if not ok:
        for p in written:
            p.unlink(missing_ok=True)
        return False
    if segdir is not None:
        # Leaving the list starts the grace period of the old files.
        for name in set(current[1]) - set(names):
            with contextlib.suppress(OSError):
                os.utime(segdir / name)
    if vix is not None and vix.generation == gen:
        # This process is exactly at the published state: adopt it (mapped
        # from the files, so the pages are the kernel's to reclaim).
        adopted = _load_segments(segdir, names, memory)
        vix.delta = type(vix.delta)(vix.dims)
        vix.manifest = (gen, names)
        vix.set_segments(adopted)
    _retire(segdir, memory, set(names))
    return True


def _retire(segdir: Path | None, memory: dict[str, Segment], keep: set[str]) -> None:
    for name in list(memory):
        if name not in keep:
            del memory[name]
    if segdir is None or not segdir.exists():
        return
    now = time.time()
    for p in segdir.iterdir():
        # A segment's cells (approximate mode) live and go with it.
        if p.name in keep or p.name.split(".cells", 1)[0] in keep:
            continue
        try:
            age = now - p.stat().st_mtime
            # Temporary files of a writer still at work are younger than this.
            if age > RETIRE_S:
                p.unlink()
        except OSError:
            pass
