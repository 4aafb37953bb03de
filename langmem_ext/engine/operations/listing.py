"""The catalogue's reads of what the caller has: a page of memories with its
cursor and total, and counts by kind and state (see
:mod:`..runtime.catalogue`). Each declaration is its operation's one body.

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
from typing import Annotated, Any

from pydantic import Field

from ...errors import InvalidValueError
from ..records import policy
from ..records.checks import shown
from ..records.models import RECORD_TYPES, Episode, Fact, MemoryRecord, Rule, parse_ts
from ..runtime.catalogue import Caller, Spec, operation
from ..runtime.planning import matches, paged
from ..runtime.requests import Operation
from .fields import check_filter
from .lifecycle import records_of
from .params import Filter, Kinds, LayerName, ScopeFilter, Tags, Tenant
from .retrieval import Page, scopes_of, tags_ok

__all__ = ["list_memories", "stats"]


Cursor = Annotated[
    str | None, Field(description="The next_cursor of the previous page; none for the first.")
]
Limit20 = Annotated[
    int, Field(ge=1, le=1000, strict=True, description="Most results to return (20).")
]


@operation(access="read", name="list")
def list_memories(
    c: Caller,
    *,
    layer: LayerName = None,
    types: Kinds = None,
    filter: Filter = None,
    tags: Tags = None,
    limit: Limit20 = 20,
    cursor: Cursor = None,
    damaged: Annotated[
        bool,
        Field(
            strict=True,
            description="Also list stored items that cannot be read (a field of the wrong "
            "type, written by another program), marked damaged.",
        ),
    ] = False,
    tenant: Tenant = None,
) -> Operation[Page]:
    """A page of your current memories, newest first, with the total count and
    the cursor of the next page."""
    # A keyset cursor (stable while memories are added) and the total
    # matching count. ``damaged``: also the stored items of these kinds that
    # cannot be read, which every other reader skips.
    env = c.env(tenant)
    kinds_wanted = list(types or RECORD_TYPES)
    filter = check_filter(filter)
    read = env.layers([layer] if layer is not None else None)
    after = _decode_cursor(cursor) if cursor else None
    rows: list[MemoryRecord] = []
    kinds = (*kinds_wanted, "damaged") if damaged else tuple(kinds_wanted)
    for la in read:
        for rec in (yield from records_of(env, la, kinds)):
            if rec.damaged:
                rows.append(rec)
                continue
            if filter and not matches(rec.to_value(), filter):
                continue
            if rec.retrievable(env.stamp) and tags_ok(rec, tags):
                rows.append(rec)
    rows.sort(key=lambda r: (r.created_at, r.id), reverse=True)
    total = len(rows)
    if after is not None:
        rows = [r for r in rows if (r.created_at, r.id) < after]
    page = rows[:limit]
    nxt = _encode_cursor(page[-1]) if len(rows) > limit else None
    return Page(page, nxt, total, {"layer": layer, "types": kinds_wanted})


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


@operation(access="read", tool="memory_stats")
def stats(c: Caller, scope: ScopeFilter = None, *, tenant: Tenant = None) -> Operation[dict]:
    """How many memories you have of each kind, and in which state (active,
    fading, superseded, forgotten, expired)."""
    env = c.env(tenant)
    scopes = scopes_of(scope)
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


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
