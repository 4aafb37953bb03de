"""Reading stored items into records (:func:`record_from_item`), checking
each value against its kind's fields first.

**Damaged items.** A stored value is checked against its kind's fields when
it is read: each known field must have its type (a number for
``confidence``, a list of strings for ``tags``, an object for ``metadata``,
text for a fact's ``content``, a time with a zone for ``created_at``…), and a
value must be an object. An item that fails is read as a :class:`Damaged`
record instead (``record.damaged`` is True, ``reason`` says what is wrong,
``raw`` holds the value as stored): readers skip it, logging it once per
process; a read by id returns it, so a UI can show it; only ``delete``
changes it (a write that would save it again raises
:class:`~langmem_ext.errors.DamagedMemoryError` rather than drop fields).

Examples:
    >>> from langgraph.store.base import Item
    >>> from datetime import datetime, timezone
    >>> now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    >>> item = Item(value={"kind": "fact", "content": "Likes tea", "tags": "tea"},
    ...             key="k", namespace=("u",), created_at=now, updated_at=now)
    >>> r = record_from_item(item, tenant_id="default", layer="user", layer_id="u")
    >>> (r.type, r.damaged, r.reason, r.raw["tags"])
    ('damaged', True, "tags must be a list of strings, got 'tea'", 'tea')
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from ...errors import DamagedMemoryError
from . import policy
from .checks import shown
from .models import (
    _NOT_EXTRA,
    _NOT_STORED,
    RECORD_TYPES,
    MemoryRecord,
    Note,
    Rule,
    _field_names,
    ts,
)

__all__ = ["Damaged", "record_from_item", "value_problem", "warn_once"]

logger = logging.getLogger("langmem_ext.engine")


def record_from_item(
    item: Any, *, tenant_id: str, layer: str, layer_id: str, live: bool = True
) -> MemoryRecord:
    """The record a store item holds. Items that are not engine records (no or
    an unknown ``kind``, or no ``content``) are read as notes; missing
    timestamps come from the item; a value with a field of the wrong type is a
    :class:`Damaged` record (logged once per item and process).

    Examples:
        >>> from langgraph.store.base import Item
        >>> from datetime import datetime, timezone
        >>> now = datetime(2025, 1, 1, tzinfo=timezone.utc)
        >>> item = Item(value={"content": "x"}, key="k", namespace=("u",),
        ...             created_at=now, updated_at=now)
        >>> r = record_from_item(item, tenant_id="default", layer="user", layer_id="u")
        >>> (r.type, r.kind, r.id, r.created_at[:10])
        ('note', 'note', 'k', '2025-01-01')
        >>> bad = Item(value={"kind": "fact", "content": "x", "confidence": "high"}, key="b",
        ...            namespace=("u",), created_at=now, updated_at=now)
        >>> r = record_from_item(bad, tenant_id="default", layer="user", layer_id="u")
        >>> (r.type, r.damaged, r.reason)
        ('damaged', True, "confidence must be a number, got 'high'")
    """
    place = {"id": item.key, "tenant_id": tenant_id, "layer": layer, "layer_id": layer_id}
    value = item.value
    if not isinstance(value, dict):
        shape = f"the stored value is a {type(value).__name__}, not an object"
        return _damaged(item, place, live, value, None, shape)
    kind = value.get("kind")
    cls = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    problem = value_problem(cls or Note, value)
    if problem is not None:
        return _damaged(item, place, live, value, kind, problem)
    if cls is None or cls is Note:
        names = _field_names(Note)
        fields = {k: v for k, v in value.items() if k in names and k not in _NOT_STORED}
        fields.pop("stored_kind", None)
        fields.setdefault("content", value.get("content"))
        extra = {k: v for k, v in value.items() if k not in names and k not in _NOT_EXTRA}
        note = Note(**{**fields, **place}, live=live, extra=extra)
        note.stored_kind = kind if isinstance(kind, str) and kind else "note"
        record: MemoryRecord = note
    else:
        record = cls.from_value(value, **place, live=live)
    if not record.created_at:
        record.created_at = ts(item.created_at)
    if not record.updated_at:
        record.updated_at = ts(item.updated_at)
    return record


@dataclass
class Damaged(MemoryRecord):
    """A stored item that is not a valid memory of its kind: ``reason`` says
    what is wrong, ``raw`` is the stored value exactly as found,
    ``stored_kind`` its ``kind`` (None without one). ``content`` is the
    value's content (or the whole value when it is not an object) and the
    timestamps are the value's when they are valid, else the item's.

    Readers skip it; a read by id returns it (``record.damaged`` is True) so it
    can be shown and deleted. It is never written back: :meth:`to_value`
    raises :class:`~langmem_ext.errors.DamagedMemoryError`.
    """

    type: ClassVar[str] = "damaged"
    damaged: ClassVar[bool] = True

    raw: Any = None
    reason: str = ""
    stored_kind: str | None = None

    @property
    def kind(self) -> str:
        return "damaged"

    def to_value(self) -> dict[str, Any]:
        raise DamagedMemoryError(
            f"memory {self.id!r} is damaged ({self.reason}); it is never saved again as it "
            "was read: delete it, or store a corrected copy",
            id=self.id,
            reason=self.reason,
        )

    def to_dict(self) -> dict[str, Any]:
        """Where it is, ``damaged``, ``reason``, ``kind`` (as stored) and the raw ``value``."""
        return {
            "id": self.id,
            "type": self.type,
            "tenant_id": self.tenant_id,
            "layer": self.layer,
            "layer_id": self.layer_id,
            "live": self.live,
            "damaged": True,
            "reason": self.reason,
            "kind": self.stored_kind,
            "content": self.content,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "value": self.raw,
        }


# Damaged items already logged, so a read storm logs each once per process.
_LOGGED: set[tuple[Any, ...]] = set()
_LOGGED_MAX = 10_000


def warn_once(item: Any, message: str, *args: Any) -> None:
    """Log a damaged stored ``item`` once per process (per version of it), so a
    storm of reads logs it once."""
    seen = (tuple(item.namespace), item.key, str(item.updated_at))
    if seen in _LOGGED:
        return
    if len(_LOGGED) >= _LOGGED_MAX:
        _LOGGED.clear()
    _LOGGED.add(seen)
    logger.warning(message, *args)


def _damaged(
    item: Any, place: dict[str, Any], live: bool, value: Any, kind: Any, reason: str
) -> Damaged:
    warn_once(
        item,
        "skipped damaged memory %s in %s: %s; it stays stored as it is (read it by id, "
        "or delete it)",
        item.key,
        "/".join(item.namespace),
        reason,
    )
    valid = isinstance(value, dict)

    def when(name: str) -> str:
        given = value.get(name) if valid else None
        return given if given and _time_ok(given) else ts(getattr(item, name))

    return Damaged(
        **place,
        live=live,
        content=value.get("content") if valid else value,
        created_at=when("created_at"),
        updated_at=when("updated_at"),
        raw=value,
        reason=reason,
        stored_kind=kind if isinstance(kind, str) else None,
    )


# -- checking stored values -------------------------------------------------------


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v: Any) -> bool:
    return _number(v) and float(v).is_integer()


def _time_ok(v: Any) -> bool:
    """Empty (not set) or an ISO-8601 time with a zone: naive times cannot be
    compared with the engine's clock."""
    if not isinstance(v, str):
        return False
    if not v:
        return True
    try:
        return datetime.fromisoformat(v).tzinfo is not None
    except ValueError:
        return False


