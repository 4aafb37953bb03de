"""The steps every write shares (the operations in :mod:`.writes` and
:mod:`.changes`, reflection, the store manager): a transition with its audit
event, a new fact and its slot, supersession, a revision planned for one
batch, deletion. Every transition puts an audit event in the same batch as the
change (one transaction on our stores), so a record never changes without its
event. A memory that stops being current (superseded, retracted, expired,
forgotten) moves from its layer's namespace into the layer's archive in that
same batch, so what is in a user's space is exactly what is current.

Supersession under concurrent writers: there is no compare-and-set in
``BaseStore``, so the new fact is written first and the (subject, predicate)
slot is resolved afterwards: every writer reads all current facts of the slot
and retires all but the *newest* (greatest ``created_at``, then id). Every
writer writes before it resolves, so the last resolution sees every fact, and
all writers agree on the winner: the slot converges to exactly one current
fact, whatever the interleaving.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> store = SQLiteStore()
    >>> engine, ctx = MemoryEngine(store), MemoryContext(user_id="ada")
    >>> old = engine.store_fact(ctx, "user", "city", "Lives in Berlin")
    >>> new = engine.store_fact(ctx, "user", "city", "Lives in Munich")
    >>> [i.value["content"] for i in store.search(("user", "ada"))]  # only what is current
    ['Lives in Munich']
    >>> [e.action for e in engine.history(ctx, old.id)]
    ['created', 'superseded']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langgraph.store.base import GetOp, PutOp

from ...errors import MemoryNotFoundError
from ..records import policy
from ..records.checks import check_json
from ..records.models import RECORD_TYPES, Fact, MemoryRecord, slot_of
from ..records.times import check_order, check_when
from ..runtime.env import Env, Layer
from ..runtime.planning import paged, search_ops
from ..runtime.requests import Batch, Operation
from .fields import add_fields, check_any_content, check_content
from .graph import dependants, link_fact, settle_entities
from .loading import free_fact_ids, load_many, refuse_damaged

__all__ = [
    "change",
    "check_sources",
    "check_times",
    "delete_ops",
    "diff",
    "kind_filter",
    "mark_stale",
    "new_fact",
    "plan_revision",
    "records_of",
    "resolve_slot",
    "slot_of",
    "write_fact",
]


_PROFILE_ID = re.compile(r"fact_[0-9a-f]{8}")


def diff(old: MemoryRecord, new: MemoryRecord) -> dict[str, list[Any]]:
    a, b = old.to_value(), new.to_value()
    keys = dict.fromkeys([*a, *b])
    return {k: [a.get(k), b.get(k)] for k in keys if a.get(k) != b.get(k) and k != "updated_at"}


def change(env: Env, old: MemoryRecord, new: MemoryRecord, action: str, reason: str | None = None):
    """The puts of a transition: the record (current, or into the archive when
    it stops being live) and its audit event."""
    new = replace(new, updated_at=env.stamp)
    writes = env.retire(old, new) if old.live and not new.live else [env.put(new)]
    return new, [*writes, env.event(new, action, diff(old, new), reason)]


def new_fact(
    env: Env,
    subject: str,
    predicate: str,
    content: str,
    *,
    importance: float | None = None,
    permanence: str | None = None,
    confidence: float | None = None,
    category: str | None = None,
    layer: str | None = None,
    scope: str = "global",
    tags: list[str] | None = None,
    provenance: dict[str, Any] | None = None,
    valid_at: Any = None,
    invalid_at: Any = None,
    object: str | None = None,
    derived_from: list[str] | None = None,
) -> Fact:
    """A fact from checked arguments, not yet written: its content length,
    provenance and times are checked here, before any store op."""
    perm = policy.DEFAULT_PERMANENCE if permanence is None else permanence
    check_json("provenance", provenance)
    start, end = check_times(valid_at, invalid_at)
    base = add_fields(env, content, layer, scope, tags)
    return Fact(
        **base,
        importance=float(policy.FACT_IMPORTANCE if importance is None else importance),
        subject=subject,
        predicate=predicate,
        slot=slot_of(f"{base['layer']}:{base['layer_id']}", subject, predicate),
        category=category,
        confidence=float(policy.FACT_CONFIDENCE if confidence is None else confidence),
        permanence=perm,
        decay_rate=policy.DECAY_RATES[perm],
        last_confirmed_at=env.stamp,
        provenance=dict(provenance or {}),
        valid_at=start,
        invalid_at=end,
        object=object.strip() if object else None,
        derived_from=list(dict.fromkeys(derived_from or ())),
    )


def check_sources(env: Env, ids: Sequence[str] | None) -> Operation[list[str]]:
    """``derived_from`` ids, each a memory of the caller (current or archived):
    an id of another user's memory is as unknown as a missing one."""
    wanted = list(dict.fromkeys(ids or ()))
    if not wanted:
        return []
    found = yield from load_many(env, None, wanted)
    missing = [i for i, r in zip(wanted, found, strict=True) if r is None]
    if missing:
        raise MemoryNotFoundError(
            f"derived_from names no memory of yours: {', '.join(map(repr, missing))}; give the "
            "ids of memories you have (search and listings give them)",
            id=missing[0],
        )
    return wanted


