"""The catalogue's searches: search by relevance, search every layer at once,
recall by usefulness, and the caller's own items as ``store.search`` returns
them (see :mod:`..runtime.catalogue`). Each declaration is its operation's one
body; the steps they share are in :mod:`.retrieval`.

Every search returns every kind of memory (notes, facts, episodes, rules)
unless ``types`` narrows it: what an agent saved with ``manage_memory`` is
found by ``search`` and ``recall`` as much as a fact reflection extracted.
"""

from __future__ import annotations

from typing import Annotated, Any

from langgraph.store.base import SearchItem, SearchOp
from pydantic import Field

from ...stores import HybridSearchOp
from ..identity.layers import precedence
from ..records.checks import check_text
from ..records.models import RECORD_TYPES, parse_ts
from ..records.scoring import (
    DUPLICATE_SIMILARITY,
    composite,
    cosine,
    recency_factor,
    relevance,
    text_similarity,
)
from ..runtime.catalogue import Caller, Meta, Spec, operation
from ..runtime.requests import Batch, Embed, Operation
from .fields import check_filter
from .graph import entities_op, neighbourhood
from .params import (
    AsOf,
    Filter,
    Kinds,
    LayerNames,
    Mode,
    Query,
    ScopeFilter,
    Tags,
    Tenant,
    ValidDuring,
)
from .retrieval import (
    SEARCH_TYPES,
    Hit,
    bump,
    collect,
    descending,
    effective_confidence,
    held,
    layered_ops,
    names_a_word,
    read_refs,
    scopes_of,
    tags_ok,
    unmatched,
)

__all__ = ["recall", "search", "search_items", "search_layers"]

Limit20 = Annotated[
    int, Field(ge=1, le=1000, strict=True, description="Most results to return (20).")
]
Limit10 = Annotated[
    int, Field(ge=1, le=1000, strict=True, description="Most results to return (10).")
]
MinConfidence = Annotated[
    float | None,
    Field(
        ge=0,
        le=1,
        strict=True,
        allow_inf_nan=False,
        description="Leave out facts and rules less sure than this (0 to 1).",
    ),
]


@operation(access="read", tool="memory_search")
def search(
    c: Caller,
    query: Query,
    types: Kinds = None,
    scope: ScopeFilter = None,
    mode: Mode = "hybrid",
    limit: Limit20 = 20,
    min_confidence: MinConfidence = None,
    *,
    layers: LayerNames = None,
    tags: Annotated[Tags, Field(description="Only memories with one of these tags.")] = None,
    filter: Filter = None,
    as_of: AsOf = None,
    valid_during: ValidDuring = None,
    tenant: Tenant = None,
) -> Operation[list[Hit]]:
    """Search your memories (notes, facts, episodes and rules) by relevance;
    keyword mode returns only memories that contain the words; ``as_of`` /
    ``valid_during`` search what held then, replaced facts included.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> _ = engine.add(ctx, "Allergic to peanuts")
        >>> [h.content for h in engine.search(ctx, "peanuts", mode="keyword")]
        ['Allergic to peanuts']
        >>> engine.search(ctx, "cashews", mode="keyword")
        []
    """
    # Ranked by relevance: score desc, created_at desc, id asc.
    env = c.env(tenant)
    kinds = list(types or SEARCH_TYPES)
    filter = check_filter(filter)
    when = held(as_of, valid_during)
    read = env.layers(layers)
    fetch = limit * 3 + 10 if (tags or min_confidence is not None or when) else limit + 5
    scopes = scopes_of(scope)
    ops, owners = layered_ops(
        env, kinds, read, scopes, filter, query, fetch, mode, archived=when is not None
    )
    results = yield Batch(ops)
    hits: list[Hit] = []
    for rec, score in collect(env, results, owners, kinds, scopes, when):
        conf = effective_confidence(rec, env)
        if not tags_ok(rec, tags):
            continue
        # Facts archived before archives were indexed have no score: in a read
        # of the past they are kept when they hold a word of the query.
        legacy = score is None and not rec.live and names_a_word(query, rec.text)
        if unmatched(env, score, mode) and not legacy:
            continue
        if min_confidence is not None and conf is not None and conf < min_confidence:
            continue
        hits.append(Hit(rec.type, rec.id, rec.text, relevance(score), conf, rec.layer, rec))
    hits.sort(key=lambda h: h.record.created_at, reverse=True)
    hits.sort(key=lambda h: -h.score)  # stable: ties keep created_at desc
    env.observe_results("search", [la.name for la in read], hits[:limit])
    return hits[:limit]


@operation(access="read", cli=False)
def search_layers(
    c: Caller,
    query: Query,
    *,
    layers: LayerNames = None,
    threshold: Annotated[
        float | None,
        Field(
            ge=-1, le=1, strict=True, description="Lowest similarity kept (default: the engine's)."
        ),
    ] = None,
    limit: Limit10 = 10,
    types: Kinds = None,
    tags: Tags = None,
    filter: Filter = None,
    tenant: Tenant = None,
) -> Operation[list[Hit]]:
    """Search every layer at once: results by layer precedence, then score;
    a near-duplicate from a broader layer is dropped."""
    env = c.env(tenant)
    threshold = env.config.threshold if threshold is None else threshold
    kinds = list(types or RECORD_TYPES)
    filter = check_filter(filter)
    read = env.layers(layers)
    mode = "vector" if env.caps.embeds else "keyword"
    # One group of ops per layer, issued together: the layers run concurrently.
    ops, owners = layered_ops(env, kinds, read, None, filter, query, limit * 2, mode)
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
        for r, s in collect(env, results, owners, kinds)
        if tags_ok(r, tags) and s is not None and s >= threshold
    ]
    hits.sort(key=lambda h: (precedence(h.layer), -h.score, descending(h.record.created_at), h.id))
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


