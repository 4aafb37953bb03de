"""Reads, each written once as a generator (see :mod:`._core`): get, search,
layered search, recall, list with cursors, stats.

Reference counts live in their own items (the layer's ``refs`` bookkeeping
namespace, one per memory) rather than in the records, so bumping a count can
never write back a stale copy of a record that a concurrent ``forget`` just
changed. Every read names the caller's layer namespaces only (see
:mod:`.layout`) and keeps only items found exactly in them.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> _ = engine.store_fact(ctx, "user", "drink", "Drinks green tea every morning")
    >>> [h.content for h in engine.search(ctx, "tea")]
    ['Drinks green tea every morning']
    >>> engine.search(MemoryContext(user_id="bob"), "tea")  # another user's space
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp, SearchOp

from ..errors import InvalidValueError
from ..stores import SEARCH_MODES, HybridSearchOp
from . import policy
from ._core import search_ops
from .checks import check_int, check_text, shown
from .env import (
    Env,
    Layer,
    check_filter,
    check_id,
    check_range,
    check_tags,
    check_type,
    check_types,
    load,
    require,
)
from .layers import precedence
from .models import RECORD_TYPES, Fact, MemoryRecord, Rule, parse_ts
from .requests import Batch, Embed, Operation
from .scoring import (
    DUPLICATE_SIMILARITY,
    composite,
    cosine,
    recency_factor,
    relevance,
    text_similarity,
)

#: What search and recall read by default: every kind of memory.
SEARCH_TYPES = tuple(RECORD_TYPES)


@dataclass
class Hit:
    """One search or recall result.

    ``score`` is the relevance for ``search`` / ``search_layers`` and the
    composite score for ``recall``; ``confidence`` is the effective confidence
    (None for notes and episodes).
    """

    type: str
    id: str
    content: str
    score: float
    confidence: float | None
    layer: str
    record: MemoryRecord

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "id": self.id,
            "content": self.content,
            "score": round(self.score, 4),
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            "layer": self.layer,
            "scope": self.record.scope,
        }


@dataclass
class Page:
    """A page of :meth:`MemoryEngine.list`; pass ``next_cursor`` back for the next."""

    items: list[MemoryRecord]
    next_cursor: str | None
    total_count: int
    filters: dict[str, Any] = field(default_factory=dict)


def effective_confidence(record: MemoryRecord, env: Env) -> float | None:
    if isinstance(record, Fact | Rule):
        return record.effective_confidence(env.now)
    return None


def _scopes(scope: str | None) -> list[str] | None:
    if scope is None:
        return None
    if not isinstance(scope, str) or not scope:
        raise InvalidValueError(f"scope must be a non-empty string, got {shown(scope)}")
    return sorted({"global", scope})


def _check_limit(limit: Any) -> int:
    return check_int("limit", limit, 1, 1000)


def _check_query(query: Any) -> str | None:
    if query is not None and not isinstance(query, str):
        raise InvalidValueError(f"query must be text or None, got {shown(query)}")
    return query


def _refs_ns(env: Env, record: MemoryRecord) -> tuple[str, ...]:
    return env.meta(env.layer_of(record), "refs")


def _with_refs(records: list[MemoryRecord], items: list[Item | None], env: Env) -> None:
    for rec, item in zip(records, items, strict=True):
        if item is not None:
            rec.reference_count = int(item.value.get("count", 0))
            rec.last_referenced_at = item.value.get("last_referenced_at")


def read_refs(env: Env, records: Sequence[MemoryRecord]) -> Operation[None]:
    """Fill the records' reference counts from their counter items."""
    if records:
        items = yield Batch([GetOp(_refs_ns(env, r), r.id) for r in records])
        _with_refs(list(records), items, env)
    return None


def bump(env: Env, records: Sequence[MemoryRecord], counted: bool = False) -> Operation[None]:
    """Add one reference to each record. ``counted``: the records' counts were
    just read (recall reads them for recency), so only the writes remain."""
    if not records:
        return None
    if not counted:
        yield from read_refs(env, records)
    puts = []
    for r in records:
        r.reference_count += 1
        r.last_referenced_at = env.stamp
        value = {"count": r.reference_count, "last_referenced_at": env.stamp, "type": r.type}
        puts.append(PutOp(_refs_ns(env, r), r.id, value, False))
    yield Batch(puts)
    return None


def get(env: Env, id: str, kind: str | None) -> Operation[MemoryRecord | None]:
    """The provider contract's get: the record, or None (no error) when it does not exist."""
    kinds = [check_type(kind)] if kind is not None else None
    record = yield from load(env, kinds, check_id(id))
    if record is not None:
        yield from read_refs(env, [record])
    return record


def get_memory(env: Env, kind: str, id: str) -> Operation[MemoryRecord]:
    """The ``memory_get`` tool: the full record, reference count bumped;
    MEMORY_NOT_FOUND for an unknown id."""
    record = yield from require(env, kind, id)
    yield from bump(env, [record])
    return record


