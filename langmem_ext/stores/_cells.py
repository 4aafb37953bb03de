"""Opt-in approximate vector search for the SQLite store: coarse cells.

The store's default search is exact (an int8 scan of the scope with an exact
re-rank, see :mod:`._vector_index`). With ``vector_index={"kind": "cells"}``
each large segment also gets ``lists`` unit centroids (spherical k-means over
a sample of its rows) and every row's nearest centroid, its *cell*. A search
then scores only the rows of the ``probes`` cells nearest the query (inside
its namespace's row range), and re-ranks those exactly: a fraction
``probes / lists`` of the scan, at the price of missing neighbours that sit in
cells not probed. A scope of fewer than ``min_rows`` rows of a segment (the
small, recent segments, and small namespaces) is scanned whole, exactly:
measured at 1M, giving the small segments cells of their own either cost
recall (probed in proportion: R@10 0.94) or time (probed as often as the
large ones: gathering half their rows was slower than scanning them).

The cells of a segment file are saved beside it (``<segment>.cells<lists>.npz``),
built by the first search that needs them, so a process opening the store
maps them instead of training again. The database records the setting its
files were built with; a store opened with another says so (see
:func:`settle`).

Examples:
    >>> cells_setting({"kind": "cells", "lists": 64})
    {'kind': 'cells', 'lists': 64, 'probes': 8, 'min_rows': 50000}
    >>> cells_setting(None) is None, cells_setting({"kind": "exact"}) is None
    (True, True)
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigurationError

__all__ = ["Cells", "cells_setting", "kmeans", "settle"]

_KEYS = {"kind", "lists", "probes", "min_rows"}
#: Rows of the k-means sample per centroid.
SAMPLE_PER_CELL = 32


def cells_setting(option: Any) -> dict[str, Any] | None:
    """The checked ``vector_index`` option of a SQLite store (None: exact).

    Raises:
        ConfigurationError: an unknown kind or key, or a count out of range.
    """
    if option is None:
        return None
    if not isinstance(option, dict) or option.get("kind") not in ("exact", "cells"):
        raise ConfigurationError(
            "vector_index must be {'kind': 'exact'} (the default: every search exact) or "
            "{'kind': 'cells', 'lists': ..., 'probes': ...} (approximate: each search reads "
            f"the probes cells nearest the query), got {option!r}"
        )
    unknown = set(option) - _KEYS
    if unknown:
        raise ConfigurationError(
            f"vector_index has unknown keys {sorted(unknown)}; known: {sorted(_KEYS)}"
        )
    if option["kind"] == "exact":
        return None
    lists = option.get("lists", 1024)
    probes = option.get("probes", max(1, lists // 8))
    min_rows = option.get("min_rows", 50_000)
    for name, value, top in (("lists", lists, 65_535), ("probes", probes, lists)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
            raise ConfigurationError(
                f"vector_index['{name}'] must be a whole number from 1 to {top}, got {value!r}"
            )
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 1:
        raise ConfigurationError(
            f"vector_index['min_rows'] must be a whole number of at least 1, got {min_rows!r}"
        )
    return {"kind": "cells", "lists": lists, "probes": probes, "min_rows": min_rows}


def settle(conn: sqlite3.Connection, asked: dict[str, Any] | None, given: bool) -> Any:
    """The setting to search with: the one the database records (its files
    were built with it), checked against the one asked for.

    Returns ``(setting, record)``: ``record`` is the JSON to store in ``meta``
    (the caller's write transaction) when the database records none yet.

    Raises:
        ConfigurationError: the store was opened with a ``vector_index`` other
            than the one its files were built with; the message says how to
            rebuild them.
    """
    row = conn.execute("SELECT value FROM meta WHERE key = 'vector_index'").fetchone()
    built = json.loads(row[0]) if row else None
    built_cells = cells_setting(built) if built else None
    if not given:
        return built_cells, None
    if row is None:
        return asked, json.dumps(asked or {"kind": "exact"})
    lists = (built_cells or {}).get("lists")
    if (asked or {}).get("lists") != lists or (asked is None) != (built_cells is None):
        raise ConfigurationError(
            f"this store's vector files were built with vector_index={built!r}, not "
            f"{asked or {'kind': 'exact'}!r}. Open it with the setting it was built with "
            "(or without vector_index), or rebuild them for the new one with "
            "SQLiteStore.rebuild_vector_index(path, vector_index=...)"
        )
    return asked, None


def kmeans(x: np.ndarray, k: int, iterations: int = 8, seed: int = 0) -> np.ndarray:
    """``k`` unit centroids of the unit rows ``x`` (spherical k-means from
    random rows; an emptied centroid restarts at a random row).

    Examples:
        >>> pts = np.array([[1, 0.1], [1, -0.1], [-0.1, 1], [0.1, 1]], dtype=np.float32)
        >>> c = kmeans(pts / np.linalg.norm(pts, axis=1, keepdims=True), 2)
        >>> sorted(np.argmax(c, axis=1).tolist())
        [0, 1]
    """
    rng = np.random.default_rng(seed)
    k = min(k, len(x))
    cent = x[rng.choice(len(x), k, replace=False)].astype(np.float32)
    for _ in range(iterations):
        best = nearest(x, cent)
        sums = np.zeros_like(cent)
        np.add.at(sums, best, x)
        norms = np.linalg.norm(sums, axis=1)
        empty = norms == 0
        sums[empty] = x[rng.choice(len(x), int(empty.sum()))]
        norms[empty] = 1.0
        cent = (sums / norms[:, None]).astype(np.float32)
    return cent


def nearest(x: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """The nearest centroid of every row, in blocks (memory stays small)."""
    out = np.empty(len(x), dtype=np.int32)
    for a in range(0, len(x), 16_384):
        out[a : a + 16_384] = np.argmax(np.asarray(x[a : a + 16_384]) @ cent.T, axis=1)
    return out


class Cells:
    """The cells of one segment: centroids, and its rows grouped by cell
    (``order[start[c]:start[c + 1]]`` are the rows of cell ``c``, ascending)."""

    def __init__(self, centroids: np.ndarray, order: np.ndarray, start: np.ndarray) -> None:
        self.centroids = centroids
        self.order = order
        self.start = start

    @classmethod
    def build(cls, unit: Any, lists: int, seed: int = 0) -> Cells:
        """Train on a sample of the rows ``unit`` and assign every row."""
        n = len(unit)
        rng = np.random.default_rng(seed)
        take = np.sort(rng.choice(n, min(n, SAMPLE_PER_CELL * lists), replace=False))
        cent = kmeans(np.asarray(unit[take], dtype=np.float32), lists, seed=seed)
        cell = np.empty(n, dtype=np.int32)
        for a in range(0, n, 65_536):
            rows = np.asarray(unit[a : a + 65_536], dtype=np.float32)
            cell[a : a + len(rows)] = nearest(rows, cent)
        order = np.argsort(cell, kind="stable").astype(np.int64)
        start = np.concatenate([[0], np.cumsum(np.bincount(cell, minlength=len(cent)))])
        return cls(cent, order, start.astype(np.int64))

    def rows(self, q: np.ndarray, probes: int, a: int, b: int) -> np.ndarray:
        """Rows in ``[a, b)`` of the ``probes`` cells nearest ``q``, ascending."""
        sims = self.centroids @ q
        probes = min(probes, len(sims))
        near = np.argpartition(-sims, probes - 1)[:probes]
        parts = [self.order[self.start[c] : self.start[c + 1]] for c in near]
        rows = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
        rows = rows[(rows >= a) & (rows < b)]
        rows.sort()
        return rows

    def save(self, path: Path) -> None:
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            np.savez(f, centroids=self.centroids, order=self.order, start=self.start)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Cells | None:
        try:
            with np.load(path) as z:
                return cls(z["centroids"], z["order"], z["start"])
        except (OSError, ValueError, KeyError):
            return None


def cells_path(segment_path: Path, lists: int) -> Path:
    """Where the cells of a segment file are saved."""
    return segment_path.with_name(f"{segment_path.name}.cells{lists}.npz")


def segment_cells(seg: Any, lists: int) -> Cells:
    """The cells of segment ``seg``: in memory once built or loaded, saved
    beside its file (when it has one) for the next process."""
    cached = getattr(seg, "_cells", None)
    if cached is not None and cached[0] == lists:
        return cached[1]
    path = getattr(seg, "path", None)
    cells = Cells.load(cells_path(path, lists)) if path is not None else None
    if cells is None or cells.start[-1] != len(seg):
        cells = Cells.build(seg.unit, lists)
        if path is not None:
            with contextlib.suppress(OSError):
                cells.save(cells_path(path, lists))
    seg._cells = (lists, cells)
    return cells