Expand = Annotated[
    bool,
    Field(
        strict=True,
        description="Also recall what is linked to the people, places and things the request "
        "names (default true).",
    ),
]
BumpRefs = Annotated[
    bool,
    Field(
        strict=True,
        description="Count the memories returned as used (False: the caller bumps the ones "
        "it uses, with their counts already read).",
    ),
    Meta(internal=True),
]


@operation(access="read", tool="memory_recall")
def recall(
    c: Caller,
    query: Query,
    scope: ScopeFilter = None,
    limit: Limit10 = 10,
    types: Kinds = None,
    *,
    layers: LayerNames = None,
    as_of: AsOf = None,
    valid_during: ValidDuring = None,
    expand: Expand = True,
    bump_refs: BumpRefs = True,
    tenant: Tenant = None,
) -> Operation[list[Hit]]:
    """Recall what is most useful for a request: memories ranked by relevance,
    importance, recency and confidence, with what is known about the people,
    places and things the request names. Use this first when you need to
    remember something."""
    # Composite score; notes and episodes count as sure; stale memories count
    # half as sure. Bumps references.
    env = c.env(tenant)
    # Recall ranks by meaning: a blank request has none (search lists instead).
    check_text("query", query)
    kinds = list(types or SEARCH_TYPES)
    when = held(as_of, valid_during)
    read = env.layers(layers)
    mode = env.config.recall_mode if env.caps.embeds and env.caps.modes else None
    scopes = scopes_of(scope)
    ops, owners = layered_ops(
        env, kinds, read, scopes, None, query, limit * 3, mode, archived=when is not None
    )
    expanding = expand and env.config.graph_hops > 0
    # The layers' entities are read with the search itself: one round trip.
    extra = [entities_op(env, la) for la in read] if expanding else []
    results = yield Batch([*ops, *extra])
    found = collect(env, results[: len(ops)], owners, kinds, scopes, when)
    near = None
    if expanding:
        hops = env.config.graph_hops
        near = yield from neighbourhood(env, read, query, hops, mode, results[len(ops) :])
        have = {r.id for r, _ in found}
        for layer, item in near.items:
            rec = env.record(item, layer)
            if rec.id in have or rec.type not in kinds or (scopes and rec.scope not in scopes):
                continue
            if when(rec) if when is not None else rec.retrievable(env.stamp):
                found.append((rec, item.score))
                have.add(rec.id)
    yield from read_refs(env, [r for r, _ in found])
    w = env.config.weights
    hits: list[Hit] = []
    named: set[str] = set()
    for rec, score in found:
        distance = near.distance(rec) if near is not None else None
        if distance == 0:
            named.add(rec.id)
        known = effective_confidence(rec, env)
        conf = (1.0 if known is None else known) * (0.5 if rec.stale else 1.0)
        touched = max(
            rec.updated_at, rec.last_referenced_at or "", getattr(rec, "last_confirmed_at", "")
        )
        age = (env.now - parse_ts(touched)).total_seconds() / 86400
        bonus = w.linked if distance == 1 else 0.0
        s = composite(
            relevance=min(1.0, relevance(score) + bonus),
            importance=rec.importance,
            recency=recency_factor(age, w.half_life_days),
            confidence=conf,
            weights=w,
        )
        hits.append(Hit(rec.type, rec.id, rec.text, s, known, rec.layer, rec))
    hits.sort(key=lambda h: (h.record.created_at, h.id), reverse=True)
    # What is known about the entities the request names comes first.
    hits.sort(key=lambda h: (h.id not in named, -h.score))
    hits = hits[:limit]
    # The counts were read above: bumping writes without reading them again
    # (one store round trip fewer per recall).
    if bump_refs:
        yield from bump(env, [h.record for h in hits], counted=True)
    env.observe_results("recall", [la.name for la in read], hits)
    return hits


Offset = Annotated[
    int, Field(ge=0, le=10_000, strict=True, description="Results to skip, for paging.")
]


@operation(access="read", cli=False)
def search_items(
    c: Caller,
    query: Annotated[str | None, Field(description="What to look for; none lists.")] = None,
    *,
    filter: Filter = None,
    limit: Limit10 = 10,
    offset: Offset = 0,
    mode: Mode = None,
    tenant: Tenant = None,
) -> Operation[list[SearchItem]]:
    """Search the items of your own space as LangGraph's ``store.search``
    would (what the LangMem-style ``search_memory`` tool returns), never
    anyone else's: a caller without a user gets only its own space, not the
    users' spaces beneath it."""
    # Reads the caller's space by prefix and keeps what the caller owns
    # (MemoryContext.owns): for an org or agent caller, pages are read until
    # offset + limit owned items are found, so paging stays exact.
    env = c.env(tenant)
    filter = check_filter(filter)
    space = env.layer("user").ns

    def page(at: int, size: int) -> Any:
        if env.caps.modes:
            return HybridSearchOp(space, filter, size, at, query, True, mode)
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


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
