"""Embedding cache: identical text is never embedded twice by the same model.

Keys are ``(model id, kind, sha256(text))`` where kind is ``"doc"`` or
``"query"`` (e5-style models embed the two differently). A small in-process
LRU sits in front of an optional persistent backend (SQLiteStore keeps one in
its own database file).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import NamedTuple, Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from ...errors import EmbeddingDimensionError, InvalidEmbeddingError

__all__ = ["CacheBackend", "CachedEmbeddings"]

CacheKey = tuple[str, str, bytes]


class CacheBackend(Protocol):
    """Persistent storage for cached vectors."""

    def get_many(self, keys: Sequence[CacheKey]) -> dict[CacheKey, np.ndarray]: ...

    def put_many(self, entries: dict[CacheKey, np.ndarray]) -> None: ...


class CachedEmbeddings(Embeddings):
    """Wraps an ``Embeddings`` with a cache and a dimension check.

    Args:
        inner: the embedder doing the work.
        model_id: identifies the model in cache keys; ``None`` keeps the cache in
            memory only (used when the model cannot be identified).
        dims: expected vector length; a mismatch raises ``EmbeddingDimensionError``.
        backend: persistent cache (optional).
        memory_size: entries kept in the in-process LRU.

    Attributes:
        calls: texts sent to ``inner`` so far; ``hits``: texts served from cache.

    Examples:
        >>> from langchain_core.embeddings import FakeEmbeddings
        >>> emb = CachedEmbeddings(FakeEmbeddings(size=4), model_id="fake", dims=4)
        >>> _ = emb.embed_documents(["a", "a", "b"]); _ = emb.embed_documents(["a"])
        >>> (emb.calls, emb.hits)
        (2, 2)
    """

    def __init__(
        self,
        inner: Embeddings,
        *,
        model_id: str | None,
        dims: int,
        backend: CacheBackend | None = None,
        memory_size: int = 20_000,
    ) -> None:
        self.inner = inner
        self.model_id = model_id or f"anonymous:{id(inner)}"
        self.persistent = model_id is not None
        self.dims = dims
        self.backend = backend if model_id is not None else None
        self.memory_size = memory_size
        self._lru: OrderedDict[CacheKey, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.calls = 0
        self.hits = 0

    # ``store.embeddings == the_embedder_passed_in`` holds, as on LangGraph's
    # stores (whose ``embeddings`` is the embedder itself): the cache is an
    # implementation detail, not another embedder.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, CachedEmbeddings):
            return other is self or bool(self.inner == other.inner)
        return other is self.inner or bool(self.inner == other)

    def __hash__(self) -> int:
        try:
            return hash(self.inner)
        except TypeError:  # e.g. a pydantic model: equal to it, but unhashable
            return id(self)

    def _key(self, kind: str, text: str) -> CacheKey:
        return (self.model_id, kind, hashlib.sha256(text.encode("utf-8")).digest())

    def forget(self, digests: Collection[bytes]) -> None:
        """Drop from this process's cache the vectors of the texts whose
        sha256 is in ``digests``, and every query's vector (queries cannot be
        traced to their author); a store's ``purge`` removes the persistent
        entries alike."""
        with self._lock:
            for k in [k for k in self._lru if k[1] == "query" or k[2] in digests]:
                del self._lru[k]

    def _check(
        self, vectors: Sequence[Sequence[float]] | np.ndarray, texts: Sequence[str]
    ) -> np.ndarray:
        """The embedder's output as an ``(n, dims)`` array, or a clear error:
        a vector of the wrong length, or with NaN or infinite numbers (which
        would poison every search that meets it), is never stored or cached."""
        n = len(texts)
        if n == 0 and len(vectors) == 0:
            return np.empty((0, self.dims), dtype=np.float32)
        try:
            arr = np.asarray(vectors, dtype=np.float32)
        except (ValueError, TypeError, OverflowError) as e:
            raise EmbeddingDimensionError(
                f"the embedder returned something that is not a list of equal-length "
                f"float vectors ({e})"
            ) from e
        if arr.ndim != 2 or arr.shape[0] != n:
            raise EmbeddingDimensionError(
                f"the embedder returned {len(vectors)} vectors for {n} texts "
                "(or vectors of different lengths)"
            )
        if arr.shape[1] != self.dims:
            got = arr.shape[1]
            raise EmbeddingDimensionError(
                f"the embedder returned {got}-dimensional vectors but index['dims'] is "
                f"{self.dims}; set index['dims']={got} or use the embedder the store was "
                "created with",
                expected=self.dims,
                got=got,
            )
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        if len(bad):
            text = texts[int(bad[0])]
            shown = text if len(text) <= 80 else text[:77] + "..."
            raise InvalidEmbeddingError(
                f"the embedder returned a vector with NaN or infinite numbers for {shown!r}"
                f"{f' (and {len(bad) - 1} more texts)' if len(bad) > 1 else ''}; nothing was "
                "stored. Check the embedder (its inputs, model, or server)",
                text=shown,
            )
        return arr

    def _usable(self, v: np.ndarray) -> bool:
        """A cached vector is used only if the embedder could have returned it."""
        return v.shape == (self.dims,) and bool(np.isfinite(v).all())

    def _lookup(self, keys: list[CacheKey]) -> dict[CacheKey, np.ndarray]:
        found: dict[CacheKey, np.ndarray] = {}
        missing: list[CacheKey] = []
        with self._lock:
            for k in keys:
                v = self._lru.get(k)
                if v is not None:
                    self._lru.move_to_end(k)
                    found[k] = v
                else:
                    missing.append(k)
        if missing and self.backend is not None:
            # Rows written before vectors were validated (NaN, wrong length) are
            # treated as missing: the text is embedded again and the row replaced.
            stored = self.backend.get_many(missing)
            found.update(
                (k, arr)
                for k, v in stored.items()
                if self._usable(arr := np.asarray(v, dtype=np.float32))
            )
        return found

    def _remember(self, entries: dict[CacheKey, np.ndarray], persist: bool) -> None:
        with self._lock:
            for k, v in entries.items():
                self._lru[k] = v
                self._lru.move_to_end(k)
            while len(self._lru) > self.memory_size:
                self._lru.popitem(last=False)
        if persist and entries and self.backend is not None:
            self.backend.put_many(entries)

    def _plan(self, kind: str, texts: list[str]) -> _Pending:
        keys = [self._key(kind, t) for t in texts]
        found = self._lookup(list(dict.fromkeys(keys)))
        todo: dict[CacheKey, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found:
                todo.setdefault(k, t)
        self.hits += len(texts) - len(todo)
        return _Pending(keys, found, list(todo), list(todo.values()))

    def _finish(self, p: _Pending, vectors: Sequence[Sequence[float]]) -> np.ndarray:
        new = dict(zip(p.todo_keys, self._check(vectors, p.todo_texts), strict=True))
        self.calls += len(new)
        self._remember(p.found, persist=False)
        self._remember(new, persist=True)
        p.found.update(new)
        if not p.keys:
            return np.empty((0, self.dims), dtype=np.float32)
        return np.stack([p.found[k] for k in p.keys])

    # Array methods: what the stores use (no float lists on the hot path).

    def embed_documents_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents; returns an ``(n, dims)`` float32 array."""
        p = self._plan("doc", list(texts))
        return self._finish(p, self.inner.embed_documents(p.todo_texts) if p.todo_texts else [])

    def embed_query_array(self, text: str) -> np.ndarray:
        """Embed a query; returns a ``(dims,)`` float32 array."""
        p = self._plan("query", [text])
        return self._finish(p, [self.inner.embed_query(t) for t in p.todo_texts])[0]

    async def aembed_documents_array(self, texts: Sequence[str]) -> np.ndarray:
        """Async :meth:`embed_documents_array` (uses the embedder's async method)."""
        p = await asyncio.to_thread(self._plan, "doc", list(texts))
        vectors = await self.inner.aembed_documents(p.todo_texts) if p.todo_texts else []
        return await asyncio.to_thread(self._finish, p, vectors)

    async def aembed_query_array(self, text: str) -> np.ndarray:
        """Async :meth:`embed_query_array`."""
        p = await asyncio.to_thread(self._plan, "query", [text])
        vectors = [await self.inner.aembed_query(t) for t in p.todo_texts]
        return (await asyncio.to_thread(self._finish, p, vectors))[0]

    # LangChain's Embeddings interface.

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents_array(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_query_array(text).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return (await self.aembed_documents_array(texts)).tolist()

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_query_array(text)).tolist()


class _Pending(NamedTuple):
    keys: list[CacheKey]
    found: dict[CacheKey, np.ndarray]
    todo_keys: list[CacheKey]
    todo_texts: list[str]
