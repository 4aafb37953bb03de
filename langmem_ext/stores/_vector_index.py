"""Exact vector search over memory-mapped, namespace-sorted segments.

The database is the source of truth; this index is a derived copy of its
vectors laid out for search:

* **Segments**: immutable runs of unit vectors sorted by namespace (then item),
  each in one file that is memory-mapped, never loaded: opening a store costs
  the same at 1,000 or 1,000,000 items, and the operating system pages in only
  what searches touch. A namespace, and every namespace below it, is one
  contiguous row range of each segment (found by binary search), so a search
  reads what its scope holds, not what the store holds.
* **Delta**: the few items written since the newest segment, in memory.
* **Quantized scan, exact re-rank**: every row also has an int8 code (a
  quarter of the bytes) and the L2 norm of its rounding error. A query is
  scored from the codes (a SIMD int8 kernel), which bounds each item's true
  cosine within ``± (err + err_q · (1 + err))`` (Cauchy–Schwarz); callers then
  compute the exact float32 cosine for the items whose bound can still reach the
  page, so results are exactly those of a full float32 scan.

Deleted or re-put items are masked in older segments (``touched`` ids of newer
segments and the delta); merging segments drops them for good.

Examples:
    >>> import numpy as np
    >>> ix = VectorIndex(dims=2)
    >>> ix.put("user.a", 1, np.array([[1.0, 0.0]]))
    >>> ix.put("user.b", 2, np.array([[0.0, 1.0]]))
    >>> s = ix.search("user.a", np.array([1.0, 0.0], dtype=np.float32))
    >>> s.ids.tolist(), s.exact(np.arange(len(s))).tolist()
    ([1], [1.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "Delta",
    "ScopeScores",
    "Segment",
    "VectorIndex",
    "int8_dots",
    "key_of",
    "mask_superseded",
    "normalize_rows",
    "quantize",
]

from ._cells import segment_cells
from ._segment import (
    Segment,
    f32_dots,
    int8_dots,
    key_of,
    normalize_rows,
    quantize,
)

# Scopes up to this many rows are scored exactly at once: cheaper than bounds.
EXACT_ROWS = 2048
# Slack for float rounding in the bound (scores are float32 dot products).
FP_SLACK = 1e-5


class Delta:
    """Items written since the newest segment: ``item id -> (key, unit rows)``,
    plus the ids of items deleted since then (``touched`` covers both).

    Searched as two small segments: one built from most of the items, and one
    of the few written since (rebuilt cheaply), so a write followed by a search
    never re-sorts the whole delta.
    """

    FRESH = 1024

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.items: dict[int, tuple[str, np.ndarray]] = {}
        self.touched: set[int] = set()
        self._base = Segment.build([], (), dims=dims)
        self._fresh: set[int] = set()
        self._fresh_segment: Segment | None = None

    def __len__(self) -> int:
        return len(self.items)

    def apply(self, changes: dict[int, tuple[str, np.ndarray] | None]) -> None:
        """Set items' ``(key, unit rows)``; ``None`` removes the item."""
        if not changes:
            return
        ids = np.fromiter(changes, dtype=np.int64, count=len(changes))
        if len(self._base):
            self._base.mask_items(ids)
        for item_id, entry in changes.items():
            self.touched.add(item_id)
            if entry is None:
                self.items.pop(item_id, None)
                self._fresh.discard(item_id)
            else:
                self.items[item_id] = entry
                self._fresh.add(item_id)
        self._fresh_segment = None

    def segments(self) -> list[Segment]:
        if len(self._fresh) > self.FRESH:
            self._base = Segment.build(
                ((k, i, u) for i, (k, u) in self.items.items()), (), dims=self.dims
            )
            self._fresh = set()
            self._fresh_segment = None
        if self._fresh_segment is None:
            rows = [(self.items[i][0], i, self.items[i][1]) for i in self._fresh]
            self._fresh_segment = Segment.build(rows, (), dims=self.dims)
        return [self._base, self._fresh_segment]


# -- search -----------------------------------------------------------------------


