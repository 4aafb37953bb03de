"""The engine's one core: operations as generators of store requests, and the
two runners that feed those requests to ``store.batch`` or ``store.abatch``.

An operation is written once, as a generator that yields a :class:`Batch` of
LangGraph store ops (or an :class:`Embed` of texts) and receives the results::

    def get_gen(env, ...):
        [item] = yield Batch([GetOp(ns, key)])
        return item

:func:`run_sync` drives it with ``store.batch``; :func:`run_async` with
``store.abatch`` (a ``parallel`` batch becomes one ``abatch`` per op under
``asyncio.gather``). Neither starts threads or event loops, and both retry
transient provider failures the same way (:class:`RetryPolicy`). Work that is
not a store op (a chat model call, a pause between retries) is a :class:`Call`
carrying both faces; it is run once, never retried here. No I/O here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple, TypeVar

from langgraph.store.base import BaseStore, Op, SearchOp

from ..errors import LangmemError, ProviderError, RateLimitedError
from ..stores import HybridSearchOp, supports_hybrid
from ..stores._filters import normalize_filter
from . import policy
from .scoring import DEFAULT_THRESHOLD, DEFAULT_WEIGHTS, ScoreWeights

__all__ = ["Batch", "Call", "Embed", "EngineConfig", "RetryPolicy", "run_async", "run_sync"]

T = TypeVar("T")

ALL_OPERATORS = frozenset(
    ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains")
)
BASIC_OPERATORS = frozenset(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"))


class Batch(NamedTuple):
    """Store ops to run together; ``parallel`` ops are independent reads that
    the async runner may issue concurrently."""

    ops: list[Op]
    parallel: bool = False


class Embed(NamedTuple):
    """Texts to embed with the store's embedder; the result is a list of
    vectors, or None when the store has no embedder."""

    texts: list[str]


class Call(NamedTuple):
    """Work that is not a store op: the sync runner returns ``sync()``, the
    async runner ``await async_()``. Errors reach the operation unretried (it
    has its own policy, e.g. for model calls)."""

    sync: Callable[[], Any]
    async_: Callable[[], Awaitable[Any]]


Request = Batch | Embed | Call
Step = Generator[Request, Any, T]


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of transient provider failures (seed 001: 3, exponential).

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


@dataclass(frozen=True)
class EngineConfig:
    """Engine settings (all documented in ``docs/engine.md``).

    Args:
        root: first namespace label of every engine item.
        max_content_length: longest accepted content, in characters.
        episode_ttl: lifetime of an episode.
        default_layer: layer written when a call names none.
        threshold: default score threshold of layered search.
        weights: recall composite weights.
        retry: provider retry policy.
        clock: returns "now" (UTC); tests pass a fake clock.
        sleep: how the sync runner waits between retries (async uses asyncio.sleep).
        filter_operators: filter operators the store supports; None detects
            (all operators for stores declaring ``supports_hybrid``, LangGraph's
            basic six otherwise).
        recall_mode: search mode of ``recall`` on stores with an embedder; None
            (default) uses the store's default — hybrid on ours, which finds far
            more on conversational data (docs/benchmarks.md) — ``"vector"`` makes
            relevance plain cosine.
        meter_provider: OpenTelemetry ``MeterProvider`` for the seed 001 metrics
            (:mod:`.metrics`); None uses the global one (a no-op without the SDK).
    """

    root: str = "memories"
    max_content_length: int = 10_000
    episode_ttl: timedelta = policy.EPISODE_TTL
    default_layer: str = "user"
    threshold: float = DEFAULT_THRESHOLD
    weights: ScoreWeights = DEFAULT_WEIGHTS
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    sleep: Callable[[float], None] = time.sleep
    filter_operators: frozenset[str] | None = None
    recall_mode: str | None = None
    meter_provider: Any = None


@dataclass(frozen=True)
class StoreCaps:
    """What the store can do, so the engine degrades instead of failing."""

    modes: bool  # accepts HybridSearchOp (hybrid / vector / keyword)
    operators: frozenset[str]
    embeds: bool


def detect_caps(store: BaseStore, config: EngineConfig) -> StoreCaps:
    ours = supports_hybrid(store)
    ops = config.filter_operators
    if ops is None:
        ops = ALL_OPERATORS if ours else BASIC_OPERATORS
    return StoreCaps(modes=ours, operators=frozenset(ops), embeds=_embedder(store) is not None)


def _embedder(store: BaseStore) -> Any:
    emb = getattr(store, "embeddings", None)
    return emb if emb is not None and hasattr(emb, "embed_documents") else None


# -- search planning -----------------------------------------------------------


def search_ops(
    caps: StoreCaps,
    namespace: tuple[str, ...],
    *,
    eq: Mapping[str, Any],
    any_of: Mapping[str, list[Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    query: str | None,
    limit: int,
    mode: str | None = None,
) -> tuple[list[Op], Callable[[Mapping[str, Any]], bool]]:
    """Ops for one logical search and a predicate to apply to their results.

    On a store with ``$in`` the whole filter is one op. Otherwise each
    ``any_of`` field is split into one ``$eq`` op per value, and ``extra``
    conditions the store cannot evaluate are checked in Python on an
    over-fetched result (so the page may be shorter than on our stores).
    """
    any_of = {k: list(v) for k, v in (any_of or {}).items()}
    extra = dict(extra or {})
    conds = normalize_filter(extra)
    # LangGraph's stores read "metadata.n" as one top-level key (and InMemoryStore
    # then fails comparing None), so nested paths are checked here on theirs.
    native_extra = all(c.op in caps.operators and (caps.modes or len(c.path) == 1) for c in conds)
    base = dict(eq)
    if native_extra:
        base.update(extra)
    check = (lambda v: True) if native_extra else (lambda v: matches(v, extra))
    fetch = limit if native_extra else limit * 5 + 20
    filters: list[dict[str, Any]]
    if "$in" in caps.operators or not any_of:
        f = dict(base)
        f.update({k: {"$in": v} for k, v in any_of.items()})
        filters = [f]
    else:
        filters = [base]
        for k, values in any_of.items():
            filters = [{**f, k: v} for f in filters for v in values]
    ops: list[Op] = []
    for f in filters:
        if caps.modes:
            ops.append(HybridSearchOp(namespace, f, fetch, 0, query, False, mode))
        else:
            ops.append(SearchOp(namespace, f, fetch, 0, query, False))
    return ops, check


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Evaluate our filter language (see :mod:`langmem_ext.stores._filters`) in
    Python, for stores that lack an operator."""
    for c in normalize_filter(filter):
        present, v = True, value
        for part in c.path:
            if isinstance(v, Mapping) and part in v:
                v = v[part]
            else:
                present, v = False, None
                break
        if not _test(present, v, c.op, c.value):
            return False
    return True


