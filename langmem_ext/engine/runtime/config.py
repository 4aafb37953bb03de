"""The engine's configuration and what it knows of the store (its capabilities),
detected once per engine.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import EngineConfig, MemoryEngine
    >>> engine = MemoryEngine(SQLiteStore(), EngineConfig(max_content_length=500))
    >>> engine.config.max_content_length, engine.capabilities()["keywordSearch"]
    (500, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from langgraph.store.base import BaseStore

from ...stores import supports_hybrid
from ..records import policy
from ..records.scoring import DEFAULT_THRESHOLD, DEFAULT_WEIGHTS, ScoreWeights
from .requests import RetryPolicy, embedder

__all__ = [
    "ALL_OPERATORS",
    "BASIC_OPERATORS",
    "EngineConfig",
    "StoreCaps",
    "capabilities",
    "detect_caps",
]

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
        graph_hops: how far recall follows the entities a request names: 0
            (off), 1 (their memories) or 2 (and those of the entities they
            link to; default). See ``docs/entities.md`` for its cost.
        history: whether changes to notes (free content, what the LangMem-
            style tools save) leave a trace. True (default): each has an audit
            event and the value is stamped with its kind and times. False: a
            note is written as LangMem's tools write it (``{"content": ...}``
            and the caller's own fields), with no event; calls read only the
            caller's own layer and consult no archive by id. Facts, episodes
            and rules keep their lifecycle (events, archive) either way. The
            LangMem-style tools set it, so a LangMem user's store holds only
            what its owner wrote, unless they are made with ``history=True``.
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
    graph_hops: int = 2
    history: bool = True


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


def capabilities(store: BaseStore, caps: StoreCaps) -> dict[str, Any]:
    """What the store actually used can do (provider capabilities).

    ``bulkOperations`` is True when one store batch is one transaction (our
    SQLite and Postgres stores), so a bulk call is all-or-nothing; on other
    stores the bulk methods still send one batch, applied op by op.
    """
    index = getattr(store, "index_config", None) or {}
    # LangGraph's PostgresStore names its metric under ann_index_config; every
    # other store here ranks by cosine similarity.
    metric = (index.get("ann_index_config") or {}).get("distance_type") or index.get(
        "distance_type", "cosine"
    )
    return {
        "vectorSearch": caps.embeds,
        "keywordSearch": caps.modes,
        "embeddingDimensions": index.get("dims") if caps.embeds else None,
        "distanceMetrics": [metric] if caps.embeds else [],
        "filterOperators": sorted(caps.operators),
        "bulkOperations": caps.modes,
        "store": type(store).__name__,
    }
