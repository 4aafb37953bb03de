"""Reads by id, and ids for new profile facts.

Reads by id look only into the namespaces of the layers the caller may read
(see :mod:`..identity.layout`): an id is data that names a key there, never a
filter, so another user's memory is as invisible as a missing one.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine = MemoryEngine(SQLiteStore())
    >>> ctx = MemoryContext(user_id="ada")
    >>> note = engine.add(ctx, "Prefers tea")
    >>> engine.run(load(engine.env(ctx), None, note.id)).content
    'Prefers tea'
    >>> engine.run(load(engine.env(MemoryContext(user_id="bob")), None, note.id)) is None
    True
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import GetOp, Item

from ...errors import DamagedMemoryError, MemoryNotFoundError
from ..records.checks import shown
from ..records.models import MemoryRecord
from ..runtime.env import Env, Layer
from ..runtime.requests import Batch, Operation
from .fields import check_id

__all__ = [
    "free_fact_ids",
    "load",
    "load_many",
    "not_found",
    "profile_fact_id",
    "refuse_damaged",
    "require",
]

logger = logging.getLogger("langmem_ext.engine")


def profile_fact_id() -> str:
    """A new profile fact id: ``fact_`` and 8 hex digits of a UUID4."""
    return f"fact_{uuid.uuid4().hex[:8]}"


def free_fact_ids(env: Env, layer: Layer, n: int) -> Operation[list[str]]:
    """``n`` new profile fact ids used by no current or archived memory of the
    layer: an id already taken is drawn again (and logged), never overwritten."""
    places = (layer.ns, env.meta(layer, "archive"))
    out: list[str] = []
    while len(out) < n:
        drawn = list(dict.fromkeys(profile_fact_id() for _ in range(n - len(out))))
        found = yield Batch([GetOp(ns, i) for i in drawn for ns in places])
        taken = {i for i, hit in zip([i for i in drawn for _ in places], found) if hit}
        for i in drawn:
            if i in taken:
                logger.warning("fact id %s is taken; drawing another", i)
            elif i not in out:
                out.append(i)
    return out


def load(
    env: Env, kinds: Sequence[str] | None, id: Any, *, archived: bool = True
) -> Operation[MemoryRecord | None]:
    """The record with this id among the caller's layers (current first, then,
    with ``archived``, the archives), of one of ``kinds`` (None: any), or None.
    A damaged item under the id is returned whatever ``kinds`` (it has no
    trustworthy kind): callers that change records refuse it."""
    [record] = yield from load_many(env, kinds, [check_id(id)], archived=archived)
    return record


def load_many(
    env: Env, kinds: Sequence[str] | None, ids: Sequence[Any], *, archived: bool = True
) -> Operation[list[MemoryRecord | None]]:
    """:func:`load` for several ids, in one batch of reads (ids that cannot
    name a memory find none)."""
    wanted = [i if isinstance(i, str) and i else None for i in ids]
    layers = env.layers()
    places = [(la, la.ns, True) for la in layers]
    if archived:
        places += [(la, env.meta(la, "archive"), False) for la in layers]
    keys = [(i, p) for i in dict.fromkeys(w for w in wanted if w) for p in places]
    if not keys:
        return [None] * len(ids)
    items: list[Item | None] = yield Batch([GetOp(p[1], i) for i, p in keys], parallel=True)
    found: dict[str, MemoryRecord] = {}
    for (i, (la, _, live)), item in zip(keys, items, strict=True):
        if item is None or i in found:
            continue
        record = env.record(item, la, live)
        if kinds is None or record.type in kinds or record.damaged:
            found[i] = record
    return [found.get(w) if w else None for w in wanted]


def not_found(id: Any, kind: str | None = None) -> MemoryNotFoundError:
    """The error for an id the caller has no memory with (another user's id
    included: it is as invisible as a missing one), worded once for every
    surface."""
    if kind is None:
        return MemoryNotFoundError(
            f"no memory with id {shown(id)} among your memories; check the id "
            "(search and listings give the ids)",
            id=id,
        )
    return MemoryNotFoundError(
        f"no {kind} with id {shown(id)} among your memories; check the id and the type "
        "(memory_search lists ids)",
        type=kind,
        id=id,
    )


def require(env: Env, kind: str, id: Any, *, archived: bool = True) -> Operation[MemoryRecord]:
    """The caller's record of ``kind`` with this id (MEMORY_NOT_FOUND when it
    has none), refused when damaged."""
    record = yield from load(env, [kind], id, archived=archived)
    if record is None:
        raise not_found(id, kind)
    return refuse_damaged(record)


def refuse_damaged(record: MemoryRecord) -> MemoryRecord:
    """``record``, unless it is damaged: changing it would save it again
    without the fields that could not be read."""
    if record.damaged:
        raise DamagedMemoryError(
            f"memory {shown(record.id)} is damaged ({getattr(record, 'reason', '')}) and cannot "
            "be changed; read it with get to see its stored value, then delete it (and store "
            "a corrected copy if you need it)",
            id=record.id,
        )
    return record
