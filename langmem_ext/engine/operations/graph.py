"""Entities and links as steps of the operations: resolving a fact's subject
and object to entities (:func:`link_fact`), the memories derived from a
changed one (:func:`dependants`), and recall's expansion to the
neighbourhood of the entities a query names (:func:`neighbourhood`). The rules
of resolution are in :mod:`..records.entities`.

Entities live in their layer's ``entities`` bookkeeping namespace, one item
each; facts hold their subject's and object's entity ids and every entity
their text mentions (``mentions``), so "the facts about Clara" is one filtered
search in the layer the facts live in. No graph database: items and filters
of the store the memories are in.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> f = engine.store_fact(ctx, "my sister Clara", "lives_in", "Clara lives in Lisbon",
    ...                       object="Lisbon")
    >>> g = engine.store_fact(ctx, "Clara", "job", "Clara is a nurse")
    >>> f.subject_entity == g.subject_entity, [e.name for e in engine.entities(ctx)]
    (True, ['Clara', 'Lisbon'])
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, PutOp, SearchOp

from ...stores import HybridSearchOp
from ..records.entities import (
    ENTITY_SIMILARITY,
    USER_KEY,
    Entity,
    fold,
    kind_of_object,
    match,
    mentioned,
    relation_phrase,
)
from ..records.models import Fact, MemoryRecord, slot_of
from ..records.scoring import cosine
from ..runtime.env import Env, Layer
from ..runtime.planning import paged, search_ops
from ..runtime.requests import Batch, Embed, Operation

__all__ = [
    "Linked",
    "Linker",
    "Neighbourhood",
    "decode_entities",
    "dependants",
    "entities_op",
    "entity_id",
    "entity_space",
    "link_fact",
    "link_facts",
    "mentions_in",
    "neighbourhood",
    "read_entities",
    "settle_entities",
    "slot_key",
]

logger = logging.getLogger("langmem_ext.engine")

#: How many entities a query may name for expansion, and results per entity and hop.
GRAPH_ENTITIES = 3
GRAPH_RESULTS = 10


def entity_space(env: Env, layer: Layer) -> tuple[str, ...]:
    return env.meta(layer, "entities")


#: Entities read in one store op; a layer with more is read page by page.
ENTITY_PAGE = 1000


def read_entities(env: Env, layer: Layer) -> Operation[list[Entity]]:
    """Every entity of ``layer`` (merged ones included: they forward)."""
    items = yield from paged(env.caps, entity_space(env, layer), {}, ENTITY_PAGE)
    return decode_entities(env, layer, items)


def entities_op(env: Env, layer: Layer) -> Any:
    """One store op reading the first page of ``layer``'s entities (to send
    with other reads in one batch; see :func:`decode_entities`)."""
    ns = entity_space(env, layer)
    if env.caps.modes:
        return HybridSearchOp(ns, None, ENTITY_PAGE, 0, None, False, None)
    return SearchOp(ns, None, ENTITY_PAGE, 0, None, False)


def decode_entities(env: Env, layer: Layer, items: Sequence[Any]) -> list[Entity]:
    ns = entity_space(env, layer)
    out = []
    for item in items:
        if tuple(item.namespace) != ns:
            continue
        entity = Entity.from_value(item.key, item.value)
        if entity is None:
            logger.warning("skipped damaged entity %s in %s", item.key, "/".join(ns))
        else:
            out.append(entity)
    return out


def slot_key(entity: Entity | None, subject: str) -> str:
    """What a fact's slot is keyed by: its subject's entity key, so the facts
    of one entity share slots whatever it was called; the subject text
    otherwise (stores written before entities keep their slots: the key of an
    entity is the text it was first named by)."""
    return entity.key if entity is not None else subject


class Linker:
    """The entities of one layer while one operation resolves names against
    them; :meth:`puts` gives the writes of what it created or changed."""

    def __init__(self, env: Env, layer: Layer, known: list[Entity]) -> None:
        self.env, self.layer = env, layer
        self.known = known
        self.changed: dict[str, Entity] = {}

    def forward(self, entity: Entity) -> Entity:
        """The entity ``entity`` was merged into (itself when not merged)."""
        seen = {entity.id}
        by_id = {e.id: e for e in self.known}
        while entity.merged_into and entity.merged_into in by_id:
            entity = by_id[entity.merged_into]
            if entity.id in seen:
                break
            seen.add(entity.id)
        return entity

    def user(self) -> Entity:
        """The entity that is the user (created on first use, known by the
        user's id too: "Ada's sister" names the user's sister)."""
        for e in self.known:
            if e.key == USER_KEY and not e.merged_into:
                return e
        user = self._create(USER_KEY, "person", key=USER_KEY)
        if self.env.ctx.user_id:
            user.add_alias(self.env.ctx.user_id)
        return user

    def _create(self, phrase: str, kind: str, key: str | None = None) -> Entity:
        # The id follows from the layer and the key: writers that meet a new
        # name at the same time create one entity, not two.
        key = key or phrase.strip().casefold()
        entity = Entity.new(entity_id(self.layer, key), phrase, kind, self.env.stamp, key=key)
        self.known.append(entity)
        self.changed[entity.id] = entity
        return entity

    def _touch(self, entity: Entity) -> None:
        entity.updated_at = self.env.stamp
        self.changed[entity.id] = entity

    def resolve(self, phrase: str, kind: str = "thing") -> Operation[Entity]:
        """The entity ``phrase`` names (see :mod:`..records.entities`), created
        when none fits; a new alias or relation is added to the one found."""
        if fold(phrase) in (USER_KEY, "i", "me", "myself"):
            return self.user()
        found = match(self.known, phrase, kind)
        if len(found) > 1:  # ambiguous: never merge on a guess
            return self._create(phrase, kind)
        similar = self.forward(found[0]) if found else (yield from self._similar(phrase, kind))
        if similar is None:
            return self._create(phrase, kind)
        entity = similar
        changed = entity.add_alias(phrase)
        rel = relation_phrase(phrase)
        if rel is not None:
            said, relation, named = rel
            changed |= entity.add_alias(said)
            changed |= entity.relate(relation, USER_KEY)
            if named and fold(entity.name) == fold(said):
                entity.name = named.strip()  # "my sister" is now known as Clara
                changed = True
        if kind != "thing" and entity.kind == "thing":
            entity.kind, changed = kind, True
        if changed:
            self._touch(entity)
        return entity

    def _similar(self, phrase: str, kind: str) -> Operation[Entity | None]:
        """The one entity of the same kind whose name embeds within
        :data:`ENTITY_SIMILARITY` of ``phrase`` (rule 4); None without an
        embedder, or when none or several do."""
        if not self.env.caps.embeds:
            return None
        pool = [e for e in self.known if not e.merged_into and e.kind == kind and kind != "thing"]
        if not pool or len(pool) > SIMILAR_POOL:  # a bounded cost per new name
            return None
        vectors = yield Embed([phrase, *(e.name for e in pool)])
        if not vectors:
            return None
        close = [e for e, v in zip(pool, vectors[1:]) if cosine(vectors[0], v) >= ENTITY_SIMILARITY]
        return close[0] if len(close) == 1 else None

    def mentions(self, text: str, *ids: str | None) -> list[str]:
        """The entities ``text`` names, and ``ids``, in order, each once."""
        found = [self.forward(e).id for e in self.known if e.id in mentioned(self.known, text)]
        return list(dict.fromkeys([i for i in ids if i] + found))

    def puts(self) -> list[PutOp]:
        ns = entity_space(self.env, self.layer)
        return [PutOp(ns, e.id, e.to_value(), False) for e in self.changed.values()]

    def duplicates(self) -> list[tuple[str, str]]:
        """Pairs ``(keep, other)`` of entities that are one by the evidence,
        made apart by writers that met a person at the same moment in other
        words: the same name (folded; kinds agree), or an entity known only by a
        relation ("my sister") when exactly one other entity has that relation.
        Two sisters are never merged: "my sister" then names neither."""
        active = [e for e in self.known if not e.merged_into and e.key != USER_KEY]
        pairs: list[tuple[str, str]] = []
        by_name: dict[str, list[Entity]] = {}
        for e in active:
            by_name.setdefault(fold(e.name), []).append(e)
        for same in by_name.values():
            kinds = {e.kind for e in same} - {"thing"}
            if len(same) > 1 and len(kinds) <= 1:
                keep = min(same, key=lambda e: e.id)
                pairs += [(keep.id, e.id) for e in same if e.id != keep.id]
        gone = {o for _, o in pairs}
        for e in active:
            rel = relation_phrase(e.name)
            if e.id in gone or rel is None or rel[2]:
                continue
            link = {"as": rel[1], "of": USER_KEY}
            named = [o for o in active if o.id != e.id and o.id not in gone and link in o.relations]
            if len(named) == 1:
                pairs.append((named[0].id, e.id))
                gone.add(e.id)
        return pairs


def entity_id(layer: Layer, key: str) -> str:
    """The id of the entity first named ``key`` in ``layer`` (see :meth:`Linker._create`)."""
    return "ent_" + hashlib.sha256(f"{layer.ref}\x00{key}".encode()).hexdigest()[:24]


#: Most entities of one kind compared by embedding with a new name (rule 4):
#: past that, a new name that no alias or word matches gets an entity of its own.
SIMILAR_POOL = 200
#: Rounds of :func:`settle_entities` before it gives up (each is one read).
SETTLE_ROUNDS = 3


def settle_entities(env: Env, puts: Sequence[PutOp]) -> Operation[None]:
    """Make sure the names and relations these entity writes added are stored,
    after the batch that wrote them: two writers adding a name to one entity at
    the same time each write the whole entity (``BaseStore`` has no
    compare-and-set), so each reads it back and writes again what the other's
    write dropped. Converges in a round or two; names are never removed here."""
    pending = [p for p in puts if p.value is not None]
    for _ in range(SETTLE_ROUNDS):
        if not pending:
            return None
        stored = yield Batch([GetOp(p.namespace, p.key) for p in pending])
        again: list[PutOp] = []
        for put, item in zip(pending, stored, strict=True):
            mine = Entity.from_value(put.key, put.value)
            theirs = Entity.from_value(put.key, item.value) if item is not None else None
            if mine is None:
                continue
            if theirs is None:
                again.append(put)
                continue
            added = [a for a in mine.aliases if theirs.add_alias(a)]
            related = [r for r in mine.relations if theirs.relate(r["as"], r["of"])]
            if added or related:
                theirs.updated_at = env.stamp
                again.append(PutOp(put.namespace, put.key, theirs.to_value(), False))
        if again:
            yield Batch(again)
        pending = again
    return None


class Linked(NamedTuple):
    """What linking facts gives: the facts, the entity writes to make with
    them, and the duplicate entities to merge after (see :meth:`Linker.duplicates`)."""

    facts: list[Fact]
    puts: list[PutOp]
    duplicates: list[tuple[str, str]]


def link_fact(env: Env, fact: Fact, *, infer_sources: bool = False) -> Operation[Linked]:
    """:func:`link_facts` for one fact."""
    return (yield from link_facts(env, [fact], infer_sources=infer_sources))


def link_facts(
    env: Env, facts: Sequence[Fact], *, infer_sources: bool = False
) -> Operation[Linked]:
    """``facts`` (of one layer) with their subjects and objects resolved to
    entities, their mentions, and their slots keyed by their subjects'
    entities; with the writes of the entities created or changed (one read of
    the layer's entities for all of them). ``infer_sources``: a fact that
    mentions the object of another current fact of its subject (and is not
    about that object itself) is derived from it ("commutes to Acme's office"
    from "works at Acme"); reflection asks for this."""
    if not facts:
        return Linked([], [], [])
    layer = env.layer_of(facts[0])
    known = yield from read_entities(env, layer)
    linker = Linker(env, layer, known)
    out: list[Fact] = []
    for fact in facts:
        subject_kind = "person" if relation_phrase(fact.subject) else "thing"
        subject = yield from linker.resolve(fact.subject, subject_kind)
        obj = None
        if fact.object:
            obj = yield from linker.resolve(fact.object, kind_of_object(fact.predicate))
        linked = replace(
            fact,
            subject_entity=subject.id,
            object_entity=obj.id if obj else None,
            mentions=linker.mentions(fact.text, subject.id, obj.id if obj else None),
            slot=slot_of(fact.layer_ref, slot_key(subject, fact.subject), fact.predicate),
        )
        if infer_sources:
            linked = yield from _inferred_sources(env, layer, linked)
        out.append(linked)
    return Linked(out, linker.puts(), linker.duplicates())


def mentions_in(env: Env, record: MemoryRecord) -> Operation[list[str]]:
    """The entities of its layer that ``record``'s text names (no entity is
    created: only facts introduce entities)."""
    layer = env.layer_of(record)
    known = yield from read_entities(env, layer)
    if not known:
        return []
    users = {e.id for e in known if e.key == USER_KEY}
    return [i for i in Linker(env, layer, known).mentions(record.text) if i not in users]


def _inferred_sources(env: Env, layer: Layer, fact: Fact) -> Operation[Fact]:
    others = [m for m in fact.mentions if m not in (fact.subject_entity, fact.object_entity)]
    if not others or not fact.subject_entity:
        return fact
    ops = [_filtered(env, layer.ns, {"object_entity": m}, None, 20) for m in others]
    results = yield Batch(ops)
    sources = [
        i.key
        for r in results
        for i in r
        if tuple(i.namespace) == layer.ns
        and isinstance(i.value, dict)
        and i.value.get("kind") == "fact"
        and i.value.get("subject_entity") == fact.subject_entity
        and i.value.get("predicate") != fact.predicate
        and i.key != fact.id
    ]
    if not sources:
        return fact
    return replace(fact, derived_from=list(dict.fromkeys([*fact.derived_from, *sources])))


def _filtered(
    env: Env,
    ns: tuple[str, ...],
    filter: dict[str, Any],
    query: str | None,
    limit: int,
    mode: str | None = None,
) -> Any:
    if env.caps.modes:
        return HybridSearchOp(ns, filter, limit, 0, query, False, mode)  # type: ignore[arg-type]
    return SearchOp(ns, filter, limit, 0, query, False)


# -- dependants ----------------------------------------------------------------------


def dependants(env: Env, ids: Sequence[str]) -> Operation[list[tuple[Layer, Any]]]:
    """The current items (of every readable layer) derived from any of ``ids``."""
    if not ids:
        return []
    layers = env.layers()
    found: list[tuple[Layer, Any]] = []
    if "$contains" in env.caps.operators:
        pairs = [(la, i) for la in layers for i in ids]
        ops = [
            _filtered(env, la.ns, {"derived_from": {"$contains": i}}, None, 1000) for la, i in pairs
        ]
        results = yield Batch(ops)
        for (la, _), items in zip(pairs, results, strict=True):
            found += [(la, it) for it in items if tuple(it.namespace) == la.ns]
    else:  # a store without $contains: read the layer, check in Python
        wanted = set(ids)
        for la in layers:
            items = yield from paged(env.caps, la.ns, {})
            found += [
                (la, it)
                for it in items
                if tuple(it.namespace) == la.ns
                and isinstance(it.value, dict)
                and wanted & set(it.value.get("derived_from") or ())
            ]
    seen: set[tuple[str, str]] = set()
    out = []
    for la, it in found:
        if (la.ref, it.key) not in seen:
            seen.add((la.ref, it.key))
            out.append((la, it))
    return out


# -- recall's expansion ---------------------------------------------------------------


class Neighbourhood(NamedTuple):
    """What recall's expansion found: ``(layer, item)`` pairs, and the entities
    at each distance from the request (``rings[0]``: those it names)."""

    items: list[tuple[Layer, Any]]
    rings: list[list[str]]

    def distance(self, record: MemoryRecord) -> int | None:
        """How many entities away from the request ``record`` is: 0 when it
        names an entity the request names, 1 for the next ring; None when unlinked."""
        mine = set(getattr(record, "mentions", ()))
        for d, ring in enumerate(self.rings):
            if mine & set(ring):
                return d
        return None


def neighbourhood(
    env: Env,
    layers: Sequence[Layer],
    query: str,
    hops: int,
    mode: str | None,
    pages: Sequence[Sequence[Any]] | None = None,
) -> Operation[Neighbourhood]:
    """The memories linked to the entities ``query`` names, up to ``hops``
    entities away (each found by the query's own search, filtered to memories
    that mention the entity). ``pages``: each layer's first page of entities,
    already read (:func:`entities_op`, sent with recall's own search). Costs one
    filtered search per named entity and hop (at most :data:`GRAPH_ENTITIES`
    entities each), and nothing more when the query names none."""
    none = Neighbourhood([], [])
    if hops <= 0:
        return none
    known: list[tuple[Layer, Entity]] = []
    for i, la in enumerate(layers):
        page = pages[i] if pages is not None else None
        if page is None or len(page) >= ENTITY_PAGE:
            mine = yield from read_entities(env, la)
        else:
            mine = decode_entities(env, la, page)
        known += [(la, e) for e in mine]
    if not known:
        return none
    entities = [e for _, e in known]
    users = {e.id for e in entities if e.key == USER_KEY}
    named = [i for i in mentioned(entities, query) if i not in users][:GRAPH_ENTITIES]
    out: list[tuple[Layer, Any]] = []
    rings: list[list[str]] = []
    seen_items: set[tuple[str, str]] = set()
    visited = set(named) | users
    frontier = named
    for _ in range(hops):
        if not frontier:
            break
        rings.append(frontier)
        ops: list[Any] = []
        owners: list[tuple[Layer, Any]] = []
        for eid in frontier:
            for la in layers:
                # Native on our stores; elsewhere checked in Python on an over-fetched page.
                o, check = search_ops(
                    env.caps,
                    la.ns,
                    eq={},
                    extra={"mentions": {"$contains": eid}},
                    query=query,
                    limit=GRAPH_RESULTS,
                    mode=mode,
                )
                ops += o
                owners += [(la, check)] * len(o)
        results = yield Batch(ops)
        reached: list[str] = []
        for (la, check), items in zip(owners, results, strict=True):
            for it in items:
                if tuple(it.namespace) != la.ns or (la.ref, it.key) in seen_items:
                    continue
                if not check(it.value):
                    continue
                seen_items.add((la.ref, it.key))
                out.append((la, it))
                for m in it.value.get("mentions") or () if isinstance(it.value, dict) else ():
                    if m not in visited:
                        visited.add(m)
                        reached.append(m)
        frontier = reached[:GRAPH_ENTITIES]
    return Neighbourhood(out, rings)
