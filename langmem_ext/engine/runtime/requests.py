"""The engine's sans-IO vocabulary: an **operation** is a generator that
yields requests and receives their results; two runners drive it.

An operation is written once::

    def get_op(env, ...) -> Operation[Item | None]:
        [item] = yield Batch([GetOp(ns, key)])
        return item

:func:`run_sync` drives it with ``store.batch``; :func:`run_async` with
``store.abatch`` (a ``parallel`` batch becomes one ``abatch`` per op under
``asyncio.gather``). Neither starts threads or event loops, and both retry
transient provider failures the same way (:class:`RetryPolicy`). Work that is
not a store op (a chat model call, a pause between retries) is a :class:`Call`
carrying both faces; it is run once, never retried here. The public sync/async
pair of an operation is bound where it is defined
(``store_fact, astore_fact = sync_op(_store_fact), async_op(_store_fact)``, see
:class:`~langmem_ext.engine.MemoryEngine`). No I/O in operations.

Examples:
    >>> from langgraph.store.base import GetOp, PutOp
    >>> from langmem_ext import SQLiteStore
    >>> def put_then_get(ns, key):
    ...     yield Batch([PutOp(ns, key, {"content": "x"})])
    ...     [item] = yield Batch([GetOp(ns, key)])
    ...     return item.value
    >>> run_sync(put_then_get(("a",), "k"), SQLiteStore())
    {'content': 'x'}
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from langgraph.store.base import BaseStore, GetOp, PutOp
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
)

from ...errors import LangmemError, ProviderError, RateLimitedError
from ...stores import PurgeReport
from ..identity.layout import is_meta_space

__all__ = [
    "Batch",
    "Call",
    "Embed",
    "Operation",
    "Purge",
    "Request",
    "RetryPolicy",
    "embedder",
    "run_async",
    "run_sync",
]

T = TypeVar("T")


class Batch(NamedTuple):
    """Store ops to run together; ``parallel`` ops are independent reads that
    the async runner may issue concurrently."""

    ops: Sequence[Any]  # LangGraph ops, or HybridSearchOp on stores that support it
    parallel: bool = False


class Embed(NamedTuple):
    """Texts to embed with the store's embedder; the result is a list of
    vectors, or None when the store has no embedder."""

    texts: list[str]


class Purge(NamedTuple):
    """Erase for good: every item in each namespace of ``prefixes`` and below
    it and the items ``keys`` names, then ``puts``, in one go. Stores with a
    ``purge`` method (this package's) run it in one transaction and overwrite
    the bytes; on any other store the items are searched and deleted batch by
    batch (not atomic, nothing overwritten: ``scrubbed`` is False). The
    result is a :class:`~langmem_ext.stores.PurgeReport`."""

    prefixes: Sequence[tuple[str, ...]]
    keys: Sequence[tuple[tuple[str, ...], str]] = ()
    puts: Sequence[Any] = ()
    dry_run: bool = False


class Call(NamedTuple):
    """Work that is not a store op: the sync runner returns ``sync()``, the
    async runner ``await async_()``. Errors reach the operation unretried (it
    has its own policy, e.g. for model calls)."""

    sync: Callable[[], Any]
    async_: Callable[[], Awaitable[Any]]


Request = Batch | Embed | Purge | Call
#: A generator of requests returning ``T``.
Operation = Generator[Request, Any, T]


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of transient provider failures (3, exponential).

    A failure is transient when it is a retryable :class:`LangmemError`
    (``PROVIDER_ERROR``, ``RATE_LIMITED``) or a ``ConnectionError`` /
    ``TimeoutError``. Attempt ``n`` (from 0) waits ``base_delay * 2**n`` seconds
    (at most ``max_delay``), or a rate limit's ``retry_after`` if longer.
    """

    retries: int = 3
    base_delay: float = 0.1
    max_delay: float = 5.0

    def delay(self, attempt: int, error: BaseException) -> float:
        d = min(self.base_delay * 2**attempt, self.max_delay)
        if isinstance(error, RateLimitedError):
            d = max(d, float(error.details.get("retry_after") or 0.0))
        return d


def _transient(e: BaseException) -> bool:
    if isinstance(e, LangmemError):
        return e.retryable
    return isinstance(e, ConnectionError | TimeoutError)


def _give_up(e: BaseException, attempts: int) -> BaseException:
    if isinstance(e, LangmemError):
        return e
    return ProviderError(f"the store failed {attempts} times: {e!r}", attempts=attempts)


# -- runners -------------------------------------------------------------------


def run_sync(step: Operation[T], store: BaseStore, config: Any = None) -> T:
    """Drive an operation with ``store.batch`` (retrying transient failures).

    ``config`` is anything with ``retry`` (:class:`RetryPolicy`) and ``sleep``
    (an :class:`~langmem_ext.engine.EngineConfig`); None uses the defaults."""
    config = config or _DEFAULTS
    request = _first(step)
    while not isinstance(request, _Done):
        try:
            if isinstance(request, Call):
                result = request.sync()
            elif isinstance(request, Batch) and not getattr(config, "history", True):
                sent, fill = _without_bookkeeping(request)
                run = functools.partial(_execute_sync, store, sent)
                result = fill(_retry_sync(run, config) if sent.ops else [])
            else:
                result = _retry_sync(functools.partial(_execute_sync, store, request), config)
        except Exception as e:
            # Thrown into the operation, so a step may handle a store failure
            # (health_check does); unhandled, it leaves through _resume.
            request = _resume(step, error=e)
        else:
            request = _resume(step, result=result)
    return request.value


async def run_async(step: Operation[T], store: BaseStore, config: Any = None) -> T:
    """Drive an operation with ``store.abatch`` (retrying transient failures)."""
    config = config or _DEFAULTS
    request = _first(step)
    while not isinstance(request, _Done):
        try:
            if isinstance(request, Call):
                result = await request.async_()
            elif isinstance(request, Batch) and not getattr(config, "history", True):
                sent, fill = _without_bookkeeping(request)
                run = functools.partial(_execute_async, store, sent)
                result = fill(await _retry_async(run, config) if sent.ops else [])
            else:
                run = functools.partial(_execute_async, store, request)
                result = await _retry_async(run, config)
        except Exception as e:
            request = _resume(step, error=e)
        else:
            request = _resume(step, result=result)
    return request.value


class _Done(NamedTuple):
    value: Any


def _first(step: Operation[Any]) -> Request | _Done:
    return _resume(step, result=None)


def _resume(step: Operation[Any], *, result: Any = None, error: Exception | None = None) -> Any:
    """The operation's next request, or :class:`_Done` with its return value."""
    try:
        return step.send(result) if error is None else step.throw(error)
    except StopIteration as stop:
        return _Done(stop.value)


class Unrecorded(PutOp):
    """A write the engine does not keep under ``EngineConfig(history=False)``
    (a note's audit event): the runner drops it instead of sending it."""

    __slots__ = ()


def _without_bookkeeping(request: Batch) -> tuple[Batch, Callable[[list[Any]], list[Any]]]:
    """``request`` for an engine configured with ``history=False``: without
    :class:`Unrecorded` writes and without reads by key of the archives (no
    archive is consulted: on stores that list a namespace once it is read,
    LangGraph's ``InMemoryStore``, it would appear), and how to fill in their
    results (None, as for a missing key)."""
    ops = list(request.ops)

    def dropped(op: Any) -> bool:
        if isinstance(op, Unrecorded):
            return True
        ns = tuple(op.namespace) if isinstance(op, GetOp) else ()
        return bool(ns) and ns[-1] == "archive" and is_meta_space(ns)

    kept = [i for i, op in enumerate(ops) if not dropped(op)]
    if len(kept) == len(ops):
        return request, lambda results: results

    def fill(results: list[Any]) -> list[Any]:
        out: list[Any] = [None] * len(ops)
        for i, result in zip(kept, results, strict=True):
            out[i] = result
        return out

    return Batch([ops[i] for i in kept], request.parallel), fill


def _execute_sync(store: BaseStore, request: Batch | Embed | Purge) -> Any:
    if isinstance(request, Purge):
        purge = getattr(store, "purge", None)
        if purge is None or inspect.iscoroutinefunction(purge):
            return _purge_plain(store, request)
        return purge(request.prefixes, request.keys, puts=request.puts, dry_run=request.dry_run)
    if isinstance(request, Embed):
        emb = embedder(store)
        return emb.embed_documents(list(request.texts)) if emb is not None else None
    return store.batch(request.ops)


async def _execute_async(store: BaseStore, request: Batch | Embed | Purge) -> Any:
    if isinstance(request, Purge):
        apurge = getattr(store, "apurge", None)
        if apurge is None:
            return await asyncio.to_thread(_purge_plain, store, request)
        return await apurge(
            request.prefixes, request.keys, puts=request.puts, dry_run=request.dry_run
        )
    if isinstance(request, Embed):
        emb = embedder(store)
        return await emb.aembed_documents(list(request.texts)) if emb is not None else None
    if request.parallel and len(request.ops) > 1:
        parts = await asyncio.gather(*(store.abatch([op]) for op in request.ops))
        return [p[0] for p in parts]
    return await store.abatch(request.ops)


def _purge_plain(store: BaseStore, request: Purge) -> PurgeReport:
    """:class:`Purge` on a store without ``purge``: its own API, page by page."""
    found: dict[tuple[tuple[str, ...], str], None] = {}
    for prefix in request.prefixes:
        offset = 0
        while True:
            page = store.search(prefix, limit=1000, offset=offset)
            found.update(((tuple(i.namespace), i.key), None) for i in page)
            if len(page) < 1000:
                break
            offset += 1000
    for ns, key in request.keys:
        if store.get(ns, key) is not None:
            found[(ns, key)] = None
    per_ns: dict[tuple[str, ...], int] = {}
    for ns, _ in found:
        per_ns[ns] = per_ns.get(ns, 0) + 1
    if not request.dry_run:
        ops: list[Any] = [PutOp(ns, key, None) for ns, key in found]
        for start in range(0, len(ops), 500):
            store.batch(ops[start : start + 500])
        if request.puts:
            store.batch(list(request.puts))
    return PurgeReport(per_ns, 0, 0, False)


def _retrying(config: Any) -> dict[str, Any]:
    """tenacity's settings for ``config.retry``: transient failures only,
    :meth:`RetryPolicy.delay` between attempts, a coded error at the end."""
    policy_: RetryPolicy = config.retry

    def give_up(state: RetryCallState) -> Any:
        error = state.outcome.exception() if state.outcome else None
        assert error is not None
        raise _give_up(error, state.attempt_number) from error

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return policy_.delay(state.attempt_number - 1, error or Exception())

    return {
        "stop": stop_after_attempt(policy_.retries + 1),
        "wait": wait,
        "retry": retry_if_exception(_transient),
        "retry_error_callback": give_up,
    }


def _retry_sync(call: Callable[[], T], config: Any) -> T:
    return Retrying(sleep=config.sleep, **_retrying(config))(call)


async def _retry_async(call: Callable[[], Any], config: Any) -> Any:
    return await AsyncRetrying(**_retrying(config))(call)


class _Defaults(NamedTuple):
    retry: RetryPolicy = RetryPolicy()
    sleep: Callable[[float], None] = time.sleep


_DEFAULTS = _Defaults()


def embedder(store: BaseStore) -> Any:
    """The store's embedder (``store.embeddings``), if it has one."""
    emb = getattr(store, "embeddings", None)
    return emb if emb is not None and hasattr(emb, "embed_documents") else None
