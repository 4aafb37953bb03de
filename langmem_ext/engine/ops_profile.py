"""The catalogue's user-profile operations (see :mod:`.catalogue` and :mod:`.profile`):
the facts reflection collects, and the user's summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field

from ..errors import FactNotFoundError
from . import policy
from . import profile as pf
from .catalogue import Caller, Meta, Spec, operation
from .models import Fact
from .params import Category, Id, Tenant, Text
from .profile import FactCandidate, Profile, ProfileUpdate
from .requests import Operation

__all__ = [
    "add_fact",
    "add_facts",
    "delete_fact",
    "get_profile",
    "update_fact",
    "update_profile",
]

Threshold = Annotated[
    float,
    Field(ge=0, le=1, strict=True, description="Facts less sure than this are skipped (0.5)."),
]
MaxFacts = Annotated[
    int,
    Field(ge=1, le=10**9, strict=True, description="Most facts reflection keeps per profile."),
]
Provenance = Annotated[
    Mapping[str, Any] | None,
    Field(description="Where the facts come from (message ids)."),
    Meta(internal=True),
]
Sure = Annotated[
    float,
    Field(ge=0, le=1, strict=True, allow_inf_nan=False, description="How sure, from 0 to 1."),
]


@operation(access="read", cli="profile")
def get_profile(c: Caller, *, tenant: Tenant = None) -> Operation[Profile]:
    """Your profile: the summary (user context and history), your current
    facts (most confident first) and notes."""
    return pf.get_profile(c.env(tenant))


Section = Annotated[Mapping[str, str] | None, Field(description="Entries to set; '' removes one.")]


@operation(access="write", cli=False)
def update_profile(
    c: Caller,
    *,
    user_context: Section = None,
    history: Section = None,
    tenant: Tenant = None,
) -> Operation[Profile]:
    """Merge summary entries: ``user_context`` keys ``work``, ``personal``,
    ``top_of_mind``; ``history`` keys ``recent``, ``earlier``, ``background``
    (an empty string removes an entry)."""
    return pf.update_profile(c.env(tenant), user_context, history)


@operation(access="write", cli=False)
def add_facts(
    c: Caller,
    facts: Annotated[
        Sequence[FactCandidate | Mapping[str, Any]],
        Field(description="Facts with content, category and confidence."),
    ],
    *,
    threshold: Threshold = policy.EXTRACTION_THRESHOLD,
    max_facts: MaxFacts = policy.MAX_PROFILE_FACTS,
    provenance: Provenance = None,
    tenant: Tenant = None,
) -> Operation[ProfileUpdate]:
    """Add facts to your profile as reflection does: facts under the threshold
    and case-folded duplicates skipped (and logged), near-duplicates merged,
    ``replaces`` superseded.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
        >>> done = engine.add_facts(ctx, [
        ...     {"content": "Lives in Berlin", "category": "context", "confidence": 0.9},
        ...     {"content": "lives in berlin", "category": "context", "confidence": 0.9},
        ...     {"content": "Maybe likes jazz", "category": "preference", "confidence": 0.2}])
        >>> len(done.added), [s.reason for s in done.skipped]
        (1, ['duplicate', 'low_confidence'])
    """
    return pf.add_facts(
        c.env(tenant), facts, threshold=threshold, max_facts=max_facts, provenance=provenance
    )


@operation(access="write", cli=False)
def add_fact(
    c: Caller,
    content: Text,
    category: Annotated[str, Field(description="preference, knowledge, context, behavior, …")],
    confidence: Sure,
    *,
    subject: Annotated[str | None, Field(description="Who or what it is about.")] = None,
    predicate: Annotated[str | None, Field(description="Which attribute.")] = None,
    replaces: Annotated[str | None, Field(description="Id of the fact it corrects.")] = None,
    threshold: Threshold = policy.EXTRACTION_THRESHOLD,
    max_facts: MaxFacts = policy.MAX_PROFILE_FACTS,
    provenance: Provenance = None,
    tenant: Tenant = None,
) -> Operation[Fact | None]:
    """Add one fact to your profile (id ``fact_xxxxxxxx``): the new fact, the
    fact it was merged into, or None when it was skipped."""
    c_ = FactCandidate(content, category, confidence, subject, predicate, replaces)
    done = yield from pf.add_facts(
        c.env(tenant), [c_], threshold=threshold, max_facts=max_facts, provenance=provenance
    )
    kept = done.added or done.merged
    return kept[0] if kept else None


@operation(access="write", cli=False, browser=True, errors=(FactNotFoundError,))
def update_fact(
    c: Caller,
    id: Id,
    *,
    content: Annotated[Text | None, Field(description="New text.")] = None,
    category: Category = None,
    confidence: Annotated[Sure | None, Field(description="New confidence, 0 to 1.")] = None,
    tenant: Tenant = None,
) -> Operation[Fact]:
    """Change only the given fields of a fact, in place (``created_at``
    stays); an unknown id is a ``KeyError``."""
    return pf.update_fact(c.env(tenant), id, content, category, confidence)


@operation(access="write", cli=False, errors=(FactNotFoundError,))
def delete_fact(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[None]:
    """Remove a profile fact; unlike ``delete``, an unknown id is a ``KeyError``."""
    return pf.delete_fact(c.env(tenant), id)


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
