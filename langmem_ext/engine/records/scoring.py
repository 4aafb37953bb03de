"""Scores the engine ranks by, with their weights. Pure functions.

``relevance`` (in [0, 1])
    The store's search score for the query, clipped to [0, 1]: the hybrid
    score by default on our stores (see :mod:`langmem_ext.stores._hybrid`), the
    cosine similarity in ``vector`` mode (LangGraph's stores), the normalised
    BM25 in ``keyword`` mode. Items the store returned without a score get 0.

``recall`` composite score (``memory_recall``)
    ``w_r * relevance + w_i * importance / 10 + w_t * recency + w_c * confidence``
    with :class:`ScoreWeights` (default 0.5, 0.15, 0.1, 0.25; they need not sum
    to 1). ``recency = 0.5 ** (age_days / half_life_days)`` with age counted
    from the last confirmation, reference or update (half-life 30 days);
    ``confidence`` is the effective (decayed) confidence (half of it for a
    stale memory). When the request names entities ("my sister",
    "Caroline"), the memories that name them come first (a question about
    someone is answered first by what is known about them), and a memory
    linked to them through one more entity has ``linked`` (0.3) added to its
    relevance, capped at 1.

Layered search
    Scores are cosine similarities (``vector`` mode) where the store can embed,
    otherwise the keyword score; the default threshold 0.7 applies to them.
    Results are ordered by layer precedence, then score desc, then
    ``created_at`` desc, then id. Two results are near-duplicates when the
    cosine of their contents' embeddings (or, without an embedder, the
    :func:`text_similarity` of their contents) is at least 0.95.

Examples:
    >>> composite(relevance=1.0, importance=10, recency=1.0, confidence=1.0)
    1.0
    >>> round(recency_factor(30.0), 2)
    0.5
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_THRESHOLD",
    "DUPLICATE_SIMILARITY",
    "ScoreWeights",
    "best_first",
    "composite",
    "cosine",
    "recency_factor",
    "relevance",
    "text_similarity",
]

DEFAULT_THRESHOLD = 0.7
DUPLICATE_SIMILARITY = 0.95
RECENCY_HALF_LIFE_DAYS = 30.0


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of the recall composite score (any non-negative numbers; the
    score is divided by their sum so it stays in [0, 1]).

    Examples:
        >>> ScoreWeights(relevance=1, importance=0, recency=0, confidence=0).relevance
        1
    """

    relevance: float = 0.5
    importance: float = 0.15
    recency: float = 0.1
    confidence: float = 0.25
    half_life_days: float = RECENCY_HALF_LIFE_DAYS
    #: Relevance added to a memory one entity away from those the request names.
    linked: float = 0.3


DEFAULT_WEIGHTS = ScoreWeights()

T = TypeVar("T")


def best_first(
    items: Iterable[T],
    score: Callable[[T], float],
    created_at: Callable[[T], str],
    id: Callable[[T], Any],
) -> list[T]:
    """Items by score (desc), ties by ``created_at`` (newest first), then id
    (asc): the deterministic order of profile facts and of memory blocks.

    Examples:
        >>> rows = [(0.5, "2024", "b"), (0.9, "2023", "c"), (0.5, "2024", "a")]
        >>> best_first(rows, lambda r: r[0], lambda r: r[1], lambda r: r[2])
        [(0.9, '2023', 'c'), (0.5, '2024', 'a'), (0.5, '2024', 'b')]
    """
    # Stable sorts from the last key to the first: created_at must go
    # descending while the id goes ascending, and ISO strings cannot be negated.
    out = sorted(items, key=id)
    out.sort(key=created_at, reverse=True)
    out.sort(key=lambda x: -score(x))
    return out


def relevance(score: float | None) -> float:
    """A store score clipped to [0, 1] (None: 0)."""
    if score is None or math.isnan(score):
        return 0.0
    return min(max(float(score), 0.0), 1.0)


def recency_factor(age_days: float, half_life_days: float = RECENCY_HALF_LIFE_DAYS) -> float:
    """1 now, 0.5 after one half-life, towards 0 with age."""
    return 0.5 ** (max(age_days, 0.0) / half_life_days)


def composite(
    *,
    relevance: float,
    importance: float,
    recency: float,
    confidence: float,
    weights: ScoreWeights = DEFAULT_WEIGHTS,
) -> float:
    """The recall score in [0, 1]; ``importance`` is on the 0–10 scale."""
    w = weights
    total = w.relevance + w.importance + w.recency + w.confidence
    if total <= 0:
        return 0.0
    s = (
        w.relevance * relevance
        + w.importance * (importance / 10.0)
        + w.recency * recency
        + w.confidence * confidence
    )
    return s / total


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0 for a zero vector)."""
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def text_similarity(a: str, b: str) -> float:
    """Similarity of two texts in [0, 1] when no embedder is at hand
    (case- and whitespace-insensitive character ratio).

    Examples:
        >>> text_similarity("Likes  tea", "likes tea")
        1.0
    """
    na, nb = " ".join(a.casefold().split()), " ".join(b.casefold().split())
    return difflib.SequenceMatcher(None, na, nb).ratio()
