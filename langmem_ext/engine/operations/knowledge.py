"""The catalogue's operations on connected, time-aware memory: the entities
of a user and what is known about one, merging and splitting entities
(audited, undoable), the values a (subject, predicate) slot took over time,
and the memories that turned stale (see :mod:`..runtime.catalogue`; the
steps are in :mod:`.graph`).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> _ = engine.store_fact(ctx, "Clara", "lives_in", "Clara lives in Porto",
    ...                       object="Porto", valid_at="2019-05-01")
    >>> _ = engine.store_fact(ctx, "Clara", "lives_in", "Clara lives in Lisbon",
    ...                       object="Lisbon", valid_at="2024-09-01")
    >>> [(f.object, f.valid_at[:10], (f.invalid_at or "")[:10])
    ...  for f in engine.timeline(ctx, "Clara", "lives_in")]
    [('Porto', '2019-05-01', '2024-09-01'), ('Lisbon', '2024-09-01', '')]
    >>> [f.content for f in engine.about(ctx, "Clara").facts]
    ['Clara lives in Lisbon']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from langgraph.store.base import PutOp
from pydantic import Field

from ...errors import InvalidOperationError, InvalidValueError, MemoryNotFoundError
from ..records.checks import shown
from ..records.entities import ENTITY_KINDS, USER_KEY, Entity, fold, match
from ..records.models import Fact, MemoryEvent, MemoryRecord, new_id, slot_of
from ..runtime.catalogue import Caller, Spec, operation
from ..runtime.env import Env, Layer
from ..runtime.planning import paged
from ..runtime.requests import Batch, Operation
from .graph import entity_space, read_entities, slot_key
from .lifecycle import change, resolve_slot
from .params import Kinds, LayerName, Tenant

__all__ = [
    "About",
    "about",
    "entities",
    "merge_duplicates",
    "merge_entities",
    "split_entity",
    "stale",
    "timeline",
    "unmerge_entities",
]

EntityKind = Annotated[
    str | None,
    Field(
        pattern="^(" + "|".join(ENTITY_KINDS) + ")$",
        description="Only entities of this kind: person, place, organization, project or thing.",
    ),
]
EntityRef = Annotated[
    str,
    Field(
        pattern=r"\S",
        description="The entity: its id (entities lists them) or a name it is known by.",
    ),
]


@dataclass
class About:
    """What is known about one entity: the entity, the current facts that name
    it (as subject, object or in their text), and the entities those facts
    link it to."""

    entity: Entity
    facts: list[Fact] = field(default_factory=list)
    linked: list[Entity] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity.to_dict(),
            "facts": [f.to_dict() for f in self.facts],
            "linked": [e.to_dict() for e in self.linked],
        }


def _layer(env: Env, layer: str | None) -> Layer:
    return env.layer(layer or env.config.default_layer)


def _find(env: Env, layer: Layer, ref: str) -> Operation[tuple[Entity, list[Entity]]]:
    """The entity ``ref`` names in ``layer`` (by id, else by name), following
    merges; with every entity of the layer."""
    known = yield from read_entities(env, layer)
    by_id = {e.id: e for e in known}
    entity = by_id.get(ref)
    if entity is None:
        found = match(known, ref)
        if len(found) > 1:
            names = ", ".join(f"{e.name} ({e.id})" for e in found)
            raise InvalidValueError(
                f"{shown(ref)} names several entities ({names}); give the id of the one you mean"
            )
        entity = found[0] if found else None
    if entity is None:
        raise MemoryNotFoundError(
            f"no entity {shown(ref)} among your entities; list them with entities",
            id=ref,
        )
    while entity.merged_into and entity.merged_into in by_id:
        entity = by_id[entity.merged_into]
    return entity, known


@operation(access="read", tool="memory_entities")
def entities(
    c: Caller,
    kind: EntityKind = None,
    *,
    layer: LayerName = None,
    tenant: Tenant = None,
) -> Operation[list[Entity]]:
    """The people, places, organisations and things your facts are about, by name."""
    env = c.env(tenant)
    known = yield from read_entities(env, _layer(env, layer))
    shown_ = [e for e in known if not e.merged_into and (kind is None or e.kind == kind)]
    return sorted(shown_, key=lambda e: (fold(e.name), e.id))


@operation(access="read", tool="memory_about", errors=(MemoryNotFoundError,))
def about(
    c: Caller, entity: EntityRef, *, layer: LayerName = None, tenant: Tenant = None
) -> Operation[About]:
    """What you know about one person, place or thing: its current facts and
    what they link it to."""
    env = c.env(tenant)
    la = _layer(env, layer)
    target, known = yield from _find(env, la, entity)
    ids = [target.id, *(e.id for e in known if e.merged_into == target.id)]
    facts = yield from _naming(env, la, ids)
    by_id = {e.id: e for e in known}
    linked_ids = dict.fromkeys(m for f in facts for m in f.mentions if m not in ids and m in by_id)
    linked = [by_id[i] for i in linked_ids if by_id[i].key != USER_KEY]
    facts.sort(key=lambda f: (f.predicate, f.created_at, f.id))
    return About(target, facts, linked)


def _naming(env: Env, layer: Layer, ids: list[str]) -> Operation[list[Fact]]:
    """The current facts of ``layer`` that name any of the entities ``ids``."""
    wanted = set(ids)
    items = yield from paged(env.caps, layer.ns, {"kind": "fact"})
    out: list[Fact] = []
    for item in items:
        if tuple(item.namespace) != layer.ns:
            continue
        rec = env.record(item, layer)
        if isinstance(rec, Fact) and wanted & {
            rec.subject_entity,
            rec.object_entity,
            *rec.mentions,
        }:
            out.append(rec)
    return out


Subject = Annotated[str, Field(pattern=r"\S", description="Who or what: a name, or 'user'.")]
Predicate = Annotated[str, Field(pattern=r"\S", description="Which attribute, e.g. 'lives_in'.")]


@operation(access="read", tool="memory_timeline")
def timeline(
    c: Caller,
    subject: Subject,
    predicate: Predicate,
    *,
    layer: LayerName = None,
    tenant: Tenant = None,
) -> Operation[list[Fact]]:
    """The values a subject's attribute took over time, oldest first, each with
    when it held (``valid_at`` / ``invalid_at``): where Clara lived, and when."""
    env = c.env(tenant)
    la = _layer(env, layer)
    known = yield from read_entities(env, la)
    found = match(known, subject) if fold(subject) != USER_KEY else []
    keys = {subject.strip().casefold()}
    for e in found:
        keys.add(e.key)
        keys.update(m.key for m in known if m.merged_into == e.id)
    if fold(subject) in (USER_KEY, "i", "me"):
        keys.update(e.key for e in known if e.key == USER_KEY)
    slots = [slot_of(la.ref, k, predicate) for k in sorted(keys)]
    facts: dict[str, Fact] = {}
    for ns, live in ((la.ns, True), (env.meta(la, "archive"), False)):
        for slot in slots:
            items = yield from paged(env.caps, ns, {"slot": slot})
            for item in items:
                if tuple(item.namespace) != ns:
                    continue
                rec = env.record(item, la, live)
                if isinstance(rec, Fact) and rec.validity != "retracted":
                    facts.setdefault(rec.id, rec)
    return sorted(facts.values(), key=lambda f: (f.held_from, f.created_at, f.id))


@operation(access="read", tool="memory_stale")
def stale(
    c: Caller, types: Kinds = None, *, layer: LayerName = None, tenant: Tenant = None
) -> Operation[list[MemoryRecord]]:
    """Memories that may no longer hold because something they were derived
    from was replaced or forgotten: review them (confirm, revise or forget)."""
    env = c.env(tenant)
    kinds = set(types or ("fact", "episode", "rule"))
    read = env.layers([layer] if layer else None)
    out: list[MemoryRecord] = []
    for la in read:
        items = yield from paged(env.caps, la.ns, {})
        for item in items:
            if tuple(item.namespace) != la.ns:
                continue
            rec = env.record(item, la)
            if rec.type in kinds and rec.stale and rec.retrievable(env.stamp):
                out.append(rec)
    return sorted(out, key=lambda r: (r.updated_at, r.id), reverse=True)


# -- merging and splitting ------------------------------------------------------------


def _entity_event(env: Env, layer: Layer, entity: Entity, action: str, changes: Any) -> PutOp:
    ev = MemoryEvent(new_id(), entity.id, "entity", action, env.ctx.actor, env.stamp, changes)
    return PutOp(env.meta(layer, "events"), ev.id, ev.to_value(), False)


def _relink(
    env: Env, layer: Layer, facts: list[Fact], old: str, new: Entity
) -> tuple[list[PutOp], list[Fact]]:
    """The writes moving ``facts`` from entity ``old`` to ``new`` (slots of
    facts about it follow the new entity's key)."""
    puts: list[PutOp] = []
    moved: list[Fact] = []
    for f in facts:
        changes: dict[str, Any] = {
            "mentions": [new.id if m == old else m for m in f.mentions],
        }
        if f.subject_entity == old:
            changes["subject_entity"] = new.id
            changes["slot"] = slot_of(layer.ref, slot_key(new, f.subject), f.predicate)
        if f.object_entity == old:
            changes["object_entity"] = new.id
        changes["mentions"] = list(dict.fromkeys(changes["mentions"]))
        relinked = replace(f, **changes)
        puts += change(env, f, relinked, "relinked", reason=f"entity {old} -> {new.id}")[1]
        moved.append(relinked)
    return puts, moved


@operation(access="write", tool="memory_merge_entities", errors=(MemoryNotFoundError,))
def merge_entities(
    c: Caller,
    into: Annotated[EntityRef, Field(description="The entity to keep (id or name).")],
    other: Annotated[EntityRef, Field(description="The entity that is the same one (id or name).")],
    *,
    layer: LayerName = None,
    tenant: Tenant = None,
) -> Operation[Entity]:
    """Say that two entities are one: the second's names, relations and facts
    go to the first (their attributes then replace each other by date). Undo
    with ``unmerge_entities``."""
    env = c.env(tenant)
    la = _layer(env, layer)
    keep, _ = yield from _find(env, la, into)
    gone, _ = yield from _find(env, la, other)
    if keep.id == gone.id:
        raise InvalidOperationError(f"{shown(into)} and {shown(other)} are already one entity")
    if USER_KEY in (keep.key, gone.key) and keep.key != gone.key:
        raise InvalidOperationError("the user is one entity of its own; it cannot be merged")
    facts = yield from _naming(env, la, [gone.id])
    puts, moved = _relink(env, la, facts, gone.id, keep)
    brought = [a for a in gone.aliases if keep.add_alias(a)]
    relations = [r for r in gone.relations if keep.relate(r["as"], r["of"])]
    keep.merges[gone.id] = {
        "aliases": brought,
        "relations": relations,
        "facts": [f.id for f in moved],
    }
    keep.updated_at = gone.updated_at = env.stamp
    gone.merged_into = keep.id
    ns = entity_space(env, la)
    puts += [
        PutOp(ns, keep.id, keep.to_value(), False),
        PutOp(ns, gone.id, gone.to_value(), False),
        _entity_event(env, la, keep, "merged", {"merged": [None, gone.id]}),
        _entity_event(env, la, gone, "merged_into", {"merged_into": [None, keep.id]}),
    ]
    yield Batch(puts)
    for slot in dict.fromkeys(f.slot for f in moved):
        yield from resolve_slot(env, la, slot)
    return keep


def merge_duplicates(env: Env, pairs: Sequence[tuple[str, str]]) -> Operation[None]:
    """Merge entities found to be one (:meth:`.graph.Linker.duplicates`) with
    the audited merge, so an unmerge can undo it. A pair another writer merged
    meanwhile is already one: nothing to do."""
    for keep, other in pairs:
        try:
            yield from merge_entities.within(env, keep, other)
        except (InvalidOperationError, MemoryNotFoundError):
            continue
    return None


@operation(access="write", tool="memory_unmerge_entities", errors=(MemoryNotFoundError,))
def unmerge_entities(
    c: Caller,
    entity: Annotated[
        str, Field(min_length=1, description="The id of the entity that was merged into another.")
    ],
    *,
    layer: LayerName = None,
    tenant: Tenant = None,
) -> Operation[Entity]:
    """Undo a merge: the merged entity is its own again, with the names,
    relations and current facts it brought (facts a merge retired stay in the
    history, where ``revise`` can bring them back)."""
    env = c.env(tenant)
    la = _layer(env, layer)
    known = yield from read_entities(env, la)
    by_id = {e.id: e for e in known}
    gone = by_id.get(entity)
    if gone is None:
        raise MemoryNotFoundError(
            f"no entity with id {shown(entity)} among your entities", id=entity
        )
    keep = by_id.get(gone.merged_into or "")
    if keep is None or gone.id not in keep.merges:
        raise InvalidOperationError(f"entity {shown(entity)} is not merged into another")
    record = keep.merges.pop(gone.id)
    keep.aliases = [a for a in keep.aliases if a not in record.get("aliases", [])]
    keep.relations = [r for r in keep.relations if r not in record.get("relations", [])]
    gone.merged_into = None
    keep.updated_at = gone.updated_at = env.stamp
    facts = yield from _naming(env, la, [keep.id])
    back = [f for f in facts if f.id in set(record.get("facts", []))]
    puts, moved = _relink(env, la, back, keep.id, gone)
    ns = entity_space(env, la)
    puts += [
        PutOp(ns, keep.id, keep.to_value(), False),
        PutOp(ns, gone.id, gone.to_value(), False),
        _entity_event(env, la, gone, "unmerged", {"merged_into": [keep.id, None]}),
    ]
    yield Batch(puts)
    for slot in dict.fromkeys(f.slot for f in moved):
        yield from resolve_slot(env, la, slot)
    return gone


@operation(access="write", tool="memory_split_entity", errors=(MemoryNotFoundError,))
def split_entity(
    c: Caller,
    entity: EntityRef,
    aliases: Annotated[
        list[str], Field(min_length=1, description="The names that belong to another entity.")
    ],
    *,
    name: Annotated[
        str | None, Field(pattern=r"\S", description="The new entity's name (default: the first).")
    ] = None,
    layer: LayerName = None,
    tenant: Tenant = None,
) -> Operation[Entity]:
    """Say that some names of an entity are someone else: a new entity takes
    those names and the facts whose subject or object was said with them.
    Undo with ``merge_entities``."""
    env = c.env(tenant)
    la = _layer(env, layer)
    source, _ = yield from _find(env, la, entity)
    folded = {fold(a) for a in aliases}
    unknown = [a for a in aliases if fold(a) not in {fold(x) for x in source.aliases}]
    if unknown:
        raise InvalidValueError(
            f"{shown(unknown)} are not names of {source.name}; its names are "
            f"{', '.join(source.aliases)}"
        )
    if folded >= {fold(a) for a in source.aliases}:
        raise InvalidValueError("a split must leave the entity at least one of its names")
    first = next(a for a in source.aliases if fold(a) in folded)
    # A split keeps a random id: its key (the name split off) may be the
    # source's own first name, whose id the source already has.
    split = Entity(new_id(), (name or first).strip(), fold(first), source.kind)
    split.created_at = split.updated_at = env.stamp
    for a in source.aliases:
        if fold(a) in folded:
            split.add_alias(a)
    source.aliases = [a for a in source.aliases if fold(a) not in folded]
    if fold(source.name) in folded:
        source.name = source.aliases[0]
    source.updated_at = env.stamp
    facts = yield from _naming(env, la, [source.id])
    said = [
        f
        for f in facts
        if (f.subject_entity == source.id and fold(f.subject) in folded)
        or (f.object_entity == source.id and fold(f.object or "") in folded)
    ]
    puts, moved = _relink(env, la, said, source.id, split)
    ns = entity_space(env, la)
    puts += [
        PutOp(ns, source.id, source.to_value(), False),
        PutOp(ns, split.id, split.to_value(), False),
        _entity_event(env, la, source, "split", {"split_off": [None, split.id]}),
        _entity_event(env, la, split, "created", {"split_from": [None, source.id]}),
    ]
    yield Batch(puts)
    for slot in dict.fromkeys(f.slot for f in moved):
        yield from resolve_slot(env, la, slot)
    return split


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
