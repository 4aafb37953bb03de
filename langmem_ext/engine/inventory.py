"""What the caller has: a page of memories (newest first, with a cursor and
the total), counts by kind and state, and every version of a fact. Each is
written once as a generator (see :mod:`.requests`).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> _ = engine.add(ctx, "Prefers window seats")
    >>> engine.stats(ctx)["notes"], engine.list(ctx).total_count
    ({'total': 1}, 1)
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidValueError
from . import policy
from ._core import matches, paged
from .checks import shown
from .env import Env, check_filter, check_tags, check_types, require
from .lifecycle import records_of
from .models import RECORD_TYPES, Episode, Fact, MemoryRecord, Rule, parse_ts
from .recall import Page, _check_limit, _scopes, _tags_ok
from .requests import Operation

__all__ = ["list_memories", "stats", "versions"]


def versions(env: Env, id: str) -> Operation[list[Fact]]:
    """Every version of a fact, oldest first: the facts that held its
    (subject, predicate) slot, current and archived. Edits, newer facts of the
    same slot and corrections by reflection all keep the slot, so this is the
    whole chain of corrections."""
    record = yield from require(env, "fact", id)
    assert isinstance(record, Fact)
    layer = env.layer_of(record)
    found: dict[str, Fact] = {}
    for ns, live in ((layer.ns, True), (env.meta(layer, "archive"), False)):
        items = yield from paged(env.caps, ns, {"slot": record.slot})
        for item in items:
            if tuple(item.namespace) != ns:
                continue
            rec = env.record(item, layer, live)
            if isinstance(rec, Fact) and rec.slot == record.slot:
                found.setdefault(rec.id, rec)
    found.setdefault(record.id, record)
    return sorted(found.values(), key=lambda f: (f.created_at, f.id))


def _encode_cursor(record: MemoryRecord) -> str:
    raw = json.dumps([record.created_at, record.id]).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        created, id_ = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return str(created), str(id_)
    except Exception as e:
        raise InvalidValueError(
            f"invalid cursor {shown(cursor)}; pass the next_cursor of the previous page"
        ) from e


def list_memories(
    env: Env,
    *,
    layer: str | None,
    types: Sequence[str] | None,
    filter: dict[str, Any] | None,
    tags: list[str] | None,
    limit: int,
    cursor: str | None,
    damaged: bool = False,
) -> Operation[Page]:
    """List: live memories newest first, ``limit`` per page, a keyset
    cursor (stable while memories are added) and the total matching count.
    ``damaged``: also the stored items of these kinds that cannot be read
    (:class:`~.decode.Damaged`), which every other reader skips."""
    _check_limit(limit)
    types = check_types(types, RECORD_TYPES)
    tags = check_tags(tags)
    filter = check_filter(filter)
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidValueError(
            f"cursor must be the next_cursor of the previous page, got {shown(cursor)}"
        )
    read = env.layers([layer] if layer is not None else None)
    after = _decode_cursor(cursor) if cursor else None
    rows: list[MemoryRecord] = []
    kinds = (*types, "damaged") if damaged else tuple(types)
    for la in read:
        for rec in (yield from records_of(env, la, kinds)):
            if rec.damaged:
                rows.append(rec)
                continue
            if filter and not matches(rec.to_value(), filter):
                continue
            if rec.retrievable(env.stamp) and _tags_ok(rec, tags):
                rows.append(rec)
    rows.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    total = len(rows)
    if after is not None:
        rows = [r for r in rows if (r.created_at, r.id) < after]
    page = rows[:limit]
    nxt = _encode_cursor(page[-1]) if len(rows) > limit else None
    return Page(page, nxt, total, {"layer": layer, "types": types})


def stats(env: Env, scope: str | None) -> Operation[dict[str, Any]]:
    """Stats: counts of the caller's readable memories (only scopes
    ``global`` and ``scope`` when given)."""
    scopes = _scopes(scope)
    recs: dict[str, list[Any]] = {t: [] for t in RECORD_TYPES}
    damaged = 0
    for la in env.layers():
        current = yield from records_of(env, la, (*RECORD_TYPES, "damaged"))
        damaged += sum(1 for r in current if r.damaged)
        archived = yield from paged(env.caps, env.meta(la, "archive"), {})
        for rec in [*current, *(env.record(i, la, live=False) for i in archived)]:
            if rec.type in recs and (not scopes or rec.scope in scopes):  # damaged: skipped
                recs[rec.type].append(rec)
    facts: list[Fact] = recs["fact"]
    active = [f for f in facts if f.validity == "active"]
    eff = {f.id: f.effective_confidence(env.now) for f in active}
    rules: list[Rule] = [r for r in recs["rule"] if r.status == "active"]
    eps: list[Episode] = recs["episode"]
    live_eps = [e for e in eps if e.retrievable(env.stamp)]
    backlog = [e for e in live_eps if not e.consolidated]
    oldest = min((e.created_at for e in backlog), default=None)
    return {
        "facts": {
            "total": len(facts),
            "active": sum(1 for f in active if eff[f.id] >= policy.EXPIRE_BELOW),
            "fading": sum(
                1
                for f in active
                if policy.EXPIRE_BELOW <= eff[f.id] < policy.FADING_RATIO * f.confidence
            ),
            "expired": sum(1 for f in facts if f.validity == "expired")
            + sum(1 for f in active if eff[f.id] < policy.EXPIRE_BELOW),
            "superseded": sum(1 for f in facts if f.validity == "superseded"),
            "retracted": sum(1 for f in facts if f.validity == "retracted"),
        },
        "rules": {
            "total": len(recs["rule"]),
            **{m: sum(1 for r in rules if r.maturity == m) for m in policy.MATURITY},
            "forgotten": sum(1 for r in recs["rule"] if r.status == "forgotten"),
        },
        "episodes": {
            "total": len(eps),
            "unconsolidated": len(backlog),
            "expired": sum(1 for e in eps if e.status == "expired" or e.expires_at <= env.stamp),
            "backlog_age_hours": None
            if oldest is None
            else round((env.now - parse_ts(oldest)).total_seconds() / 3600, 3),
        },
        "notes": {"total": sum(1 for n in recs["note"] if n.live)},
        "damaged": damaged,
    }
