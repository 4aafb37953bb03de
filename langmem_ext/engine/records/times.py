"""World time: when a memory held, beside when it was recorded.

Every fact and episode has two times of its own: ``valid_at`` / ``invalid_at``,
when it started and stopped holding in the world (either may be unknown), beside
the recorded ``created_at`` / ``valid_to`` (when the engine stored it and when it
stopped holding it current). Reads "as of" a moment use both:

* a memory **held from** its ``valid_at``, or, unknown, from when it was
  stored (the earliest the engine can vouch for);
* it **held until** its ``invalid_at``, or, unknown, until the engine stopped
  holding it current (a superseded or expired fact's ``valid_to``), or still
  holds;
* a retracted (forgotten) fact never held: it was wrong, not past.

Times are checked once where they enter: a ``datetime`` with a time zone, or
ISO-8601 text (a date alone is that day, 00:00 UTC); naive times and years
outside 1900-2200 are refused with an ``INVALID_VALUE`` naming the field.

Examples:
    >>> check_when("valid_at", "2026-03-10")
    '2026-03-10T00:00:00.000000+00:00'
    >>> check_when("valid_at", "2026-03-10T09:00:00")
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: valid_at must be a time with a zone (...), got ...
    >>> check_when("valid_at", "1066-10-14")
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: valid_at must be between 1900 and 2200, got '1066-10-14'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime, timezone
from typing import Any

from ...errors import InvalidValueError
from .checks import shown
from .models import MemoryRecord, ts

__all__ = [
    "FIRST_YEAR",
    "LAST_YEAR",
    "check_period",
    "check_when",
    "holds_at",
    "overlaps",
]

FIRST_YEAR, LAST_YEAR = 1900, 2200
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def check_when(name: str, value: Any) -> str | None:
    """``value`` (None, an aware ``datetime``, a ``date`` or ISO-8601 text) as
    the engine's time text (UTC, microseconds), or None. Refuses naive times,
    unreadable text and years outside 1900-2200, naming ``name``."""
    if value is None:
        return None
    when: datetime
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if _DATE_ONLY.fullmatch(text):
                d = date.fromisoformat(text)
                when = datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
            else:
                when = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidValueError(
                f"{name} must be an ISO-8601 time with a zone or a date, got {shown(value)}"
            ) from None
    else:
        raise InvalidValueError(
            f"{name} must be a datetime with a time zone or ISO-8601 text, got {shown(value)}"
        )
    if when.tzinfo is None or when.utcoffset() is None:
        raise InvalidValueError(
            f"{name} must be a time with a zone (a date such as '2026-03-10', or a time such as "
            f"'2026-03-10T09:00:00+00:00'), got {shown(value)}"
        )
    if not FIRST_YEAR <= when.astimezone(timezone.utc).year <= LAST_YEAR:
        raise InvalidValueError(
            f"{name} must be between {FIRST_YEAR} and {LAST_YEAR}, got {shown(value)}"
        )
    return ts(when)


def check_order(start_name: str, start: str | None, end_name: str, end: str | None) -> None:
    """Refuse an end before its start (both known)."""
    if start is not None and end is not None and end < start:
        raise InvalidValueError(
            f"{end_name} ({end}) is before {start_name} ({start}); a memory cannot stop "
            "holding before it starts"
        )


def check_period(name: str, value: Any) -> tuple[str | None, str | None] | None:
    """A ``(start, end)`` pair of times (either may be None: open), checked;
    None for no period."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or len(value) != 2:
        raise InvalidValueError(
            f"{name} must be a pair (start, end) of times or dates, got {shown(value)}"
        )
    start = check_when(f"{name}[0]", value[0])
    end = check_when(f"{name}[1]", value[1])
    check_order(f"{name}[0]", start, f"{name}[1]", end)
    return start, end


def never_held(record: MemoryRecord) -> bool:
    """A retracted fact was wrong, not past: it held at no time."""
    return getattr(record, "validity", None) == "retracted"


def holds_at(record: MemoryRecord, when: str) -> bool:
    """Whether ``record`` held at ``when`` (engine time text; see the module docs).

    Examples:
        >>> from langmem_ext.engine import Fact
        >>> f = Fact(id="f", tenant_id="t", layer="user", layer_id="u", content="x",
        ...          created_at="2026-03-01T00:00:00.000000+00:00",
        ...          valid_at="2024-05-01T00:00:00.000000+00:00")
        >>> holds_at(f, "2025-01-01T00:00:00.000000+00:00"), holds_at(f, "2023-01-01")
        (True, False)
    """
    if never_held(record):
        return False
    end = record.held_until
    return record.held_from <= when and (end is None or when < end)


def overlaps(record: MemoryRecord, start: str | None, end: str | None) -> bool:
    """Whether ``record`` held at some time in ``[start, end)`` (None: open)."""
    if never_held(record):
        return False
    until = record.held_until
    return (end is None or record.held_from < end) and (
        start is None or until is None or start < until
    )