def _collect(
    env: Env,
    results: list[list[Any]],
    owners: list[tuple[Layer, Any]],
    types: Sequence[str],
    scopes: list[str] | None = None,
) -> list[tuple[MemoryRecord, float | None]]:
    """Retrievable records of ``types`` (and ``scopes``) found exactly in the
    layer each op read."""
    seen: dict[tuple[str, str], tuple[MemoryRecord, float | None]] = {}
    for items, (layer, check) in zip(results, owners, strict=True):
        for item in items:
            key = (layer.ref, item.key)
            if key in seen or tuple(item.namespace) != layer.ns or not check(item.value):
                continue
            rec = env.record(item, layer)
            if scopes and rec.scope not in scopes:
                continue
            if rec.type in types and rec.retrievable(env.stamp):
                seen[key] = (rec, item.score)
    return list(seen.values())


def _layered_ops(
    env: Env,
    types: Sequence[str],
    layers: list[Layer],
    scopes: list[str] | None,
    extra: dict[str, Any] | None,
    query: str | None,
    limit: int,
    mode: str | None,
) -> tuple[list[Any], list[tuple[Layer, Any]]]:
    ops: list[Any] = []
    owners: list[tuple[Layer, Any]] = []
    any_of: dict[str, list[Any]] = {}
    if "note" not in types:
        any_of["kind"] = list(types)
    # Notes leave the default scope out of their value: filter them in Python.
    if scopes and "note" not in types:
        any_of["scope"] = scopes
    for layer in layers:
        o, check = search_ops(
            env.caps,
            layer.ns,
            eq={},
            any_of=any_of,
            extra=extra,
            query=query,
            limit=limit,
            mode=mode,
        )
        ops += o
        owners += [(layer, check)] * len(o)
    return ops, owners


def _tags_ok(record: MemoryRecord, tags: list[str] | None) -> bool:
    return not tags or any(t in record.tags for t in tags)


def search(
    env: Env,
    query: str,
    *,
    types: Sequence[str] | None,
    scope: str | None,
    mode: str | None,
    limit: int,
    min_confidence: float | None,
    layers: Sequence[str] | None,
    tags: list[str] | None,
    filter: dict[str, Any] | None,
) -> Operation[list[Hit]]:
    """Search: the chosen types in every readable layer, ranked by
    relevance (score desc, created_at desc, id asc)."""
    _check_query(query)
    types = check_types(types, SEARCH_TYPES)
    if mode is not None and mode not in SEARCH_MODES:
        raise InvalidValueError(
            f"unknown search mode {shown(mode)}; use one of {', '.join(SEARCH_MODES)}"
        )
    _check_limit(limit)
    if min_confidence is not None:
        check_range("min_confidence", min_confidence, policy.CONFIDENCE_RANGE)
    tags = check_tags(tags)
    filter = check_filter(filter)
    read = env.layers(layers)
    fetch = limit * 3 + 10 if (tags or min_confidence is not None) else limit + 5
    scopes = _scopes(scope)
    ops, owners = _layered_ops(env, types, read, scopes, filter, query, fetch, mode)
    results = yield Batch(ops)
    hits: list[Hit] = []
    for rec, score in _collect(env, results, owners, types, scopes):
        conf = effective_confidence(rec, env)
        if not _tags_ok(rec, tags) or _unmatched(env, score, mode):
            continue
        if min_confidence is not None and conf is not None and conf < min_confidence:
            continue
        hits.append(Hit(rec.type, rec.id, rec.text, relevance(score), conf, rec.layer, rec))
    hits.sort(key=lambda h: h.record.created_at, reverse=True)
    hits.sort(key=lambda h: -h.score)  # stable: ties keep created_at desc
    env.observe_results("search", [la.name for la in read], hits[:limit])
    return hits[:limit]


def _unmatched(env: Env, score: float | None, mode: str | None) -> bool:
    """A result of a keyword search that contains none of the words (keyword
    mode, or hybrid on a store without an embedder): no answer to the query.
    Stores that cannot rank at all (LangGraph's without an index) score
    nothing and keep their order; so does an unspecified mode."""
    keyword = mode == "keyword" or (mode == "hybrid" and not env.caps.embeds)
    return score is None and keyword and env.caps.modes


