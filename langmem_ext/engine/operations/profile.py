"""The user profile: a summary (user context and history), the user's facts
and the user's notes.

The facts are the user's engine facts, collected under the rules of
:mod:`.profile_facts` (duplicates skipped, near-duplicates merged,
corrections superseding, at most ``max_facts`` reflection facts with the
lowest-confidence ones archived over it; facts stored on purpose are always
kept); this module declares the profile's operations.

The profile also lists the user's notes (what the agent saved with the memory
tools), so the prompt block shows everything the agent remembers. The summary
lives in the user's ``profile`` bookkeeping namespace (see :mod:`.layout`); a
summary another program wrote with sections that are not objects reads as
empty sections (logged), never as an error.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
    >>> fact = engine.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    >>> fact.id.startswith("fact_"), engine.add_fact(ctx, "prefers DARK mode", "preference", 0.8)
    (True, None)
    >>> engine.add_fact(ctx, "Might like jazz", "preference", 0.3) is None
    True
    >>> [f.content for f in engine.get_profile(ctx).facts]
    ['Prefers dark mode']
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from langgraph.store.base import GetOp, PutOp
from pydantic import Field

from ...errors import DamagedMemoryError, FactNotFoundError, InvalidValueError
from ..records import policy
from ..records.checks import check_json, shown
from ..records.decode import warn_once
from ..records.models import Fact, Note
from ..runtime.catalogue import Caller, Meta, Spec, operation
from ..runtime.requests import Batch, Operation
from .fields import check_content
from .graph import link_facts, settle_entities
from .knowledge import merge_duplicates
from .lifecycle import change, records_of, resolve_slot
from .loading import free_fact_ids
from .params import Category, Id, Tenant, Text
from .profile_facts import (
    MERGED_SOURCES,
    REFLECTION_SOURCE,
    FactCandidate,
    ProfileUpdate,
    SkippedFact,
    active_facts,
    check_candidate,
    evict,
    near_duplicates,
    normalise,
    ordered,
    profile_fact,
    profile_layer,
    require_fact,
    slots_with_evidence,
)

__all__ = [
    "CONTEXT_KEYS",
    "HISTORY_KEYS",
    "Profile",
    "add_fact",
    "add_facts",
    "delete_fact",
    "get_profile",
    "update_fact",
    "update_profile",
]

logger = logging.getLogger("langmem_ext.profile")


#: Keys of the profile's ``user_context`` and ``history`` (its
#: work / personal / topOfMind and recent / earlier / background).
CONTEXT_KEYS: tuple[str, ...] = ("work", "personal", "top_of_mind")
HISTORY_KEYS: tuple[str, ...] = ("recent", "earlier", "background")


@dataclass
class Profile:
    """The profile's memory data: ``user_context``, ``history`` and ``facts``
    (active facts of the user's layer, confidence desc, then newest first),
    plus ``notes``: what the agent saved with the memory tools, newest first."""

    user_id: str
    user_context: dict[str, str] = field(default_factory=dict)
    history: dict[str, str] = field(default_factory=dict)
    facts: list[Fact] = field(default_factory=list)
    updated_at: str | None = None
    notes: list[Note] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (facts with ``id``, ``content``, ``category``,
        ``confidence``, ``createdAt``, ``updatedAt``)."""
        return {
            "user_id": self.user_id,
            "user_context": dict(self.user_context),
            "history": dict(self.history),
            "facts": [
                {
                    "id": f.id,
                    "content": f.content,
                    "category": f.category,
                    "confidence": f.confidence,
                    "createdAt": f.created_at,
                    "updatedAt": f.updated_at,
                }
                for f in self.facts
            ],
            "notes": [
                {"id": n.id, "content": n.content, "kind": n.kind, "createdAt": n.created_at}
                for n in self.notes
            ],
            "updated_at": self.updated_at,
        }


def _summary(item: Any) -> tuple[dict[str, Any], str | None]:
    """The stored summary and what is wrong with it (None: nothing). Sections
    must be objects of text; another program may have written anything."""
    value = item.value if item is not None else {}
    if not isinstance(value, dict):
        return {}, f"the stored value is a {type(value).__name__}, not an object"
    for name in ("user_context", "history"):
        section = value.get(name)
        if section is not None and (
            not isinstance(section, dict) or not all(isinstance(v, str) for v in section.values())
        ):
            return value, f"{name} must be an object of text, got {shown(section)}"
    return value, None


def _section(value: dict[str, Any], name: str) -> dict[str, str]:
    section = value.get(name)
    if not isinstance(section, dict):
        return {}
    return {k: v for k, v in section.items() if isinstance(v, str)}


def _check_section(name: str, keys: tuple[str, ...], given: Any) -> dict[str, str]:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise InvalidValueError(f"{name} must be a dict with keys {', '.join(keys)}")
    bad = [k for k in given if k not in keys]
    if bad:
        raise InvalidValueError(f"unknown {name} keys {shown(bad)}; use {', '.join(keys)}")
    for k, v in given.items():
        if not isinstance(v, str):
            raise InvalidValueError(f"{name}[{shown(k)}] must be a string, got {type(v).__name__}")
    return dict(given)


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
    env = c.env(tenant)
    layer = profile_layer(env)
    [item] = yield Batch([GetOp(env.meta(layer, "profile"), "profile")])
    current = yield from records_of(env, layer, ("fact", "note"))
    facts = ordered([r for r in current if isinstance(r, Fact)])
    notes: list[Note] = sorted(
        (r for r in current if isinstance(r, Note)), key=lambda n: (n.created_at, n.id)
    )[::-1]
    value, problem = _summary(item)
    if problem:
        warn_once(item, "profile summary of %s is damaged (%s); read as empty", layer.id, problem)
    updated = value.get("updated_at")
    return Profile(
        user_id=layer.id,
        user_context=_section(value, "user_context"),
        history=_section(value, "history"),
        facts=facts,
        updated_at=updated if isinstance(updated, str) else None,
        notes=notes,
    )


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
    env = c.env(tenant)
    ctx_part = _check_section("user_context", CONTEXT_KEYS, user_context)
    hist_part = _check_section("history", HISTORY_KEYS, history)
    ns = env.meta(profile_layer(env), "profile")
    [item] = yield Batch([GetOp(ns, "profile")])
    value, problem = _summary(item)
    if problem:
        raise DamagedMemoryError(
            f"the stored profile summary is damaged ({problem}); merging into it would drop "
            "what cannot be read. Rewrite or delete the item 'profile' of the user's profile "
            "namespace in the store first",
            reason=problem,
        )
    value = dict(value)
    merged: dict[str, Any] = {
        "user_context": {**(value.get("user_context") or {}), **ctx_part},
        "history": {**(value.get("history") or {}), **hist_part},
    }
    for section in merged.values():
        for k in [k for k, v in section.items() if not v]:
            del section[k]
    merged["updated_at"] = env.stamp
    yield Batch([PutOp(ns, "profile", merged, False)])
    return (yield from get_profile.within(env))


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
    # Every candidate is checked before anything is written.
    env = c.env(tenant)
    checked = [check_candidate(env, f) for f in facts]
    check_json("provenance", provenance)
    prov = dict(provenance or {})
    out = ProfileUpdate()
    existing = yield from active_facts(env)
    seen = {normalise(f.content) for f in existing}
    by_id = {f.id: f for f in existing}
    fresh: list[FactCandidate] = []
    for cand in checked:
        if cand.confidence < threshold:
            logger.info(
                "skipped low-confidence fact (%.2f < %.2f): %r",
                cand.confidence,
                threshold,
                cand.content,
            )
            out.skipped.append(SkippedFact(cand.content, "low_confidence", cand.confidence))
        elif normalise(cand.content) in seen:
            logger.info("skipped duplicate fact: %r", cand.content)
            out.skipped.append(SkippedFact(cand.content, "duplicate", cand.confidence))
        else:
            seen.add(normalise(cand.content))
            fresh.append(cand)
    fresh = slots_with_evidence(fresh, existing, by_id, out)
    plain = [cand for cand in fresh if not (cand.replaces and cand.replaces in by_id)]
    nears = yield from near_duplicates(env, plain, existing)
    near_of = {id(cand): n for cand, n in zip(plain, nears)}
    puts: list[PutOp] = []
    merged: dict[str, Fact] = {}
    slots: list[str] = []
    slotted: set[str] = set()
    new_count = sum(1 for cand in fresh if near_of.get(id(cand)) is None)
    ids = yield from free_fact_ids(env, profile_layer(env), new_count)
    for cand in fresh:
        near = near_of.get(id(cand))
        if near is not None:
            base = merged.get(near.id, near)
            # The last few sources only: a fact restated every day must not grow forever.
            sources = [*base.provenance.get("merged", []), prov][-MERGED_SOURCES:]
            merged[near.id] = replace(
                base,
                confidence=max(base.confidence, cand.confidence),
                last_confirmed_at=env.stamp,
                provenance={**base.provenance, "merged": sources},
            )
            logger.info("merged near-duplicate fact into %s: %r", near.id, cand.content)
            continue
        fact = profile_fact(env, cand, by_id.get(cand.replaces or ""), prov, ids.pop())
        out.added.append(fact)
        if cand.subject or cand.predicate or (cand.replaces and cand.replaces in by_id):
            slotted.add(fact.id)
    # Subjects and objects become entities; a fact's slot follows its subject's.
    out.added, entity_puts, duplicates = yield from link_facts(
        env, out.added, infer_sources=prov.get("source") == REFLECTION_SOURCE
    )
    # A correction takes the slot of the fact it replaces, whatever its subject was called.
    out.added = [
        replace(f, slot=by_id[f.provenance["replaces"]].slot)
        if f.provenance.get("replaces") in by_id
        else f
        for f in out.added
    ]
    puts += entity_puts
    for fact in out.added:
        puts += [env.put(fact), env.event(fact, "created")]
        if fact.id in slotted:
            slots.append(fact.slot)
    for fid, new in merged.items():
        done, ops = change(env, by_id[fid], new, "merged")
        out.merged.append(done)
        puts += ops
    if puts:
        yield Batch(puts)
        yield from settle_entities(env, entity_puts)
        env.sized(out.added, +1)
    layer = profile_layer(env)
    for slot in dict.fromkeys(slots):
        out.superseded += yield from resolve_slot(env, layer, slot)
    out.removed = yield from evict(env, existing, out, max_facts)
    yield from merge_duplicates(env, duplicates)
    return out


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
    candidate = FactCandidate(content, category, confidence, subject, predicate, replaces)
    done = yield from add_facts.within(
        c.env(tenant), [candidate], threshold=threshold, max_facts=max_facts, provenance=provenance
    )
    kept = done.added or done.merged
    return kept[0] if kept else None


@operation(access="write", cli=False, errors=(FactNotFoundError,))
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
    env = c.env(tenant)
    if content is not None:
        check_content(env, content)
    old = yield from require_fact(env, id)
    new = replace(
        old,
        content=old.content if content is None else content,
        category=old.category if category is None else category,
        confidence=old.confidence if confidence is None else float(confidence),
    )
    new, puts = change(env, old, new, "updated")
    yield Batch(puts)
    return new


@operation(access="write", cli=False, errors=(FactNotFoundError,))
def delete_fact(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[None]:
    """Remove a profile fact; unlike ``delete``, an unknown id is a ``KeyError``."""
    env = c.env(tenant)
    old = yield from require_fact(env, id)
    yield Batch([PutOp(env.layer_of(old).ns, old.id, None), env.event(old, "deleted")])
    env.sized([old], -1)
    return None


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
