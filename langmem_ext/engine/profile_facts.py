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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.store.base import PutOp, SearchOp

from ..errors import FactNotFoundError, InvalidValueError
from ..stores import HybridSearchOp
from . import policy
from .checks import check_int, check_json, check_mapping, shown
from .env import (
    Env,
    Layer,
    add_fields,
    check_content,
    check_range,
    free_fact_ids,
    load,
    refuse_damaged,
)
from .lifecycle import change, records_of, resolve_slot, slot_of
from .models import Fact
from .requests import Batch, Operation
from .scoring import best_first, text_similarity

__all__ = [
    "PROFILE_LAYER",
    "REFLECTION_SOURCE",
    "FactCandidate",
    "ProfileUpdate",
    "SkippedFact",
    "active_facts",
    "add_facts",
    "delete_fact",
    "reflected",
    "update_fact",
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


def _check_candidate(env: Env, c: FactCandidate | Mapping[str, Any]) -> FactCandidate:
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
    check_range("confidence", c.confidence, policy.CONFIDENCE_RANGE)
    for name in ("subject", "predicate", "replaces"):
        v = getattr(c, name)
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise InvalidValueError(f"{name} must be a non-empty string or None, got {shown(v)}")
    return c


def _ordered(facts: list[Fact]) -> list[Fact]:
    return best_first(facts, lambda f: f.confidence, lambda f: f.created_at, lambda f: f.id)


def _user(env: Env) -> Layer:
    """The profile's layer (MISSING_IDENTIFIER without a user)."""
    return env.layer(PROFILE_LAYER)


def active_facts(env: Env) -> Operation[list[Fact]]:
    """The caller's current profile facts, in profile order."""
    records = yield from records_of(env, _user(env), ("fact",))
    return _ordered([r for r in records if isinstance(r, Fact)])


def _near_duplicates(
    env: Env, candidates: list[FactCandidate], existing: list[Fact]
) -> Operation[list[Fact | None]]:
    """For each candidate, the active fact it nearly duplicates, if any."""
    if not existing or not candidates:
        return [None] * len(candidates)
    if env.caps.embeds:
        # One vector search per candidate, in one batch: the store compares
        # against its stored vectors, nothing already stored is embedded again.
        ns, flt = _user(env).ns, {"kind": "fact"}
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


def add_facts(
    env: Env,
    candidates: Sequence[FactCandidate | Mapping[str, Any]],
    *,
    threshold: float,
    max_facts: int,
    provenance: Mapping[str, Any] | None,
) -> Operation[ProfileUpdate]:
    """Add facts under the collection rules of the module docstring. Every
    candidate is validated before anything is written."""
    if isinstance(candidates, str | bytes | Mapping) or not isinstance(candidates, Sequence):
        raise InvalidValueError(
            f"facts must be a list of facts (dicts with content, category and confidence), "
            f"got {shown(candidates)}"
        )
    checked = [_check_candidate(env, c) for c in candidates]
    check_range("threshold", threshold, policy.CONFIDENCE_RANGE)
    check_int("max_facts", max_facts, 1, 10**9)
    check_json("provenance", check_mapping("provenance", provenance))
    prov = dict(provenance or {})
    out = ProfileUpdate()
    existing = yield from active_facts(env)
    seen = {normalise(f.content) for f in existing}
    by_id = {f.id: f for f in existing}
    fresh: list[FactCandidate] = []
    for c in checked:
        if c.confidence < threshold:
            logger.info(
                "skipped low-confidence fact (%.2f < %.2f): %r", c.confidence, threshold, c.content
            )
            out.skipped.append(SkippedFact(c.content, "low_confidence", c.confidence))
        elif normalise(c.content) in seen:
            logger.info("skipped duplicate fact: %r", c.content)
            out.skipped.append(SkippedFact(c.content, "duplicate", c.confidence))
        else:
            seen.add(normalise(c.content))
            fresh.append(c)
    fresh = _slots_with_evidence(fresh, existing, by_id, out)
    plain = [c for c in fresh if not (c.replaces and c.replaces in by_id)]
    nears = yield from _near_duplicates(env, plain, existing)
    near_of = {id(c): n for c, n in zip(plain, nears)}
    puts: list[PutOp] = []
    merged: dict[str, Fact] = {}
    slots: list[str] = []
    new_count = sum(1 for c in fresh if near_of.get(id(c)) is None)
    ids = yield from free_fact_ids(env, _user(env), new_count)
    for c in fresh:
        near = near_of.get(id(c))
        if near is not None:
            base = merged.get(near.id, near)
            # The last few sources only: a fact restated every day must not grow forever.
            sources = [*base.provenance.get("merged", []), prov][-MERGED_SOURCES:]
            merged[near.id] = replace(
                base,
                confidence=max(base.confidence, c.confidence),
                last_confirmed_at=env.stamp,
                provenance={**base.provenance, "merged": sources},
            )
            logger.info("merged near-duplicate fact into %s: %r", near.id, c.content)
            continue
        fact = _new_fact(env, c, by_id.get(c.replaces or ""), prov, ids.pop())
        out.added.append(fact)
        puts += [env.put(fact), env.event(fact, "created")]
        if c.subject or c.predicate or (c.replaces and c.replaces in by_id):
            slots.append(fact.slot)
    for fid, new in merged.items():
        done, ops = change(env, by_id[fid], new, "merged")
        out.merged.append(done)
        puts += ops
    if puts:
        yield Batch(puts)
        env.sized(out.added, +1)
    layer = _user(env)
    for slot in dict.fromkeys(slots):
        out.superseded += yield from resolve_slot(env, layer, slot)
    out.removed = yield from _evict(env, existing, out, max_facts)
    return out


def _slots_with_evidence(
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


def _new_fact(
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
        provenance={**prov, **({"replaces": replaced.id} if replaced is not None else {})},
    )


def reflected(fact: Fact) -> bool:
    """Whether reflection made ``fact`` (its provenance says so): the only facts
    the profile cap counts and may move out.

    Examples:
        >>> from langmem_ext.engine.models import Fact
        >>> f = Fact(id="f", tenant_id="t", layer="user", layer_id="u", content="x")
        >>> reflected(f), reflected(replace(f, provenance={"source": "reflection"}))
        (False, True)
    """
    return fact.provenance.get("source") == REFLECTION_SOURCE


def _evict(
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


def _require_fact(env: Env, id: str) -> Operation[Fact]:
    record = yield from load(env, ["fact"], id, archived=False)
    if record is not None:
        refuse_damaged(record)
    if not isinstance(record, Fact):
        raise FactNotFoundError(f"no fact with id {shown(id)} in this profile", id=id)
    return record


def update_fact(
    env: Env, id: str, content: str | None, category: str | None, confidence: float | None
) -> Operation[Fact]:
    """Change only the given fields; ``created_at`` stays."""
    if content is not None:
        check_content(env, content)
    if category is not None:
        check_category(category)
    if confidence is not None:
        check_range("confidence", confidence, policy.CONFIDENCE_RANGE)
    old = yield from _require_fact(env, id)
    new = replace(
        old,
        content=old.content if content is None else content,
        category=old.category if category is None else category,
        confidence=old.confidence if confidence is None else float(confidence),
    )
    new, puts = change(env, old, new, "updated")
    yield Batch(puts)
    return new


def delete_fact(env: Env, id: str) -> Operation[None]:
    """Remove a fact (its audit events stay); ``KeyError`` when unknown."""
    old = yield from _require_fact(env, id)
    yield Batch([PutOp(env.layer_of(old).ns, old.id, None), env.event(old, "deleted")])
    env.sized([old], -1)
    return None
