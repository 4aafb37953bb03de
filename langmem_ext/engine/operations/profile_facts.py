"""The profile's facts: the collection rules reflection relies on.

The profile's facts are ordinary engine :class:`~.models.Fact` records in the
caller's ``user`` layer (so recall, search, supersession, decay and audit all
apply to them); what this module adds is how facts are collected:

* ids ``fact_{uuid_hex[:8]}`` and ISO-8601 UTC timestamps;
* a fact under the threshold (default :data:`~.policy.EXTRACTION_THRESHOLD`)
  is skipped and logged;
* a fact whose case-folded content equals an active fact's (or one added
  earlier in the same call) is skipped and logged, the existing fact unchanged;
* a semantic near-duplicate (similarity >= :data:`~.policy.MERGE_SIMILARITY`)
  is merged into the existing fact: its decay clock is reset, its confidence
  becomes the higher of the two and the new provenance is appended;
* a fact naming an existing fact in ``replaces`` (a correction or an update)
  takes that fact's (subject, predicate) slot, so the engine supersedes it;
* a (subject, predicate) slot given without ``replaces`` is evidence only
  when the facts are about the same thing: the new fact keeps the slot (and
  retires the slot's current fact) only if its text similarity
  (:func:`~.scoring.text_similarity`) to every fact holding the slot is at
  least :data:`SLOT_SIMILARITY`; otherwise it gets a slot of its own and the
  mismatch is logged. Of two facts of one call that share a slot and are
  alike, the later is stored and the earlier skipped (``same_slot``);
* ``update_fact`` changes only the fields given (``created_at`` never moves)
  and ``delete_fact`` removes a fact; both raise ``KeyError``
  (:class:`~langmem_ext.errors.FactNotFoundError`) for an unknown id.

**The cap.** A profile keeps at most ``max_facts`` (default
:data:`~.policy.MAX_PROFILE_FACTS`) active *reflection* facts: facts whose
``provenance["source"]`` is :data:`REFLECTION_SOURCE`, which only reflection
writes. When an ``add_facts`` call leaves more, the lowest-confidence existing
ones (the oldest first among equals) are *archived*: validity ``evicted``,
moved to the layer's archive namespace with an ``evicted`` audit event (reason
``max_facts``) in the same batch, so ``get`` still finds them and ``history``
lists them. Facts a user or a program stored on purpose (``store_fact``,
``add_fact`` without that provenance, the memory tools, the browser, MCP and
the CLI) are never evicted and do not count against the cap: a cap exists to
bound what a model extracts on its own, not to discard what someone chose to
keep. The facts a call adds are always kept.

Fact ids are checked before they are written: an id already used in the
user's space or archive is drawn again, so a new fact never overwrites another
(``BaseStore`` has no compare-and-set: the check and the write are two steps,
and 8 hex digits give 4 billion ids per user, so a clash in between would need
two writers drawing the same id for one user in the same instant).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
    >>> kept = engine.add_fact(ctx, "Passport number X1234567", "context", 0.6)
    >>> ref = {"source": REFLECTION_SOURCE}
    >>> old = engine.add_fact(ctx, "Likes jazz", "preference", 0.7, provenance=ref)
    >>> new = engine.add_fact(ctx, "Plays chess", "preference", 0.9, max_facts=1,
    ...                       provenance=ref)
    >>> sorted(f.content for f in engine.get_profile(ctx).facts)
    ['Passport number X1234567', 'Plays chess']
    >>> engine.get(ctx, old.id).validity, [e.action for e in engine.history(ctx, old.id)]
    ('evicted', ['created', 'evicted'])
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.store.base import PutOp, SearchOp

from ...errors import FactNotFoundError, InvalidValueError
from ...stores import HybridSearchOp
from ..records import policy
from ..records.checks import check_number, shown
from ..records.models import Fact
from ..records.scoring import best_first, text_similarity
from ..runtime.env import Env, Layer
from ..runtime.requests import Batch, Operation
from .fields import add_fields, check_content
from .lifecycle import change, check_times, records_of, slot_of
from .loading import load, refuse_damaged

__all__ = [
    "MERGED_SOURCES",
    "PROFILE_LAYER",
    "REFLECTION_SOURCE",
    "SLOT_SIMILARITY",
    "FactCandidate",
    "ProfileUpdate",
    "SkippedFact",
    "active_facts",
    "check_candidate",
    "check_category",
    "evict",
    "near_duplicates",
    "normalise",
    "ordered",
    "profile_fact",
    "profile_layer",
    "reflected",
    "require_fact",
    "slots_with_evidence",
]

logger = logging.getLogger("langmem_ext.profile")

PROFILE_LAYER = "user"
#: ``provenance["source"]`` of the facts reflection extracts (see :func:`reflected`).
REFLECTION_SOURCE = "reflection"
#: How many merge sources a fact's provenance keeps.
MERGED_SOURCES = 10
#: A slot retires its current fact only for a new fact at least this similar
#: to it (character ratio of the case-folded texts). "Lives in Berlin" and
#: "Lives in Munich" score 0.67, "Works at a bakery" and "Works at a bookshop"
#: 0.72; unrelated facts a model put in one invented slot ("Lives in Berlin",
#: "Works as a nurse in a children's hospital") 0.25. Embedding similarity is
#: not used here: small embedders score unrelated short facts (0.73-0.79 with
#: multilingual-e5-small) too close to related ones (0.83-0.88).
SLOT_SIMILARITY = 0.5


@dataclass(frozen=True)
class FactCandidate:
    """A fact to add to the profile (what extraction produces).

    ``subject``/``predicate`` (optional) name the engine slot: a later fact for
    the same pair supersedes this one. ``replaces`` is the id of an existing
    fact this one corrects or updates.
    """

    content: str
    category: str
    confidence: float
    subject: str | None = None
    predicate: str | None = None
    replaces: str | None = None
    #: When it started / stopped holding in the world (ISO text or a datetime).
    valid_at: Any = None
    invalid_at: Any = None
    #: What the subject relates to ("Lisbon" for lives_in), when it is a thing.
    object: str | None = None
    #: How its time was read (phrase, label, source, a disagreement): kept in
    #: the fact's provenance as ``when``.
    when: dict[str, Any] | None = None


@dataclass(frozen=True)
class SkippedFact:
    """A candidate that was not stored, and why (``low_confidence``,
    ``duplicate`` or ``same_slot``)."""

    content: str
    reason: str
    confidence: float


@dataclass
class ProfileUpdate:
    """What one :meth:`MemoryEngine.add_facts` call did."""

    added: list[Fact] = field(default_factory=list)
    merged: list[Fact] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    skipped: list[SkippedFact] = field(default_factory=list)
    #: Reflection facts archived over ``max_facts`` (validity ``evicted``).
    removed: list[str] = field(default_factory=list)


def normalise(text: str) -> str:
    """Case-folded content with runs of white space folded (duplicate key)."""
    return " ".join(text.casefold().split())


def check_category(category: Any) -> str:
    if not isinstance(category, str) or category not in policy.FACT_CATEGORIES:
        raise InvalidValueError(
            f"unknown fact category {shown(category)}; "
            f"use one of {', '.join(policy.FACT_CATEGORIES)}",
            category=shown(category),
        )
    return str(category)


def check_candidate(env: Env, c: FactCandidate | Mapping[str, Any]) -> FactCandidate:
    if isinstance(c, Mapping):
        unknown = set(c) - set(FactCandidate.__dataclass_fields__)
        if unknown:
            raise InvalidValueError(f"unknown fact fields {sorted(map(shown, unknown))}")
        try:
            c = FactCandidate(**c)
        except TypeError as e:
            raise InvalidValueError(f"a fact needs content, category and confidence: {e}") from e
    if not isinstance(c, FactCandidate):
        raise InvalidValueError(
            f"each fact must be a dict with content, category and confidence, got {shown(c)}"
        )
    check_content(env, c.content)
    check_category(c.category)
    check_number("confidence", c.confidence, *policy.CONFIDENCE_RANGE)
    for name in ("subject", "predicate", "replaces", "object"):
        v = getattr(c, name)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise InvalidValueError(f"{name} must be a non-empty string or None, got {shown(v)}")
    start, end = check_times(c.valid_at, c.invalid_at)
    return replace(c, valid_at=start, invalid_at=end)


def ordered(facts: list[Fact]) -> list[Fact]:
    return best_first(facts, lambda f: f.confidence, lambda f: f.created_at, lambda f: f.id)


def profile_layer(env: Env) -> Layer:
    """The profile's layer (MISSING_IDENTIFIER without a user)."""
    return env.layer(PROFILE_LAYER)


