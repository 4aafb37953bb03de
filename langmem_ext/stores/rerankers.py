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

If ``R`` fails (whatever it raises, ``SystemExit`` and its own
``CancelledError`` included), answers with anything but one finite score per
candidate (or a document twice), or takes longer than ``rerank_timeout``
seconds (default 10), the search returns the store's own order, with one
logged warning. ``R`` gets copies of the candidates' texts.

Each store re-ranks on workers of its own (:data:`WORKERS` daemon threads,
started when needed, gone after a while idle), so a re-ranker that hangs in
one store never delays another store's searches; ``async`` re-rankers (and
compressors with their own ``acompress_documents``) run on the searching
task's event loop instead. A synchronous call past its time cannot be
stopped: it keeps its worker until it returns, and while every worker of the
store is held by such a call, searches skip the re-ranker at once rather than
wait. Cancelling an async search cancels its re-ranker call and propagates.
A ``KeyboardInterrupt`` raised inside the re-ranker is contained like any
other exception, except where it may be the user's Ctrl-C: an ``async``
re-ranker on the main thread while Python's own SIGINT handler is installed
(an event loop not run by ``asyncio.run``); there it propagates, so Ctrl-C
still stops the program. Worker threads never receive Ctrl-C.

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
import inspect
import logging
import math
import numbers
import signal
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document
from langgraph.store.base import SearchItem, SearchOp

from .._workers import Workers
from ..errors import ConfigurationError, InvalidValueError
from ._ops import HybridSearchOp
from .feedback import QueryFeedback

__all__ = ["WORKERS", "Reranker", "reranker_from"]

logger = logging.getLogger("langmem_ext.stores")

DEFAULT_CANDIDATES = 20
DEFAULT_TIMEOUT = 10.0
#: Worker threads each store re-ranks on, at most.
WORKERS = 4
_KEYS = ("rerank", "rerank_candidates", "rerank_timeout")


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
    """The stage: which searches it widens, and how it reorders their results.
    One per store, with the store's own workers."""

    def __init__(self, rerank: Any, candidates: int, timeout: float) -> None:
        self.rerank = rerank
        self.candidates = candidates
        self.timeout = timeout
        self._workers = Workers(WORKERS, "langmem-ext-rerank")
        # Calls on an event loop that outlived their search: kept referenced
        # until they end (a loop holds only weak references to its tasks).
        self._late: set[asyncio.Future[Any]] = set()

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
            return self._feedback(op, texts, items)
        if self._workers.stuck(self.timeout):
            return self._fallback(op, items, _Stuck())
        future = self._workers.submit(self._scores_sync, op.query, list(texts))
        try:
            order = future.result(timeout=self.timeout)
        except (_RerankerFailed, concurrent.futures.TimeoutError) as e:
            return self._fallback(op, items, e)
        finally:
            future.cancel()  # still queued: it never runs (no effect once it has run)
        return _page(op, items, order)

    async def aapply(
        self, op: Any, items: list[SearchItem], text: Callable[[Any], str]
    ) -> list[Any]:
        """Async :meth:`apply`."""
        if not items:
            return items
        texts = [text(it.value) for it in items]
        if isinstance(self.rerank, QueryFeedback):
            return self._feedback(op, texts, items)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        try:
            if self._on_loop():
                call = self._task(self._scores_async(op.query, list(texts)))
                got = await self._within(call, deadline)
            else:
                if self._workers.stuck(self.timeout):
                    raise _Stuck()
                submitted = self._workers.submit(self._first, op.query, list(texts))
                got = await self._within(asyncio.wrap_future(submitted), deadline)
                if isinstance(got, _Pending):  # a plain function that returned an awaitable
                    got = await self._within(self._task(_scores_of(got)), deadline)
        except (_RerankerFailed, _Stuck, TimeoutError) as e:
            return self._fallback(op, items, e)
        return _page(op, items, got)

    def _feedback(self, op: Any, texts: list[str], items: list[SearchItem]) -> list[Any]:
        # Pure arithmetic over the candidates, microseconds: run in place, no time-out.
        scores = [it.score if it.score is not None else 0.0 for it in items]
        try:
            order = _from_scores(self.rerank.rescore(op.query, list(texts), scores), len(texts))
        except Exception as e:
            return self._fallback(op, items, e)
        return _page(op, items, order)

    # -- running the re-ranker -------------------------------------------------------

    def _on_loop(self) -> bool:
        """Whether the re-ranker is async itself (runs on the caller's loop)."""
        r = self.rerank
        if isinstance(r, BaseDocumentCompressor):
            # The base class's acompress_documents runs the sync one on the
            # loop's default executor, shared by everything: ours instead.
            own = type(r).acompress_documents is not BaseDocumentCompressor.acompress_documents
            return own
        return inspect.iscoroutinefunction(r) or inspect.iscoroutinefunction(
            getattr(r, "__call__", None)  # noqa: B004 -- an object with async __call__
        )

    def _first(self, query: str, texts: list[str]) -> Any:
        """On a worker: the order, or a :class:`_Pending` awaitable. Whatever
        the re-ranker raises comes back as :class:`_RerankerFailed`."""
        n = len(texts)  # before the re-ranker sees (and may change) its copy
        try:
            if isinstance(self.rerank, BaseDocumentCompressor):
                return _from_docs(self.rerank.compress_documents(_docs(texts), query), n)
            got = self.rerank(query, texts)
            if inspect.isawaitable(got):
                return _Pending(got, n)
            return _from_scores(got, n)
        except BaseException as e:  # a worker never gets Ctrl-C: all of it is the re-ranker's
            raise _RerankerFailed() from e

    def _scores_sync(self, query: str, texts: list[str]) -> list[tuple[int, float]]:
        got = self._first(query, texts)
        if isinstance(got, _Pending):
            try:
                return asyncio.run(_scores_of(got))
            except _RerankerFailed:
                raise
            except BaseException as e:
                raise _RerankerFailed() from e
        return got

    async def _scores_async(self, query: str, texts: list[str]) -> list[tuple[int, float]]:
        n = len(texts)
        try:
            if isinstance(self.rerank, BaseDocumentCompressor):
                docs = await self.rerank.acompress_documents(_docs(texts), query)
                return _from_docs(docs, n)
            got = self.rerank(query, texts)
            return _from_scores(await got, n)
        except asyncio.CancelledError:
            raise  # the task ends cancelled; _within tells whose cancellation it was
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt) and _may_be_ctrl_c():
                raise
            raise _RerankerFailed() from e

    def _task(self, coro: Any) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coro)
        self._late.add(task)
        task.add_done_callback(_forget(self._late))
        return task

    async def _within(self, call: asyncio.Future[Any], deadline: float) -> Any:
        """``call``'s result by ``deadline``; cancelling the search cancels it."""
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            done, _ = await asyncio.wait({call}, timeout=left)
        except BaseException:
            call.cancel()  # the search itself was cancelled: so is its re-ranker call
            raise
        if not done:
            call.cancel()
            raise TimeoutError()
        if call.cancelled():  # and not by us: the re-ranker raised CancelledError itself
            raise _RerankerFailed() from asyncio.CancelledError("raised by the re-ranker")
        return call.result()

    def _fallback(self, op: Any, items: list[SearchItem], error: BaseException) -> list[Any]:
        if isinstance(error, _RerankerFailed):
            cause = error.__cause__
            why = f"failed ({type(cause).__name__}: {cause})"
        elif isinstance(error, _Stuck):
            why = (
                f"is still busy: all {WORKERS} of this store's re-ranking workers hold calls "
                f"older than rerank_timeout ({self.timeout:.1f} s)"
            )
        elif isinstance(error, TimeoutError | concurrent.futures.TimeoutError):
            why = f"took longer than rerank_timeout ({self.timeout:.1f} s)"
        else:
            why = f"failed ({type(error).__name__}: {error})"
        logger.warning("the re-ranker %s; results in the store's own order", why[:300])
        return items[op.offset : op.offset + op.limit]


