"""Exact in-memory vector index: one block of unit vectors per namespace.

The database is the source of truth; this index is a cache of its vectors
that makes exact (brute-force) cosine search fast without SQLite extensions.
Searches scoped to a namespace only touch that namespace's blocks (a matrix
product over a contiguous view, no copy), so a user's search costs what the
user's memories cost, not what the whole store costs.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import numpy as np

__all__ = ["VectorIndex", "normalize_rows"]


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero, scoring 0)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class _Block:
    __slots__ = ("ids", "multi", "n", "rows_of", "vecs")

    def __init__(self, dims: int) -> None:
        self.vecs = np.empty((8, dims), dtype=np.float32)
        self.ids = np.empty(8, dtype=np.int64)
        self.n = 0
        self.rows_of: dict[int, list[int]] = {}
        self.multi = 0  # items with more than one vector

    def add(self, item_id: int, unit: np.ndarray) -> None:
        k = unit.shape[0]
        need = self.n + k
        if need > self.vecs.shape[0]:
            cap = max(need, self.vecs.shape[0] * 2)
            vecs = np.empty((cap, self.vecs.shape[1]), dtype=np.float32)
            vecs[: self.n] = self.vecs[: self.n]
            ids = np.empty(cap, dtype=np.int64)
            ids[: self.n] = self.ids[: self.n]
            self.vecs, self.ids = vecs, ids
        self.vecs[self.n : need] = unit
        self.ids[self.n : need] = item_id
        self.rows_of[item_id] = list(range(self.n, need))
        if k > 1:
            self.multi += 1
        self.n = need

    def remove(self, item_id: int) -> None:
        rows = self.rows_of.pop(item_id, None)
        if not rows:
            return
        if len(rows) > 1:
            self.multi -= 1
        for r in sorted(rows, reverse=True):
            last = self.n - 1
            if r != last:
                moved = int(self.ids[last])
                self.vecs[r] = self.vecs[last]
                self.ids[r] = moved
                moved_rows = self.rows_of[moved]
                moved_rows[moved_rows.index(last)] = r
            self.n -= 1

    def scores(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids = self.ids[: self.n]
        sims = self.vecs[: self.n] @ query
        if not self.multi:
            return ids, sims
        # Items with several vectors score as their best one.
        order = np.lexsort((-sims, ids))
        ids_sorted = ids[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = ids_sorted[1:] != ids_sorted[:-1]
        keep = order[first]
        return ids[keep], sims[keep]


class VectorIndex:
    """Unit vectors grouped by namespace, searched exactly.

    Example:
        >>> import numpy as np
        >>> ix = VectorIndex(dims=2)
        >>> ix.put("user.a", 1, np.array([[1.0, 0.0]]))
        >>> ix.put("user.b", 2, np.array([[0.0, 1.0]]))
        >>> ids, sims = ix.search("user.a", np.array([1.0, 0.0], dtype=np.float32))
        >>> ids.tolist(), sims.tolist()
        ([1], [1.0])
    """

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self._blocks: dict[str, _Block] = {}
        self._sorted: list[str] | None = []
        self._where: dict[int, str] = {}
        self.generation: int | None = None  # database write counter this cache reflects

    def __len__(self) -> int:
        return len(self._where)

    def clear(self) -> None:
        self._blocks.clear()
        self._where.clear()
        self._sorted = []
        self.generation = None

    def put(self, prefix: str, item_id: int, vectors: np.ndarray) -> None:
        """Set the vectors of an item (replacing any it had)."""
        self.remove(item_id)
        if len(vectors) == 0:
            return
        block = self._blocks.get(prefix)
        if block is None:
            block = self._blocks[prefix] = _Block(self.dims)
            self._sorted = None
        block.add(item_id, normalize_rows(vectors))
        self._where[item_id] = prefix

    def remove(self, item_id: int) -> None:
        prefix = self._where.pop(item_id, None)
        if prefix is None:
            return
        block = self._blocks[prefix]
        block.remove(item_id)
        if block.n == 0:
            del self._blocks[prefix]
            self._sorted = None

    def prefixes_under(self, prefix: str) -> Iterable[str]:
        """Block namespaces equal to ``prefix`` or below it (all when empty)."""
        if self._sorted is None:
            self._sorted = sorted(self._blocks)
        keys = self._sorted
        if not prefix:
            yield from keys
            return
        if prefix in self._blocks:
            yield prefix
        lo = bisect.bisect_left(keys, prefix + ".")
        hi = bisect.bisect_left(keys, prefix + "/")
        yield from keys[lo:hi]

    def search(self, prefix: str, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine similarity of every item under ``prefix`` to ``query``.

        Returns item ids and their similarities (best vector per item), unsorted.
        """
        norm = float(np.linalg.norm(query))
        q = (query / norm if norm else query).astype(np.float32)
        parts = [self._blocks[p].scores(q) for p in self.prefixes_under(prefix)]
        if not parts:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
