"""Record shapes: one dataclass per memory type, stored as plain store values.

Every record lives at ``(root, tenant, type)`` / ``id`` in the store; its layer
is a field (``layer``, ``layer_id`` and their join ``layer_ref``), so ``get``
by type and id is one store read and a layered search is a filter. ``live`` is
True exactly when the record may be returned by recall and search; the engine
keeps it in step with the record's state so stores filter on it cheaply.

Timestamps are ISO-8601 UTC strings with microseconds (they sort as text).

Example:
    >>> f = Fact(id="f1", tenant_id="t", layer="user", layer_id="u1",
    ...          content="likes tea", subject="user", predicate="drink")
    >>> Fact.from_value(f.to_value()) == f
    True
    >>> f.type
    'fact'
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from . import policy

__all__ = ["Episode", "Fact", "MemoryEvent", "MemoryRecord", "Note", "Rule", "new_id", "ts"]


def new_id() -> str:
    """A new random memory id (UUID4 text)."""
    return str(uuid.uuid4())


def ts(when: datetime) -> str:
    """ISO-8601 UTC text with microseconds, sortable as text.

    Example:
        >>> ts(datetime(2024, 1, 2, tzinfo=timezone.utc))
        '2024-01-02T00:00:00.000000+00:00'
    """
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    # dataclasses.fields() rebuilds its tuple on every call; recall decodes
    # dozens of records per query, so the names are computed once per class.
    return frozenset(f.name for f in dataclasses.fields(cls))


@dataclass
class MemoryRecord:
    """Fields shared by every memory type."""

    type: ClassVar[str] = "memory"

    id: str
    tenant_id: str
    layer: str
    layer_id: str
    content: str
    scope: str = "global"
    tags: list[str] = field(default_factory=list)
    importance: float = 5.0
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    created_by: str | None = None
    reference_count: int = 0
    last_referenced_at: str | None = None
    live: bool = True

    @property
    def layer_ref(self) -> str:
        return f"{self.layer}:{self.layer_id}"

    def to_value(self) -> dict[str, Any]:
        """The dict stored in the store (with ``type`` and ``layer_ref`` added
        so stores can filter on them)."""
        value = dataclasses.asdict(self)
        value["type"] = self.type
        value["layer_ref"] = self.layer_ref
        return value

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> Any:
        """Rebuild a record from a stored dict, ignoring unknown keys (records
        written by a newer version stay readable)."""
        names = _field_names(cls)
        return cls(**{k: v for k, v in value.items() if k in names})

    def retrievable(self, now: str) -> bool:
        """Whether recall and search may return this record at time ``now``."""
        return self.live


@dataclass
class Note(MemoryRecord):
    """Free content with metadata (seed 001's ``add``; the LangMem-style tools)."""

    type: ClassVar[str] = "note"


@dataclass
class Fact(MemoryRecord):
    """A (subject, predicate) statement with a lifecycle; see :mod:`.policy`."""

    type: ClassVar[str] = "fact"

    subject: str = ""
    predicate: str = ""
    slot: str = ""
    category: str | None = None
    confidence: float = policy.FACT_CONFIDENCE
    permanence: str = policy.DEFAULT_PERMANENCE
    decay_rate: float = policy.DECAY_RATES[policy.DEFAULT_PERMANENCE]
    validity: str = "active"
    last_confirmed_at: str = ""
    superseded_by: str | None = None
    valid_to: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def effective_confidence(self, now: datetime) -> float:
        days = (now - parse_ts(self.last_confirmed_at or self.created_at)).total_seconds() / 86400
        return policy.decayed_confidence(self.confidence, self.decay_rate, days)


@dataclass
class Episode(MemoryRecord):
    """Something that happened in a session; expires after the TTL."""

    type: ClassVar[str] = "episode"

    butler: str = ""
    session_id: str | None = None
    expires_at: str = ""
    status: str = "active"
    consolidated: bool = False

    def retrievable(self, now: str) -> bool:
        return self.live and self.expires_at > now


@dataclass
class Rule(MemoryRecord):
    """A behavioural rule that matures with feedback; see :mod:`.policy`."""

    type: ClassVar[str] = "rule"

    maturity: str = "candidate"
    confidence: float = policy.RULE_CONFIDENCE
    success_count: int = 0
    harmful_count: int = 0
    applied_count: int = 0
    effectiveness_score: float = 0.0
    last_applied_at: str | None = None
    last_confirmed_at: str = ""
    status: str = "active"

    @property
    def decay_rate(self) -> float:
        return policy.RULE_DECAY_RATES[self.maturity]

    def effective_confidence(self, now: datetime) -> float:
        days = (now - parse_ts(self.last_confirmed_at or self.created_at)).total_seconds() / 86400
        return policy.decayed_confidence(self.confidence, self.decay_rate, days)


RECORD_TYPES: dict[str, type[MemoryRecord]] = {
    "note": Note,
    "fact": Fact,
    "episode": Episode,
    "rule": Rule,
}


def record_from_value(value: dict[str, Any]) -> MemoryRecord:
    return RECORD_TYPES[value["type"]].from_value(value)


@dataclass
class MemoryEvent:
    """One audit event: who changed what on which memory, and when.

    ``changes`` maps each changed field to ``[old, new]``.
    """

    id: str
    memory_id: str
    memory_type: str
    action: str
    actor: str | None
    at: str
    changes: dict[str, list[Any]] = field(default_factory=dict)
    reason: str | None = None

    def to_value(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> MemoryEvent:
        names = _field_names(cls)
        return cls(**{k: v for k, v in value.items() if k in names})
