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

import bisect
import json
import mmap
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
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

# Scopes up to this many rows are scored exactly at once: cheaper than bounds.
EXACT_ROWS = 2048
# Slack for float rounding in the bound (scores are float32 dot products).
FP_SLACK = 1e-5


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero, scoring 0)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


def quantize(unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row symmetric int8 codes: ``unit ≈ scale * code``.

    Returns ``(codes, scale, err)`` where ``err`` is an upper bound on the L2
    norm of ``unit - scale * code``.
    """
    unit = np.atleast_2d(np.asarray(unit, dtype=np.float32))
    peak = np.abs(unit).max(axis=1) if unit.shape[1] else np.zeros(len(unit), np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(unit / scale[:, None]).astype(np.int8)
    resid = unit - codes.astype(np.float32) * scale[:, None]
    err = (np.linalg.norm(resid.astype(np.float64), axis=1) * (1 + 1e-6) + 1e-7).astype(np.float32)
    return codes, scale, err


_simd: Any
try:  # SIMD int8 dot products; numpy (slower, same numbers) where it is missing
    import simsimd as _simd
except ImportError:  # pragma: no cover - simsimd has wheels for every common platform
    _simd = None

_PARALLEL_ROWS = 200_000  # larger scans use every core


def int8_dots(codes: np.ndarray, qcode: np.ndarray) -> np.ndarray:
    """Exact integer dot products of every code row with ``qcode`` (float64)."""
    if len(codes) == 0:
        return np.empty(0, dtype=np.float64)
    if _simd is not None:
        threads = (os.cpu_count() or 1) if len(codes) >= _PARALLEL_ROWS else 1
        out = _simd.cdist(codes, qcode[None, :], metric="dot", threads=threads)
        return np.asarray(out, dtype=np.float64).reshape(-1)
    return codes.astype(np.float32) @ qcode.astype(np.float32)  # pragma: no cover


def f32_dots(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Dot products of float32 rows with ``q`` (float64), on one core.

    Not numpy's ``@``: OpenBLAS splits even small products across threads,
    and on a busy machine a 1,700-row product then takes milliseconds instead
    of microseconds.
    """
    if len(rows) == 0:
        return np.empty(0, dtype=np.float64)
    if _simd is not None:
        out = _simd.cdist(rows, q[None, :], metric="dot", threads=1)
        return np.asarray(out, dtype=np.float64).reshape(-1)
    return (rows * q).sum(axis=1, dtype=np.float64)  # pragma: no cover


def key_of(prefix: str) -> str:
    """Sort key of a stored namespace (labels joined by ``.``): labels joined by
    NUL, which no label contains, so a namespace and everything below it form
    one contiguous range ``[key, key + "\\x01")`` in plain string order."""
    return prefix.replace(".", "\x00")


def _key_range(keys: Sequence[str], key: str) -> tuple[int, int]:
    if not key:
        return 0, len(keys)
    return bisect.bisect_left(keys, key), bisect.bisect_left(keys, key + "\x01")


def _empty_codes(dims: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.empty((0, dims), np.int8), np.empty(0, np.float32), np.empty(0, np.float32)


# -- segments -------------------------------------------------------------------

_MAGIC = b"LMXVSEG1"
_TRAILER = b"LMXVEND1"
_ALIGN = 64


class Segment:
    """An immutable sorted run of vectors (see the module docstring).

    Rows are sorted by (namespace key, item id); an item's rows (one per
    embedded field) are adjacent. ``touched`` lists every item whose state this
    segment records (including items deleted in its span), so older segments
    mask those items.
    """

    def __init__(
        self,
        keys: list[str],
        offsets: np.ndarray,
        ids: np.ndarray,
        unit: np.ndarray,
        codes: np.ndarray,
        scale: np.ndarray,
        err: np.ndarray,
        touched: np.ndarray,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.keys = keys
        self.offsets = offsets
        self.ids = ids
        self.unit = unit
        self.codes = codes
        self.scale = scale
        self.err = err
        self.touched = touched
        self.meta = meta or {}
        self.dead = np.zeros(len(ids), dtype=bool)  # per process: superseded rows
        self._by_id: np.ndarray | None = None
        self._id_range: tuple[int, int] | None = None
        # Rows are sorted by item within a namespace: repeated ids are adjacent.
        self.multi = bool(len(ids) > 1 and np.any(ids[1:] == ids[:-1]))

    def __len__(self) -> int:
        return len(self.ids)

    def copy(self) -> Segment:
        """The same rows (arrays and lookups shared) with a fresh ``dead`` mask."""
        twin = Segment(
            self.keys,
            self.offsets,
            self.ids,
            self.unit,
            self.codes,
            self.scale,
            self.err,
            self.touched,
            dict(self.meta),
        )
        twin._by_id, twin._id_range = self._by_id, self._id_range
        return twin

    @property
    def alive(self) -> int:
        return len(self.ids) - int(self.dead.sum())

    def row_range(self, key: str) -> tuple[int, int]:
        """Rows of the namespace ``key`` and every namespace below it."""
        a, b = _key_range(self.keys, key)
        return int(self.offsets[a]), int(self.offsets[b])

    def rows_of(self, item_ids: np.ndarray) -> np.ndarray:
        """Row positions holding any of ``item_ids``."""
        if self._by_id is None:
            self._by_id = np.argsort(self.ids, kind="stable")
        sorted_ids = self.ids[self._by_id]
        lo = np.searchsorted(sorted_ids, item_ids, side="left")
        hi = np.searchsorted(sorted_ids, item_ids, side="right")
        hit = hi > lo
        if not hit.any():
            return np.empty(0, dtype=np.int64)
        spans = [self._by_id[a:b] for a, b in zip(lo[hit], hi[hit], strict=True)]
        return np.concatenate(spans)

    def mask_items(self, item_ids: np.ndarray) -> None:
        """Mark the rows of ``item_ids`` dead (superseded or deleted)."""
        if not len(item_ids) or not len(self.ids):
            return
        if self._id_range is None:
            self._id_range = (int(self.ids.min()), int(self.ids.max()))
        lo, hi = self._id_range
        ids = np.asarray(item_ids, dtype=np.int64)
        # New items have ids above every older segment's: most writes skip the search.
        ids = ids[(ids >= lo) & (ids <= hi)]
        if len(ids):
            self.dead[self.rows_of(ids)] = True

    # -- building and files ---------------------------------------------------

    @classmethod
    def build(
        cls,
        rows: Iterable[tuple[str, int, np.ndarray]],
        touched: Iterable[int],
        meta: dict[str, Any] | None = None,
        *,
        dims: int,
    ) -> Segment:
        """A segment from ``(namespace key, item id, unit vectors)`` triples."""
        rows = sorted(rows, key=lambda r: (r[0], r[1]))
        dims = rows[0][2].shape[1] if rows else dims
        keys: list[str] = []
        offsets: list[int] = []
        n = 0
        for key, _, vecs in rows:
            if not keys or keys[-1] != key:
                keys.append(key)
                offsets.append(n)
            n += len(vecs)
        offsets.append(n)
        unit = (
            np.concatenate([r[2] for r in rows]).astype(np.float32, copy=False)
            if rows
            else np.empty((0, dims), dtype=np.float32)
        )
        ids = np.repeat(
            np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
            [len(r[2]) for r in rows],
        )
        codes, scale, err = quantize(unit) if n else _empty_codes(dims)
        touched_arr = np.unique(np.fromiter(touched, dtype=np.int64))
        return cls(
            keys,
            np.asarray(offsets, dtype=np.int64),
            ids,
            unit,
            codes,
            scale,
            err,
            touched_arr,
            meta,
        )

    @classmethod
    def merge(cls, parts: Sequence[Segment], meta: dict[str, Any] | None = None) -> Segment:
        """One segment holding the live rows of ``parts`` (oldest first)."""
        keep = [np.flatnonzero(~p.dead) for p in parts]
        all_keys = sorted({p.keys[i] for p in parts for i in range(len(p.keys))})
        rank = {k: i for i, k in enumerate(all_keys)}
        key_idx, ids = [], []
        for p, rows in zip(parts, keep, strict=True):
            per_row = np.repeat(
                np.fromiter((rank[k] for k in p.keys), dtype=np.int64, count=len(p.keys)),
                np.diff(p.offsets),
            )
            key_idx.append(per_row[rows])
            ids.append(p.ids[rows])
        k = np.concatenate(key_idx) if key_idx else np.empty(0, np.int64)
        i = np.concatenate(ids) if ids else np.empty(0, np.int64)
        order = np.lexsort((i, k))
        where = np.empty_like(order)
        where[order] = np.arange(len(order))  # output position of each input row
        starts = np.cumsum([0, *(len(rows) for rows in keep)])

        def gather(attr: str) -> np.ndarray:
            # Scattered part by part: the merged arrays exist once, never twice.
            first = getattr(parts[0], attr)
            out = np.empty((len(order), *first.shape[1:]), dtype=first.dtype)
            for p, rows, a, b in zip(parts, keep, starts[:-1], starts[1:], strict=True):
                out[where[a:b]] = getattr(p, attr)[rows]
            return out

        k = k[order]
        counts = np.bincount(k, minlength=len(all_keys))
        present = counts > 0
        offsets = np.concatenate([[0], np.cumsum(counts[present])]).astype(np.int64)
        touched = np.unique(np.concatenate([p.touched for p in parts]))
        return cls(
            [key for key, ok in zip(all_keys, present, strict=True) if ok],
            offsets,
            i[order],
            gather("unit"),
            gather("codes"),
            gather("scale"),
            gather("err"),
            touched,
            meta,
        )

    def save(self, path: Path) -> None:
        """Write to ``path`` (via a temporary file and a rename: readers see a
        whole file or none)."""
        arrays = {
            "offsets": self.offsets,
            "ids": self.ids,
            "unit": self.unit,
            "codes": self.codes,
            "scale": self.scale,
            "err": self.err,
            "touched": self.touched,
        }
        layout: dict[str, Any] = {}
        pos = 0
        for name, arr in arrays.items():
            layout[name] = [arr.dtype.str, list(arr.shape), pos]
            pos += -(-arr.nbytes // _ALIGN) * _ALIGN
        header = json.dumps({"meta": self.meta, "keys": self.keys, "arrays": layout}).encode()
        base = -(-(len(_MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(_MAGIC + len(header).to_bytes(8, "little") + header)
            for name, arr in arrays.items():
                f.seek(base + layout[name][2])
                f.write(np.ascontiguousarray(arr).tobytes())
            f.seek(base + pos)
            f.write(_TRAILER)
            # On disk before the database names it: a power cut never leaves a
            # listed segment half written.
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)

    @classmethod
    def load(cls, path: Path) -> Segment:
        """Memory-map a segment file; ``ValueError`` if it is not a whole one."""
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < len(_MAGIC) + 8 + len(_TRAILER):
                raise ValueError(f"{path} is truncated")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if mm[: len(_MAGIC)] != _MAGIC or mm[-len(_TRAILER) :] != _TRAILER:
            raise ValueError(f"{path} is not a complete vector segment")
        hlen = int.from_bytes(mm[len(_MAGIC) : len(_MAGIC) + 8], "little")
        header = json.loads(mm[len(_MAGIC) + 8 : len(_MAGIC) + 8 + hlen])
        base = -(-(len(_MAGIC) + 8 + hlen) // _ALIGN) * _ALIGN
        arrays = {}
        for name, (dtype, shape, off) in header["arrays"].items():
            count = int(np.prod(shape)) if shape else 1
            arrays[name] = np.frombuffer(mm, dtype=dtype, count=count, offset=base + off).reshape(
                shape
            )
        return cls(header["keys"], meta=header["meta"], **arrays)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


# -- the delta: recent writes, in memory ---------------------------------------


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
        if b - a <= EXACT_ROWS:
            mid = f32_dots(seg.unit[a:b], self._q)
            radius = np.zeros(b - a)
        else:
            mid = int8_dots(seg.codes[a:b], qcode)
            mid *= seg.scale[a:b] * qscale
            err = seg.err[a:b].astype(np.float64)
            radius = err * (1.0 + qerr) + (qerr + FP_SLACK)
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

    def finish(self) -> ScopeScores:
        def cat(xs: list[np.ndarray], dtype: Any) -> np.ndarray:
            if not xs:
                return np.empty(0, dtype=dtype)
            return xs[0] if len(xs) == 1 else np.concatenate(xs)

        self.ids = cat(self._ids, np.int64)
        self._mid_all = cat(self._mid, np.float64)
        self._radius_all = cat(self._radius, np.float64)
        self.upper = self._mid_all + self._radius_all
        return self

    @property
    def lower(self) -> np.ndarray:
        return self._mid_all - self._radius_all

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
        for seg in [*self.segments, *self.delta.segments()]:
            a, b = seg.row_range(key)
            scores.add(seg, a, b, qcodes[0], float(qscale[0]), float(qerr[0]))
        return scores.finish()
