"""Deterministic offline embedders for tests (no model, no network)."""

from __future__ import annotations

import hashlib
import re

import numpy as np
from langchain_core.embeddings import Embeddings

_STOP = frozenset("a an the is in on of to at with which what who does do like user".split())


def _word_vector(word: str, dims: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dims)


class WordEmbeddings(Embeddings):
    """Bag of words: texts sharing words get similar vectors. ``calls`` counts
    texts embedded, so tests can see the cache at work."""

    def __init__(self, dims: int = 64, ignore: frozenset[str] = frozenset()) -> None:
        self.dims = dims
        self.ignore = ignore
        self.model = f"words-{dims}-{'-'.join(sorted(ignore))}"
        self.calls = 0

    def _embed(self, text: str) -> list[float]:
        v = np.zeros(self.dims)
        for w in re.findall(r"\w+", text.lower()):
            if w not in self.ignore and w not in _STOP:
                v += _word_vector(w, self.dims)
        n = np.linalg.norm(v)
        return (v / n if n else v).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return self._embed(text)


def cosine(a: list[float], b: list[float]) -> float:
    a_, b_ = np.asarray(a), np.asarray(b)
    return float(a_ @ b_ / (np.linalg.norm(a_) * np.linalg.norm(b_)))