def check_times(valid_at: Any, invalid_at: Any) -> tuple[str | None, str | None]:
    """``valid_at`` and ``invalid_at`` checked (zone, range) and in order."""
    start = check_when("valid_at", valid_at)
    end = check_when("invalid_at", invalid_at)
    check_order("valid_at", start, "invalid_at", end)
    return start, end


def write_fact(
    env: Env, fact: Fact, *, infer_sources: bool = False
) -> Operation[tuple[Fact, list[tuple[str, str]]]]:
    """Write a new fact with its entities (:func:`.graph.link_fact`), then
    leave one current fact in its slot. Returns the fact and the duplicate
    entities the caller should merge."""
    [fact], entity_puts, duplicates = yield from link_fact(env, fact, infer_sources=infer_sources)
    yield Batch([*entity_puts, env.put(fact), env.event(fact, "created")])
    yield from settle_entities(env, entity_puts)
    env.sized([fact], +1)
    yield from resolve_slot(env, env.layer_of(fact), fact.slot)
    return fact, duplicates


def resolve_slot(env: Env, layer: Layer, slot: str) -> Operation[list[str]]:
    """Leave exactly one current fact in a slot: the newest. Returns the ids this
    call retired."""
    ops, _ = search_ops(env.caps, layer.ns, eq={"slot": slot}, query=None, limit=1000)
    results = yield Batch(ops)
    active = [
        f
        for r in results
        for i in r
        if tuple(i.namespace) == layer.ns and isinstance(f := env.record(i, layer), Fact)
    ]
    if len(active) < 2:
        return []
    # A fact that says when it stopped holding ("lived in Paris until 2018")
    # never retires one that still holds; otherwise the newest record wins.
    # The order is total, so concurrent writers agree on the winner.
    winner = max(active, key=lambda f: (_holds(f, env.stamp), f.created_at, f.id))
    losers = [f for f in active if f.id != winner.id]
    # Re-read the losers right before writing them: a confirm or forget that
    # landed since the search is built upon (a retracted fact stays retracted)
    # instead of being overwritten by the searched copy. The gap left is one
    # read-to-write step with no other I/O; BaseStore has no compare-and-set.
    fresh = yield Batch([GetOp(layer.ns, f.id) for f in losers])
    puts: list[PutOp] = []
    changed: list[Fact] = []
    for item in fresh:
        if item is None:
            continue
        old = env.record(item, layer)
        if not isinstance(old, Fact) or old.validity != "active":
            continue
        new = replace(
            old,
            validity="superseded",
            live=False,
            superseded_by=winner.id,
            valid_to=env.stamp,
            invalid_at=old.invalid_at or _ended_by(old, winner),
        )
        puts += change(env, old, new, "superseded")[1]
        changed.append(old)
    if puts:
        yield Batch(puts)
    env.sized(changed, -1)
    yield from mark_stale(env, [f.id for f in changed])
    return [f.id for f in changed]


def _holds(fact: Fact, now: str) -> bool:
    return fact.invalid_at is None or fact.invalid_at > now


def _ended_by(old: Fact, new: Fact) -> str | None:
    """When ``old`` stopped holding, as its successor says: the successor's
    ``valid_at`` when known and not before ``old``'s own (when that is known);
    else unknown."""
    if new.valid_at is not None and (old.valid_at is None or new.valid_at >= old.valid_at):
        return new.valid_at
    return None


