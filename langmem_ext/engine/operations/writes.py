"""The catalogue's operations that create memories: notes, facts, episodes,
rules, and many notes at once (see :mod:`..runtime.catalogue`).

Each function is the declaration of one operation **and** its one body: the
engine's ``store_fact`` / ``astore_fact``, the tool ``memory_store_fact``, the
MCP tool, the command ``langmem-ext memories store-fact`` and every internal
caller (``OPERATIONS["store_fact"].within(env, ...)``) run it, with its
arguments checked once against the declared types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langgraph.store.base import PutOp
from pydantic import Field

from ...errors import ContentTooLongError, InvalidValueError
from ..identity.layers import check_layer
from ..records import policy
from ..records.checks import check_json, shown
from ..records.models import Episode, Fact, Note, Rule, ts
from ..runtime.catalogue import Caller, Meta, Spec, operation
from ..runtime.requests import Batch, Operation
from .fields import add_fields, check_expires_at, check_tags
from .graph import mentions_in
from .knowledge import merge_duplicates
from .lifecycle import check_sources, check_times, new_fact, write_fact
from .params import (
    Category,
    Confidence,
    Content,
    DerivedFrom,
    ExpiresAt,
    Importance,
    InvalidAt,
    LayerName,
    Metadata,
    Object,
    Permanence,
    Scope,
    Tags,
    Tenant,
    Text,
    ValidAt,
)

__all__ = ["add", "bulk_add", "store_episode", "store_fact", "store_rule"]

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
    expires_at: ExpiresAt = None,
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
    env = c.env(tenant)
    check_json("metadata", metadata)
    until = check_expires_at(env, expires_at)
    note = Note(
        **add_fields(env, content, layer, scope, tags),
        metadata=dict(metadata or {}),
        expires_at=until,
    )
    yield Batch([env.put(note), env.event(note, "created")])
    env.sized([note], +1)
    return note


@operation(access="write", tool="memory_store_fact", errors=_LONG)
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
    object: Object = None,
    valid_at: ValidAt = None,
    invalid_at: InvalidAt = None,
    derived_from: DerivedFrom = None,
    expires_at: ExpiresAt = None,
    provenance: Provenance = None,
    tenant: Tenant = None,
) -> Operation[Fact]:
    """Store a fact about a subject; a newer fact with the same subject and
    predicate replaces the older one, which stays in the history. Subject and
    object become entities ("my sister Clara", "Clara" and "Clara Weber" are
    one person).

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> old = engine.store_fact(ctx, "user", "city", "Lives in Berlin", valid_at="2019-06-01")
        >>> new = engine.store_fact(ctx, "user", "city", "Lives in Munich", valid_at="2026-02-01")
        >>> engine.get(ctx, old.id).superseded_by == new.id, engine.get(ctx, old.id).invalid_at
        (True, '2026-02-01T00:00:00.000000+00:00')
    """
    env = c.env(tenant)
    until = check_expires_at(env, expires_at)
    sources = yield from check_sources(env, derived_from)
    fact = new_fact(
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
        valid_at=valid_at,
        invalid_at=invalid_at,
        object=object,
        derived_from=sources,
    )
    fact.expires_at = until
    fact, duplicates = yield from write_fact(env, fact)
    yield from merge_duplicates(env, duplicates)
    return fact


@operation(access="write", tool="memory_store_episode", errors=_LONG)
def store_episode(
    c: Caller,
    content: Text,
    session_id: SessionId = None,
    importance: Importance = None,
    *,
    layer: LayerName = None,
    scope: Scope = "global",
    tags: Tags = None,
    valid_at: Annotated[
        ValidAt, Field(description="When it happened (ISO date or time); default: now.")
    ] = None,
    invalid_at: Annotated[
        InvalidAt, Field(description="When it ended, if it lasted (ISO date or time).")
    ] = None,
    derived_from: DerivedFrom = None,
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
    start, end = check_times(valid_at, invalid_at)
    sources = yield from check_sources(env, derived_from)
    ep = Episode(
        **add_fields(env, content, layer, scope, tags),
        importance=float(policy.EPISODE_IMPORTANCE if importance is None else importance),
        session_id=session_id or env.ctx.session_id,
        expires_at=ts(env.now + env.config.episode_ttl),
        valid_at=start,
        invalid_at=end,
        derived_from=sources,
    )
    ep.mentions = yield from mentions_in(env, ep)
    yield Batch([env.put(ep), env.event(ep, "created")])
    env.sized([ep], +1)
    return ep


@operation(access="write", tool="memory_store_rule", errors=_LONG)
def store_rule(
    c: Caller,
    content: Text,
    *,
    layer: LayerName = None,
    scope: Scope = "global",
    tags: Tags = None,
    derived_from: DerivedFrom = None,
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
    env = c.env(tenant)
    sources = yield from check_sources(env, derived_from)
    rule = Rule(
        **add_fields(env, content, layer, scope, tags),
        importance=policy.RULE_IMPORTANCE,
        last_confirmed_at=env.stamp,
        derived_from=sources,
    )
    rule.mentions = yield from mentions_in(env, rule)
    yield Batch([env.put(rule), env.event(rule, "created")])
    env.sized([rule], +1)
    return rule


BulkItems = Annotated[
    Sequence[str | Mapping[str, Any]],
    Field(description="Notes: text, or objects with content, layer, scope, tags, metadata."),
]
_BULK_KEYS = ("content", "layer", "scope", "tags", "metadata")


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
    env = c.env(tenant)
    notes: list[Note] = []
    for raw in items:
        # The declared type says "text or an object"; what an object may hold
        # is this operation's rule, checked per item before anything is written.
        e = _bulk_entry(raw)
        metadata = e.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidValueError(f"metadata must be a dict, got {type(metadata).__name__}")
        check_json("metadata", metadata)
        scope = e.get("scope", "global")
        if not isinstance(scope, str) or not scope:
            raise InvalidValueError(
                f"scope must be a non-empty string such as 'global', got {shown(scope)}"
            )
        name = check_layer(e.get("layer", layer) or env.config.default_layer)
        fields = add_fields(env, e["content"], name, scope, check_tags(e.get("tags")))
        notes.append(Note(**fields, metadata=dict(metadata or {})))
    if notes:
        ops: list[PutOp] = []
        for n in notes:
            ops += [env.put(n), env.event(n, "created")]
        yield Batch(ops)
        env.sized(notes, +1)
    return notes


def _bulk_entry(item: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(item, str):
        return {"content": item}
    if "content" not in item:
        raise InvalidValueError(
            f"each bulk_add item must be a string or a dict with 'content', got {shown(item)}"
        )
    unknown = set(item) - set(_BULK_KEYS)
    if unknown:
        raise InvalidValueError(
            f"unknown bulk_add keys {sorted(map(shown, unknown))}; use {', '.join(_BULK_KEYS)}"
        )
    return dict(item)


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