def active_facts(env: Env) -> Operation[list[Fact]]:
    """The caller's current profile facts, in profile order."""
    records = yield from records_of(env, profile_layer(env), ("fact",))
    return ordered([r for r in records if isinstance(r, Fact)])


def near_duplicates(
    env: Env, candidates: list[FactCandidate], existing: list[Fact]
) -> Operation[list[Fact | None]]:
    """For each candidate, the active fact it nearly duplicates, if any."""
    if not existing or not candidates:
        return [None] * len(candidates)
    if env.caps.embeds:
        # One vector search per candidate, in one batch: the store compares
        # against its stored vectors, nothing already stored is embedded again.
        ns, flt = profile_layer(env).ns, {"kind": "fact"}
        ops: list[Any] = [
            HybridSearchOp(ns, flt, 3, 0, c.content, False, "vector")
            if env.caps.modes
            else SearchOp(ns, flt, 3, 0, c.content, False)
            for c in candidates
        ]
        results = yield Batch(ops)
        by_id = {f.id: f for f in existing}
        out: list[Fact | None] = []
        for found in results:
            hits = [h for h in found if tuple(h.namespace) == ns]
            top = hits[0] if hits else None
            near = (
                top is not None
                and top.score is not None
                and top.score >= policy.MERGE_SIMILARITY
                and top.key in by_id
            )
            out.append(by_id[top.key] if near and top is not None else None)
        return out
    best: list[Fact | None] = []
    for c in candidates:
        scored = [(text_similarity(c.content, f.content), f) for f in existing]
        sim, f = max(scored, key=lambda x: x[0])
        best.append(f if sim >= policy.MERGE_SIMILARITY else None)
    return best


