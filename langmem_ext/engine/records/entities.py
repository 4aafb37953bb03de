"""Entities: the people, places, organisations and things a user's facts are
about, one record per entity however it is named ("my sister Clara", "Clara",
"Clara Weber"). Pure: the steps that read and write them are in
:mod:`..operations.graph`.

An entity belongs to one layer of one user (its bookkeeping namespace
``entities``, see :mod:`..identity.layout`), so resolution never reaches
another user's or tenant's entities. It has a canonical ``name``, a ``kind``,
the ``aliases`` it was named by, ``relations`` to other entities ("sister" of
the user), and a ``key``: the folded name it was first seen under, which never
changes, so the (subject, predicate) slots of its facts stay put when it gains
a better name.

**Resolution** of a name to an entity, in this order (the first that decides wins):

1. an entity with that alias (case and spacing folded);
2. a relation phrase ("my sister Clara", "Clara, my sister", "meine Schwester",
   "mi hermana Clara"): the name part as in 1, else the relation (the entity
   that is the user's "sister"), else a new entity with both;
3. the name's words inside exactly one entity's alias, or that alias's words
   inside the name ("Clara" and "Clara Weber"), when the kinds agree and the
   shared word is a real name (three letters or more, not a relation word);
4. (in :mod:`..operations.graph`) embedding similarity of the names at least
   :data:`ENTITY_SIMILARITY`, among entities of the same kind;
5. otherwise a new entity.

Ambiguity (two entities fit) never merges: the name gets an entity of its own,
which a user can merge later (``merge_entities``, undoable).

Examples:
    >>> clara = Entity.new("e1", "my sister Clara", "person", "2026-01-01T00:00:00+00:00")
    >>> clara.name, clara.aliases, clara.relations
    ('Clara', ['my sister Clara', 'Clara', 'my sister'], [{'as': 'sister', 'of': 'user'}])
    >>> [e.id for e in match([clara], "Clara Weber")], [e.id for e in match([clara], "my sister")]
    (['e1'], ['e1'])
    >>> mentioned([clara], "Where does my sister live these days?")
    ['e1']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENTITY_KINDS",
    "ENTITY_SIMILARITY",
    "USER_KEY",
    "Entity",
    "fold",
    "kind_of_object",
    "match",
    "mentioned",
    "relation_phrase",
]

#: The kinds an entity may have.
ENTITY_KINDS = ("person", "place", "organization", "project", "thing")
#: Two names of one kind whose embeddings are at least this similar (cosine)
#: name one entity, when no alias or word decides. Chosen high: a wrong merge
#: mixes two people's facts, a missed one only leaves two entities to merge by
#: hand. See docs/entities.md for the figures behind it.
ENTITY_SIMILARITY = 0.95
#: The key of the entity that is the user (facts whose subject is "user").
USER_KEY = "user"

# Possessive words that open a relation phrase ("my sister"), by language.
_MY = (
    "my|mine|our|the user's|user's|mein|meine|meinem|meinen|meiner|unser|unsere|mi|mis|"
    "nuestro|nuestra|ma|mon|mes|notre|nos|minha|meu|minhas|meus|nossa|nosso|mia|mio|mie|"
    "miei|mijn|onze"
)
_RELATION = re.compile(rf"^({_MY})\s+(\w[\w-]*)(?:\s*,?\s+(.+))?$", re.IGNORECASE)
# How extraction names a relative of the user: "user.sister", "user's sister".
_USER_RELATION = re.compile(r"^(?:the )?user(?:\.|'s\s+|’s\s+)(\w[\w-]*)$", re.IGNORECASE)
_RELATION_AFTER = re.compile(rf"^(.+?)\s*[,(]\s*({_MY})\s+(\w[\w-]*)\s*\)?$", re.IGNORECASE)
_WORD = re.compile(r"\w+")

# Predicates (and relation words) whose object is of a known kind. A fact's
# predicate is free text chosen by a model or a program; unknown ones give "thing".
_PLACE = ("live", "city", "country", "moved", "location", "home", "born", "town", "address")
_ORGANIZATION = ("work", "employ", "company", "job", "school", "universit", "studies_at")
_PERSON = (
    "sister",
    "brother",
    "mother",
    "father",
    "mom",
    "dad",
    "parent",
    "wife",
    "husband",
    "partner",
    "spouse",
    "friend",
    "colleague",
    "boss",
    "son",
    "daughter",
    "child",
    "cousin",
    "aunt",
    "uncle",
    "grand",
    "neighbo",
    "manager",
)


def fold(text: str) -> str:
    """A name as compared: Unicode-normalised, case-folded, spacing folded,
    surrounding punctuation and a leading article dropped.

    Examples:
        >>> fold("  The  Lisbon office. "), fold("ÉLODIE")
        ('lisbon office', 'élodie')
    """
    text = unicodedata.normalize("NFC", text).casefold()
    text = " ".join(text.split()).strip(" .,;:!?\"'()[]")
    return re.sub(r"^(?:the|a|an|der|die|das|el|la|los|las|le|les|o|os|il|lo|de|het)\s+", "", text)


def relation_phrase(phrase: str) -> tuple[str, str, str | None] | None:
    """``(said, relation, name)`` when ``phrase`` names someone by their
    relation to the user: ``said`` is the relation as said ("my sister"),
    ``relation`` its word ("sister"), ``name`` the name given with it, if any.
    None for any other phrase.

    Examples:
        >>> relation_phrase("Clara, my sister")
        ('my sister', 'sister', 'Clara')
        >>> relation_phrase("meine Schwester Clara")
        ('meine Schwester', 'schwester', 'Clara')
        >>> relation_phrase("my boss"), relation_phrase("Clara")
        (('my boss', 'boss', None), None)
        >>> relation_phrase("user.sister")
        ('my sister', 'sister', None)
    """
    text = " ".join(phrase.split())
    m = _USER_RELATION.match(text)
    if m:
        return f"my {m.group(1).casefold()}", m.group(1).casefold(), None
    m = _RELATION.match(text)
    if m:
        return f"{m.group(1)} {m.group(2)}", m.group(2).casefold(), (m.group(3) or None)
    m = _RELATION_AFTER.match(text)
    if m:
        return f"{m.group(2)} {m.group(3)}", m.group(3).casefold(), m.group(1)
    return None


def kind_of_object(predicate: str) -> str:
    """The kind of a fact's object, guessed from its predicate ("lives_in" ->
    place); "thing" when the predicate says nothing.

    Examples:
        >>> kind_of_object("lives_in"), kind_of_object("works_at"), kind_of_object("likes")
        ('place', 'organization', 'thing')
    """
    p = predicate.casefold()
    for kind, words in (("place", _PLACE), ("organization", _ORGANIZATION), ("person", _PERSON)):
        if any(w in p for w in words):
            return kind
    return "thing"


@dataclass
class Entity:
    """One person, place, organisation, project or thing of a user (see the module docs)."""

    id: str
    name: str
    key: str
    kind: str = "thing"
    aliases: list[str] = field(default_factory=list)
    #: ``{"as": <relation word>, "of": <entity id, or "user">}``.
    relations: list[dict[str, str]] = field(default_factory=list)
    #: The entity this one was merged into (it then only forwards there).
    merged_into: str | None = None
    #: What a merge into this entity changed, by merged entity id: the aliases
    #: it brought and the facts it relinked (what ``unmerge_entities`` restores).
    merges: dict[str, dict[str, Any]] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""

    @classmethod
    def new(cls, id: str, phrase: str, kind: str, now: str, *, key: str | None = None) -> Entity:
        """An entity first named ``phrase`` (a relation phrase gives the name,
        the relation and both as aliases)."""
        rel = relation_phrase(phrase)
        name = (rel[2] or rel[0] if rel else phrase).strip()
        entity = cls(id, name, key or phrase.strip().casefold(), kind)
        entity.created_at = entity.updated_at = now
        entity.add_alias(phrase)
        if rel:
            said, relation, named = rel
            if named:
                entity.add_alias(named)
            entity.add_alias(said)
            entity.relate(relation, USER_KEY)
            entity.kind = "person" if kind == "thing" else kind
        return entity

    def add_alias(self, alias: str) -> bool:
        """Add a name it is known by; False when it already had it."""
        alias = " ".join(alias.split())
        if not alias or fold(alias) in {fold(a) for a in self.aliases}:
            return False
        self.aliases.append(alias)
        return True

    def relate(self, relation: str, of: str) -> bool:
        link = {"as": relation.casefold(), "of": of}
        if link in self.relations:
            return False
        self.relations.append(link)
        return True

    def folded(self) -> set[str]:
        return {fold(a) for a in (self.name, *self.aliases)}

    def to_value(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            "kind": "entity",
            "entity_kind": self.kind,
            "name": self.name,
            "key": self.key,
            "aliases": list(self.aliases),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        if self.relations:
            value["relations"] = [dict(r) for r in self.relations]
        if self.merged_into:
            value["merged_into"] = self.merged_into
        if self.merges:
            value["merges"] = self.merges
        return value

    @classmethod
    def from_value(cls, id: str, value: Any) -> Entity | None:
        """The entity a stored value holds, or None when it is not one (written
        by another program): readers skip those."""
        if not isinstance(value, dict) or value.get("kind") != "entity":
            return None
        name, key, aliases = value.get("name"), value.get("key"), value.get("aliases", [])
        if not isinstance(name, str) or not isinstance(key, str):
            return None
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            return None
        relations = value.get("relations") or []
        if not isinstance(relations, list) or not all(
            isinstance(r, dict) and isinstance(r.get("as"), str) and isinstance(r.get("of"), str)
            for r in relations
        ):
            return None
        merges = value.get("merges") or {}
        merged_into = value.get("merged_into")
        kind = value.get("entity_kind")
        return cls(
            id,
            name,
            key,
            kind if kind in ENTITY_KINDS else "thing",
            list(aliases),
            [{"as": r["as"], "of": r["of"]} for r in relations],
            merged_into if isinstance(merged_into, str) else None,
            merges if isinstance(merges, dict) else {},
            str(value.get("created_at") or ""),
            str(value.get("updated_at") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        """For display and JSON output: ``kind`` is the entity's kind."""
        value = self.to_value()
        value.pop("kind")
        return {"id": self.id, "kind": value.pop("entity_kind"), **value}