def _test(present: bool, v: Any, op: str, x: Any) -> bool:
    if op == "$exists":
        return present == x
    if op == "$ne":
        return not present or v != x
    if op == "$nin":
        return not present or v not in x
    if not present:
        return op == "$eq" and x is None
    if op == "$eq":
        return v == x
    if op == "$in":
        return v in x
    if op == "$contains":
        want = x if isinstance(x, list | tuple) else [x]
        if isinstance(v, str):
            return all(isinstance(w, str) and w in v for w in want)
        return isinstance(v, list) and all(w in v for w in want)
    num = isinstance(x, int | float)
    if num != (isinstance(v, int | float) and not isinstance(v, bool)):
        return False
    if not num and not isinstance(v, str):
        return False
    return {"$gt": v > x, "$gte": v >= x, "$lt": v < x, "$lte": v <= x}[op]


# -- runners -------------------------------------------------------------------


def run_sync(step: Step[T], store: BaseStore, config: EngineConfig) -> T:
    """Drive an operation with ``store.batch`` (retrying transient failures)."""
    request = _first(step)
    while not isinstance(request, _Done):
        try:
            if isinstance(request, Call):
                result = request.sync()
            else:
                result = _retry_sync(lambda r=request: _execute_sync(store, r), config)
        except Exception as e:
            # Thrown into the operation, so a step may handle a store failure
            # (health_check does); unhandled, it leaves through _resume.
            request = _resume(step, error=e)
        else:
            request = _resume(step, result=result)
    return request.value  # type: ignore[no-any-return]


async def run_async(step: Step[T], store: BaseStore, config: EngineConfig) -> T:
    """Drive an operation with ``store.abatch`` (retrying transient failures)."""
    request = _first(step)
    while not isinstance(request, _Done):
        try:
            if isinstance(request, Call):
                result = await request.async_()
            else:
                result = await _retry_async(lambda r=request: _execute_async(store, r), config)
        except Exception as e:
            request = _resume(step, error=e)
        else:
            request = _resume(step, result=result)
    return request.value  # type: ignore[no-any-return]


class _Done(NamedTuple):
    value: Any


def _first(step: Step[Any]) -> Request | _Done:
    return _resume(step, result=None)


def _resume(step: Step[Any], *, result: Any = None, error: Exception | None = None) -> Any:
    """The operation's next request, or :class:`_Done` with its return value."""
    try:
        return step.send(result) if error is None else step.throw(error)
    except StopIteration as stop:
        return _Done(stop.value)


def _execute_sync(store: BaseStore, request: Request) -> Any:
    if isinstance(request, Embed):
        emb = _embedder(store)
        return emb.embed_documents(list(request.texts)) if emb is not None else None
    return store.batch(request.ops)


async def _execute_async(store: BaseStore, request: Request) -> Any:
    if isinstance(request, Embed):
        emb = _embedder(store)
        return await emb.aembed_documents(list(request.texts)) if emb is not None else None
    if request.parallel and len(request.ops) > 1:
        parts = await asyncio.gather(*(store.abatch([op]) for op in request.ops))
        return [p[0] for p in parts]
    return await store.abatch(request.ops)


def _retry_sync(call: Callable[[], T], config: EngineConfig) -> T:
    policy_ = config.retry
    for attempt in range(policy_.retries + 1):
        try:
            return call()
        except Exception as e:
            if not _transient(e):
                raise
            if attempt == policy_.retries:
                raise _give_up(e, attempt + 1) from e
            config.sleep(policy_.delay(attempt, e))
    raise AssertionError("unreachable")


async def _retry_async(call: Callable[[], Any], config: EngineConfig) -> Any:
    policy_ = config.retry
    for attempt in range(policy_.retries + 1):
        try:
            return await call()
        except Exception as e:
            if not _transient(e):
                raise
            if attempt == policy_.retries:
                raise _give_up(e, attempt + 1) from e
            await asyncio.sleep(policy_.delay(attempt, e))
    raise AssertionError("unreachable")


def paged(
    caps: StoreCaps, namespace: tuple[str, ...], filter: dict[str, Any], page: int = 1000
) -> Step[list[Any]]:
    """Every item under ``namespace`` matching an ``$eq`` filter (no query),
    fetched page by page. Used by stats, list totals and sweeps."""
    out: list[Any] = []
    offset = 0
    while True:
        op: Op
        if caps.modes:
            op = HybridSearchOp(namespace, filter, page, offset, None, False, None)
        else:
            op = SearchOp(namespace, filter, page, offset, None, False)
        [items] = yield Batch([op])
        out.extend(items)
        if len(items) < page:
            return out
        offset += page


def flatten(results: Iterable[list[Any]]) -> list[Any]:
    return [x for r in results for x in r]
