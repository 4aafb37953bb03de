"""Re-ranking stages over a search's best candidates. Pure numpy, no I/O.

A store ranks the whole scope cheaply (hybrid scores, :mod:`._hybrid`); a stage
then reorders only the best few dozen candidates, using what the first ranking
could not afford to look at for every item. Each stage takes the candidates in
the store's order (best first) with their scores and returns a new order, as
positions into the candidates, best first. Ties keep the store's order, so a
stage never makes paging unstable.

Stages (each measured on LoCoMo in ``docs/benchmarks.md``):

``feedback``
    Pseudo-relevance feedback (Rocchio): the centroid of the best ``top``
    candidates' vectors is taken as a second query, and each candidate gains
    ``weight`` times its cosine to that centroid. Finds items worded unlike the
    question but like its best answers.
``group_boost``
    Items sharing a group (a conversation session, a thread, a document) with
    strong candidates gain ``weight`` times the mean of their group's best
    ``top`` scores: evidence for one question tends to sit together.
``diversify``
    Maximal marginal relevance: each next pick trades its score against its
    similarity to the items already picked, so near-duplicates do not crowd
    out evidence for other parts of a question.

Examples:
    >>> import numpy as np
    >>> scores = np.array([0.9, 0.5, 0.4])
    >>> vecs = np.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.6]])
    >>> feedback(scores, vecs, top=1, weight=0.5).tolist()
    [0, 2, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["diversify", "feedback", "group_boost", "order_by"]


def order_by(scores: np.ndarray) -> np.ndarray:
    """Positions by score descending; ties keep the incoming order.

    Examples:
        >>> order_by(np.array([0.2, 0.5, 0.5])).tolist()
        [1, 2, 0]
    """
    s = np.asarray(scores, dtype=np.float64)
    return np.lexsort((np.arange(len(s)), -s))


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def feedback(
    scores: np.ndarray, vectors: np.ndarray, *, top: int = 3, weight: float = 0.3
) -> np.ndarray:
    """Pseudo-relevance feedback over candidates (see the module docstring).

    Args:
        scores: the store's scores of the candidates, best first.
        vectors: one embedding per candidate (rows), any scale.
        top: how many of the best candidates form the feedback centroid.
        weight: how much the cosine to that centroid adds to a score.

    Returns:
        Positions into the candidates, best first.
    """
    s = np.asarray(scores, dtype=np.float64)
    if len(s) <= 1 or top <= 0 or weight == 0:
        return order_by(s)
    v = _unit(np.asarray(vectors, dtype=np.float64))
    centroid = _unit(v[order_by(s)[:top]].mean(axis=0))
    return order_by(s + weight * (v @ centroid))


def group_boost(
    scores: np.ndarray, groups: Sequence[Any], *, top: int = 3, weight: float = 0.2
) -> np.ndarray:
    """Lift items whose group holds strong candidates (see the module docstring).

    Args:
        scores: the store's scores of the candidates, best first.
        groups: one hashable group label per candidate (``None``: no group).
        top: a group's strength is the mean of its best ``top`` scores.
        weight: how much that strength adds to each member's score.

    Examples:
        >>> group_boost(np.array([0.9, 0.6, 0.55]), ["a", "b", "a"], weight=0.5).tolist()
        [0, 2, 1]
    """
    s = np.asarray(scores, dtype=np.float64)
    by_group: dict[Any, list[int]] = {}
    for i, g in enumerate(groups):
        if g is not None:
            by_group.setdefault(g, []).append(i)
    out = s.copy()
    for members in by_group.values():
        m = np.array(members)
        strength = np.sort(s[m])[::-1][:top].mean()
        out[m] += weight * strength
    return order_by(out)


def diversify(scores: np.ndarray, vectors: np.ndarray, *, lam: float = 0.85) -> np.ndarray:
    """Maximal marginal relevance order (see the module docstring).

    ``lam`` = 1 keeps the store's order; lower values favour variety.

    Examples:
        >>> v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        >>> diversify(np.array([0.9, 0.85, 0.8]), v, lam=0.5).tolist()
        [0, 2, 1]
    """
    s = np.asarray(scores, dtype=np.float64)
    n = len(s)
    if n <= 1 or lam >= 1.0:
        return order_by(s)
    v = _unit(np.asarray(vectors, dtype=np.float64))
    sims = v @ v.T
    left = list(order_by(s))
    picked = [left.pop(0)]
    closest = sims[picked[0]].copy()  # each item's similarity to its nearest pick
    while left:
        cand = np.array(left)
        value = lam * s[cand] - (1.0 - lam) * closest[cand]
        best = int(cand[int(np.argmax(value))])  # argmax: first of ties, store order
        left.remove(best)
        picked.append(best)
        closest = np.maximum(closest, sims[best])
    return np.array(picked, dtype=np.int64)
