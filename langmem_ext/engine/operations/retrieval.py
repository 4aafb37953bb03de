"""The steps every read shares: hits and pages, one logical search per layer
(:func:`layered_ops`) and what of its results the caller may see
(:func:`collect`), reference counts.

Reference counts live in their own items (the layer's ``refs`` bookkeeping
namespace, one per memory) rather than in the records, so bumping a count can
never write back a stale copy of a record that a concurrent ``forget`` just
changed. Every read names the caller's layer namespaces only (see
:mod:`..identity.layout`) and keeps only items found exactly in them.

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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, Item, PutOp

from ..records.models import RECORD_TYPES, Fact, MemoryRecord, Rule
from ..records.times import check_period, check_when, holds_at, overlaps
from ..runtime.env import Env, Layer
from ..runtime.planning import search_ops
from ..runtime.requests import Batch, Operation

__all__ = [
    "SEARCH_TYPES",
    "Hit",
    "Owner",
    "Page",
    "bump",
    "collect",
    "descending",
    "effective_confidence",
    "held",
    "layered_ops",
    "names_a_word",
    "read_refs",
    "scopes_of",
    "tags_ok",
    "unmatched",
]

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
            **({"stale": True} if self.record.stale else {}),
            **_times(self.record),
        }


def _times(record: MemoryRecord) -> dict[str, Any]:
    out = {}
    for name in ("valid_at", "invalid_at"):
        if getattr(record, name, None):
            out[name] = getattr(record, name)
    if not record.live:
        out["current"] = False
    return out


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


def scopes_of(scope: str | None) -> list[str] | None:
    """The scopes a scope filter reads: ``global`` and the one named."""
    return None if scope is None else sorted({"global", scope})


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


class Owner(NamedTuple):
    """What one store op of a logical search read: the layer, the namespace
    (the layer's, or its archive), whether that namespace holds current
    memories, and the Python check of conditions the store could not evaluate."""

    layer: Layer
    ns: tuple[str, ...]
    live: bool
    check: Callable[[Any], bool]


def collect(
    env: Env,
    results: list[list[Any]],
    owners: list[Owner],
    types: Sequence[str],
    scopes: list[str] | None = None,
    when: Callable[[MemoryRecord], bool] | None = None,
) -> list[tuple[MemoryRecord, float | None]]:
    """Records of ``types`` (and ``scopes``) found exactly in the namespace
    each op read: retrievable now, or, with ``when``, those it accepts (a
    read "as of" a time: archived facts included, see :mod:`..records.times`)."""
    seen: dict[tuple[str, str], tuple[MemoryRecord, float | None]] = {}
    for items, owner in zip(results, owners, strict=True):
        for item in items:
            key = (owner.layer.ref, item.key)
            if key in seen or tuple(item.namespace) != owner.ns or not owner.check(item.value):
                continue
            rec = env.record(item, owner.layer, owner.live)
            if scopes and rec.scope not in scopes:
                continue
            if rec.type not in types:
                continue
            if when(rec) if when is not None else rec.retrievable(env.stamp):
                seen[key] = (rec, item.score)
    return list(seen.values())


def names_a_word(query: str, text: str) -> bool:
    """Whether ``text`` holds one of the query's words (three letters or more)."""
    words = {w for w in re.findall(r"\w{3,}", query.casefold())}
    return bool(words & set(re.findall(r"\w{3,}", text.casefold())))


def held(as_of: Any, valid_during: Any) -> Callable[[MemoryRecord], bool] | None:
    """The check of a read of the past: what held at ``as_of`` and at some time
    of ``valid_during`` (both checked here: zone, range, order); None for a
    read of what holds now."""
    at = check_when("as_of", as_of)
    period = check_period("valid_during", valid_during)
    if at is None and period is None:
        return None

    def check(record: MemoryRecord) -> bool:
        if at is not None and not holds_at(record, at):
            return False
        return period is None or overlaps(record, *period)

    return check


def layered_ops(
    env: Env,
    types: Sequence[str],
    layers: list[Layer],
    scopes: list[str] | None,
    extra: dict[str, Any] | None,
    query: str | None,
    limit: int,
    mode: str | None,
    *,
    archived: bool = False,
) -> tuple[list[Any], list[Owner]]:
    """One logical search per layer (``archived``: and over its archived facts,
    for reads of the past)."""
    ops: list[Any] = []
    owners: list[Owner] = []
    any_of: dict[str, list[Any]] = {}
    if "note" not in types:
        any_of["kind"] = list(types)
    # Notes leave the default scope out of their value: filter them in Python.
    if scopes and "note" not in types:
        any_of["scope"] = scopes
    places = [(la, la.ns, True, any_of) for la in layers]
    if archived and "fact" in types:
        past = {**any_of, "kind": ["fact"]}
        places += [(la, env.meta(la, "archive"), False, past) for la in layers]
    for layer, ns, live, conditions in places:
        o, check = search_ops(
            env.caps,
            ns,
            eq={},
            any_of=conditions,
            extra=extra,
            query=query,
            limit=limit,
            mode=mode,
        )
        ops += o
        owners += [Owner(layer, ns, live, check)] * len(o)
    return ops, owners


def tags_ok(record: MemoryRecord, tags: list[str] | None) -> bool:
    return not tags or any(t in record.tags for t in tags)


def unmatched(env: Env, score: float | None, mode: str | None) -> bool:
    """A result of a keyword search that contains none of the words (keyword
    mode, or hybrid on a store without an embedder): no answer to the query.
    Stores that cannot rank at all (LangGraph's without an index) score
    nothing and keep their order; so does an unspecified mode."""
    keyword = mode == "keyword" or (mode == "hybrid" and not env.caps.embeds)
    return score is None and keyword and env.caps.modes


def descending(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)