def slots_with_evidence(
    fresh: list[FactCandidate],
    existing: list[Fact],
    by_id: dict[str, Fact],
    out: ProfileUpdate,
) -> list[FactCandidate]:
    """The candidates with each model-given slot kept only where the facts
    sharing it are about the same thing (see :data:`SLOT_SIMILARITY`)."""
    holders: dict[tuple[str, str], list[Fact | FactCandidate]] = {}
    for f in existing:
        holders.setdefault((f.subject, f.predicate), []).append(f)
    kept: list[FactCandidate | None] = []
    for c in fresh:
        if not c.predicate or (c.replaces and c.replaces in by_id):
            kept.append(c)
            continue
        key = (c.subject or "user", c.predicate)
        others = holders.get(key, [])
        if any(text_similarity(c.content, o.content) < SLOT_SIMILARITY for o in others):
            logger.info(
                "slot %s/%s given without evidence (unlike its facts): %r gets its own slot",
                key[0],
                key[1],
                c.content[:200],
            )
            kept.append(replace(c, predicate=None))
            continue
        # An alike fact of this same call in the slot: the later one says it.
        for i, k in enumerate(kept):
            if k is not None and k in others:
                logger.info("skipped %r: a later fact of the same call takes its slot", k.content)
                out.skipped.append(SkippedFact(k.content, "same_slot", k.confidence))
                kept[i] = None
        holders.setdefault(key, []).append(c)
        kept.append(c)
    return [k for k in kept if k is not None]


def profile_fact(
    env: Env, c: FactCandidate, replaced: Fact | None, prov: dict[str, Any], fact_id: str
) -> Fact:
    fields = add_fields(env, c.content, PROFILE_LAYER, "global", None)
    fields["id"] = fact_id
    if replaced is not None:
        subject, predicate = replaced.subject, replaced.predicate
    else:
        # Without a named slot a fact is its own slot: nothing supersedes it by accident.
        subject, predicate = c.subject or "user", c.predicate or fields["id"]
    return Fact(
        **fields,
        subject=subject,
        predicate=predicate,
        slot=slot_of(f"{fields['layer']}:{fields['layer_id']}", subject, predicate),
        category=c.category,
        confidence=float(c.confidence),
        last_confirmed_at=env.stamp,
        provenance={
            **prov,
            **({"replaces": replaced.id} if replaced is not None else {}),
            **({"when": dict(c.when)} if c.when else {}),
        },
        valid_at=c.valid_at,
        invalid_at=c.invalid_at,
        object=c.object.strip() if c.object else None,
    )


def reflected(fact: Fact) -> bool:
    """Whether reflection made ``fact`` (its provenance says so): the only facts
    the profile cap counts and may move out.

    Examples:
        >>> from langmem_ext.engine import Fact
        >>> f = Fact(id="f", tenant_id="t", layer="user", layer_id="u", content="x")
        >>> reflected(f), reflected(replace(f, provenance={"source": "reflection"}))
        (False, True)
    """
    return fact.provenance.get("source") == REFLECTION_SOURCE


def evict(
    env: Env, existing: list[Fact], out: ProfileUpdate, max_facts: int
) -> Operation[list[str]]:
    """Archive the lowest-confidence reflection facts over ``max_facts`` (the new
    facts are always kept; facts stored on purpose neither count nor go)."""
    gone = set(out.superseded)
    latest = {f.id: f for f in existing} | {f.id: f for f in out.merged}
    survivors = [f for f in latest.values() if f.id not in gone and reflected(f)]
    excess = len(survivors) + sum(1 for f in out.added if reflected(f)) - max_facts
    if excess <= 0:
        return []
    # Lowest confidence first; among equals the oldest goes first.
    victims = sorted(survivors, key=lambda f: (f.confidence, f.created_at, f.id))[:excess]
    puts: list[PutOp] = []
    for f in victims:
        logger.info(
            "archived reflection fact %s (confidence %.2f): over max_facts=%d",
            f.id,
            f.confidence,
            max_facts,
        )
        retired = replace(f, validity="evicted", live=False, valid_to=env.stamp)
        puts += change(env, f, retired, "evicted", reason="max_facts")[1]
    yield Batch(puts)
    env.sized(victims, -1)
    return [f.id for f in victims]


def require_fact(env: Env, id: str) -> Operation[Fact]:
    record = yield from load(env, ["fact"], id, archived=False)
    if record is not None:
        refuse_damaged(record)
    if not isinstance(record, Fact):
        raise FactNotFoundError(f"no fact with id {shown(id)} in this profile", id=id)
    return record
