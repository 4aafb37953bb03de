"""How search results are scored and ordered. Pure functions over numpy arrays.

Scores by mode (the ``score`` of each returned ``SearchItem``):

``vector``
    Plain cosine similarity of the query embedding and the item's best
    embedded field, in [-1, 1] — exactly what LangGraph's stores return, so
    code that thresholds on it keeps working.
``keyword``
    BM25 divided by the best BM25 among the matches of this query, in (0, 1];
    the best keyword match scores 1. SQLite uses FTS5's BM25; PostgreSQL sums
    each query word's ``ts_rank`` times the word's BM25 inverse document
    frequency over the items searched, so on both a word most items share
    counts less than a rare one.
``hybrid`` (default when an embedder is configured)
    ``w * v + (1 - w) * k`` in [0, 1], where ``v`` is the cosine min-max
    normalised over the items searched (the namespace scope, before filters:
    the closest item gets 1, the farthest 0) and ``k`` the keyword score above
    (0 for items without a keyword match). ``w`` is ``vector_weight``, 0.5 by
    default. Because both parts are relative to the query, hybrid scores rank
    results; they are not calibrated probabilities — threshold on ``vector``
    mode's cosine when you need an absolute cut-off.

Ties are broken by item id (insertion order), so pagination is stable. In
``vector`` and ``hybrid`` mode, items that were stored with ``index=False`` (or
have no text in the indexed fields) follow all scored items, with
``score=None``, most recently updated first; ``keyword`` mode returns only the
items that match the query's words.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["DEFAULT_VECTOR_WEIGHT", "Ranking", "fuse", "top_order"]

DEFAULT_VECTOR_WEIGHT = 0.5


def fuse(
    mode: str,
    vec_ids: np.ndarray | None,
    vec_sims: np.ndarray | None,
    kw_ids: np.ndarray | None,
    kw_raw: np.ndarray | None,
    vector_weight: float = DEFAULT_VECTOR_WEIGHT,
) -> tuple[np.ndarray, np.ndarray]:
    """Combine vector similarities and keyword scores into one score per item.

    ``kw_raw`` are relevance values where larger is better (for FTS5, pass
    ``-bm25()``). Returns ``(ids, scores)`` unsorted; ids are unique.

    Examples:
        >>> ids, s = fuse("hybrid", np.array([1, 2]), np.array([0.9, 0.1]),
        ...               np.array([2]), np.array([3.0]))
        >>> dict(zip(ids.tolist(), s.round(2).tolist()))
        {1: 0.5, 2: 0.5}
    """
    empty_i = np.empty(0, dtype=np.int64)
    empty_f = np.empty(0, dtype=np.float64)
    vi = empty_i if vec_ids is None else np.asarray(vec_ids, dtype=np.int64)
    vs = empty_f if vec_sims is None else np.asarray(vec_sims, dtype=np.float64)
    ki = empty_i if kw_ids is None else np.asarray(kw_ids, dtype=np.int64)
    kr = empty_f if kw_raw is None else np.asarray(kw_raw, dtype=np.float64)
    if mode == "vector":
        return vi, vs
    k = _keyword_scores(kr)
    if mode == "keyword" or len(vi) == 0:
        return ki, k
    lo, hi = float(vs.min()), float(vs.max())
    v = (vs - lo) / (hi - lo) if hi > lo else np.ones_like(vs)
    if len(ki) == 0:
        return vi, vector_weight * v
    # Item ids are small non-negative ints: tables indexed by id map keyword
    # scores onto the vector side in O(n), with no sort over the whole scope.
    top = int(max(vi.max(), ki.max())) + 1
    kw_of = np.zeros(top, dtype=np.float64)
    kw_of[ki] = k
    scores = vector_weight * v + (1.0 - vector_weight) * kw_of[vi]
    has_vector = np.zeros(top, dtype=bool)
    has_vector[vi] = True
    extra = ki[~has_vector[ki]]  # keyword matches without a vector
    if len(extra) == 0:
        return vi, scores
    return np.concatenate([vi, extra]), np.concatenate(
        [scores, (1.0 - vector_weight) * kw_of[extra]]
    )


class VectorCandidates(Protocol):
    """The vector side of a search: candidate ids with cosine bounds, and the
    exact cosine of any of them on demand (the store's vector index)."""

    @property
    def ids(self) -> np.ndarray: ...
    @property
    def lower(self) -> np.ndarray: ...
    @property
    def upper(self) -> np.ndarray: ...
    def exact(self, pos: np.ndarray) -> np.ndarray: ...


class Ranking:
    """The scores of :func:`fuse`, for a vector side known only within bounds.

    ``vector`` has ``ids``, ``lower``/``upper`` bounds on each item's cosine
    and ``exact(positions)``; ``upper`` here bounds each item's final score, and
    :meth:`exact` gives the score :func:`fuse` would give. Callers visit items
    by ``upper`` and stop once the page is above every unvisited bound, so only
    the items that can reach the page are scored exactly.

    Examples:
        >>> class Exact:
        ...     ids = np.array([1, 2]); lower = upper = np.array([0.9, 0.1])
        ...     def exact(self, pos): return self.lower[pos]
        >>> r = Ranking("hybrid", Exact(), np.array([2]), np.array([3.0]))
        >>> r.ids.tolist(), r.exact(np.arange(2)).round(2).tolist()
        ([1, 2], [0.5, 0.5])
    """

    def __init__(
        self,
        mode: str,
        vector: VectorCandidates | None,
        kw_ids: np.ndarray | None,
        kw_raw: np.ndarray | None,
        vector_weight: float = DEFAULT_VECTOR_WEIGHT,
    ) -> None:
        self.mode = mode
        self.w = vector_weight
        self.vector = vector if vector is not None and len(vector.ids) else None
        ki = np.empty(0, np.int64) if kw_ids is None else np.asarray(kw_ids, dtype=np.int64)
        k = _keyword_scores(
            np.empty(0, np.float64) if kw_raw is None else np.asarray(kw_raw, np.float64)
        )
        vec = self.vector
        if mode == "vector" or (mode == "hybrid" and vec is not None and not len(ki)):
            self.ids = vec.ids if vec is not None else np.empty(0, np.int64)
            self._nvec = len(self.ids)
            self._kw = None
            self._extra = np.empty(0, np.float64)
        elif mode == "keyword" or vec is None:
            self.ids, self._nvec, self._kw, self._extra = ki, 0, None, k
        else:
            top = int(max(vec.ids.max(), ki.max())) + 1
            kw_of = np.zeros(top, dtype=np.float64)
            kw_of[ki] = k
            has_vector = np.zeros(top, dtype=bool)
            has_vector[vec.ids] = True
            extra = ki[~has_vector[ki]]
            self.ids = np.concatenate([vec.ids, extra])
            self._nvec = len(vec.ids)
            self._kw = kw_of[vec.ids]
            self._extra = (1.0 - self.w) * kw_of[extra]
        self._lo = self._hi = 0.0
        if mode == "hybrid" and vec is not None:
            self._lo, self._hi = self._cosine_range(vec)
        fused = self._fused(vec.upper) if vec is not None else np.empty(0)
        self.upper = np.concatenate([fused, self._extra]) if len(self._extra) else fused

    @staticmethod
    def _cosine_range(vec: VectorCandidates) -> tuple[float, float]:
        # Exact min and max cosine over the scope, from the few items that can hold them.
        lower, upper = vec.lower, vec.upper
        top = np.flatnonzero(upper >= lower.max())
        bottom = np.flatnonzero(lower <= upper.min())
        return float(vec.exact(bottom).min()), float(vec.exact(top).max())

    def _fused(self, cos: np.ndarray) -> np.ndarray:
        if self.mode != "hybrid":
            return np.asarray(cos)
        lo, hi = self._lo, self._hi
        v = (cos - lo) / (hi - lo) if hi > lo else np.ones(len(cos))
        if self._kw is None:
            return self.w * v
        return self.w * v + (1.0 - self.w) * self._kw

    def __len__(self) -> int:
        return len(self.ids)

    def exact(self, pos: np.ndarray) -> np.ndarray:
        """Final scores of the items at ``pos``."""
        pos = np.asarray(pos, dtype=np.int64)
        out = np.empty(len(pos), dtype=np.float64)
        is_vec = pos < self._nvec
        if is_vec.any():
            vp = pos[is_vec]
            assert self.vector is not None  # positions below _nvec are vector candidates
            cos = self.vector.exact(vp)
            if self.mode == "hybrid":
                lo, hi = self._lo, self._hi
                v = (cos - lo) / (hi - lo) if hi > lo else np.ones(len(cos))
                kw = self._kw[vp] if self._kw is not None else 0.0
                cos = self.w * v + (1.0 - self.w) * kw
            out[is_vec] = cos
        if (~is_vec).any():
            out[~is_vec] = self._extra[pos[~is_vec] - self._nvec]
        return out


def _keyword_scores(raw: np.ndarray) -> np.ndarray:
    if len(raw) == 0:
        return raw
    best = float(raw.max())
    if best <= 0:
        return np.ones_like(raw)
    return np.clip(raw / best, 0.0, 1.0)


def top_order(ids: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """Positions of the best ``n`` items by (score desc, id asc), in that order.

    Ties at the cut are all kept before sorting, so page boundaries never
    depend on how a partition split equal scores.
    """
    total = len(ids)
    if n <= 0 or total == 0:
        return np.empty(0, dtype=np.int64)
    if n < total:
        kth = np.partition(scores, total - n)[total - n]
        cand = np.nonzero(scores >= kth)[0]
    else:
        cand = np.arange(total)
    order = cand[np.lexsort((ids[cand], -scores[cand]))]
    return order[:n]
