"""Vectors for ``bench store``: uniform random, clustered, and real text.

Every kind yields unit vectors (cosine = dot product) and query vectors,
deterministically from a seed, without holding more than the matrix itself.

``random``
    Standard normal vectors: no structure at all. No embedder produces them,
    and every approximate index looks its worst on them.
``clustered``
    The shape of real sentence embeddings: a shared direction every vector
    leans towards (random pairs have cosine ≈ 0.75, as with e5 models), a
    thousand topics, and per-text noise; queries are new texts of a topic.
``text``
    Real embeddings: paragraphs of the docstrings of the installed Python
    packages (a real English corpus that ships with every registry package),
    embedded by the offline default embedder, queries with its query prefix.
    Embedding runs once per machine (cached in ``~/.cache/langmem-ext``);
    the corpus has about 10,000 paragraphs, so this kind stops there.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

__all__ = ["DIMS", "KINDS", "make_vectors", "text_corpus"]

DIMS = 384
KINDS = ("random", "clustered", "text")
_CHUNK = 65_536


def _unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _random(n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty((n, DIMS), dtype=np.float32)
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        out[a:b] = _unit(rng.standard_normal((b - a, DIMS), dtype=np.float32))
    return out


class _Topics:
    """Mixture model fitted by eye to multilingual-e5-small sentence vectors:
    cosine of random pairs ≈ 0.75, of same-topic pairs ≈ 0.88."""

    def __init__(self, seed: int, n_topics: int = 1000) -> None:
        rng = np.random.default_rng(seed)
        self.mean = _unit(rng.standard_normal((1, DIMS)))[0]
        self.topics = _unit(rng.standard_normal((n_topics, DIMS)))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty((n, DIMS), dtype=np.float32)
        for a in range(0, n, _CHUNK):
            b = min(n, a + _CHUNK)
            t = rng.integers(0, len(self.topics), b - a)
            noise = _unit(rng.standard_normal((b - a, DIMS)))
            out[a:b] = _unit(1.7 * self.mean + 0.75 * self.topics[t] + 0.65 * noise)
        return out


def make_vectors(
    kind: str,
    n: int,
    n_queries: int,
    seed: int = 0,
    embed: Callable[[list[str], bool], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 384)`` unit document vectors and ``(n_queries, 384)`` query vectors.

    Examples:
        >>> docs, queries = make_vectors("clustered", 1000, 5)
        >>> docs.shape, queries.shape
        ((1000, 384), (5, 384))
        >>> bool(0.6 < float((docs[:500] @ docs[500:].T).mean()) < 0.9)  # like e5's
        True
    """
    rng = np.random.default_rng(seed)
    if kind == "random":
        return _random(n, rng), _random(n_queries, np.random.default_rng(seed + 1))
    if kind == "clustered":
        topics = _Topics(seed)
        return topics.sample(n, rng), topics.sample(n_queries, np.random.default_rng(seed + 1))
    if kind == "text":
        docs, queries = text_corpus()
        if n > len(docs):
            raise ValueError(f"the text corpus has {len(docs)} paragraphs, fewer than {n}")
        # The whole corpus is embedded (once, cached) and sliced, so every size
        # shares one cache entry.
        return _embedded(docs, False, embed)[:n], _embedded(queries, True, embed)[:n_queries]
    raise ValueError(f"unknown vector kind {kind!r}; use one of {', '.join(KINDS)}")


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    path = Path(root) / "langmem-ext" / "bench"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _embedded(
    texts: list[str], is_query: bool, embed: Callable[[list[str], bool], np.ndarray] | None
) -> np.ndarray:
    digest = hashlib.sha256(("\x00".join(texts) + str(is_query)).encode()).hexdigest()[:16]
    path = _cache_dir() / f"text-{'q' if is_query else 'd'}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    if embed is None:
        from langmem_ext.stores.embeddings import LocalEmbeddings

        local = LocalEmbeddings()

        def embed(batch: list[str], query: bool) -> np.ndarray:
            if query:
                return np.asarray([local.embed_query(t) for t in batch], dtype=np.float32)
            return np.asarray(local.embed_documents(batch), dtype=np.float32)

    vecs = _unit(embed(texts, is_query).astype(np.float32))
    np.save(path, vecs)
    return vecs


_MODULES = (
    "numpy",
    "langchain_core",
    "langchain",
    "langgraph",
    "pydantic",
    "openai",
    "httpx",
    "psycopg",
    "typer",
    "click",
    "rich",
    "asyncio",
    "collections",
    "concurrent",
    "email",
    "http",
    "json",
    "logging",
    "multiprocessing",
    "unittest",
    "urllib",
    "xml",
    "importlib",
    "typing",
    "argparse",
    "datetime",
    "decimal",
    "pathlib",
    "sqlite3",
    "statistics",
    "tarfile",
    "zipfile",
    "matplotlib",
    "hypothesis",
    "langsmith",
    "pytest",
)


def _submodules(pkg: object) -> list[str]:
    """``pkg`` and its public, non-test submodules, without importing tests."""
    out = [pkg.__name__]  # type: ignore[attr-defined]
    for m in sorted(pkgutil.iter_modules(getattr(pkg, "__path__", [])), key=lambda m: m.name):
        name = f"{pkg.__name__}.{m.name}"  # type: ignore[attr-defined]
        if m.name.startswith("_") or "test" in m.name:
            continue
        if not m.ispkg:
            out.append(name)
            continue
        try:
            out += _submodules(importlib.import_module(name))
        except Exception:
            continue
    return out


def _docstrings() -> Iterator[str]:
    seen: set[int] = set()
    for root in _MODULES:
        try:
            pkg = importlib.import_module(root)
        except ImportError:
            continue
        for name in _submodules(pkg):
            try:
                mod = importlib.import_module(name)
            except Exception:
                continue
            for obj in [mod, *(v for _, v in sorted(vars(mod).items()))]:
                doc = inspect.getdoc(obj) if callable(obj) or obj is mod else None
                if doc and id(doc) not in seen:
                    seen.add(id(doc))
                    yield doc


def text_corpus(limit: int = 12_000) -> tuple[list[str], list[str]]:
    """Distinct English paragraphs (40–600 characters) from installed packages'
    docstrings, in a fixed order; every 10th one is held out as a query."""
    paras: dict[str, None] = {}
    for doc in _docstrings():
        for p in re.split(r"\n\s*\n", doc):
            p = " ".join(p.split())
            if 40 <= len(p) <= 600 and not p.startswith((">>>", "..", "--", "==")):
                paras.setdefault(p, None)
        if len(paras) >= limit * 10 // 9 + 10:
            break
    texts = list(paras)
    queries = texts[::10]
    docs = [t for i, t in enumerate(texts) if i % 10]
    return docs, queries
