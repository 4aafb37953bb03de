"""The provider contract beyond add/search/get/update/delete/list:
health check, capabilities, bulk add and bulk delete, embedding generation and
the storage-size count behind the ``memory.storage.size`` gauge. Each store
operation is written once, as a generator (see :mod:`._core`).

initialize / shutdown are the store's own ``setup`` / ``close`` (see
:meth:`MemoryEngine.setup`); they are not generators because ``BaseStore`` has
no op for them.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> _ = engine.bulk_add(ctx, ["likes tea", "has a cat"])
    >>> engine.storage_size(ctx)["user"], engine.health_check()["healthy"]
    (2, True)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from langgraph.store.base import BaseStore, GetOp, PutOp

from ..errors import InvalidValueError
from . import layout
from ._core import StoreCaps
from .checks import check_json, shown
from .env import Env, add_fields, check_content, load_many
from .lifecycle import records_of
from .models import MemoryRecord, Note
from .requests import Batch, Embed, Operation

__all__ = ["HealthStatus", "capabilities"]


class HealthStatus(TypedDict):
    """Result of :meth:`MemoryEngine.health_check`."""

    healthy: bool
    """True when the store answered a read (after the usual retries)."""
    latency_ms: float
    """How long the check took, retries included."""
    error: str | None
    """The error code (``PROVIDER_ERROR``, ``RATE_LIMITED``, …) or exception
    type name when unhealthy."""


def health_check() -> Operation[HealthStatus]:
    """Read one key; a store failure becomes ``healthy: False``, not an error."""
    start = time.perf_counter()
    error: str | None = None
    try:
        yield Batch([GetOp((layout.META, "health"), "_")])
    except Exception as e:  # thrown in by the runner after its retries
        error = getattr(e, "code", None) or type(e).__name__
    ms = round((time.perf_counter() - start) * 1000, 3)
    return {"healthy": error is None, "latency_ms": ms, "error": error}


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


def _entry(item: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(item, str):
        return {"content": item}
    if not isinstance(item, Mapping) or "content" not in item:
        raise InvalidValueError(
            f"each bulk_add item must be a string or a dict with 'content', got {shown(item)}"
        )
    unknown = set(item) - {"content", "layer", "scope", "tags", "metadata"}
    if unknown:
        raise InvalidValueError(
            f"unknown bulk_add keys {sorted(map(shown, unknown))}; use content, layer, scope, "
            "tags, metadata"
        )
    return dict(item)


def bulk_add(
    env: Env, items: Sequence[str | Mapping[str, Any]], layer: str | None
) -> Operation[list[Note]]:
    """Validate every note first (a bad item writes nothing), then put all
    notes and their audit events in one store batch."""
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise InvalidValueError(f"items must be a list of notes, got {type(items).__name__}")
    notes: list[Note] = []
    for raw in items:
        e = _entry(raw)
        metadata = e.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidValueError(f"metadata must be a dict, got {type(metadata).__name__}")
        check_json("metadata", metadata)
        fields = add_fields(
            env, e["content"], e.get("layer", layer), e.get("scope", "global"), e.get("tags")
        )
        notes.append(Note(**fields, metadata=dict(metadata or {})))
    if notes:
        ops: list[PutOp] = []
        for n in notes:
            ops += [env.put(n), env.event(n, "created")]
        yield Batch(ops)
        env.sized(notes, +1)
    return notes


def bulk_delete(env: Env, ids: Sequence[str]) -> Operation[list[str]]:
    """Delete many memories of any type in one batch of writes. Unknown ids are
    skipped (idempotent, like ``delete``); returns the ids removed."""
    if (
        isinstance(ids, str)
        or not isinstance(ids, list | tuple | set | frozenset)
        or not all(isinstance(i, str) for i in ids)
    ):
        raise InvalidValueError(f"ids must be a list of strings, got {shown(ids)}")
    wanted = list(dict.fromkeys(i for i in ids if i))
    records = yield from load_many(env, None, wanted, archived=False)
    found: list[MemoryRecord] = [r for r in records if r is not None]
    if found:
        ops: list[PutOp] = []
        for r in found:
            ops += [PutOp(env.layer_of(r).ns, r.id, None), env.event(r, "deleted")]
        yield Batch(ops)
        env.sized(found, -1)
    return [r.id for r in found]


def generate_embedding(env: Env, text: str) -> Operation[list[float] | None]:
    """The store's embedding of ``text`` (None when the store has no embedder).
    Goes through the store's embedder, so its cache (if any) is used."""
    check_content(env, text, "text")
    vectors = yield Embed([text])
    return list(vectors[0]) if vectors else None


def storage_size(env: Env) -> Operation[dict[str, int]]:
    """Live memories per readable layer (all types), read page by page (O(n));
    also resets the ``memory.storage.size`` gauge for those layers."""
    counts: dict[str, int] = {}
    for layer in env.layers():
        records = yield from records_of(env, layer)
        counts[layer.ref] = sum(1 for r in records if r.retrievable(env.stamp))
    if env.metrics is not None:
        env.metrics.set_sizes(env.tenant, counts)
    out: dict[str, int] = {}
    for ref, n in counts.items():
        name = ref.split(":", 1)[0]
        out[name] = out.get(name, 0) + n
    return out
