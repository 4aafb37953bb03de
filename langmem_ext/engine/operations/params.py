"""The parameters memory operations share, each described once: its type,
its allowed values or range, and the one line every surface shows (the agent
tool's and MCP tool's schema, ``--help`` of the command, the browser's form).

A concept has one name everywhere: ``query`` (what to look for), ``id`` (a
memory's id), ``type``/``types`` (kind of memory), ``scope``, ``tags``,
``tenant`` (``tenant_id`` on tools).

Examples:
    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(Importance).json_schema()["anyOf"][0]
    {'maximum': 10.0, 'minimum': 0.0, 'type': 'number'}
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from ...errors import InvalidLayerError, InvalidMemoryTypeError
from ...stores import OPERATORS
from ..identity.layers import LAYERS
from ..records.policy import (
    CONFIDENCE_RANGE,
    DECAY_RATES,
    FACT_CATEGORIES,
    IMPORTANCE_RANGE,
    MEMORY_TYPES,
)
from ..runtime.catalogue import Meta

__all__ = [
    "AsOf",
    "Category",
    "Confidence",
    "Content",
    "DerivedFrom",
    "ExpiresAt",
    "Filter",
    "Id",
    "Importance",
    "InvalidAt",
    "Kind",
    "Kinds",
    "LayerName",
    "LayerNames",
    "Metadata",
    "Mode",
    "Object",
    "Permanence",
    "Query",
    "Scope",
    "ScopeFilter",
    "Tags",
    "Tenant",
    "Text",
    "ValidAt",
    "ValidDuring",
]

KindName = Literal["note", "fact", "episode", "rule"]
Layer = Literal["agent", "user", "session", "project", "team", "org", "company"]
PermanenceName = Literal["permanent", "stable", "standard", "volatile", "ephemeral"]
CategoryName = Literal["preference", "knowledge", "context", "behavior", "goal", "correction"]
# Spelled out for type checkers; the engine's own tables are the reference.
assert get_args(Layer) == LAYERS and get_args(KindName) == MEMORY_TYPES
assert get_args(PermanenceName) == tuple(DECAY_RATES)
assert get_args(CategoryName) == FACT_CATEGORIES

#: Text a memory says (never empty or only blanks; the length limit is the engine's).
Text = Annotated[str, Field(pattern=r"\S", description="What the memory says, in plain words.")]
#: A note's content: text, or a JSON object or list for structured memories.
Content = Annotated[
    str | dict[str, Any] | list[Any],
    Field(description="What to remember: text, or a JSON object for a structured memory."),
]
Id = Annotated[
    str,
    Field(min_length=1, description="The memory's id, as search results and listings give it."),
]
Kind = Annotated[
    KindName,
    Field(description="The kind of memory: note, fact, episode or rule."),
    Meta(error=InvalidMemoryTypeError, what="memory type"),
]
Kinds = Annotated[
    list[KindName] | None,
    Field(description="Only these kinds of memory (note, fact, episode, rule); default: all."),
    Meta(error=InvalidMemoryTypeError, what="memory type"),
]
LayerName = Annotated[
    Layer | None,
    Field(
        description="The memory layer: user (default), session, agent, project, team, org "
        "or company."
    ),
    Meta(error=InvalidLayerError, what="memory layer"),
]
LayerNames = Annotated[
    list[Layer] | None,
    Field(description="Only these memory layers; default: every layer you can read."),
    Meta(error=InvalidLayerError, what="memory layer"),
]
Scope = Annotated[
    str,
    Field(
        pattern=r"\S",
        description="A topic area the memory belongs to, e.g. 'health'; 'global' for all.",
    ),
]
ScopeFilter = Annotated[
    str | None,
    Field(pattern=r"\S", description="Only memories of this scope and of 'global'."),
]
Tags = Annotated[list[str] | None, Field(description="Labels to find the memory by.")]
Importance = Annotated[
    float | None,
    Field(
        ge=IMPORTANCE_RANGE[0],
        le=IMPORTANCE_RANGE[1],
        strict=True,
        allow_inf_nan=False,
        description="How important it is, from 0 to 10 (default 5).",
    ),
]
Confidence = Annotated[
    float | None,
    Field(
        ge=CONFIDENCE_RANGE[0],
        le=CONFIDENCE_RANGE[1],
        strict=True,
        allow_inf_nan=False,
        description="How sure it is, from 0 to 1 (default 1).",
    ),
]
Permanence = Annotated[
    PermanenceName | None,
    Field(
        description="How long it stays true: permanent, stable (about a year), standard "
        "(default, about 10 weeks), volatile (2 weeks) or ephemeral (a few days)."
    ),
    Meta(what="permanence"),
]
Category = Annotated[
    CategoryName | None,
    Field(
        description="What sort of fact: preference, knowledge, context, behavior, goal or "
        "correction."
    ),
    Meta(what="category"),
]
Query = Annotated[str, Field(description="What to look for, in natural language.")]
Mode = Annotated[
    Literal["hybrid", "vector", "keyword"] | None,
    Field(
        description="How to rank: hybrid (meaning and words, default), vector (meaning) or "
        "keyword (words; only memories containing them)."
    ),
    Meta(what="search mode"),
]
Filter = Annotated[
    dict[str, Any] | None,
    Field(
        description="Conditions on stored fields, e.g. {'category': 'preference'} or "
        f"{{'importance': {{'$gte': 7}}}}; operators {', '.join(OPERATORS)}."
    ),
]
Metadata = Annotated[
    dict[str, Any] | None, Field(description="Extra fields to keep with the memory (JSON).")
]
Tenant = Annotated[
    str | None,
    Field(
        min_length=1,
        description="Admins only: the tenant to act in; another tenant needs an elevated admin.",
    ),
    Meta(admin=True),
]

#: A moment in the world: an ISO-8601 date ('2026-03-10') or time with a zone
#: ('2026-03-10T09:00:00+00:00'), or a ``datetime`` with a zone (zone and
#: range, 1900-2200, are checked by the operation: see ``records/times.py``).
# Strict: a number is never read as a time (JSON's 2026 would be 1970 + 2026 s).
Moment = (
    Annotated[datetime, Field(strict=True)]
    | Annotated[date, Field(strict=True)]
    | Annotated[str, Field(strict=True)]
)
ValidAt = Annotated[
    Moment | None,
    Field(
        description="When it started to hold in the world, as an ISO date or time with a zone "
        "('2026-03-10'); leave out when unknown."
    ),
]
InvalidAt = Annotated[
    Moment | None,
    Field(
        description="When it stopped holding in the world (ISO date or time with a zone); "
        "leave out while it holds or when unknown."
    ),
]
ExpiresAt = Annotated[
    Moment | None,
    Field(
        description="When it stops being recalled, as an ISO date or time with a zone "
        "('2027-06-30', the end of a contract); leave out for never."
    ),
]
Object = Annotated[
    str | None,
    Field(
        pattern=r"\S",
        description="What the subject relates to, when it is a person, place or thing "
        "(lives_in -> 'Lisbon'); it becomes an entity like the subject.",
    ),
]
DerivedFrom = Annotated[
    list[str] | None,
    Field(
        description="Ids of your memories this one follows from; when one of them is replaced "
        "or forgotten, this one is marked stale."
    ),
]
AsOf = Annotated[
    Moment | None,
    Field(
        description="Only what held at this moment (ISO date or time with a zone), replaced "
        "facts included: 'where did I live in 2024?'."
    ),
]
ValidDuring = Annotated[
    tuple[Moment | None, Moment | None] | None,
    Field(
        description="Only what held at some time in [start, end) (ISO dates or times; either "
        "may be null for open)."
    ),
]
