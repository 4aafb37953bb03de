"""The engine's configuration, what it knows of the store, and search
planning shared by its operations (see :mod:`.requests` for the vocabulary).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar, cast

from langgraph.store.base import BaseStore, Op, SearchOp

from ..stores import HybridSearchOp, normalize_filter, supports_hybrid
from . import policy
from .requests import Batch, Operation, RetryPolicy, embedder
from .scoring import DEFAULT_THRESHOLD, DEFAULT_WEIGHTS, ScoreWeights

__all__ = ["EngineConfig", "StoreCaps", "detect_caps", "matches", "paged", "search_ops"]

T = TypeVar("T")

ALL_OPERATORS = frozenset(
    ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains")
)
BASIC_OPERATORS = frozenset(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"))


@dataclass(frozen=True)
class EngineConfig:
    """Engine settings (all documented in ``docs/engine.md``).

    Args:
        namespace: the app's namespace template for each user's memories, e.g.
            ``("memories", "{user_id}")``, filled from the run's config (use the
            same one as the memory tools); None: the identity rule
            (``("user", <user_id>)``). See :mod:`.layout`.
        default_tenant: tenant of runs without authentication; None: the
            default tenant, whose namespaces carry no tenant prefix.
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
        meter_provider: OpenTelemetry ``MeterProvider`` for the metrics
            (:mod:`.metrics`); None uses the global one (a no-op without the SDK).
    """

    namespace: Any = None
    default_tenant: str | None = None
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
    return StoreCaps(modes=ours, operators=frozenset(ops), embeds=embedder(store) is not None)


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
    ops: list[Any] = []
    for f in filters:
        if caps.modes:
            ops.append(HybridSearchOp(namespace, f, fetch, 0, query, False, mode))  # type: ignore[arg-type]
        else:
            ops.append(SearchOp(namespace, f, fetch, 0, query, False))
    return ops, check


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Evaluate our filter language (see :mod:`langmem_ext.stores._filters`) in
    Python, for stores that lack an operator."""
    for c in normalize_filter(filter):
        present, v = True, cast(Any, value)
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


def paged(
    caps: StoreCaps, namespace: tuple[str, ...], filter: dict[str, Any], page: int = 1000
) -> Operation[list[Any]]:
    """Every item under ``namespace`` matching an ``$eq`` filter (no query),
    fetched page by page. Used by stats, list totals and sweeps."""
    out: list[Any] = []
    offset = 0
    while True:
        op: Any
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
