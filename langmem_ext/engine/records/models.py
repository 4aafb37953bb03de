"""Record shapes: one dataclass per memory type, and the one stored value
shape every surface reads.

A memory is a store item in a layer's namespace (see :mod:`.layout`), keyed by
its id, whose value is::

    {"kind": "fact", "content": "Lives in Berlin", "category": "context",
     "confidence": 0.9, "created_at": "...", ...}

``content`` is always there (text, or a dict for LangMem-style structured
memories) and ``kind`` names the type: ``note``, ``fact``, ``episode``,
``rule``, or a schema name written by a LangMem store manager (read as a
note). Items written by other code with ``{"content": ...}`` only, or by
older versions, are read as notes. Where the record lives (tenant, layer,
layer id) and whether it is current (``live``) come from its namespace, not
from the value; memories that are no longer current (superseded, retracted,
expired, forgotten) move to the layer's archive namespace.

Timestamps are ISO-8601 UTC strings with microseconds (they sort as text).

Stored values are read into records by :mod:`.decode`, which checks them.

Examples:
    >>> f = Fact(id="f1", tenant_id="t", layer="user", layer_id="u1",
    ...          content="likes tea", subject="user", predicate="drink")
    >>> value = f.to_value()
    >>> value["kind"], value["content"]
    ('fact', 'likes tea')
    >>> Fact.from_value(value, id="f1", tenant_id="t", layer="user", layer_id="u1") == f
    True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from . import policy

__all__ = [
    "Episode",
    "Fact",
    "MemoryEvent",
    "MemoryRecord",
    "Note",
    "Rule",
    "content_text",
    "new_id",
    "ts",
]

#: Fields that say where a record is, never stored in its value.
PLACEMENT = frozenset({"id", "tenant_id", "layer", "layer_id", "live"})
#: Fields kept in separate reference-count items, never stored in the value.
COUNTERS = frozenset({"reference_count", "last_referenced_at"})
_NOT_STORED = PLACEMENT | COUNTERS | {"extra"}
# Keys that are never kept as extra: the kind, and where-it-lives fields that
# values written by the first release carried.
_NOT_EXTRA = _NOT_STORED | {"kind", "type", "layer_ref"}


def new_id() -> str:
    """A new random memory id (UUID4 text)."""
    return str(uuid.uuid4())


def ts(when: datetime) -> str:
    """ISO-8601 UTC text with microseconds, sortable as text.

    Examples:
        >>> ts(datetime(2024, 1, 2, tzinfo=timezone.utc))
        '2024-01-02T00:00:00.000000+00:00'
    """
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


@functools.cache
def _field_names(cls: Any) -> frozenset[str]:  # cls: a dataclass type (hashable)
    # dataclasses.fields() rebuilds its tuple on every call; recall decodes
    # dozens of records per query, so the names are computed once per class.
    return frozenset(f.name for f in dataclasses.fields(cls))


@dataclass
class MemoryRecord:
    """Fields shared by every memory type."""

    type: ClassVar[str] = "memory"
    #: True for a :class:`Damaged` record (a stored item that is not a valid memory).
    damaged: ClassVar[bool] = False

    id: str
    tenant_id: str
    layer: str
    layer_id: str
    content: Any
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
    #: Keys of the stored value this record type does not know (written by
    #: another program or a newer version): kept and written back unchanged.
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def layer_ref(self) -> str:
        return f"{self.layer}:{self.layer_id}"

    @property
    def kind(self) -> str:
        """The stored ``kind`` (the type, or a store manager's schema name)."""
        return self.type

    @property
    def text(self) -> str:
        """The content as text (structured content as compact JSON; an item
        without content shows its other fields)."""
        return content_text(self.extra if self.content is None else self.content)

    @property
    def stale(self) -> bool:
        """Whether something it was derived from changed since (superseded or
        forgotten): it may no longer hold. Notes are never stale."""
        return bool(getattr(self, "stale_because", ()))

    @property
    def held_from(self) -> str:
        """When it started to hold in the world: ``valid_at`` when known, else
        when it was stored (the earliest the engine can vouch for)."""
        return getattr(self, "valid_at", None) or self.created_at

    @property
    def held_until(self) -> str | None:
        """When it stopped holding: ``invalid_at`` when known; for a fact that
        is no longer current, when the engine stopped holding it current
        (``valid_to``); None while it still holds."""
        end = getattr(self, "invalid_at", None)
        if end:
            return end
        if not self.live:
            return getattr(self, "valid_to", None) or self.updated_at
        return None

    def to_value(self) -> dict[str, Any]:
        """The dict stored in the store: ``kind``, ``content`` and the record's
        own fields (empty and None ones left out)."""
        value: dict[str, Any] = {**self.extra, "kind": self.kind, "content": self.content}
        for f in dataclasses.fields(self):
            name = f.name
            if name in PLACEMENT or name in COUNTERS or name == "extra" or name in value:
                continue
            v = getattr(self, name)
            if v is None or (isinstance(v, dict | list) and not v):
                continue
            value[name] = v
        return value

    def to_dict(self) -> dict[str, Any]:
        """Everything about the record, for display and JSON output: where it is
        (``id``, ``type``, ``tenant_id``, ``layer``, ``layer_id``, ``live``), its
        reference count, and its stored value."""
        return {
            "id": self.id,
            "type": self.type,
            "tenant_id": self.tenant_id,
            "layer": self.layer,
            "layer_id": self.layer_id,
            "live": self.live,
            "reference_count": self.reference_count,
            "last_referenced_at": self.last_referenced_at,
            **self.to_value(),
            **({"stale": True} if self.stale else {}),
        }

    @classmethod
    def from_value(cls, value: dict[str, Any], **placement: Any) -> Any:
        """Rebuild a record from a stored dict and where it was found, ignoring
        unknown keys (records written by a newer version stay readable)."""
        names = _field_names(cls)  # type: ignore[arg-type]
        fields = {k: v for k, v in value.items() if k in names and k not in _NOT_STORED}
        extra = {k: v for k, v in value.items() if k not in names and k not in _NOT_EXTRA}
        return cls(**fields, extra=extra, **placement)

    def retrievable(self, now: str) -> bool:
        """Whether recall and search may return this record at time ``now``."""
        return self.live


@dataclass
class Note(MemoryRecord):
    """Free content with metadata: what the LangMem-style tools save, the
    provider contract's ``add``, and any item of another shape (a store
    manager's ``{"kind": "Memory", "content": {...}}``, a plain
    ``{"content": ...}``), whose ``kind`` is kept."""

    type: ClassVar[str] = "note"

    stored_kind: str = "note"
    #: When it stops being recalled (None: never), like an episode's expiry.
    expires_at: str | None = None

    def retrievable(self, now: str) -> bool:
        return self.live and (not self.expires_at or self.expires_at > now)

    @property
    def kind(self) -> str:
        return self.stored_kind

    def to_value(self) -> dict[str, Any]:
        # A note is often just what a tool saved: keep its value as small as
        # LangMem's {"content": ...} plus its kind and timestamps.
        value = super().to_value()
        value.pop("stored_kind", None)
        if value.get("scope") == "global":
            del value["scope"]
        if value.get("importance") == policy.NOTE_IMPORTANCE:
            del value["importance"]
        return value


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
    #: When the engine stopped holding it current (recorded time: the write
    #: that superseded, retracted or expired it).
    valid_to: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    #: When it started and stopped holding in the world (None: unknown).
    valid_at: str | None = None
    invalid_at: str | None = None
    #: What the subject relates to (``lives_in`` -> "Lisbon"), when it is a thing.
    object: str | None = None
    #: The entities of the subject and the object (ids; see :mod:`.entities`).
    subject_entity: str | None = None
    object_entity: str | None = None
    #: Every entity the fact names (subject, object, and those its text mentions).
    mentions: list[str] = field(default_factory=list)
    #: Ids of the memories it was derived from, and those of them that changed
    #: since (a non-empty ``stale_because`` marks it stale).
    derived_from: list[str] = field(default_factory=list)
    stale_because: list[str] = field(default_factory=list)
    #: When it stops being recalled (None: never), like an episode's expiry.
    expires_at: str | None = None

    def retrievable(self, now: str) -> bool:
        return self.live and (not self.expires_at or self.expires_at > now)

    def effective_confidence(self, now: datetime) -> float:
        days = (now - parse_ts(self.last_confirmed_at or self.created_at)).total_seconds() / 86400
        return policy.decayed_confidence(self.confidence, self.decay_rate, days)


@dataclass
class Episode(MemoryRecord):
    """Something that happened in a session; expires after the TTL."""

    type: ClassVar[str] = "episode"

    session_id: str | None = None
    expires_at: str = ""
    status: str = "active"
    consolidated: bool = False
    #: When it happened (start and end; None: unknown, read as when it was stored).
    valid_at: str | None = None
    invalid_at: str | None = None
    mentions: list[str] = field(default_factory=list)
    derived_from: list[str] = field(default_factory=list)
    stale_because: list[str] = field(default_factory=list)

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
    mentions: list[str] = field(default_factory=list)
    derived_from: list[str] = field(default_factory=list)
    stale_because: list[str] = field(default_factory=list)

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


def content_text(content: Any) -> str:
    """Content as text: strings as they are; LangMem's ``{"content": str}``
    as its string; other structures as compact JSON."""
    if isinstance(content, str):
        return content
    if (
        isinstance(content, dict)
        and set(content) == {"content"}
        and isinstance(content["content"], str)
    ):
        return content["content"]
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=str)


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
        names = _field_names(cls)  # type: ignore[arg-type]
        return cls(**{k: v for k, v in value.items() if k in names})


def slot_of(layer_ref: str, subject: str, predicate: str) -> str:
    """The (subject, predicate) slot of a fact in a layer: a newer fact of the
    slot supersedes the older. ``subject`` is the subject's entity key (see
    :mod:`.entities`), or its text."""
    key = "\x00".join((layer_ref, subject.strip().casefold(), predicate.strip().casefold()))
    return hashlib.sha256(key.encode()).hexdigest()[:32]
