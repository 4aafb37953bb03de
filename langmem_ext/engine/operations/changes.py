"""The catalogue's operations that change or remove memories: confirm,
helpful and harmful marks, forget, update, revise, delete (one or many) and
the sweep of what expired (see :mod:`..runtime.catalogue`). Each declaration
is its operation's one body; the shared steps (a transition with its audit
event, supersession) are in :mod:`.lifecycle`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any

from langgraph.store.base import PutOp
from pydantic import Field

from ...errors import ContentTooLongError, InvalidOperationError, MemoryNotFoundError
from ..records import policy
from ..records.checks import check_json, shown
from ..records.models import Episode, Fact, MemoryRecord, Note, Rule
from ..runtime.catalogue import Caller, Spec, operation
from ..runtime.env import Env
from ..runtime.planning import paged
from ..runtime.requests import Batch, Operation
from .fields import check_content
from .lifecycle import change, delete_ops, mark_stale, plan_revision, resolve_slot
from .loading import load, load_many, not_found, refuse_damaged, require
from .params import Content, Id, Kind, Metadata, Tags, Tenant, Text

__all__ = [
    "bulk_delete",
    "confirm",
    "delete",
    "forget",
    "mark_harmful",
    "mark_helpful",
    "revise",
    "sweep",
    "update",
]

_LONG = (ContentTooLongError,)
_FOUND = (MemoryNotFoundError, InvalidOperationError)


@operation(access="write", tool="memory_confirm", errors=_FOUND)
def confirm(c: Caller, type: Kind, id: Id, *, tenant: Tenant = None) -> Operation[MemoryRecord]:
    """Confirm that a fact or rule is still true: its confidence stops fading
    from now on (episodes and notes cannot be confirmed)."""
    env = c.env(tenant)
    if type not in ("fact", "rule"):
        raise InvalidOperationError(
            f"only facts and rules can be confirmed ({type}s have no confidence decay)",
            type=type,
        )
    old = yield from require(env, type, id)
    if not old.live:
        raise InvalidOperationError(f"{type} {shown(id)} is not active; it cannot be confirmed")
    confirmed = replace(old, last_confirmed_at=env.stamp)  # type: ignore[call-arg]
    new, puts = change(env, old, confirmed, "confirmed")
    yield Batch(puts)
    return new


@operation(access="write", tool="memory_mark_helpful", errors=_FOUND)
def mark_helpful(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[Rule]:
    """Record that a rule helped: its success count, effectiveness and maturity go up."""
    return _feedback(c.env(tenant), id, True, None)


Reason = Annotated[str | None, Field(description="What went wrong, in a few words.")]


@operation(access="write", tool="memory_mark_harmful", errors=_FOUND)
def mark_harmful(
    c: Caller, id: Id, reason: Reason = None, *, tenant: Tenant = None
) -> Operation[Rule]:
    """Record that a rule did harm (it weighs four times a success); a rule
    that keeps doing harm is demoted, then inverted into an anti-pattern."""
    return _feedback(c.env(tenant), id, False, reason)


def _feedback(env: Env, rule_id: str, helpful: bool, reason: str | None) -> Operation[Rule]:
    """The one body of both marks: counts, effectiveness and maturity move together."""
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


@operation(access="write", tool="memory_forget", errors=(MemoryNotFoundError,))
def forget(c: Caller, type: Kind, id: Id, *, tenant: Tenant = None) -> Operation[MemoryRecord]:
    """Forget a memory: it is never recalled again, and it stays in the
    history (facts become retracted, rules and episodes forgotten)."""
    # A soft delete: the record moves to the archive (history, dashboards).
    # Forgetting twice is a no-op without a second event.
    env = c.env(tenant)
    old = yield from require(env, type, id)
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
    yield from mark_stale(env, [old.id])
    return new


@operation(access="write", errors=(MemoryNotFoundError, *_LONG))
def update(
    c: Caller,
    id: Id,
    *,
    content: Annotated[Text | None, Field(description="New text; unchanged if left out.")] = None,
    metadata: Metadata = None,
    tags: Tags = None,
    tenant: Tenant = None,
) -> Operation[MemoryRecord]:
    """Change a memory in place: new content (embedded again), metadata merged
    into what it had, tags replaced."""
    # The provider contract's update: the timestamp always moves and the
    # event holds the old and new values.
    env = c.env(tenant)
    if content is not None:
        check_content(env, content)
    check_json("metadata", metadata)
    old = yield from load(env, None, id, archived=False)
    if old is None:
        raise not_found(id)
    refuse_damaged(old)
    new = replace(
        old,
        content=old.content if content is None else content,
        metadata={**old.metadata, **(metadata or {})},
        tags=old.tags if tags is None else list(dict.fromkeys(tags)),
    )
    new, puts = change(env, old, new, "updated")
    yield Batch(puts)
    return new


@operation(access="write", errors=(MemoryNotFoundError, *_LONG))
def revise(c: Caller, id: Id, content: Content, *, tenant: Tenant = None) -> Operation[Any]:
    """Change what a memory says, keeping its history: a fact is replaced by a
    new fact (new id, linked from the old one, which stays in its history);
    other memories change in place. Returns the current memory.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> old = engine.add_fact(ctx, "Lives in Berlin", "context", 0.9)
        >>> new = engine.revise(ctx, old.id, "Lives in Munich")
        >>> [f.content for f in engine.get_profile(ctx).facts]
        ['Lives in Munich']
    """
    env = c.env(tenant)
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
        yield from mark_stale(env, [old.id])
    return new


@operation(access="write")
def delete(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[bool]:
    """Remove a memory for good (its audit events stay); an unknown id is
    not an error."""
    # Current or archived; damaged items are deleted too (the one change they allow).
    env = c.env(tenant)
    old = yield from load(env, None, id)
    if old is not None:
        yield Batch(delete_ops(env, old))
        env.sized([old] if old.live and not old.damaged else [], -1)
    return True


@operation(access="write", cli=False)
def bulk_delete(
    c: Caller,
    ids: Annotated[Sequence[str], Field(description="Ids of the memories to remove.")],
    *,
    tenant: Tenant = None,
) -> Operation[list[str]]:
    """Remove many memories (any kind) in one batch; unknown ids are skipped.
    Returns the ids removed."""
    env = c.env(tenant)
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


@operation(access="write")
def sweep(c: Caller, *, tenant: Tenant = None) -> Operation[dict[str, int]]:
    """Retire your episodes, facts and notes past their expiry and facts whose
    confidence faded away (they already left recall); returns how many of each."""
    env = c.env(tenant)
    puts: list[PutOp] = []
    expired: list[MemoryRecord] = []
    n_ep = n_fact = n_note = 0
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
            elif isinstance(rec, Fact | Note) and rec.expires_at and rec.expires_at <= env.stamp:
                # Facts and notes that expire at a date leave like episodes.
                if isinstance(rec, Fact):
                    new = replace(rec, validity="expired", live=False, valid_to=env.stamp)
                    n_fact += 1
                else:
                    new = replace(rec, live=False)
                    n_note += 1
                puts += change(env, rec, new, "expired")[1]
                expired.append(rec)
            elif isinstance(rec, Fact) and rec.effective_confidence(env.now) < policy.EXPIRE_BELOW:
                new = replace(rec, validity="expired", live=False, valid_to=env.stamp)
                puts += change(env, rec, new, "expired")[1]
                expired.append(rec)
                n_fact += 1
    if puts:
        yield Batch(puts)
        env.sized(expired, -1)
    return {"episodes": n_ep, "facts": n_fact, "notes": n_note}


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