# Each annotation used by a record field, and how a stored value of it is checked.
_TYPE_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "str": (lambda v: isinstance(v, str), "text"),
    "str | None": (lambda v: v is None or isinstance(v, str), "text or null"),
    "float": (_number, "a number"),
    "int": (_whole, "a whole number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "list[str]": (
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "a list of strings",
    ),
    "dict[str, Any]": (lambda v: isinstance(v, dict), "an object"),
    "Any": (lambda v: True, "anything"),
}
_TIMES = frozenset(
    {
        "created_at",
        "updated_at",
        "last_confirmed_at",
        "expires_at",
        "valid_to",
        "last_applied_at",
        "valid_at",
        "invalid_at",
    }
)


@functools.cache
def _checks(cls: Any) -> dict[str, tuple[Callable[[Any], bool], str]]:
    out = {}
    for f in dataclasses.fields(cls):
        if f.name in _NOT_STORED or f.name == "stored_kind":
            continue
        out[f.name] = _TYPE_CHECKS[str(f.type)]
        if f.name in _TIMES and str(f.type) == "str | None":
            out[f.name] = (lambda v: v is None or _time_ok(v), "null or a time with a zone")
        elif f.name in _TIMES:
            out[f.name] = (_time_ok, "an ISO-8601 time with a zone")
    if cls is not Note:  # engine records hold text; only notes hold structured content
        out["content"] = _TYPE_CHECKS["str"]
    return out


def value_problem(cls: type[MemoryRecord], value: dict[str, Any]) -> str | None:
    """What makes ``value`` unreadable as a stored ``cls``, or None when it is fine.
    Unknown keys are never a problem (they are kept as ``extra``).

    Examples:
        >>> from langmem_ext.engine import Fact
        >>> value_problem(Fact, {"kind": "fact", "content": "x", "tags": "a"})
        "tags must be a list of strings, got 'a'"
        >>> value_problem(Note, {"content": {"any": "structure"}}) is None
        True
    """
    for name, (ok, want) in _checks(cls).items():  # type: ignore[arg-type]
        if name in value and not ok(value[name]):
            return f"{name} must be {want}, got {shown(value[name])}"
    if cls is not Note and "content" not in value:  # a note may lack it; engine records never
        return "content is missing"
    if cls is Rule and value.get("maturity", "candidate") not in policy.RULE_DECAY_RATES:
        return f"maturity must be one of {', '.join(policy.RULE_DECAY_RATES)}"
    return None