class ScopeScores:
    """Every item of a scope with bounds on its cosine to the query.

    ``lower[i] <= cosine(item i) <= upper[i]``; :meth:`exact` computes the
    float32 cosine of chosen items (best vector per item). Items are unique.
    """

    def __init__(self, q: np.ndarray) -> None:
        self._q = q
        # Per part: the segment, and the first row of each item (None: rows a..b).
        self._parts: list[tuple[Segment, np.ndarray | None, int]] = []
        self._ends: list[int] = []
        self._ids: list[np.ndarray] = []
        self._mid: list[np.ndarray] = []
        self._radius: list[np.ndarray] = []

    def add(
        self, seg: Segment, a: int, b: int, qcode: np.ndarray, qscale: float, qerr: float
    ) -> None:
        if b <= a:
            return
        ids = seg.ids[a:b]
        dead = seg.dead[a:b]
        mid: np.ndarray
        radius: np.ndarray
        if b - a <= EXACT_ROWS:
            mid = f32_dots(seg.unit[a:b], self._q).astype(np.float32)
            radius = np.full(b - a, FP_SLACK, dtype=np.float32)
        else:
            # Float32 from here: a million rows cost half the memory traffic,
            # and FP_SLACK covers float32 rounding of numbers below 1.
            mid = int8_dots(seg.codes[a:b], qcode)  # float32, in place from here
            mid *= seg.scale[a:b]
            mid *= np.float32(qscale)
            radius = seg.err[a:b] * np.float32(1.0 + qerr)
            radius += np.float32(qerr + FP_SLACK)
        rows: np.ndarray | None = None
        if seg.multi:
            # Several rows per item (one per field): the item scores as its best.
            starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
            # (Dead rows get -2, below any cosine; an item is dead when all its rows are.)
            hi = np.maximum.reduceat(np.where(dead, -2.0, mid + radius), starts)
            lo = np.maximum.reduceat(np.where(dead, -2.0, mid - radius), starts)
            dead = np.minimum.reduceat(dead, starts)
            mid, radius = (hi + lo) / 2, (hi - lo) / 2
            ids, rows = ids[starts], a + starts
        if dead.any():
            keep = np.flatnonzero(~dead)
            rows = (a + keep) if rows is None else rows[keep]
            ids, mid, radius = ids[keep], mid[keep], radius[keep]
        if not len(ids):
            return
        self._parts.append((seg, rows, a))
        self._ends.append((self._ends[-1] if self._ends else 0) + len(ids))
        self._ids.append(ids)
        self._mid.append(mid)
        self._radius.append(radius)

    def add_rows(
        self, seg: Segment, rows: np.ndarray, qcode: np.ndarray, qscale: float, qerr: float
    ) -> None:
        """Like :meth:`add` for chosen rows (ascending) of a segment with one
        row per item: the rows of the probed cells, in approximate mode."""
        if not len(rows):
            return
        live = rows[~seg.dead[rows]]
        if not len(live):
            return
        mid = int8_dots(seg.codes[live], qcode)
        mid *= seg.scale[live]
        mid *= np.float32(qscale)
        radius = seg.err[live] * np.float32(1.0 + qerr)
        radius += np.float32(qerr + FP_SLACK)
        self._parts.append((seg, live, 0))
        self._ends.append((self._ends[-1] if self._ends else 0) + len(live))
        self._ids.append(seg.ids[live])
        self._mid.append(mid)
        self._radius.append(radius)

    def finish(self) -> ScopeScores:
        # One array of the total length, filled part by part: at a million
        # rows over a dozen segments, concatenating the midpoints and radii
        # and then adding them cost more than the additions.
        total = self._ends[-1] if self._ends else 0
        self.ids = _joined(self._ids, total, np.int64)
        self.upper = np.empty(total, dtype=np.float32)
        start = 0
        for mid, radius in zip(self._mid, self._radius, strict=True):
            np.add(mid, radius, out=self.upper[start : start + len(mid)])
            start += len(mid)
        return self

    @property
    def lower(self) -> np.ndarray:
        """Lower bounds (computed on demand: only hybrid ranking needs them)."""
        total = self._ends[-1] if self._ends else 0
        out = np.empty(total, dtype=np.float32)
        start = 0
        for mid, radius in zip(self._mid, self._radius, strict=True):
            np.subtract(mid, radius, out=out[start : start + len(mid)])
            start += len(mid)
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def exact(self, pos: np.ndarray) -> np.ndarray:
        """Exact cosine (best vector) of the items at positions ``pos``."""
        pos = np.asarray(pos, dtype=np.int64)
        out = np.empty(len(pos), dtype=np.float64)
        if not len(pos):
            return out
        part = np.searchsorted(np.asarray(self._ends), pos, side="right")
        for j in np.unique(part):
            seg, rows, a = self._parts[j]
            sel = np.flatnonzero(part == j)
            local = pos[sel] - (self._ends[j - 1] if j else 0)
            first = a + local if rows is None else rows[local]
            if not seg.multi:
                out[sel] = f32_dots(seg.unit[first], self._q)
                continue
            for s, r in zip(sel, first, strict=True):
                item = seg.ids[r]
                end = r
                while end < len(seg.ids) and seg.ids[end] == item:
                    end += 1
                live = ~seg.dead[r:end]
                out[s] = float(f32_dots(seg.unit[r:end][live], self._q).max())
        return out


