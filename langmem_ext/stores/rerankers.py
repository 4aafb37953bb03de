"""A re-ranking stage in the store: ``index={..., "rerank": R, "rerank_candidates": N}``.

A search with a query fetches ``N`` candidates (default 20) by the store's own
ranking, asks ``R`` to score them against the query, and returns the page in
``R``'s order with ``R``'s scores. ``R`` is a LangChain
``BaseDocumentCompressor`` (``CohereRerank``, ``FlashrankRerank``,
``CrossEncoderReranker``…; documents it leaves out are left out) or a callable
``(query, texts) -> scores`` (sync or async, one score per text, higher is
better), or :func:`~langmem_ext.stores.query_feedback`, which also reads the
store's scores. Searches without a query, and searches in ``"vector"`` mode (plain
cosine, asked for on purpose), are untouched. Everything that searches
through the store (engine recall, the memory tools and prompt, MCP, the
browser) gets the stage.

If ``R`` fails or takes longer than ``rerank_timeout`` seconds (default 10),
the search returns the store's own order, with one logged warning.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> def by_length(query, texts):  # a stand-in: shortest text first
    ...     return [-len(t) for t in texts]
    >>> store = SQLiteStore(index={"fields": ["text"], "rerank": by_length})
    >>> store.put(("d",), "long", {"text": "a cat sat on the warm mat all day"})
    >>> store.put(("d",), "short", {"text": "a cat"})
    >>> [(it.key, it.score) for it in store.search(("d",), query="cat")]
    [('short', -5.0), ('long', -33.0)]
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document
from langgraph.store.base import SearchItem, SearchOp

from ..errors import ConfigurationError
from ._ops import HybridSearchOp
from .feedback import QueryFeedback

__all__ = ["Reranker", "reranker_from"]

logger = logging.getLogger("langmem_ext.stores")

DEFAULT_CANDIDATES = 20
DEFAULT_TIMEOUT = 10.0
_KEYS = ("rerank", "rerank_candidates", "rerank_timeout")
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="lmx-rerank")


def reranker_from(index: Any) -> tuple[Any, Reranker | None]:
    """``index`` without the re-ranking keys, and the :class:`Reranker` they
    configure (None without ``rerank``).

    Raises:
        ConfigurationError: ``rerank`` is neither a document compressor nor a
            callable, or ``rerank_candidates``/``rerank_timeout`` is out of range.
    """
    if not isinstance(index, dict) or not any(k in index for k in _KEYS):
        return index, None
    rest = {k: v for k, v in index.items() if k not in _KEYS}
    rerank = index.get("rerank")
    n = index.get("rerank_candidates", DEFAULT_CANDIDATES)
    timeout = index.get("rerank_timeout", DEFAULT_TIMEOUT)
    if rerank is None:
        raise ConfigurationError(
            "index['rerank_candidates'] and index['rerank_timeout'] need index['rerank']: "
            "a LangChain document compressor or a function (query, texts) -> scores"
        )
    if not isinstance(rerank, BaseDocumentCompressor) and not callable(rerank):
        raise ConfigurationError(
            "index['rerank'] must be a LangChain BaseDocumentCompressor (e.g. CohereRerank) "
            f"or a function (query, texts) -> scores, got {type(rerank).__name__}"
        )
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1000:
        raise ConfigurationError(
            f"index['rerank_candidates'] must be a whole number from 1 to 1000, got {n!r}"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ConfigurationError(
            f"index['rerank_timeout'] must be a number of seconds > 0, got {timeout!r}"
        )
    return rest or None, Reranker(rerank, n, float(timeout))


class Reranker:
    """The stage: which searches it widens, and how it reorders their results."""

    def __init__(self, rerank: Any, candidates: int, timeout: float) -> None:
        self.rerank = rerank
        self.candidates = candidates
        self.timeout = timeout

    def widen(self, ops: list[Any], default_mode: str) -> tuple[list[Any], dict[int, Any]]:
        """``ops`` with each search to re-rank asking for the candidates from
        the top, and those searches by position."""
        picked: dict[int, Any] = {}
        out = list(ops)
        for i, op in enumerate(ops):
            if not isinstance(op, SearchOp | HybridSearchOp) or not op.query:
                continue
            if (getattr(op, "mode", None) or default_mode) == "vector":
                continue
            picked[i] = op
            out[i] = op._replace(limit=max(self.candidates, op.offset + op.limit), offset=0)
        return out, picked

    def apply(self, op: Any, items: list[SearchItem], text: Callable[[Any], str]) -> list[Any]:
        """The page of ``op`` from its candidates, re-ranked (sync)."""
        if not items:
            return items
        texts = [text(it.value) for it in items]
        if isinstance(self.rerank, QueryFeedback):
            return _page(op, items, self._feedback(op.query, texts, items))
        try:
            future = _POOL.submit(_own(self._scores_sync), op.query, texts)
            order = future.result(timeout=self.timeout)
        except Exception as e:
            return self._fallback(op, items, e)
        return _page(op, items, order)

    async def aapply(
        self, op: Any, items: list[SearchItem], text: Callable[[Any], str]
    ) -> list[Any]:
        """Async :meth:`apply`."""
        if not items:
            return items
        texts = [text(it.value) for it in items]
        if isinstance(self.rerank, QueryFeedback):
            return _page(op, items, self._feedback(op.query, texts, items))
        try:
            order = await asyncio.wait_for(_aown(self._scores_async)(op.query, texts), self.timeout)
        except Exception as e:
            return self._fallback(op, items, e)
        return _page(op, items, order)

    def _feedback(
        self, query: str, texts: list[str], items: list[SearchItem]
    ) -> list[tuple[int, float]]:
        # Pure arithmetic over the candidates, microseconds: run in place, no time-out.
        scores = [it.score if it.score is not None else 0.0 for it in items]
        return _from_scores(self.rerank.rescore(query, texts, scores), len(texts))

    # -- the two kinds of re-ranker ---------------------------------------------

    def _scores_sync(self, query: str, texts: list[str]) -> list[tuple[int, float]]:
        if isinstance(self.rerank, BaseDocumentCompressor):
            docs = self.rerank.compress_documents(_docs(texts), query)
            return _from_docs(docs, len(texts))
        got = self.rerank(query, texts)
        if inspect.isawaitable(got):
            got = asyncio.run(_awaited(got))
        return _from_scores(got, len(texts))

    async def _scores_async(self, query: str, texts: list[str]) -> list[tuple[int, float]]:
        if isinstance(self.rerank, BaseDocumentCompressor):
            docs = await self.rerank.acompress_documents(_docs(texts), query)
            return _from_docs(docs, len(texts))
        if inspect.iscoroutinefunction(self.rerank):
            return _from_scores(await self.rerank(query, texts), len(texts))
        loop = asyncio.get_running_loop()
        got = await loop.run_in_executor(_POOL, functools.partial(self.rerank, query, texts))
        if inspect.isawaitable(got):
            got = await got
        return _from_scores(got, len(texts))

    def _fallback(self, op: Any, items: list[SearchItem], error: BaseException) -> list[Any]:
        if isinstance(error, _RerankerFailed):
            cause = error.__cause__
            why = f"failed ({type(cause).__name__}: {cause})"
        elif isinstance(error, TimeoutError | concurrent.futures.TimeoutError):
            why = f"took longer than rerank_timeout ({self.timeout:.1f} s)"
        else:
            why = f"failed ({type(error).__name__}: {error})"
        logger.warning("the re-ranker %s; results in the store's own order", why[:300])
        return items[op.offset : op.offset + op.limit]


class _RerankerFailed(Exception):
    """What the re-ranker itself raised (its own time-outs too), told apart
    from the stage's time-out."""