class _RerankerFailed(Exception):
    """What the re-ranker itself raised (its own time-outs too), told apart
    from the stage's time-out and from the search's own cancellation."""


class _Stuck(Exception):
    """Every worker of the store holds a call past its time."""


class _Pending:
    """An awaitable a plain re-ranker function returned, and the candidates' count."""

    def __init__(self, awaitable: Awaitable[Any], n: int) -> None:
        self.awaitable, self.n = awaitable, n


async def _scores_of(pending: _Pending) -> list[tuple[int, float]]:
    try:
        return _from_scores(await pending.awaitable, pending.n)
    except asyncio.CancelledError:
        raise
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) and _may_be_ctrl_c():
            raise
        raise _RerankerFailed() from e


def _may_be_ctrl_c() -> bool:
    """Whether a KeyboardInterrupt here may be the user's Ctrl-C: Python raises
    it wherever the main thread is, while its own SIGINT handler is installed
    (``asyncio.run`` replaces that handler with one that cancels the task)."""
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )


def _forget(late: set[asyncio.Future[Any]]) -> Callable[[asyncio.Future[Any]], None]:
    def done(task: asyncio.Future[Any]) -> None:
        late.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a call that outlived its search logs nothing more

    return done


def _docs(texts: Sequence[str]) -> list[Document]:
    return [Document(page_content=t, metadata={"lmx_position": i}) for i, t in enumerate(texts)]


def _from_docs(docs: Sequence[Document], n: int) -> list[tuple[int, float]]:
    """(position, score) in the compressor's order; its ``relevance_score`` when given."""
    out = []
    seen: set[int] = set()
    for rank, d in enumerate(docs):
        i = d.metadata.get("lmx_position")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
            raise InvalidValueError("the compressor returned a document it was not given")
        if i in seen:
            raise InvalidValueError(f"the compressor returned candidate {i} twice")
        seen.add(i)
        score = d.metadata.get("relevance_score")
        if isinstance(score, numbers.Real) and not isinstance(score, bool):
            value = float(score)
            if not math.isfinite(value):
                raise InvalidValueError(f"the compressor gave candidate {i} the score {value}")
        else:
            value = 1.0 - rank / n
        out.append((i, value))
    return out


def _from_scores(scores: Any, n: int) -> list[tuple[int, float]]:
    values = [float(s) for s in scores]
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise InvalidValueError(f"expected {n} finite scores, got {len(values)}")
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