def plan_revision(
    env: Env, old: MemoryRecord, content: Any
) -> Operation[tuple[MemoryRecord, list[PutOp]]]:
    """The writes of :func:`revise` for the current record ``old``, written by the
    caller in one batch: a fact's successor, its ``created`` event and the old
    fact archived as superseded by it; any other record updated in place.
    Reads only (a profile fact's successor draws a free ``fact_`` id)."""
    refuse_damaged(old)
    if not isinstance(old, Fact):
        content = check_any_content(env, content)
        return change(env, old, replace(old, content=content), "updated")
    text = check_content(env, content)
    successor = new_fact(
        env,
        old.subject,
        old.predicate,
        text,
        importance=old.importance,
        permanence=old.permanence,
        confidence=old.confidence,
        category=old.category,
        layer=old.layer,
        scope=old.scope,
        tags=old.tags,
        provenance={**old.provenance, "replaces": old.id},
    )
    # A correction says the same thing better: it keeps the slot, the links
    # and the world times of what it corrects.
    successor = replace(
        successor,
        slot=old.slot,
        object=old.object,
        subject_entity=old.subject_entity,
        object_entity=old.object_entity,
        mentions=list(old.mentions),
        valid_at=old.valid_at,
        invalid_at=old.invalid_at,
        derived_from=list(old.derived_from),
    )
    if _PROFILE_ID.fullmatch(old.id):  # a profile fact's successor keeps the id format
        [successor.id] = yield from free_fact_ids(env, env.layer_of(old), 1)
    retired = replace(
        old, validity="superseded", live=False, superseded_by=successor.id, valid_to=env.stamp
    )
    puts = [
        env.put(successor),
        env.event(successor, "created", reason=f"revises {old.id}"),
        *change(env, old, retired, "superseded")[1],
    ]
    return successor, puts


def delete_ops(env: Env, old: MemoryRecord) -> list[PutOp]:
    """The writes that delete ``old`` (current or archived) with its event."""
    layer = env.layer_of(old)
    ns = layer.ns if old.live else env.meta(layer, "archive")
    return [PutOp(ns, old.id, None), env.event(old, "deleted")]


def records_of(
    env: Env, layer: Layer, kinds: tuple[str, ...] = tuple(RECORD_TYPES)
) -> Operation[list[MemoryRecord]]:
    """Every current record of ``kinds`` in ``layer`` (exact namespace)."""
    flt = kind_filter(env, kinds)
    items = yield from paged(env.caps, layer.ns, flt)
    out = []
    for item in items:
        if tuple(item.namespace) != layer.ns:
            continue
        rec = env.record(item, layer)
        if rec.type in kinds:
            out.append(rec)
    return out


def kind_filter(env: Env, kinds: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """A store filter selecting ``kinds`` (empty when notes are wanted: their
    items may carry any kind, or none, and are told apart in Python)."""
    if "note" in kinds:
        return {}
    if len(kinds) == 1:
        return {"kind": kinds[0]}
    return {"kind": {"$in": list(kinds)}} if "$in" in env.caps.operators else {}


#: How far a change reaches through ``derived_from``: dependants of dependants...
STALE_DEPTH = 3


def mark_stale(env: Env, changed: Sequence[str]) -> Operation[list[str]]:
    """Mark stale what was derived from the memories ``changed`` (superseded,
    retracted, forgotten), and what was derived from those, up to
    :data:`STALE_DEPTH` steps; each with a ``stale`` audit event, nothing
    deleted. Returns the ids marked."""
    marked: list[str] = []
    frontier = list(dict.fromkeys(changed))
    for _ in range(STALE_DEPTH):
        found = yield from dependants(env, frontier)
        puts: list[PutOp] = []
        nxt: list[str] = []
        for layer, item in found:
            rec = env.record(item, layer)
            if rec.damaged or not rec.live or rec.id in marked:
                continue
            because = [i for i in frontier if i in getattr(rec, "derived_from", ())]
            old_because = list(getattr(rec, "stale_because", ()))
            new_because = list(dict.fromkeys([*old_because, *because]))
            if new_because == old_because:
                continue
            stale: MemoryRecord = replace(rec, stale_because=new_because)  # type: ignore[call-arg]
            puts += change(env, rec, stale, "stale", reason=", ".join(because))[1]
            marked.append(rec.id)
            nxt.append(rec.id)
        if puts:
            yield Batch(puts)
        if not nxt:
            break
        frontier = nxt
    return marked
