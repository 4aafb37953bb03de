"""Retrieval ideas on LoCoMo turns, each measured as one change to the default search.

    python benchmarks/locomo_ideas.py --data path/to/locomo_dev.json \\
        --cache bench-results/embeddings.db [--ideas default,feedback-terms,...]

The default hybrid search is re-created in numpy: the same cached embeddings as
``langmem-ext bench locomo`` (pass its ``embeddings.db``) and SQLiteStore's own
keyword scores, fused as the store fuses them (0.5 × min-max cosine + 0.5 ×
BM25 / best). Its first row therefore equals the store's own R@10. Every other
row changes one thing. Ideas that need new embeddings (``context-vectors``,
``query-prefix``) embed every turn once more with the offline embedder and keep
the vectors in the same cache file (a few minutes on two cores).

Nothing here is part of the product; the figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.store.base import PutOp
from langmem_ext_dev.bench.locomo import NS, embed_all
from langmem_ext_dev.bench.locomo_data import CATEGORIES, Conversation, load_locomo, recall_at_k

from langmem_ext import SQLiteStore
from langmem_ext.stores import CachedEmbeddings
from langmem_ext.stores._dialect import STOPWORDS as STOP  # the words a query drops

WORD = re.compile(r"\w+")
DATE = "%I:%M %p on %d %B, %Y"  # LoCoMo's session dates
INDEX = {"fields": ["text"], "context_fields": ["context"], "context_weight": 0.5}


class Conv:
    """One conversation's turns, question vectors and keyword scores."""

    def __init__(self, conv: Conversation, emb: Any, holder: Any) -> None:
        self.conv, self.turns, self.questions = conv, conv.turns, conv.questions
        self.D = np.array([emb.docs[d.text] for d in conv.turns], dtype=np.float32)
        self.Q = np.array([emb.queries[q.text] for q in conv.questions], dtype=np.float32)
        self.embedder = holder
        self.session = np.array([d.meta["session"] for d in conv.turns])
        self.KW = self.keyword([q.text for q in conv.questions])
        self.tokens = [Counter(content_words(d.text)) for d in conv.turns]
        df = Counter(w for tc in self.tokens for w in tc)
        n = len(conv.turns)
        self.idf = {w: math.log(1 + (n - k + 0.5) / (k + 0.5)) for w, k in df.items()}

    def keyword(self, queries: list[str], texts: list[str] | None = None) -> np.ndarray:
        """SQLiteStore's keyword scores (BM25 / best, in (0, 1]) of every turn."""
        pos = {d.key: i for i, d in enumerate(self.turns)}
        texts = texts or [d.text for d in self.turns]
        out = np.zeros((len(queries), len(self.turns)))
        with SQLiteStore(":memory:", index=INDEX) as store:
            store.batch(
                [
                    PutOp(NS, d.key, {"text": t, "context": d.context})
                    for d, t in zip(self.turns, texts, strict=True)
                ]
            )
            for j, q in enumerate(queries):
                if not q:
                    continue
                for h in store.search(NS, query=q, limit=len(self.turns), mode="keyword"):
                    out[j, pos[h.key]] = h.score or 0.0
        return out


def content_words(text: str) -> list[str]:
    text = text.split("] ", 1)[-1]  # without the session date
    words = WORD.findall(text.lower())
    return [w for w in words if w not in STOP and len(w) > 2 and not w.isdigit()]


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.ones_like(x)


def fuse(cos: np.ndarray, kw: np.ndarray, vector_weight: float = 0.5) -> np.ndarray:
    return vector_weight * minmax(cos) + (1 - vector_weight) * kw


# An idea: (conversation, question number) -> (cosine, keyword score) per turn,
# fused as the store fuses them; ideas built on another take it as ``base``.
Idea = Callable[[Conv, int], tuple[np.ndarray, np.ndarray]]


def default(c: Conv, i: int) -> tuple[np.ndarray, np.ndarray]:
    return c.D @ c.Q[i], c.KW[i]


