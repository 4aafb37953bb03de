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
from collections.abc import Sequence
from typing import Protocol

from langchain_core.embeddings import Embeddings

from ...errors import EmbeddingDimensionError

__all__ = ["CacheBackend", "CachedEmbeddings"]

CacheKey = tuple[str, str, bytes]


class CacheBackend(Protocol):
    """Persistent storage for cached vectors."""

    def get_many(self, keys: Sequence[CacheKey]) -> dict[CacheKey, list[float]]: ...

    def put_many(self, entries: dict[CacheKey, list[float]]) -> None: ...


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

    Example:
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
        self._lru: OrderedDict[CacheKey, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self.calls = 0
        self.hits = 0

    def _key(self, kind: str, text: str) -> CacheKey:
        return (self.model_id, kind, hashlib.sha256(text.encode("utf-8")).digest())

    def _check(self, vectors: list[list[float]], n: int) -> list[list[float]]:
        if len(vectors) != n:
            raise EmbeddingDimensionError(
                f"the embedder returned {len(vectors)} vectors for {n} texts"
            )
        for v in vectors:
            if len(v) != self.dims:
                raise EmbeddingDimensionError(
                    f"the embedder returned {len(v)}-dimensional vectors but index['dims'] "
                    f"is {self.dims}; set index['dims']={len(v)} or use the embedder "
                    "the store was created with",
                    expected=self.dims,
                    got=len(v),
                )
        return [list(map(float, v)) for v in vectors]

    def _lookup(self, keys: list[CacheKey]) -> dict[CacheKey, list[float]]:
        found: dict[CacheKey, list[float]] = {}
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
            found.update(self.backend.get_many(missing))
        return found

    def _remember(self, entries: dict[CacheKey, list[float]], persist: bool) -> None:
        with self._lock:
            for k, v in entries.items():
                self._lru[k] = v
                self._lru.move_to_end(k)
            while len(self._lru) > self.memory_size:
                self._lru.popitem(last=False)
        if persist and entries and self.backend is not None:
            self.backend.put_many(entries)

    def _plan(self, kind: str, texts: list[str]) -> tuple[list[CacheKey], dict, list[str]]:
        keys = [self._key(kind, t) for t in texts]
        found = self._lookup(list(dict.fromkeys(keys)))
        todo: dict[CacheKey, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found:
                todo.setdefault(k, t)
        self.hits += len(texts) - len(todo)
        return keys, found, list(todo.items())

    def _finish(self, keys, found, todo, vectors) -> list[list[float]]:
        new = dict(zip([k for k, _ in todo], self._check(vectors, len(todo)), strict=True))
        self.calls += len(todo)
        self._remember(found, persist=False)
        self._remember(new, persist=True)
        found.update(new)
        return [found[k] for k in keys]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        keys, found, todo = self._plan("doc", list(texts))
        vectors = self.inner.embed_documents([t for _, t in todo]) if todo else []
        return self._finish(keys, found, todo, vectors)

    def embed_query(self, text: str) -> list[float]:
        keys, found, todo = self._plan("query", [text])
        vectors = [self.inner.embed_query(todo[0][1])] if todo else []
        return self._finish(keys, found, todo, vectors)[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        keys, found, todo = await asyncio.to_thread(self._plan, "doc", list(texts))
        vectors = await self.inner.aembed_documents([t for _, t in todo]) if todo else []
        return await asyncio.to_thread(self._finish, keys, found, todo, vectors)

    async def aembed_query(self, text: str) -> list[float]:
        keys, found, todo = await asyncio.to_thread(self._plan, "query", [text])
        vectors = [await self.inner.aembed_query(todo[0][1])] if todo else []
        return (await asyncio.to_thread(self._finish, keys, found, todo, vectors))[0]