def _own(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as e:
            raise _RerankerFailed() from e

    return run


def _aown(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(fn)
    async def run(*args: Any) -> Any:
        try:
            return await fn(*args)
        except Exception as e:
            raise _RerankerFailed() from e

    return run


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _docs(texts: Sequence[str]) -> list[Document]:
    return [Document(page_content=t, metadata={"lmx_position": i}) for i, t in enumerate(texts)]


def _from_docs(docs: Sequence[Document], n: int) -> list[tuple[int, float]]:
    """(position, score) in the compressor's order; its ``relevance_score`` when given."""
    out = []
    for rank, d in enumerate(docs):
        i = d.metadata.get("lmx_position")
        if not isinstance(i, int) or not 0 <= i < n:
            raise ValueError("the compressor returned a document it was not given")
        score = d.metadata.get("relevance_score")
        out.append((i, float(score) if isinstance(score, int | float) else 1.0 - rank / n))
    return out


def _from_scores(scores: Any, n: int) -> list[tuple[int, float]]:
    values = [float(s) for s in scores]
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise ValueError(f"expected {n} finite scores, got {len(values)}")
    # Stable: equal scores keep the store's order.
    return sorted(enumerate(values), key=lambda p: -p[1])


def _page(op: Any, items: list[SearchItem], order: list[tuple[int, float]]) -> list[Any]:
    ranked = [
        SearchItem(
            namespace=tuple(items[i].namespace),
            key=items[i].key,
            value=items[i].value,
            created_at=items[i].created_at,
            updated_at=items[i].updated_at,
            score=score,
        )
        for i, score in order
    ]
    return ranked[op.offset : op.offset + op.limit]