def feedback_terms(base: Idea = default, fb: int = 5, m: int = 8, weight: float = 0.5) -> Idea:
    """Pseudo-relevance feedback on the keyword side (RM3-like): the ``m`` words
    that weigh most in the best ``fb`` results of ``base`` (score × tf/len × idf)
    are searched as a second keyword query, added at ``weight``."""
    memo: dict[tuple[int, int], np.ndarray] = {}

    def idea(c: Conv, i: int) -> tuple[np.ndarray, np.ndarray]:
        cos, kw = base(c, i)
        if (id(c), i) not in memo:
            first = fuse(cos, kw)
            asked = set(WORD.findall(c.questions[i].text.lower()))
            w: Counter[str] = Counter()
            for t in np.argsort(-first)[:fb]:
                tc = c.tokens[t]
                size = sum(tc.values()) or 1
                for word, f in tc.items():
                    if word not in asked:
                        w[word] += first[t] * f / size * c.idf[word]
            memo[(id(c), i)] = c.keyword([" ".join(x for x, _ in w.most_common(m))])[0]
        kw = kw + weight * memo[(id(c), i)]
        return cos, kw / kw.max() if kw.max() > 0 else kw

    return idea


def aspects(weight: float = 0.3) -> Idea:
    """Multi-query: each content word of the question embedded on its own; the
    mean of their cosines mixed into the question's cosine."""

    def idea(c: Conv, i: int) -> tuple[np.ndarray, np.ndarray]:
        words = list(dict.fromkeys(content_words(c.questions[i].text)))
        cos = c.D @ c.Q[i]
        if words:
            A = np.array([c.embedder.embed_query_array(w) for w in words])
            cos = (1 - weight) * cos + weight * (c.D @ A.T).mean(axis=1)
        return cos, c.KW[i]

    return idea


def _with_previous(c: Conv) -> list[str]:
    out = []
    for j, d in enumerate(c.turns):
        prev = c.turns[j - 1] if j and c.session[j - 1] == c.session[j] else None
        out.append((prev.text.split("] ", 1)[-1] + "\n" if prev else "") + d.text)
    return out


def context_vectors(mix: float = 0.5) -> Idea:
    """Each turn also embedded together with the turn before it (same session);
    the two cosines averaged (``mix`` = share of the contextual one)."""
    memo: dict[int, np.ndarray] = {}

    def idea(c: Conv, i: int) -> tuple[np.ndarray, np.ndarray]:
        if id(c) not in memo:
            memo[id(c)] = c.embedder.embed_documents_array(_with_previous(c))
        return (1 - mix) * (c.D @ c.Q[i]) + mix * (memo[id(c)] @ c.Q[i]), c.KW[i]

    return idea


def query_prefix() -> Idea:
    """Turns embedded as e5 queries too (symmetric similarity), averaged with
    the usual passage embedding."""
    memo: dict[int, np.ndarray] = {}

    def idea(c: Conv, i: int) -> tuple[np.ndarray, np.ndarray]:
        if id(c) not in memo:
            memo[id(c)] = np.array([c.embedder.embed_query_array(d.text) for d in c.turns])
        return 0.5 * (c.D @ c.Q[i]) + 0.5 * (memo[id(c)] @ c.Q[i]), c.KW[i]

    return idea


_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_COUNT = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "few": 3, "several": 3}
_RELATIVE = re.compile(
    r"\b(yesterday|last night|today|tonight|last (week|weekend|month|year|"
    + "|".join(_WEEKDAYS)
    + r")|(\d+|a|an|one|two|three|four|few|a few|several) (day|week|month|year)s? ago)\b",
    re.I,
)


