"""Fusion rules measured outside the stores, on the stores' own two sides.

For each question the bench asks the store for its whole vector ranking
(cosine of every turn) and its whole keyword ranking (BM25 over the best
match, as the store scores it), then fuses them here with each rule. The
``fixed`` rule is the stores' hybrid (``w * minmax(cos) + (1 - w) * kw``,
w = 0.5), so its row checks the simulation against the store's own hybrid
row; the others are candidates for the stores:

``zscore``
    each side standardised over the items searched (keyword non-matches
    count 0), then averaged: a side whose best items stand out counts more.
``rrf``
    reciprocal rank fusion, ``1/(60 + rank)`` summed over both sides.
``adaptive``
    the fixed rule with a per-query weight from the two score distributions:
    how far the best cosine stands above the rest (its z-score), the share
    of items that match a query word, and the second-best keyword score.
    Its constants were chosen on the dev splits only (:func:`tune`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ADAPTIVE", "RULES", "Sides", "adaptive_weight", "fuse", "tune"]


@dataclass(frozen=True)
class Sides:
    """One question's two rankings over the same ``n`` items (by position)."""

    cos: np.ndarray  # cosine of every item
    kw: np.ndarray  # keyword score in [0, 1] of every item, 0 for non-matches
    pcos: np.ndarray | None = None  # best cosine over each item's passages (long items split)


# (c0, c_z, c_share, c_second): see adaptive_weight. Chosen by ``tune`` on the
# dev splits of technical-long and multilingual-sessions, both stores (held-out
# splits not looked at); --tune-fusion chooses them again for the sets given.
ADAPTIVE = (0.7, 0.0, -0.6, 0.2)


def adaptive_weight(s: Sides, c: Sequence[float] = ADAPTIVE) -> float:
    """The vector side's weight for one question, in [0.1, 0.9].

    Examples:
        >>> s = Sides(np.array([0.9, 0.2, 0.1]), np.array([1.0, 0.0, 0.0]))
        >>> adaptive_weight(s, (0.5, 0.0, 0.0, 0.0))
        0.5
        >>> round(adaptive_weight(s), 3)  # one item in three matches a word
        0.58
    """
    cos = s.cos
    sd = float(cos.std())
    z = (float(cos.max()) - float(cos.mean())) / sd if sd > 0 else 0.0
    matched = s.kw > 0
    share = float(matched.mean()) if len(cos) else 0.0
    second = float(np.sort(s.kw)[-2]) if len(s.kw) > 1 else 0.0
    c0, cz, cs, c2 = c
    w = c0 + cz * (z - 3.0) + cs * (share - 0.3) + c2 * (second - 0.5)
    if not matched.any():
        w = 1.0  # nothing to fuse: the vector ranking alone
        return w
    return float(min(0.9, max(0.1, w)))


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.ones_like(x)


def _z(x: np.ndarray) -> np.ndarray:
    sd = float(x.std())
    return (x - float(x.mean())) / sd if sd > 0 else np.zeros_like(x)


def _rank(x: np.ndarray) -> np.ndarray:
    order = np.argsort(-x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    return r


def fuse(rule: str, s: Sides, c: Sequence[float] = ADAPTIVE) -> np.ndarray:
    """Fused score of every item (higher first) under ``rule``."""
    if rule == "fixed":
        return 0.5 * _minmax(s.cos) + 0.5 * s.kw
    if rule == "adaptive":
        w = adaptive_weight(s, c)
        return w * _minmax(s.cos) + (1.0 - w) * s.kw
    if rule == "zscore":
        return _z(s.cos) + _z(s.kw)
    if rule == "rrf":
        kw_rank = np.where(s.kw > 0, _rank(s.kw), np.inf)
        return 1.0 / (60.0 + _rank(s.cos)) + 1.0 / (60.0 + kw_rank)
    raise ValueError(f"unknown fusion rule {rule!r}; choose from {list(RULES)}")


RULES = ("fixed", "zscore", "rrf", "adaptive")

# (sides, evidence positions) -> recall@10 of one question
Question = tuple[Sides, frozenset[int], str]  # sides, evidence positions, group (set)


def recall10(scores: np.ndarray, evidence: frozenset[int]) -> float:
    top = np.argsort(-scores, kind="stable")[:10]
    return len(evidence & set(top.tolist())) / len(evidence)


def tune(
    questions: Sequence[Question],
    grid: dict[str, Sequence[float]] | None = None,
    score: Callable[[np.ndarray, frozenset[int]], float] = recall10,
) -> tuple[tuple[float, ...], float]:
    """The adaptive constants that maximise the worst group's mean R@10 gain
    over the better of the group's vector-only and keyword-only R@10 (so that
    hybrid is at least both on every set), ties by the mean over groups.
    Give it dev questions only."""
    grid = grid or {
        "c0": (0.4, 0.5, 0.6, 0.7),
        "cz": (-0.1, -0.05, 0.0, 0.05, 0.1),
        "cs": (-0.6, -0.3, 0.0, 0.3),
        "c2": (-0.4, -0.2, 0.0, 0.2),
    }
    groups = sorted({g for _, _, g in questions})
    base: dict[str, float] = {}
    for g in groups:
        qs = [(s, e) for s, e, gg in questions if gg == g]
        v = np.mean([score(s.cos, e) for s, e in qs])
        k = np.mean([score(s.kw, e) for s, e in qs])
        base[g] = float(max(v, k))
    best: tuple[tuple[float, ...], tuple[float, float]] = ((), (-np.inf, -np.inf))
    for c in itertools.product(*grid.values()):
        per = []
        for g in groups:
            qs = [(s, e) for s, e, gg in questions if gg == g]
            per.append(float(np.mean([score(fuse("adaptive", s, c), e) for s, e in qs])) - base[g])
        key = (min(per), float(np.mean(per)))
        if key > best[1]:
            best = (tuple(c), key)
    return best[0], best[1][0]