def _active(entities: Iterable[Entity]) -> list[Entity]:
    return [e for e in entities if not e.merged_into]


def _compatible(a: str, b: str) -> bool:
    return a == b or "thing" in (a, b)


def match(entities: Sequence[Entity], phrase: str, kind: str = "thing") -> list[Entity]:
    """The entities ``phrase`` may name, by rules 1-3 of the module docs: one
    entity when they decide, several when it is ambiguous, none when nothing fits."""
    active = _active(entities)
    target = fold(phrase)
    if not target:
        return []
    exact = [e for e in active if target in e.folded()]
    if exact:
        return exact
    rel = relation_phrase(phrase)
    if rel is not None:
        _, relation, name = rel
        if name:
            by_name = match(active, name, kind)
            if len(by_name) == 1:
                return by_name
        related = [
            e
            for e in active
            if any(r["as"] == relation and r["of"] == USER_KEY for r in e.relations)
        ]
        if related:
            return related
        return []
    words = {w for w in _WORD.findall(target) if len(w) >= 3 and w not in _PERSON}
    if not words:
        return []
    fits = []
    for e in active:
        if not _compatible(e.kind, kind):
            continue
        for alias in e.folded():
            theirs = set(_WORD.findall(alias))
            if words <= theirs or (theirs and theirs <= words and theirs & words):
                fits.append(e)
                break
    return fits


def mentioned(entities: Sequence[Entity], text: str) -> list[str]:
    """Ids of the entities ``text`` names: one of their aliases as whole words,
    or a relation word of theirs ("sister"), in order of first appearance."""
    folded = fold(text)
    found: dict[str, int] = {}
    for e in _active(entities):
        for alias in sorted(e.folded(), key=len, reverse=True):
            if alias and (at := _find(folded, alias)) >= 0:
                found[e.id] = min(found.get(e.id, at), at)
        for r in e.relations:
            if (at := _find(folded, r["as"])) >= 0:
                found[e.id] = min(found.get(e.id, at), at)
    return sorted(found, key=lambda i: found[i])


def _find(text: str, words: str) -> int:
    m = re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text)
    return m.start() if m else -1
