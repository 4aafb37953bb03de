"""The user profile: a summary (user context and history), the user's facts
and the user's notes.

The facts are the user's engine facts, collected under the rules of
:mod:`.profile_facts` (duplicates skipped, near-duplicates merged,
corrections superseding, at most ``max_facts`` reflection facts with the
lowest-confidence ones archived over it; facts stored on purpose are always
kept); that module's operations are re-exported here.

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, PutOp

from ..errors import DamagedMemoryError, InvalidValueError
from .checks import shown
from .decode import warn_once
from .env import Env
from .lifecycle import records_of
from .models import Fact, Note
from .profile_facts import (
    MERGED_SOURCES,
    PROFILE_LAYER,
    REFLECTION_SOURCE,
    SLOT_SIMILARITY,
    FactCandidate,
    ProfileUpdate,
    SkippedFact,
    _ordered,
    _user,
    active_facts,
    add_facts,
    check_category,
    delete_fact,
    normalise,
    reflected,
    update_fact,
)
from .requests import Batch, Operation

__all__ = [
    "CONTEXT_KEYS",
    "HISTORY_KEYS",
    "MERGED_SOURCES",
    "PROFILE_LAYER",
    "REFLECTION_SOURCE",
    "SLOT_SIMILARITY",
    "FactCandidate",
    "Profile",
    "ProfileUpdate",
    "SkippedFact",
    "active_facts",
    "add_facts",
    "check_category",
    "delete_fact",
    "get_profile",
    "normalise",
    "reflected",
    "update_fact",
    "update_profile",
]

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


def get_profile(env: Env) -> Operation[Profile]:
    layer = _user(env)
    [item] = yield Batch([GetOp(env.meta(layer, "profile"), "profile")])
    current = yield from records_of(env, layer, ("fact", "note"))
    facts = _ordered([r for r in current if isinstance(r, Fact)])
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


def update_profile(env: Env, user_context: Any, history: Any) -> Operation[Profile]:
    """Merge the given summary entries (an empty string clears one)."""
    ctx_part = _check_section("user_context", CONTEXT_KEYS, user_context)
    hist_part = _check_section("history", HISTORY_KEYS, history)
    ns = env.meta(_user(env), "profile")
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
    return (yield from get_profile(env))
