"""The catalogue's writes: storing and changing memories (see :mod:`.catalogue`).

Each function is the declaration of one operation and its one body; the
engine's ``store_fact`` / ``astore_fact``, the tool ``memory_store_fact``, the
MCP tool and the command ``langmem-ext memories store-fact`` all run it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from ..errors import ContentTooLongError, InvalidOperationError, MemoryNotFoundError
from . import lifecycle as lc
from . import provider as pv
from .catalogue import Caller, Meta, Spec, operation
from .models import Episode, Fact, MemoryRecord, Note, Rule
from .params import (
    Category,
    Confidence,
    Content,
    Id,
    Importance,
    Kind,
    LayerName,
    Metadata,
    Permanence,
    Scope,
    Tags,
    Tenant,
    Text,
)
from .requests import Operation

__all__ = [
    "add",
    "bulk_add",
    "bulk_delete",
    "confirm",
    "delete",
    "forget",
    "mark_harmful",
    "mark_helpful",
    "revise",
    "store_episode",
    "store_fact",
    "store_rule",
    "sweep",
    "update",
]

_LONG = (ContentTooLongError,)
Subject = Annotated[
    str, Field(pattern=r"\S", description="Who or what the fact is about, e.g. 'user'.")
]
Predicate = Annotated[
    str,
    Field(
        pattern=r"\S",
        description="Which attribute of the subject, e.g. 'favorite_color'; a newer fact with "
        "the same subject and predicate replaces the older one.",
    ),
]
SessionId = Annotated[
    str | None,
    Field(min_length=1, description="The session it happened in; default: the current one."),
]
Provenance = Annotated[
    dict[str, Any] | None,
    Field(description="Where the fact comes from (message ids, a source)."),
    Meta(internal=True),
]


@operation(access="write", cli=True, errors=_LONG)
def add(
    c: Caller,
    content: Content,
    *,
    layer: LayerName = None,
    scope: Scope = "global",
    tags: Tags = None,
    metadata: Metadata = None,
    tenant: Tenant = None,
) -> Operation[Note]:
    """Store a note: free content, as the LangMem-style ``manage_memory`` tool saves it.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine = MemoryEngine(SQLiteStore())
        >>> engine.add(MemoryContext(user_id="ada"), "Prefers window seats").type
        'note'
    """
    return lc.add_note(c.env(tenant), content, layer, scope, tags, metadata)


@operation(access="write", tool="memory_store_fact", browser=True, errors=_LONG)
def store_fact(
    c: Caller,
    subject: Subject,
    predicate: Predicate,
    content: Text,
    *,
    importance: Importance = None,
    permanence: Permanence = None,
    confidence: Confidence = None,
    category: Category = None,
    layer: LayerName = None,
    scope: Scope = "global",
    tags: Tags = None,
    provenance: Provenance = None,
    tenant: Tenant = None,
) -> Operation[Fact]:
    """Store a fact about a subject; a newer fact with the same subject and
    predicate replaces the older one, which stays in the history.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> old = engine.store_fact(ctx, "user", "city", "Lives in Berlin")
        >>> new = engine.store_fact(ctx, "user", "city", "Lives in Munich")
        >>> engine.get(ctx, old.id).superseded_by == new.id
        True
    """
    env = c.env(tenant)
    new = lc.new_fact(
        env,
        subject,
        predicate,
        content,
        importance=importance,
        permanence=permanence,
        confidence=confidence,
        category=category,
        layer=layer,
        scope=scope,
        tags=tags,
        provenance=provenance,
    )
    fact, _ = yield from lc.store_fact(env, new)
    return fact


@operation(access="write", tool="memory_store_episode", browser=True, errors=_LONG)
def store_episode(
    c: Caller,
    content: Text,
    session_id: SessionId = None,
    importance: Importance = None,
    *,
    layer: LayerName = None,
    scope: Scope = "global",
    tags: Tags = None,
    tenant: Tenant = None,
) -> Operation[Episode]:
    """Store an episode: something that happened in this session. It is
    forgotten after 7 days; importance 5 by default.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine = MemoryEngine(SQLiteStore())
        >>> engine.store_episode(MemoryContext(user_id="ada"), "Booked a flight").importance
        5.0
    """
    env = c.env(tenant)
    return lc.store_episode(env, content, session_id, importance, layer, scope, tags)


@operation(access="write", tool="memory_store_rule", browser=True, errors=_LONG)
def store_rule(
    c: Caller,
    content: Text,
    *,
    layer: LayerName = None,
    scope: Scope = "global",
    tags: Tags = None,
    tenant: Tenant = None,
) -> Operation[Rule]:
    """Store a rule for how to behave; it starts as a candidate (confidence
    0.5) and matures with helpful and harmful marks.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine = MemoryEngine(SQLiteStore())
        >>> engine.store_rule(MemoryContext(user_id="ada"), "Confirm before sending").maturity
        'candidate'
    """
    return lc.store_rule(c.env(tenant), content, layer, scope, tags)


_FOUND = (MemoryNotFoundError, InvalidOperationError)


@operation(access="write", tool="memory_confirm", errors=_FOUND)
def confirm(c: Caller, type: Kind, id: Id, *, tenant: Tenant = None) -> Operation[MemoryRecord]:
    """Confirm that a fact or rule is still true: its confidence stops fading
    from now on (episodes and notes cannot be confirmed)."""
    return lc.confirm(c.env(tenant), type, id)


@operation(access="write", tool="memory_mark_helpful", errors=_FOUND)
def mark_helpful(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[Rule]:
    """Record that a rule helped: its success count, effectiveness and maturity go up."""
    return lc.feedback(c.env(tenant), id, True, None)


Reason = Annotated[str | None, Field(description="What went wrong, in a few words.")]


@operation(access="write", tool="memory_mark_harmful", errors=_FOUND)
def mark_harmful(
    c: Caller, id: Id, reason: Reason = None, *, tenant: Tenant = None
) -> Operation[Rule]:
    """Record that a rule did harm (it weighs four times a success); a rule
    that keeps doing harm is demoted, then inverted into an anti-pattern."""
    return lc.feedback(c.env(tenant), id, False, reason)


@operation(access="write", tool="memory_forget", browser=True, errors=(MemoryNotFoundError,))
def forget(c: Caller, type: Kind, id: Id, *, tenant: Tenant = None) -> Operation[MemoryRecord]:
    """Forget a memory: it is never recalled again, and it stays in the
    history (facts become retracted, rules and episodes forgotten)."""
    return lc.forget(c.env(tenant), type, id)


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
    return lc.update(c.env(tenant), id, content, metadata, tags)


@operation(access="write", browser=True, errors=(MemoryNotFoundError, *_LONG))
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
    return lc.revise(c.env(tenant), id, content)


@operation(access="write")
def delete(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[bool]:
    """Remove a memory for good (its audit events stay); an unknown id is
    not an error."""
    return lc.delete(c.env(tenant), id)


@operation(access="write")
def sweep(c: Caller, *, tenant: Tenant = None) -> Operation[dict[str, int]]:
    """Retire your episodes past their expiry and facts whose confidence faded
    away (they already left recall); returns how many of each."""
    return lc.sweep(c.env(tenant))


BulkItems = Annotated[
    Sequence[str | Mapping[str, Any]],
    Field(description="Notes: text, or objects with content, layer, scope, tags, metadata."),
]


@operation(access="write", cli=False, errors=_LONG)
def bulk_add(
    c: Caller, items: BulkItems, *, layer: LayerName = None, tenant: Tenant = None
) -> Operation[list[Note]]:
    """Add many notes in one store batch (one transaction on this package's
    stores); every item is checked before anything is written.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
        >>> notes = engine.bulk_add(ctx, ["tea", {"content": "a cat", "tags": ["pet"]}])
        >>> engine.bulk_delete(ctx, [notes[0].id, "unknown"]) == [notes[0].id]
        True
    """
    return pv.bulk_add(c.env(tenant), items, layer)


@operation(access="write", cli=False)
def bulk_delete(
    c: Caller,
    ids: Annotated[Sequence[str], Field(description="Ids of the memories to remove.")],
    *,
    tenant: Tenant = None,
) -> Operation[list[str]]:
    """Remove many memories (any kind) in one batch; unknown ids are skipped.
    Returns the ids removed."""
    return pv.bulk_delete(c.env(tenant), ids)


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