def _months_back(d: dt.date, n: int) -> dt.date:
    m = d.month - 1 - n
    return dt.date(d.year + m // 12, m % 12 + 1, 1)


def resolve_dates(text: str, said: dt.date) -> list[str]:
    """Relative time expressions in ``text`` as the dates they mean when said on ``said``."""
    out = []
    for m in _RELATIVE.finditer(text):
        e = m.group(0).lower()
        if e in ("yesterday", "last night"):
            out.append((said - dt.timedelta(1)).strftime("%-d %B %Y"))
        elif e in ("today", "tonight"):
            out.append(said.strftime("%-d %B %Y"))
        elif e in ("last week", "last weekend"):
            out.append((said - dt.timedelta(7)).strftime("%B %Y"))
        elif e == "last month":
            out.append(_months_back(said, 1).strftime("%B %Y"))
        elif e == "last year":
            out.append(str(said.year - 1))
        elif e.startswith("last "):
            back = (said.weekday() - _WEEKDAYS.index(e[5:])) % 7 or 7
            out.append((said - dt.timedelta(back)).strftime("%-d %B %Y"))
        else:
            amount, unit = e.rsplit(" ", 2)[0], e.split()[-2].rstrip("s")
            n = int(amount) if amount.isdigit() else _COUNT.get(amount.replace("a few", "few"), 3)
            if unit == "day":
                out.append((said - dt.timedelta(n)).strftime("%-d %B %Y"))
            elif unit == "week":
                out.append((said - dt.timedelta(7 * n)).strftime("%B %Y"))
            elif unit == "month":
                out.append(_months_back(said, n).strftime("%B %Y"))
            else:
                out.append(str(said.year - n))
    return out


def temporal() -> Idea:
    """Relative dates in a turn ("yesterday", "last month", "3 weeks ago")
    resolved against its session date and indexed for keyword search."""
    memo: dict[int, np.ndarray] = {}

    def idea(c: Conv, i: int) -> tuple[np.ndarray, np.ndarray]:
        if id(c) not in memo:
            texts = []
            for d in c.turns:
                try:
                    said = dt.datetime.strptime(d.meta["date"].strip(), DATE).date()
                except ValueError:
                    texts.append(d.text)
                    continue
                extra = resolve_dates(d.text, said)
                texts.append(d.text + (f" ({'; '.join(extra)})" if extra else ""))
            memo[id(c)] = c.keyword([q.text for q in c.questions], texts)
        return c.D @ c.Q[i], memo[id(c)][i]

    return idea


IDEAS: dict[str, Callable[[], Idea]] = {
    "default": lambda: default,
    "feedback-words": feedback_terms,
    "aspects": aspects,
    "context-vectors": context_vectors,
    "query-prefix": query_prefix,
    "temporal": temporal,
    "context-vectors+feedback-words": lambda: feedback_terms(base=context_vectors()),
}


def evaluate(convs: list[Conv], idea: Idea, k: int = 10) -> tuple[float, dict[int, float]]:
    sums: dict[int, float] = defaultdict(float)
    n: dict[int, int] = defaultdict(int)
    for c in convs:
        keys = [(d.key,) for d in c.turns]
        for i, q in enumerate(c.questions):
            s = fuse(*idea(c, i))
            order = np.lexsort((np.arange(len(s)), -s))[:k]  # ties by insertion, as the store
            sums[q.category] += recall_at_k([keys[j] for j in order], q.evidence, k)
            n[q.category] += 1
    return sum(sums.values()) / sum(n.values()), {c: sums[c] / n[c] for c in sorted(n)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--cache", type=Path, required=True, help="bench locomo's embeddings.db")
    ap.add_argument("--ideas", default=",".join(IDEAS))
    args = ap.parse_args()
    raw, _ = load_locomo(args.data)
    with SQLiteStore(str(args.cache), index={"embed": "local"}) as holder:
        assert isinstance(holder.embeddings, CachedEmbeddings)
        emb = embed_all(raw, holder.embeddings)
        convs = [Conv(c, emb, holder.embeddings) for c in raw]
        cats = " | ".join(CATEGORIES.values())
        print(f"| idea | R@10 | {cats} |\n|---|---|" + "---|" * len(CATEGORIES))
        for name in args.ideas.split(","):
            overall, by = evaluate(convs, IDEAS[name]())
            print(
                f"| {name} | {overall:.3f} | " + " | ".join(f"{v:.3f}" for v in by.values()) + " |",
                flush=True,
            )


if __name__ == "__main__":
    main()
