"""Query feedback: a second keyword pass with words from the best first results
(pseudo-relevance feedback, RM3-like), as a re-ranker for the store's
re-ranking stage.

``index={..., "rerank": query_feedback(), "rerank_candidates": 50}``: a search
with a query fetches 50 candidates by the store's own ranking; the words that
weigh most in the best ``top`` of them (their score × the word's share of the
text × its rarity among the candidates), leaving out the query's own words,
form a second keyword query; each candidate gains ``weight`` times its BM25
for that query (relative to the best candidate's) on top of the store's score.
It finds answers worded like the best results rather than like the question
("what did she bake?" → the turn about the *cake*). No model, no I/O: a few
hundred microseconds for 50 candidates.

Off by default: measured on LoCoMo with both stores (see the benchmarks page),
it does not gain enough to be the default.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.stores import query_feedback
    >>> store = SQLiteStore(index={"fields": ["text"], "rerank": query_feedback(top=1)})
    >>> store.put(("d",), "a", {"text": "Mia baked a lemon cake for the party"})
    >>> store.put(("d",), "b", {"text": "the lemon cake was gone by nine"})
    >>> store.put(("d",), "c", {"text": "Mia went home by bus"})
    >>> [it.key for it in store.search(("d",), query="what did Mia bake")][:2]
    ['a', 'b']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ..errors import InvalidValueError

__all__ = ["QueryFeedback", "query_feedback"]

_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class QueryFeedback:
    """The re-ranker :func:`query_feedback` returns. It reads the store's scores
    of the candidates as well as their texts (``rescore``)."""

    def __init__(self, top: int, terms: int, weight: float) -> None:
        self.top, self.terms, self.weight = top, terms, weight

    def rescore(self, query: str, texts: Sequence[str], scores: Sequence[float]) -> list[float]:
        """New scores of the candidates (the store's order is the fallback on ties)."""
        docs = [Counter(_words(t)) for t in texts]
        n = len(docs)
        df = Counter(w for d in docs for w in d)
        idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
        asked = set(_words(query))
        weight: dict[str, float] = {}
        best = sorted(range(n), key=lambda i: -scores[i])[: self.top]
        for i in best:
            size = sum(docs[i].values()) or 1
            for w, f in docs[i].items():
                if w not in asked:
                    weight[w] = weight.get(w, 0.0) + max(scores[i], 0.0) * f / size * idf[w]
        expansion = sorted(weight, key=lambda w: -weight[w])[: self.terms]
        if not expansion:
            return [float(s) for s in scores]
        avg = sum(sum(d.values()) for d in docs) / n or 1.0
        bm25 = [_bm25(d, expansion, idf, avg) for d in docs]
        top_bm25 = max(bm25)
        if top_bm25 <= 0:
            return [float(s) for s in scores]
        return [float(s) + self.weight * b / top_bm25 for s, b in zip(scores, bm25, strict=True)]

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        # Without the store's scores: the candidates' order stands for them.
        n = len(texts)
        return self.rescore(query, texts, [1.0 - i / max(n, 1) for i in range(n)])


def _bm25(
    doc: Counter[str], terms: list[str], idf: dict[str, float], avg: float, k1: float = 1.2
) -> float:
    size = sum(doc.values())
    norm = k1 * (0.25 + 0.75 * size / avg)
    return sum(idf[t] * doc[t] * (k1 + 1) / (doc[t] + norm) for t in terms if doc[t])


def query_feedback(top: int = 5, terms: int = 8, weight: float = 0.25) -> QueryFeedback:
    """A re-ranker that adds a second keyword pass with words from the best
    first results (see the module docstring).

    Args:
        top: how many of the best candidates the words are taken from.
        terms: how many words form the second query.
        weight: what the second pass's relative BM25 (0 to 1) adds to a
            candidate's score.

    Raises:
        ValueError: ``top`` or ``terms`` below 1, or ``weight`` negative.
    """
    if top < 1 or terms < 1:
        raise InvalidValueError(f"top and terms must be at least 1, got top={top}, terms={terms}")
    if not weight >= 0:
        raise InvalidValueError(f"weight must be 0 or more, got {weight}")
    return QueryFeedback(top, terms, weight)
