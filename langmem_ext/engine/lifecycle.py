"""Writes and their lifecycle rules, each written once as a generator (see
:mod:`._core`): create, supersede, confirm, feedback, forget, update, delete,
sweep. Every transition puts an audit event in the same batch as the change
(one transaction on our stores), so a record never changes without its event.

Supersession under concurrent writers: there is no compare-and-set in
``BaseStore``, so the new fact is written first and the (subject, predicate)
slot is resolved afterwards: every writer reads all active facts of the slot
and marks all but the *newest* (greatest ``created_at``, then id) superseded.
Every writer writes before it resolves, so the last resolution sees every
fact, and all writers agree on the winner: the slot converges to exactly one
active fact, whatever the interleaving.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp

from ..errors import (
    ContentTooLongError,
    InvalidMemoryTypeError,
    InvalidOperationError,
    InvalidValueError,
    MemoryNotFoundError,
)
from . import policy
from ._core import Batch, EngineConfig, Step, StoreCaps, paged, search_ops
from .layers import accessible_layers, check_layer, layer_id
from .metrics import EngineMetrics
from .models import (
    RECORD_TYPES,
    Episode,
    Fact,
    MemoryEvent,
    MemoryRecord,
    Note,
    Rule,
    new_id,
    record_from_value,
    ts,
)
from .tenancy import MemoryContext

INDEX_FIELDS = ["content"]


def label(text: str) -> str:
    # Namespace labels may not contain dots; tenant ids such as "acme.com" must work.
    return text.replace("%", "%25").replace(".", "%2E")


@dataclass(frozen=True)
class Env:
    """Everything an operation needs besides its arguments."""

    config: EngineConfig
    caps: StoreCaps
    ctx: MemoryContext
    tenant: str
    now: datetime
    metrics: EngineMetrics | None = None

    @classmethod
    def make(
        cls,
        config: EngineConfig,
        caps: StoreCaps,
        ctx: MemoryContext,
        tenant: str | None,
        metrics: EngineMetrics | None = None,
    ) -> Env:
        return cls(config, caps, ctx, ctx.resolve_tenant(tenant), config.clock(), metrics)

    def sized(self, records: Iterable[MemoryRecord], delta: int) -> None:
        """Tell the storage-size gauge that these records became (un)retrievable."""
        if self.metrics is not None:
            for r in records:
                self.metrics.size_changed(self.tenant, f"{r.layer}:{r.layer_id}", delta)

    def observe_results(self, operation: str, layers: Iterable[str], hits: Iterable[Any]) -> None:
        """Record ``memory.search.results`` per searched layer."""
        if self.metrics is not None:
            self.metrics.search_results(operation, layers, [h.layer for h in hits])

    @functools.cached_property
    def stamp(self) -> str:
        # Cached: recall compares every candidate against it (strftime per call showed
        # in profiles); ``now`` never changes within one operation.
        return ts(self.now)

    def ns(self, kind: str) -> tuple[str, ...]:
        return (self.config.root, label(self.tenant), kind)

    def refs(self) -> list[str]:
        return [f"{x}:{layer_id(x, self.ctx)}" for x in accessible_layers(self.ctx)]

    def put(self, record: MemoryRecord) -> PutOp:
        return PutOp(self.ns(record.type), record.id, record.to_value(), INDEX_FIELDS)

    def event(
        self,
        record: MemoryRecord,
        action: str,
        changes: dict[str, list[Any]] | None = None,
        reason: str | None = None,
    ) -> PutOp:
        ev = MemoryEvent(
            new_id(),
            record.id,
            record.type,
            action,
            self.ctx.actor,
            self.stamp,
            changes or {},
            reason,
        )
        return PutOp(self.ns("events"), ev.id, ev.to_value(), False)


# -- validation (before any store op, so a bad call changes nothing) ------------


def check_type(kind: str, allowed: Iterable[str] = policy.MEMORY_TYPES) -> str:
    allowed = tuple(allowed)
    if kind not in allowed:
        raise InvalidMemoryTypeError(
            f"unknown memory type {kind!r}; use one of {', '.join(allowed)}",
            type=kind,
            valid=list(allowed),
        )
    return kind


def check_content(env: Env, content: Any, name: str = "content") -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidValueError(f"{name} must be a non-empty string, got {content!r}")
    limit = env.config.max_content_length
    if len(content) > limit:
        raise ContentTooLongError(
            f"{name} is {len(content)} characters, the maximum is {limit}; shorten it or "
            "split it into several memories",
            max_length=limit,
            length=len(content),
        )
    return content


def check_range(name: str, value: Any, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not lo <= value <= hi
    ):
        raise InvalidValueError(f"{name} must be a number from {lo} to {hi}, got {value!r}")
    return float(value)


def check_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise InvalidValueError(f"tags must be a list of strings, got {tags!r}")
    return list(dict.fromkeys(tags))


def add_fields(env: Env, content: str, layer: str | None, scope: str, tags: Any) -> dict[str, Any]:
    """The validated fields every new record shares (raises before any store op)."""
    layer = check_layer(layer or env.config.default_layer)
    if not isinstance(scope, str) or not scope:
        raise InvalidValueError(f"scope must be a non-empty string such as 'global', got {scope!r}")
    return {
        "id": new_id(),
        "tenant_id": env.tenant,
        "layer": layer,
        "layer_id": layer_id(layer, env.ctx),
        "content": check_content(env, content),
        "scope": scope,
        "tags": check_tags(tags),
        "created_at": env.stamp,
        "updated_at": env.stamp,
        "created_by": env.ctx.actor,
    }


# -- reads shared by writes ------------------------------------------------------


def load(env: Env, kinds: Iterable[str], id: str) -> Step[MemoryRecord | None]:
    """The record with this id among ``kinds`` visible to the caller, or None
    (another user's layer is as invisible as a missing id)."""
    kinds = list(kinds)
    if not isinstance(id, str) or not id:
        return None
    items: list[Item | None] = yield Batch([GetOp(env.ns(k), id) for k in kinds], parallel=True)
    refs = set(env.refs())
    for item in items:
        if item is not None and item.value.get("layer_ref") in refs:
            return record_from_value(item.value)
    return None


def require(env: Env, kind: str, id: str) -> Step[MemoryRecord]:
    record = yield from load(env, [check_type(kind)], id)
    if record is None:
        raise MemoryNotFoundError(
            f"no {kind} with id {id!r} in this tenant; check the id and the type "
            "(memory_search lists ids)",
            type=kind,
            id=id,
        )
    return record


def diff(old: MemoryRecord, new: MemoryRecord) -> dict[str, list[Any]]:
    a, b = old.to_value(), new.to_value()
    return {k: [a.get(k), b[k]] for k in b if a.get(k) != b[k] and k != "updated_at"}


def change(env: Env, old: MemoryRecord, new: MemoryRecord, action: str, reason: str | None = None):
    """The two puts of a transition: the record and its audit event."""
    new = replace(new, updated_at=env.stamp)
    return new, [env.put(new), env.event(new, action, diff(old, new), reason)]


# -- create ----------------------------------------------------------------------


def add_note(
    env: Env, content: str, layer: str | None, scope: str, tags: Any, metadata: Any
) -> Step[Note]:
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidValueError(f"metadata must be a dict, got {type(metadata).__name__}")
    note = Note(**add_fields(env, content, layer, scope, tags), metadata=dict(metadata or {}))
    yield Batch([env.put(note), env.event(note, "created")])
    env.sized([note], +1)
    return note


def store_episode(
    env: Env,
    content: str,
    butler: str,
    session_id: str | None,
    importance: float | None,
    layer: str | None,
    scope: str,
    tags: Any,
) -> Step[Episode]:
    imp = policy.EPISODE_IMPORTANCE if importance is None else importance
    ep = Episode(
        **add_fields(env, content, layer, scope, tags),
        importance=check_range("importance", imp, policy.IMPORTANCE_RANGE),
        butler=str(butler),
        session_id=session_id or env.ctx.session_id,
        expires_at=ts(env.now + env.config.episode_ttl),
    )
    yield Batch([env.put(ep), env.event(ep, "created")])
    env.sized([ep], +1)
    return ep


def slot_of(layer_ref: str, subject: str, predicate: str) -> str:
    key = "\x00".join((layer_ref, subject.strip().casefold(), predicate.strip().casefold()))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def store_fact(
    env: Env,
    subject: str,
    predicate: str,
    content: str,
    *,
    importance: float | None,
    permanence: str | None,
    confidence: float | None,
    category: str | None,
    layer: str | None,
    scope: str,
    tags: Any,
    provenance: dict[str, Any] | None,
) -> Step[tuple[Fact, list[str]]]:
    for name, v in (("subject", subject), ("predicate", predicate)):
        if not isinstance(v, str) or not v.strip():
            raise InvalidValueError(f"{name} must be a non-empty string, got {v!r}")
    perm = permanence or policy.DEFAULT_PERMANENCE
    if perm not in policy.DECAY_RATES:
        raise InvalidValueError(
            f"unknown permanence {perm!r}; use one of {', '.join(policy.DECAY_RATES)}"
        )
    base = add_fields(env, content, layer, scope, tags)
    fact = Fact(
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
    yield Batch([env.put(fact), env.event(fact, "created")])
    env.sized([fact], +1)
    superseded = yield from resolve_slot(env, fact.slot)
    return fact, superseded


def resolve_slot(env: Env, slot: str) -> Step[list[str]]:
    """Leave exactly one active fact in a slot: the newest. Returns the ids this
    call marked superseded."""
    ops, _ = search_ops(
        env.caps, env.ns("fact"), eq={"slot": slot, "validity": "active"}, query=None, limit=1000
    )
    results = yield Batch(ops)
    active = [Fact.from_value(i.value) for r in results for i in r]
    if len(active) < 2:
        return []
    winner = max(active, key=lambda f: (f.created_at, f.id))
    losers = [f for f in active if f.id != winner.id]
    # Re-read the losers right before writing them: a confirm or forget that
    # landed since the search is built upon (a retracted fact stays retracted)
    # instead of being overwritten by the searched copy. The gap left is one
    # read-to-write step with no other I/O; BaseStore has no compare-and-set.
    fresh = yield Batch([GetOp(env.ns("fact"), f.id) for f in losers])
    puts: list[PutOp] = []
    changed: list[Fact] = []
    for item in fresh:
        if item is None or item.value.get("validity") != "active":
            continue
        old = Fact.from_value(item.value)
        new = replace(
            old, validity="superseded", live=False, superseded_by=winner.id, valid_to=env.stamp
        )
        puts += change(env, old, new, "superseded")[1]
        changed.append(old)
    if puts:
        yield Batch(puts)
    env.sized(changed, -1)
    return [f.id for f in changed]


def store_rule(env: Env, content: str, layer: str | None, scope: str, tags: Any) -> Step[Rule]:
    rule = Rule(
        **add_fields(env, content, layer, scope, tags),
        importance=policy.RULE_IMPORTANCE,
        last_confirmed_at=env.stamp,
    )
    yield Batch([env.put(rule), env.event(rule, "created")])
    env.sized([rule], +1)
    return rule


# -- transitions -------------------------------------------------------------------


def confirm(env: Env, kind: str, id: str) -> Step[MemoryRecord]:
    check_type(kind)
    if kind not in ("fact", "rule"):
        raise InvalidOperationError(
            f"only facts and rules can be confirmed ({kind}s have no confidence decay)",
            type=kind,
        )
    old = yield from require(env, kind, id)
    if not old.live:
        raise InvalidOperationError(f"{kind} {id!r} is not active; it cannot be confirmed")
    new, puts = change(env, old, replace(old, last_confirmed_at=env.stamp), "confirmed")
    yield Batch(puts)
    return new


def feedback(env: Env, rule_id: str, helpful: bool, reason: str | None) -> Step[Rule]:
    old = yield from require(env, "rule", rule_id)
    assert isinstance(old, Rule)
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


def forget(env: Env, kind: str, id: str) -> Step[MemoryRecord]:
    """Soft delete: the record stays (history, dashboards) but is never
    retrieved again. Forgetting twice is a no-op without a second event."""
    old = yield from require(env, kind, id)
    if isinstance(old, Fact):
        new: MemoryRecord = replace(old, validity="retracted", live=False, valid_to=env.stamp)
        if old.validity == "retracted":
            return old
    elif isinstance(old, Episode | Rule):
        if old.status == "forgotten":
            return old
        new = replace(old, status="forgotten", live=False)
    else:
        if not old.live:
            return old
        new = replace(old, live=False)
    new, puts = change(env, old, new, "forgotten")
    yield Batch(puts)
    env.sized([old], -1)
    return new


def update(
    env: Env, id: str, content: str | None, metadata: dict[str, Any] | None, tags: Any
) -> Step[MemoryRecord]:
    """Seed 001 update: new content (re-embedded by the store), metadata merged
    into the existing metadata, tags replaced; the timestamp always moves."""
    if content is not None:
        check_content(env, content)
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidValueError(f"metadata must be a dict, got {type(metadata).__name__}")
    old = yield from load(env, RECORD_TYPES, id)
    if old is None:
        raise MemoryNotFoundError(f"no memory with id {id!r} in this tenant", id=id)
    new = replace(
        old,
        content=old.content if content is None else content,
        metadata={**old.metadata, **(metadata or {})},
        tags=old.tags if tags is None else check_tags(tags),
    )
    new, puts = change(env, old, new, "updated")
    yield Batch(puts)
    return new


def delete(env: Env, id: str) -> Step[bool]:
    """Seed 001 delete: removes the record; idempotent (True for unknown ids).
    The audit event stays."""
    old = yield from load(env, RECORD_TYPES, id)
    if old is not None:
        yield Batch([PutOp(env.ns(old.type), old.id, None), env.event(old, "deleted")])
        env.sized([old] if old.live else [], -1)
    return True


def sweep(env: Env) -> Step[dict[str, int]]:
    """Mark episodes past ``expires_at`` and facts decayed below
    ``EXPIRE_BELOW`` as expired (they already left recall). Returns counts."""
    eps = yield from paged(env.caps, env.ns("episode"), {"live": True})
    facts = yield from paged(env.caps, env.ns("fact"), {"validity": "active"})
    puts: list[PutOp] = []
    expired: list[MemoryRecord] = []
    n_ep = n_fact = 0
    for item in eps:
        ep = Episode.from_value(item.value)
        if ep.expires_at <= env.stamp:
            puts += change(env, ep, replace(ep, status="expired", live=False), "expired")[1]
            expired.append(ep)
            n_ep += 1
    for item in facts:
        fact = Fact.from_value(item.value)
        if fact.effective_confidence(env.now) < policy.EXPIRE_BELOW:
            new = replace(fact, validity="expired", live=False, valid_to=env.stamp)
            puts += change(env, fact, new, "expired")[1]
            expired.append(fact)
            n_fact += 1
    if puts:
        yield Batch(puts)
        env.sized(expired, -1)
    return {"episodes": n_ep, "facts": n_fact}


def history(env: Env, id: str) -> Step[list[MemoryEvent]]:
    """Audit events of one memory, oldest first (retracted and superseded
    memories included; deleted ones too)."""
    items = yield from paged(env.caps, env.ns("events"), {"memory_id": id})
    events = [MemoryEvent.from_value(i.value) for i in items]
    return sorted(events, key=lambda e: (e.at, e.id))
