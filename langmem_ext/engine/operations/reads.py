"""The catalogue's reads of one memory: the memory, its history, its
versions (see :mod:`..runtime.catalogue`). Each declaration is its
operation's one body; searches are in :mod:`.searching`, pages and counts in
:mod:`.listing`.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> note = engine.add(ctx, "Prefers window seats")
    >>> engine.get(ctx, note.id).content, [e.action for e in engine.history(ctx, note.id)]
    ('Prefers window seats', ['created'])
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ...errors import MemoryNotFoundError
from ..records.models import Fact, MemoryEvent, MemoryRecord
from ..runtime.catalogue import Caller, Spec, operation
from ..runtime.planning import paged
from ..runtime.requests import Operation
from .fields import check_id
from .loading import load, require
from .params import Id, Kind, Tenant
from .retrieval import bump, read_refs

__all__ = ["get", "get_memory", "history", "versions"]

_NOT_FOUND = (MemoryNotFoundError,)


@operation(access="read")
def get(
    c: Caller,
    id: Id,
    type: Annotated[Kind | None, Field(description="Its kind, if known.")] = None,
    *,
    tenant: Tenant = None,
) -> Operation[MemoryRecord | None]:
    """The memory with this id, current or not, or None when you have none
    with this id."""
    env = c.env(tenant)
    record = yield from load(env, [type] if type is not None else None, id)
    if record is not None:
        yield from read_refs(env, [record])
    return record


@operation(access="read", tool="memory_get", cli=False, errors=_NOT_FOUND)
def get_memory(c: Caller, type: Kind, id: Id, *, tenant: Tenant = None) -> Operation[MemoryRecord]:
    """One memory with all its fields (an unknown id is an error); counts as a use."""
    env = c.env(tenant)
    record = yield from require(env, type, id)
    yield from bump(env, [record])
    return record


@operation(access="read")
def history(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[list[MemoryEvent]]:
    """What happened to a memory, oldest first: who created, changed, replaced
    or forgot it, and when."""
    # Archived and deleted memories included: events outlive their memory.
    env = c.env(tenant)
    check_id(id)
    events: list[MemoryEvent] = []
    for layer in env.layers():
        items = yield from paged(env.caps, env.meta(layer, "events"), {"memory_id": id})
        events += [MemoryEvent.from_value(i.value) for i in items]
    return sorted(events, key=lambda e: (e.at, e.id))


@operation(access="read", errors=_NOT_FOUND)
def versions(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[list[Fact]]:
    """Every version of a fact, oldest first: the facts it replaced and those
    that replaced it, whether by an edit, a newer fact with the same subject
    and predicate, or reflection.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> old = engine.store_fact(ctx, "user", "city", "Lives in Berlin")
        >>> new = engine.revise(ctx, old.id, "Lives in Munich")
        >>> [f.content for f in engine.versions(ctx, new.id)]
        ['Lives in Berlin', 'Lives in Munich']
    """
    # Edits, newer facts of the same slot and corrections by reflection all
    # keep the (subject, predicate) slot: its facts, current and archived, are
    # the whole chain of corrections.
    env = c.env(tenant)
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


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
