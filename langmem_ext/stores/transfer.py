"""Back up, restore and move memories between stores as JSON Lines, one item
per line, so a SQLite file can move to PostgreSQL and back.

A line holds ``namespace`` (a list of labels), ``key``, ``value``,
``created_at`` and ``updated_at`` (ISO-8601), ``indexed`` (whether the item
is embedded and keyword-indexed), ``ttl`` (minutes, or null) and
``expires_at``. Importing into this package's stores re-creates every field:
the item is re-embedded when it was indexed (by the target store's embedder)
and its timestamps and expiry are those of the export. Other stores
work too, through the plain API: exported without indexing, TTL and expiry
(unknown there), imported with the import's time as timestamps.

Import reads every line before it writes anything: malformed lines are an
:class:`~langmem_ext.errors.InvalidValueError` naming their line numbers and
nothing is imported, unless ``skip_bad=True`` (the bad lines are reported and
skipped).

Examples:
    >>> import io
    >>> from langmem_ext import SQLiteStore
    >>> source, target = SQLiteStore(), SQLiteStore()
    >>> source.put(("user", "ada"), "m1", {"content": "Likes tea"}, ttl=60)
    >>> buffer = io.StringIO()
    >>> export_jsonl(source, buffer)
    1
    >>> _ = buffer.seek(0)
    >>> import_jsonl(target, buffer).imported
    1
    >>> item = target.get(("user", "ada"), "m1")
    >>> item.value, item.created_at == source.get(("user", "ada"), "m1").created_at
    ({'content': 'Likes tea'}, True)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from langgraph.store.base import BaseStore, PutOp

from ..errors import InvalidValueError
from ._ops import check_namespace, check_ttl, dump_value

__all__ = ["ImportReport", "export_jsonl", "import_jsonl", "iter_rows"]

_PAGE = 1000
_BATCH = 500


def iter_rows(store: BaseStore, namespace_prefix: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Every item under ``namespace_prefix`` as an export line (a dict).

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> store = SQLiteStore()
        >>> store.put(("user", "ada"), "m1", {"content": "Likes tea"}, index=False)
        >>> [(r["key"], r["indexed"], r["ttl"]) for r in iter_rows(store)]
        [('m1', False, None)]
    """
    check_namespace(namespace_prefix, allow_empty=True)
    page = getattr(store, "_transfer_page", None)
    if page is not None:
        after = 0
        while True:
            rows = page(tuple(namespace_prefix), after, _PAGE)
            for _, row in rows:
                yield row
            if len(rows) < _PAGE:
                return
            after = rows[-1][0]
    offset = 0
    while True:
        items = store.search(namespace_prefix, limit=_PAGE, offset=offset, refresh_ttl=False)
        for item in items:
            yield {
                "namespace": list(item.namespace),
                "key": item.key,
                "value": item.value,
                "created_at": item.created_at.isoformat(),
                "updated_at": item.updated_at.isoformat(),
            }
        if len(items) < _PAGE:
            return
        offset += _PAGE


def export_jsonl(
    store: BaseStore,
    out: IO[str],
    namespace_prefix: tuple[str, ...] = (),
    *,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write every item under ``namespace_prefix`` to ``out``, one JSON object
    per line; returns how many. ``progress`` is called with the running count.

    Examples:
        >>> import io
        >>> from langmem_ext import SQLiteStore
        >>> store = SQLiteStore()
        >>> store.put(("user", "ada"), "m1", {"content": "Likes tea"})
        >>> export_jsonl(store, io.StringIO(), ("user",))
        1
    """
    n = 0
    for row in iter_rows(store, namespace_prefix):
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
        if progress is not None:
            progress(n)
    return n


@dataclass
class ImportReport:
    """What :func:`import_jsonl` did.

    Attributes:
        imported: items written.
        bad: ``(line number, what is wrong)`` for each line skipped.
        timestamps_restored: whether the items kept their exported timestamps
            and expiry (this package's stores); otherwise they carry the
            import's time.
    """

    imported: int = 0
    bad: list[tuple[int, str]] = field(default_factory=list)
    timestamps_restored: bool = False


class _Line:
    __slots__ = ("op", "times")

    def __init__(self, op: PutOp, times: dict[str, datetime | None]) -> None:
        self.op, self.times = op, times


def _time(row: dict[str, Any], name: str) -> datetime | None:
    text = row.get(name)
    if text is None:
        return None
    try:
        if not isinstance(text, str):
            raise ValueError
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{name!r} must be an ISO-8601 time such as 2026-01-31T12:00:00+00:00"
        ) from None
    if ts.tzinfo is None:
        raise ValueError(f"{name!r} needs a time zone (e.g. +00:00)")
    return ts


def _parse(text: str) -> _Line:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(row, dict):
        raise ValueError("not a JSON object")
    ns, key, value = row.get("namespace"), row.get("key"), row.get("value")
    if not isinstance(key, str) or not key:
        raise ValueError("'key' must be a non-empty string")
    if not isinstance(ns, list) or not ns:
        raise ValueError("'namespace' must be a non-empty list of labels")
    # The store's own checks, before anything is written: a line the store
    # would refuse is a bad line, not a half-finished import.
    check_namespace(tuple(ns))
    dump_value(tuple(ns), key, value)
    ttl = check_ttl(row.get("ttl"))
    indexed = row.get("indexed", True)
    if not isinstance(indexed, bool):
        raise ValueError("'indexed' must be true or false")
    times = {name: _time(row, name) for name in ("created_at", "updated_at", "expires_at")}
    return _Line(PutOp(tuple(ns), key, value, None if indexed else False, ttl), times)


def import_jsonl(
    store: BaseStore,
    lines: Iterable[str],
    *,
    skip_bad: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import items written by :func:`export_jsonl` (or by hand); an item with
    the same namespace and key is replaced. ``progress`` is called with the
    running count.

    Raises:
        InvalidValueError: malformed lines (each with its number and what is
            wrong) and ``skip_bad`` is false; nothing was imported.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> line = '{"namespace": ["user", "ada"], "key": "m1", "value": {"content": "Tea"}}'
        >>> import_jsonl(SQLiteStore(), [line, "{oops"], skip_bad=True).bad
        [(2, 'not JSON (Expecting property name enclosed in double quotes at column 2)')]
    """
    report = ImportReport()
    parsed: list[_Line] = []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            parsed.append(_parse(text))
        except ValueError as e:
            report.bad.append((number, str(e)))
    if report.bad and not skip_bad:
        shown = "; ".join(f"line {n}: {why}" for n, why in report.bad[:10])
        more = f" (and {len(report.bad) - 10} more)" if len(report.bad) > 10 else ""
        raise InvalidValueError(
            f"{len(report.bad)} malformed line(s), nothing imported: {shown}{more}. Fix them, "
            "or import the other lines with skip_bad=True (--skip-bad on the command line)"
        )
    restore = getattr(store, "_restore_timestamps", None)
    report.timestamps_restored = restore is not None
    for start in range(0, len(parsed), _BATCH):
        chunk = parsed[start : start + _BATCH]
        store.batch([line.op for line in chunk])
        if restore is not None:
            restore([(line.op.namespace, line.op.key, line.times) for line in chunk])
        report.imported += len(chunk)
        if progress is not None:
            progress(report.imported)
    return report