def _joined(parts: list[np.ndarray], total: int, dtype: Any) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    out = np.empty(total, dtype=dtype)
    start = 0
    for p in parts:
        out[start : start + len(p)] = p
        start += len(p)
    return out


def mask_superseded(segments: list[Segment], newer: list[np.ndarray] | None = None) -> None:
    """Mark, in each segment (oldest first), the items that a newer segment, or
    the ``newer`` id arrays (the delta), replaced or deleted."""
    newer = list(newer or [])
    for seg in reversed(segments):
        seg.dead[:] = False
        for ids in newer:
            seg.mask_items(ids)
        newer.append(seg.touched)


class VectorIndex:
    """Segments (oldest first) plus the delta, searched exactly.

    The store decides when to turn the delta into a segment and when to merge
    segments; this class only holds and searches them.
    """

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.segments: list[Segment] = []
        self.delta = Delta(dims)
        self.generation: int | None = None  # database write counter this index reflects
        self.manifest: Any = None  # which segment files the index was loaded from
        #: Approximate search (:mod:`._cells` setting), or None: exact.
        self.cells: dict[str, Any] | None = None

    def __len__(self) -> int:
        return sum(s.alive for s in self.segments) + sum(
            len(u) for _, u in self.delta.items.values()
        )

    def clear(self) -> None:
        self.segments = []
        self.delta = Delta(self.dims)
        self.generation = None
        self.manifest = None

    def set_segments(self, segments: list[Segment]) -> None:
        """Adopt segments (oldest first): mask what newer ones and the delta replaced."""
        newer = [np.fromiter(self.delta.touched, dtype=np.int64, count=len(self.delta.touched))]
        mask_superseded(segments, newer)
        self.segments = segments

    def put(self, prefix: str, item_id: int, vectors: np.ndarray) -> None:
        """Set the vectors of an item (replacing any it had)."""
        self.apply({item_id: (prefix, vectors) if len(vectors) else None})

    def remove(self, item_id: int) -> None:
        self.apply({item_id: None})

    def apply(
        self, changes: dict[int, tuple[str, np.ndarray] | None], prepared: bool = False
    ) -> None:
        """Set items' ``(namespace, vectors)`` (``None`` removes the item), in one
        pass over the segments however many items change. ``prepared``: the
        entries already are ``(key_of(namespace), unit rows)``."""
        if not changes:
            return
        ids = np.fromiter(changes, dtype=np.int64, count=len(changes))
        for seg in self.segments:
            seg.mask_items(ids)
        entries = [(i, e) for i, e in changes.items() if e is not None]
        if entries and not prepared:
            sizes = [len(e[1]) for _, e in entries]
            unit = normalize_rows(np.concatenate([e[1] for _, e in entries]))
            bounds = np.cumsum([0, *sizes])
            entries = [(i, (e[0], unit[a:b])) for (i, e), a, b in zip(entries, bounds, bounds[1:])]
        fixed: dict[int, tuple[str, np.ndarray] | None] = dict.fromkeys(changes)
        for i, (prefix, unit_rows) in entries:
            fixed[i] = (prefix if prepared else key_of(prefix), unit_rows)
        self.delta.apply(fixed)

    def search(self, prefix: str, query: np.ndarray) -> ScopeScores:
        """Bounds on the cosine of every item under ``prefix`` (``""``: all)."""
        norm = float(np.linalg.norm(query))
        q = (query / norm if norm else query).astype(np.float32)
        qcodes, qscale, qerr = quantize(q[None, :])
        scores = ScopeScores(q)
        key = key_of(prefix)
        cells = self.cells
        for seg in [*self.segments, *self.delta.segments()]:
            a, b = seg.row_range(key)
            if cells is not None and b - a >= cells["min_rows"] and not seg.multi:
                rows = segment_cells(seg, cells["lists"]).rows(q, cells["probes"], a, b)
                scores.add_rows(seg, rows, qcodes[0], float(qscale[0]), float(qerr[0]))
                continue
            scores.add(seg, a, b, qcodes[0], float(qscale[0]), float(qerr[0]))
        return scores.finish()