def recall(
    env: Env,
    query: str,
    *,
    scope: str | None,
    limit: int,
    layers: Sequence[str] | None,
    types: Sequence[str] | None = None,
    bump_refs: bool = True,
) -> Operation[list[Hit]]:
    """Recall: memories by composite score (relevance, importance, recency,
    confidence; notes and episodes count as sure); bumps references
    (``bump_refs=False``: the caller bumps the ones it uses, counts already read)."""
    check_text("query", query)
    _check_limit(limit)
    kinds = check_types(types, SEARCH_TYPES)
    read = env.layers(layers)
    mode = env.config.recall_mode if env.caps.embeds and env.caps.modes else None
    scopes = _scopes(scope)
    ops, owners = _layered_ops(env, kinds, read, scopes, None, query, limit * 3, mode)
    results = yield Batch(ops)
    found = _collect(env, results, owners, kinds, scopes)
    yield from read_refs(env, [r for r, _ in found])
    w = env.config.weights
    hits: list[Hit] = []
    for rec, score in found:
        known = effective_confidence(rec, env)
        conf = 1.0 if known is None else known
        touched = max(
            rec.updated_at, rec.last_referenced_at or "", getattr(rec, "last_confirmed_at", "")
        )
        age = (env.now - parse_ts(touched)).total_seconds() / 86400
        s = composite(
            relevance=relevance(score),
            importance=rec.importance,
            recency=recency_factor(age, w.half_life_days),
            confidence=conf,
            weights=w,
        )
        hits.append(Hit(rec.type, rec.id, rec.text, s, known, rec.layer, rec))
    hits.sort(key=lambda h: (h.record.created_at, h.id), reverse=True)
    hits.sort(key=lambda h: -h.score)
    hits = hits[:limit]
    # The counts were read above: bumping writes without reading them again
    # (one store round trip fewer per recall).
    if bump_refs:
        yield from bump(env, [h.record for h in hits], counted=True)
    env.observe_results("recall", [la.name for la in read], hits)
    return hits


def search_layers(
    env: Env,
    query: str,
    *,
    layers: Sequence[str] | None,
    threshold: float | None,
    limit: int,
    types: Sequence[str] | None,
    tags: list[str] | None,
    filter: dict[str, Any] | None,
) -> Operation[list[Hit]]:
    """Layered search: one search per readable layer, all issued together;
    results at or above ``threshold`` ordered by layer precedence then score;
    lower-precedence near-duplicates dropped."""
    _check_query(query)
    threshold = env.config.threshold if threshold is None else threshold
    check_range("threshold", threshold, (-1.0, 1.0))
    _check_limit(limit)
    types = check_types(types, RECORD_TYPES)
    tags = check_tags(tags)
    filter = check_filter(filter)
    read = env.layers(layers)
    mode = "vector" if env.caps.embeds else "keyword"
    # One group of ops per layer, issued together: the layers run concurrently.
    ops, owners = _layered_ops(env, types, read, None, filter, query, limit * 2, mode)
    results = yield Batch(ops, parallel=True)
    hits = [
        Hit(
            r.type,
            r.id,
            r.text,
            relevance(s) if s is not None else 0.0,
            effective_confidence(r, env),
            r.layer,
            r,
        )
        for r, s in _collect(env, results, owners, types)
        if _tags_ok(r, tags) and s is not None and s >= threshold
    ]
    hits.sort(key=lambda h: (precedence(h.layer), -h.score, _neg(h.record.created_at), h.id))
    vectors = (yield Embed([h.content for h in hits])) if hits else None
    kept: list[tuple[Hit, Any]] = []
    for i, h in enumerate(hits):
        v = vectors[i] if vectors else None
        dup = any(
            precedence(k.layer) < precedence(h.layer)
            and (cosine(kv, v) if v is not None else text_similarity(k.content, h.content))
            >= DUPLICATE_SIMILARITY
            for k, kv in kept
        )
        if not dup:
            kept.append((h, v))
    out = [h for h, _ in kept][:limit]
    env.observe_results("search_layers", [la.name for la in read], out)
    return out


def search_items(
    env: Env,
    query: str | None,
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
    mode: str | None,
) -> Operation[list[Any]]:
    """The caller's own items as ``store.search`` returns them (LangGraph's
    ``SearchItem``), ranked by the store. Reads the caller's space by prefix and
    keeps what the caller owns (:meth:`MemoryContext.owns`): for an org or
    agent caller, pages are read until ``offset + limit`` owned items are
    found, so paging stays exact."""
    _check_query(query)
    filter = check_filter(filter)
    space = env.layer("user").ns

    def page(at: int, size: int) -> Any:
        if env.caps.modes:
            return HybridSearchOp(space, filter, size, at, query, True, mode)  # type: ignore[arg-type]
        return SearchOp(space, filter, size, at, query, True)

    if env.ctx.reads_below():
        [items] = yield Batch([page(offset, limit)])
        return [i for i in items if env.ctx.owns(space, i.namespace)]
    kept: list[Any] = []
    at, size = 0, max(50, 2 * (offset + limit))
    while True:
        [items] = yield Batch([page(at, size)])
        kept += [i for i in items if env.ctx.owns(space, i.namespace)]
        if len(kept) >= offset + limit or len(items) < size:
            return kept[offset : offset + limit]
        at += size


def _neg(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)
