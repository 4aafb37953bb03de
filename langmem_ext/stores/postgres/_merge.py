"""Concurrent async calls merged into shared batches (what LangGraph's
``AsyncBatchedBaseStore`` does, with each caller's failures kept its own).

Every ``abatch`` call (and so every ``aget``, ``aput``, ``asearch``…) queues its
operations; once per event-loop tick the queue is cut into batches of at most
``max_ops`` operations, and at most ``max_batches`` run at a time, each one
transaction on one connection. While they run, new calls queue up and go
together into the next batch, so under load the batches grow and the store
needs a few connections, not one per call.

A merged batch behaves like its callers' batches run one after another in
arrival order, except that all reads come before all writes (as within one
batch): concurrent callers do not see each other's writes of the same tick.
When a merged batch fails for a reason that is not retryable (bad input, an
embedder error), each caller's operations are run again alone, so a caller
gets its own result or its own error; a failed batch changed nothing, so the
rerun is safe. Retryable failures (lost connection) go to every caller.

Examples:
    >>> import asyncio
    >>> async def run(ops):
    ...     return [op * 10 for op in ops]
    >>> async def main():
    ...     merger = CallMerger(run, max_batches=1)
    ...     return await asyncio.gather(merger.submit([1, 2]), merger.submit([3]))
    >>> asyncio.run(main())
    [[10, 20], [30]]
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, SearchOp

from ...errors import LangmemError
from .._ops import HybridSearchOp

__all__ = ["CallMerger", "dedupe_reads", "spread"]

logger = logging.getLogger("langmem_ext.stores.postgres")

Run = Callable[[list[Any]], Awaitable[list[Any]]]


def _retryable(e: BaseException) -> bool:
    if isinstance(e, LangmemError):
        return e.retryable
    return isinstance(e, ConnectionError | TimeoutError)


class CallMerger:
    """Queue of ``(ops, future)`` calls, drained into merged ``run`` calls."""

    def __init__(self, run: Run, max_batches: int = 2, max_ops: int = 20_000) -> None:
        self._run = run
        self.max_batches = max_batches
        self.max_ops = max_ops
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: deque[tuple[list[Any], asyncio.Future[list[Any]]]] = deque()
        self._in_flight = 0
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, ops: list[Any]) -> list[Any]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A new event loop (e.g. a second asyncio.run): nothing of the old
            # one can run any more.
            self._loop, self._queue, self._in_flight = loop, deque(), 0
            self._scheduled = False
            self._tasks = set()
        fut: asyncio.Future[list[Any]] = loop.create_future()
        self._queue.append((ops, fut))
        if not self._scheduled:
            # Drain on the next loop iteration: every call made in this tick joins.
            self._scheduled = True
            loop.call_soon(self._drain)
        return await fut

    def _drain(self) -> None:
        self._scheduled = False
        while self._queue and self._in_flight < self.max_batches:
            group: list[Any] = []
            n = 0
            while self._queue and (not group or n + len(self._queue[0][0]) <= self.max_ops):
                ops, fut = self._queue.popleft()
                if fut.done():  # the caller was cancelled
                    continue
                group.append((ops, fut))
                n += len(ops)
            if not group:
                continue
            self._in_flight += 1
            assert self._loop is not None
            task = self._loop.create_task(self._run_group(group))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run_group(self, group: list[tuple[list[Any], asyncio.Future[list[Any]]]]) -> None:
        try:
            merged = [op for ops, _ in group for op in ops]
            try:
                results = await self._run(merged)
            except BaseException as e:
                if len(group) == 1 or _retryable(e) or not isinstance(e, Exception):
                    for _, fut in group:
                        if fut.done():
                            continue
                        if isinstance(e, asyncio.CancelledError):
                            fut.cancel()
                        else:
                            fut.set_exception(e)
                    if not isinstance(e, Exception):
                        raise
                    return
                logger.debug(
                    "a merged batch of %d calls failed (%r); running each alone", len(group), e
                )
                for ops, fut in group:
                    await self._alone(ops, fut)
                return
            pos = 0
            for ops, fut in group:
                if not fut.done():
                    fut.set_result(results[pos : pos + len(ops)])
                pos += len(ops)
        finally:
            self._in_flight -= 1
            if self._queue and not self._scheduled and self._loop is not None:
                self._scheduled = True
                self._loop.call_soon(self._drain)

    async def _alone(self, ops: list[Any], fut: asyncio.Future[list[Any]]) -> None:
        if fut.done():
            return
        try:
            result = await self._run(ops)
        except Exception as e:
            if not fut.done():
                fut.set_exception(e)
            return
        if not fut.done():
            fut.set_result(result)


def dedupe_reads(ops: list[Any]) -> tuple[list[Any], list[int]]:
    """Operations without repeated reads (a batch merged from concurrent calls
    often asks the same thing many times) and, for each original position, the
    position of its operation in the deduplicated list. Puts are all kept (the
    batch applies the last one of a key). See :func:`spread`.

    Examples:
        >>> from langgraph.store.base import GetOp
        >>> dedupe_reads([GetOp(("a",), "k"), GetOp(("a",), "k")])
        ([GetOp(namespace=('a',), key='k', refresh_ttl=True)], [0, 0])
    """
    unique: list[Any] = []
    where: list[int] = []
    seen: dict[Any, int] = {}
    for op in ops:
        key: Any = None
        try:
            if isinstance(op, SearchOp | HybridSearchOp):
                key = (type(op), op._replace(filter=None), json.dumps(op.filter, sort_keys=True))
            elif isinstance(op, GetOp | ListNamespacesOp):
                key = op
            j = seen.setdefault(key, len(unique)) if key is not None else len(unique)
        except (TypeError, ValueError, RecursionError):  # unhashable, not JSON, too deep:
            # never merged (the batch's own checks then refuse what is wrong)
            j = len(unique)
        if j == len(unique):
            unique.append(op)
        where.append(j)
    return unique, where


def spread(results: list[Any], where: list[int]) -> list[Any]:
    """Results of :func:`dedupe_reads`' operations back in the original
    positions; as in LangGraph's ``AsyncBatchedBaseStore``, repeats share the
    items (each gets its own list)."""
    out: list[Any] = []
    used: set[int] = set()
    for j in where:
        r = results[j]
        out.append(list(r) if isinstance(r, list) and j in used else r)
        used.add(j)
    return out
