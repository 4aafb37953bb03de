"""Segments of the vector index: immutable, namespace-sorted runs of unit
vectors with their int8 codes, each in one memory-mapped file (see
:mod:`._vector_index` for how searches use them), and the kernels that score
them.

Examples:
    >>> import numpy as np
    >>> unit = normalize_rows(np.array([[3.0, 4.0]], dtype=np.float32))
    >>> [round(float(x), 2) for x in unit[0]]
    [0.6, 0.8]
"""

from __future__ import annotations

import bisect
import contextlib
import json
import mmap
import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidValueError
from .threads import available_cores, threads_for

__all__ = [
    "FileRows",
    "Segment",
    "f32_dots",
    "int8_dots",
    "key_of",
    "normalize_rows",
    "quantize",
]


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

_PARALLEL_ROWS = 200_000  # larger scans may use more than one thread (see .threads)
_CHUNK_ROWS = 65_536  # a unit of a parallel scan: a thread that is late delays one
_pool: Any = None
_pool_lock = threading.Lock()


def _scan_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(2, 4 * available_cores()), "lmx-scan")
        return _pool


def int8_dots(codes: np.ndarray, qcode: np.ndarray) -> np.ndarray:
    """Exact integer dot products of every code row with ``qcode``, as float32
    (exact: a dot of int8 codes is below 2**24 up to 1,040 dimensions).

    A scan of a large scope is cut into chunks that the threads (bulk work:
    every core, see :mod:`.threads`) take one at a time: a thread the kernel
    schedules late, beside other busy processes, delays one chunk, not half
    the scan. (Measured on two cores under load: fewer threads than cores
    is slower, as the kernel shares the cores per thread.)
    """
    out = np.empty(len(codes), dtype=np.float32)
    if len(codes) == 0:
        return out
    if _simd is None:  # pragma: no cover - simsimd has wheels for every common platform
        out[:] = codes.astype(np.float32) @ qcode.astype(np.float32)
        return out
    q = qcode[None, :]

    def part(a: int) -> None:
        b = min(len(codes), a + _CHUNK_ROWS)
        _simd.cdist(codes[a:b], q, metric="dot", out=out[a:b].reshape(-1, 1), threads=1)

    threads = threads_for("bulk") if len(codes) >= _PARALLEL_ROWS else threads_for("query")
    starts = range(0, len(codes), _CHUNK_ROWS)
    if threads <= 1:
        for a in starts:
            part(a)
        return out
    it = iter(starts)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                a = next(it, None)
            if a is None:
                return
            part(a)

    pool = _scan_pool()
    futures = [pool.submit(worker) for _ in range(threads - 1)]
    worker()  # the calling thread scans too
    for f in futures:
        f.result()
    return out


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
        self.path: Path | None = None  # the file it was mapped from, if any
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
        twin.path = self.path
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
                # Written from the array's own memory: a bytes copy of a merged
                # million-row segment would double its 1.1 GB while saving.
                f.write(np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data)
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
                raise InvalidValueError(f"{path} is truncated")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if mm[: len(_MAGIC)] != _MAGIC or mm[-len(_TRAILER) :] != _TRAILER:
            raise InvalidValueError(f"{path} is not a complete vector segment")
        hlen = int.from_bytes(mm[len(_MAGIC) : len(_MAGIC) + 8], "little")
        header = json.loads(mm[len(_MAGIC) + 8 : len(_MAGIC) + 8 + hlen])
        base = -(-(len(_MAGIC) + 8 + hlen) // _ALIGN) * _ALIGN
        arrays: dict[str, Any] = {}
        for name, (dtype, shape, off) in header["arrays"].items():
            if name == "unit" and _PREAD and len(shape) == 2:
                arrays[name] = FileRows(path, base + off, (shape[0], shape[1]), np.dtype(dtype))
                continue
            count = int(np.prod(shape)) if shape else 1
            arrays[name] = np.frombuffer(mm, dtype=dtype, count=count, offset=base + off).reshape(
                shape
            )
        seg = cls(header["keys"], meta=header["meta"], **arrays)
        seg.path = path
        return seg


_PREAD = hasattr(os, "preadv")
#: Scattered reads of more runs than this are spread over _READ_THREADS threads.
_PARALLEL_READS = 64
_READ_THREADS = 4


class FileRows:
    """The full-precision rows of a segment file, read on demand.

    A search scans the int8 codes of its scope (memory-mapped) but reads only
    the few float32 rows it re-ranks. Mapped, each such read also maps the
    file pages around it (whole large folios on recent kernels): after one
    whole-store search at a million 384-dimension vectors, 1.4 GB of the
    float32 array counted in the process's resident memory. Read with
    ``preadv``, a search holds only the rows it asked for; the file's pages
    stay in the operating system's cache, shared by every process.

    Indexing takes a slice, an integer or an array of positions (or a
    boolean mask) and returns a new array.

    Examples:
        >>> import tempfile
        >>> rows = np.arange(12, dtype=np.float32).reshape(4, 3)
        >>> path = Path(tempfile.mkdtemp()) / "rows"
        >>> _ = path.write_bytes(b"head" + rows.tobytes())
        >>> fr = FileRows(path, 4, (4, 3), np.dtype(np.float32))
        >>> fr[np.array([3, 1, 3])][:, 0].tolist(), fr[1:3].shape, len(fr)
        ([9.0, 3.0, 9.0], (2, 3), 4)
    """

    ndim = 2

    def __init__(self, path: Path, offset: int, shape: tuple[int, int], dtype: np.dtype) -> None:
        # The descriptor keeps the file readable after it is retired and deleted.
        self._fd = os.open(path, os.O_RDONLY)
        self._offset = offset
        self.shape = shape
        self.dtype = dtype
        self._row = shape[1] * dtype.itemsize
        self.nbytes = shape[0] * self._row

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            os.close(self._fd)

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self._read(0, self.shape[0])
        return out if dtype is None else out.astype(dtype, copy=False)

    def _read(self, a: int, b: int, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty((max(b - a, 0), self.shape[1]), dtype=self.dtype)
        view = out.reshape(-1).view(np.uint8).data
        done, start = 0, self._offset + a * self._row
        while done < len(view):
            got = os.preadv(self._fd, [view[done:]], start + done)
            if got <= 0:
                raise InvalidValueError("a vector segment file ended early")
            done += got
        return out

    def __getitem__(self, index: Any) -> np.ndarray:
        if isinstance(index, slice):
            a, b, step = index.indices(self.shape[0])
            if step == 1:
                return self._read(a, max(a, b))
            index = np.arange(a, b, step)
        if isinstance(index, (int, np.integer)):
            n = self.shape[0]
            if not -n <= index < n:
                raise IndexError(f"row {index} out of range for {n} rows")
            return self._read(int(index) % n, int(index) % n + 1)[0]
        pos = np.asarray(index)
        if pos.dtype == bool:
            pos = np.flatnonzero(pos)
        pos = pos.astype(np.int64, copy=False)
        if not len(pos):
            return np.empty((0, self.shape[1]), dtype=self.dtype)
        if pos.min() < 0 or pos.max() >= self.shape[0]:
            raise IndexError(f"row positions out of range for {self.shape[0]} rows")
        rows, back = np.unique(pos, return_inverse=True)
        out = np.empty((len(rows), self.shape[1]), dtype=self.dtype)
        # One read per run of adjacent rows: a merge reads a part in a few.
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        runs = list(zip([0, *breaks.tolist()], [*breaks.tolist(), len(rows)], strict=True))

        def read(group: list[tuple[int, int]]) -> None:
            for s, e in group:
                self._read(int(rows[s]), int(rows[e - 1]) + 1, out[s:e])

        if len(runs) < _PARALLEL_READS:
            read(runs)
        else:
            # Hundreds of scattered rows (an exact re-rank at a million
            # items): the reads are system calls that wait on the page cache
            # and the scheduler, so a few threads overlap them.
            k = _READ_THREADS
            list(_scan_pool().map(read, [runs[i::k] for i in range(k)]))
        return out if np.array_equal(rows, pos) else out[back]


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
