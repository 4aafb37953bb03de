"""Writes and their lifecycle rules, each written once as a generator (see
:mod:`._core`): create, supersede, revise, confirm, feedback, forget, update,
delete, sweep. Every transition puts an audit event in the same batch as the
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

import hashlib
import re
from dataclasses import replace
from typing import Any

from langgraph.store.base import GetOp, PutOp

from ..errors import InvalidOperationError, InvalidValueError
from . import policy
from ._core import paged, search_ops
from .checks import check_json, shown
from .env import (
    Env,
    Layer,
    add_fields,
    check_any_content,
    check_content,
    check_id,
    check_range,
    check_tags,
    check_type,
    free_fact_ids,
    load,
    not_found,
    refuse_damaged,
    require,
)
from .models import RECORD_TYPES, Episode, Fact, MemoryEvent, MemoryRecord, Note, Rule, ts
from .requests import Batch, Operation

__all__ = [
    "add_note",
    "confirm",
    "delete",
    "delete_ops",
    "feedback",
    "forget",
    "history",
    "kind_filter",
    "plan_revision",
    "records_of",
    "resolve_slot",
    "revise",
    "store_episode",
    "store_fact",
    "store_rule",
    "sweep",
    "update",
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


# -- create ----------------------------------------------------------------------


def add_note(
    env: Env, content: Any, layer: str | None, scope: str, tags: Any, metadata: Any
) -> Operation[Note]:
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidValueError(f"metadata must be a dict, got {type(metadata).__name__}")
    check_json("metadata", metadata)
    note = Note(**add_fields(env, content, layer, scope, tags), metadata=dict(metadata or {}))
    yield Batch([env.put(note), env.event(note, "created")])
    env.sized([note], +1)
    return note


def store_episode(
    env: Env,
    content: str,
    session_id: str | None,
    importance: float | None,
    layer: str | None,
    scope: str,
    tags: Any,
) -> Operation[Episode]:
    imp = policy.EPISODE_IMPORTANCE if importance is None else importance
    if session_id is not None and not isinstance(session_id, str):
        raise InvalidValueError(f"session_id must be a string, got {shown(session_id)}")
    ep = Episode(
        **add_fields(env, content, layer, scope, tags),
        importance=check_range("importance", imp, policy.IMPORTANCE_RANGE),
        session_id=session_id or env.ctx.session_id,
        expires_at=ts(env.now + env.config.episode_ttl),
    )
    yield Batch([env.put(ep), env.event(ep, "created")])
    env.sized([ep], +1)
    return ep


def slot_of(layer_ref: str, subject: str, predicate: str) -> str:
    key = "\x00".join((layer_ref, subject.strip().casefold(), predicate.strip().casefold()))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def new_fact(
    env: Env,
    subject: Any,
    predicate: Any,
    content: str,
    *,
    importance: float | None = None,
    permanence: str | None = None,
    confidence: float | None = None,
    category: str | None = None,
    layer: str | None = None,
    scope: str = "global",
    tags: Any = None,
    provenance: dict[str, Any] | None = None,
) -> Fact:
    """A validated fact, not yet written (raises before any store op)."""
    for name, v in (("subject", subject), ("predicate", predicate)):
        if not isinstance(v, str) or not v.strip():
            raise InvalidValueError(f"{name} must be a non-empty string, got {shown(v)}")
    perm = policy.DEFAULT_PERMANENCE if permanence is None else permanence
    if not isinstance(perm, str) or perm not in policy.DECAY_RATES:
        raise InvalidValueError(
            f"unknown permanence {shown(perm)}; use one of {', '.join(policy.DECAY_RATES)}"
        )
    if provenance is not None and not isinstance(provenance, dict):
        raise InvalidValueError(f"provenance must be a dict, got {type(provenance).__name__}")
    check_json("provenance", provenance)
    if category is not None and not isinstance(category, str):
        raise InvalidValueError(f"category must be text or None, got {shown(category)}")
    base = add_fields(env, content, layer, scope, tags)
    return Fact(
        **base,
        importance=check_range(
            "importance",
            policy.FACT_IMPORTANCE if importance is None else importance,
            policy.IMPORTANCE_RANGE,
        ),
        subject=subject,
        predicate=predicate,
        slot=slot_of(f"{base['layer']}:{base['layer_id']}", subject, predicate),
        category=category,
        confidence=check_range(
            "confidence",
            policy.FACT_CONFIDENCE if confidence is None else confidence,
            policy.CONFIDENCE_RANGE,
        ),
        permanence=perm,
        decay_rate=policy.DECAY_RATES[perm],
        last_confirmed_at=env.stamp,
        provenance=dict(provenance or {}),
    )


def store_fact(env: Env, fact: Fact) -> Operation[tuple[Fact, list[str]]]:
    """Write a new fact, then leave one current fact in its slot."""
    yield Batch([env.put(fact), env.event(fact, "created")])
    env.sized([fact], +1)
    superseded = yield from resolve_slot(env, env.layer_of(fact), fact.slot)
    return fact, superseded


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
    winner = max(active, key=lambda f: (f.created_at, f.id))
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
            old, validity="superseded", live=False, superseded_by=winner.id, valid_to=env.stamp
        )
        puts += change(env, old, new, "superseded")[1]
        changed.append(old)
    if puts:
        yield Batch(puts)
    env.sized(changed, -1)
    return [f.id for f in changed]


def store_rule(env: Env, content: str, layer: str | None, scope: str, tags: Any) -> Operation[Rule]:
    rule = Rule(
        **add_fields(env, content, layer, scope, tags),
        importance=policy.RULE_IMPORTANCE,
        last_confirmed_at=env.stamp,
    )
    yield Batch([env.put(rule), env.event(rule, "created")])
    env.sized([rule], +1)
    return rule


# -- transitions -------------------------------------------------------------------


def confirm(env: Env, kind: str, id: str) -> Operation[MemoryRecord]:
    check_type(kind)
    if kind not in ("fact", "rule"):
        raise InvalidOperationError(
            f"only facts and rules can be confirmed ({kind}s have no confidence decay)",
            type=kind,
        )
    old = yield from require(env, kind, id)
    if not old.live:
        raise InvalidOperationError(f"{kind} {shown(id)} is not active; it cannot be confirmed")
    confirmed = replace(old, last_confirmed_at=env.stamp)  # type: ignore[call-arg]
    new, puts = change(env, old, confirmed, "confirmed")
    yield Batch(puts)
    return new


def feedback(env: Env, rule_id: str, helpful: bool, reason: str | None) -> Operation[Rule]:
    if reason is not None and not isinstance(reason, str):
        raise InvalidValueError(f"reason must be text, got {shown(reason)}")
    old = yield from require(env, "rule", rule_id)
    assert isinstance(old, Rule)
    if not old.live:
        raise InvalidOperationError(
            f"rule {shown(rule_id)} is {old.status}; feedback applies to active rules only"
        )
    success = old.success_count + (1 if helpful else 0)
    harmful = old.harmful_count + (0 if helpful else 1)
    maturity = policy.next_maturity(old.maturity, success=success, harmful=harmful)
    new = replace(
        old,
        success_count=success,
        harmful_count=harmful,
        applied_count=old.applied_count + 1,
        effectiveness_score=round(policy.effectiveness(success, harmful), 6),
        last_applied_at=env.stamp,
        maturity=maturity,
        confidence=policy.MATURITY_CONFIDENCE[maturity]
        if maturity != old.maturity
        else old.confidence,
    )
    new, puts = change(env, old, new, "marked_helpful" if helpful else "marked_harmful", reason)
    yield Batch(puts)
    return new


def forget(env: Env, kind: str, id: str) -> Operation[MemoryRecord]:
    """Soft delete: the record moves to the archive (history, dashboards) and is
    never retrieved again. Forgetting twice is a no-op without a second event."""
    old = yield from require(env, kind, id)
    if not old.live:
        return old
    new: MemoryRecord
    if isinstance(old, Fact):
        new = replace(old, validity="retracted", live=False, valid_to=env.stamp)
    elif isinstance(old, Episode | Rule):
        new = replace(old, status="forgotten", live=False)
    else:
        new = replace(old, live=False)
    new, puts = change(env, old, new, "forgotten")
    yield Batch(puts)
    env.sized([old], -1)
    return new


def update(
    env: Env, id: str, content: str | None, metadata: dict[str, Any] | None, tags: Any
) -> Operation[MemoryRecord]:
    """The provider contract's update, in place: new content (re-embedded by the
    store), metadata merged into the existing metadata, tags replaced; the
    timestamp always moves and the event holds old and new values."""
    check_id(id)
    if content is not None:
        check_content(env, content)
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidValueError(f"metadata must be a dict, got {type(metadata).__name__}")
    check_json("metadata", metadata)
    tags = None if tags is None else check_tags(tags)
    old = yield from load(env, None, id, archived=False)
    if old is None:
        raise not_found(id)
    refuse_damaged(old)
    new = replace(
        old,
        content=old.content if content is None else content,
        metadata={**old.metadata, **(metadata or {})},
        tags=old.tags if tags is None else tags,
    )
    new, puts = change(env, old, new, "updated")
    yield Batch(puts)
    return new


def revise(env: Env, id: str, content: Any) -> Operation[MemoryRecord]:
    """Change what a memory says, keeping its history. A fact is superseded by a
    new fact (new id, same slot, category and confidence; the old one archived
    and linked to it), so the chain of corrections stays; any other memory is
    updated in place, its event holding the old and new content. Returns the
    current record (for a fact, the new one)."""
    check_id(id)
    old = yield from load(env, None, id, archived=False)
    if old is None:
        raise not_found(id)
    new, puts = yield from plan_revision(env, old, content)
    yield Batch(puts)
    if isinstance(new, Fact):
        env.sized([new], +1)
        env.sized([old], -1)
        # Another writer may have put a fact in the slot meanwhile: the newest wins.
        yield from resolve_slot(env, env.layer_of(new), new.slot)
    return new


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


def delete(env: Env, id: Any) -> Operation[bool]:
    """The provider contract's delete: removes the record (current or archived);
    idempotent (True for unknown ids). The audit event stays. Damaged items
    are deleted too (the one change they allow)."""
    old = yield from load(env, None, check_id(id))
    if old is not None:
        yield Batch(delete_ops(env, old))
        env.sized([old] if old.live and not old.damaged else [], -1)
    return True


def delete_ops(env: Env, old: MemoryRecord) -> list[PutOp]:
    """The writes that delete ``old`` (current or archived) with its event."""
    layer = env.layer_of(old)
    ns = layer.ns if old.live else env.meta(layer, "archive")
    return [PutOp(ns, old.id, None), env.event(old, "deleted")]


def sweep(env: Env) -> Operation[dict[str, int]]:
    """Archive the caller's episodes past ``expires_at`` and facts decayed below
    ``EXPIRE_BELOW`` (they already left recall), in every layer the caller may
    read. Returns counts."""
    puts: list[PutOp] = []
    expired: list[MemoryRecord] = []
    n_ep = n_fact = 0
    for layer in env.layers():
        items = yield from paged(env.caps, layer.ns, {})
        for item in items:
            if tuple(item.namespace) != layer.ns:
                continue
            rec = env.record(item, layer)
            if isinstance(rec, Episode) and rec.expires_at <= env.stamp:
                new: MemoryRecord = replace(rec, status="expired", live=False)
                puts += change(env, rec, new, "expired")[1]
                expired.append(rec)
                n_ep += 1
            elif isinstance(rec, Fact) and rec.effective_confidence(env.now) < policy.EXPIRE_BELOW:
                new = replace(rec, validity="expired", live=False, valid_to=env.stamp)
                puts += change(env, rec, new, "expired")[1]
                expired.append(rec)
                n_fact += 1
    if puts:
        yield Batch(puts)
        env.sized(expired, -1)
    return {"episodes": n_ep, "facts": n_fact}


def history(env: Env, id: Any) -> Operation[list[MemoryEvent]]:
    """Audit events of one of the caller's memories, oldest first (archived and
    deleted memories included)."""
    check_id(id)
    events: list[MemoryEvent] = []
    for layer in env.layers():
        items = yield from paged(env.caps, env.meta(layer, "events"), {"memory_id": id})
        events += [MemoryEvent.from_value(i.value) for i in items]
    return sorted(events, key=lambda e: (e.at, e.id))


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
