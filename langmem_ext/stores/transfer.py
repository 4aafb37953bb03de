"""Back up, restore and move memories between stores as JSON Lines, one item
per line, so a SQLite file can move to PostgreSQL and back.

A line holds ``namespace`` (a list of labels), ``key``, ``value``,
``created_at`` and ``updated_at`` (ISO-8601), ``indexed`` (whether the item
is embedded and keyword-indexed), ``ttl`` (minutes, or null) and
``expires_at``. Lines end with ``\n`` only, as JSON Lines defines them: the
Unicode line separators U+2028, U+2029 and U+0085 in a value are written as
``\u2028``-style escapes, so no reader splits a line at them. Exports list
items by namespace and key, so exporting the same items gives the same bytes.

Importing into this package's stores re-creates every field: the item is
re-embedded when it was indexed (by the target store's embedder) and its
timestamps and expiry are those of the export. Other stores work too, through
the plain API: exported without indexing, TTL and expiry (unknown there),
imported with the import's time as timestamps.

Import checks every line before it writes anything, and on this package's
stores writes them all in one transaction: bad lines (malformed, or refused by
the store) are an :class:`~langmem_ext.errors.InvalidValueError` naming their
line numbers and nothing is imported, unless ``skip_bad=True`` (the good lines
are imported, the bad ones reported). Items that exist already are replaced
only with ``replace=True``.

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
from typing import IO, Any

from langgraph.store.base import BaseStore

from ..errors import InvalidOperationError
from ._import import existing, malformed, read_lines, write_lines
from ._ops import check_namespace
from .capabilities import PagedExport

__all__ = ["ImportReport", "export_jsonl", "import_jsonl", "iter_rows"]

_PAGE = 1000
# Line breaks to Unicode but not to JSON Lines: escaped, the line reads back
# the same everywhere (json.dumps leaves them raw with ensure_ascii=False).
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def iter_rows(store: BaseStore, namespace_prefix: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Every item under ``namespace_prefix`` as an export line (a dict); on
    this package's stores in namespace and key order.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> store = SQLiteStore()
        >>> store.put(("user", "ada"), "m1", {"content": "Likes tea"}, index=False)
        >>> [(r["key"], r["indexed"], r["ttl"]) for r in iter_rows(store)]
        [('m1', False, None)]
    """
    check_namespace(namespace_prefix, allow_empty=True)
    if isinstance(store, PagedExport):
        after = None
        while True:
            rows = store.transfer_page(tuple(namespace_prefix), after, _PAGE)
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
    keep: Callable[[tuple[str, ...]], bool] | None = None,
) -> int:
    """Write every item under ``namespace_prefix`` to ``out``, one JSON object
    per line; returns how many. ``progress`` is called with the running count;
    ``keep(namespace)``, when given, says which items to write (the memory
    browser keeps the caller's own). Text stays readable (not ``\\u``-escaped)
    except the Unicode line separators; open files with ``newline=""`` so lines
    end with ``\\n`` on every system.

    Examples:
        >>> import io
        >>> from langmem_ext import SQLiteStore
        >>> store = SQLiteStore()
        >>> store.put(("user", "ada"), "m1", {"content": "Tee\u2028oder Kaffee ☕"})
        >>> out = io.StringIO()
        >>> export_jsonl(store, out, ("user",))
        1
        >>> '"Tee\\\\u2028oder Kaffee ☕"' in out.getvalue()
        True
    """
    n = 0
    for row in iter_rows(store, namespace_prefix):
        if keep is not None and not keep(tuple(row["namespace"])):
            continue
        out.write(json.dumps(row, ensure_ascii=False).translate(_LINE_BREAKS) + "\n")
        n += 1
        if progress is not None:
            progress(n)
    return n


@dataclass
class ImportReport:
    """What :func:`import_jsonl` did.

    Attributes:
        imported: items written (``created + replaced``).
        created: items that were not in the store before.
        replaced: items that existed (same namespace and key) and were
            overwritten; only with ``replace=True``.
        bad: ``(line number, what is wrong)`` for each line skipped.
        timestamps_restored: whether the items kept their exported timestamps
            and expiry (this package's stores); otherwise they carry the
            import's time.
    """

    imported: int = 0
    created: int = 0
    replaced: int = 0
    bad: list[tuple[int, str]] = field(default_factory=list)
    timestamps_restored: bool = False


def import_jsonl(
    store: BaseStore,
    lines: Iterable[str | bytes],
    *,
    skip_bad: bool = False,
    replace: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import items written by :func:`export_jsonl` (or by hand).

    ``lines`` are the file's lines: a file opened in binary mode (each line
    decoded as UTF-8) or text mode, or a list of strings. Split a whole text
    with ``text.split("\\n")``, never ``splitlines()``, which also splits
    at line separators inside values. Of several lines for one namespace and
    key, the last wins. ``progress`` is called with the number of lines
    checked and embedded so far.

    On this package's stores the import is one transaction: it is all
    written or, when it fails, nothing is. Other stores are written 500 items
    at a time, so a failure there can leave the batches before it.

    Args:
        skip_bad: import the good lines and list the bad ones in
            :attr:`ImportReport.bad` (by line number) instead of refusing.
        replace: overwrite items that already exist; without it an import
            that would replace any item writes nothing.

    Raises:
        InvalidValueError: bad lines (malformed JSON or UTF-8, a value the
            store refuses: each named with its number and what is wrong) and
            ``skip_bad`` is false; nothing was imported.
        InvalidOperationError: items already exist and ``replace`` is false;
            ``details`` holds ``replaced`` (how many) and ``namespaces``;
            nothing was imported.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> store = SQLiteStore()
        >>> line = '{"namespace": ["user", "ada"], "key": "m1", "value": {"content": "Tea"}}'
        >>> import_jsonl(store, [line, "{oops"], skip_bad=True).bad
        [(2, 'not JSON (Expecting property name enclosed in double quotes at column 2)')]
        >>> report = import_jsonl(store, [line], replace=True)
        >>> report.created, report.replaced
        (0, 1)
    """
    report = ImportReport()
    latest: dict[tuple[tuple[str, ...], str], Any] = {}
    for number, line in read_lines(lines):
        if isinstance(line, str):
            report.bad.append((number, line))
        else:
            latest[(line.op.namespace, line.op.key)] = line
    parsed = sorted(latest.values(), key=lambda x: x.number)
    report.bad += existing(store, parsed)
    if report.bad and not skip_bad:
        raise malformed(report.bad)
    unknown = {n for n, _ in report.bad}
    parsed = [x for x in parsed if x.number not in unknown]
    clashes = [x for x in parsed if x.existed]
    if clashes and not replace:
        raise _would_replace(clashes)
    written, bad, report.timestamps_restored = write_lines(store, parsed, skip_bad, progress)
    report.bad = sorted(report.bad + bad)
    report.imported = len(written)
    report.replaced = sum(x.existed for x in written)
    report.created = report.imported - report.replaced
    return report


def _would_replace(clashes: list[Any]) -> InvalidOperationError:
    namespaces = sorted({"/".join(x.op.namespace) for x in clashes})
    listed = ", ".join(namespaces[:5]) + (
        f" (and {len(namespaces) - 5} more)" if len(namespaces) > 5 else ""
    )
    return InvalidOperationError(
        f"{len(clashes)} item(s) would replace existing ones (same namespace and key) in "
        f"namespaces {listed}; nothing imported. Check that the file is meant for this "
        "store, then pass replace=True (--replace on the command line) to overwrite them",
        replaced=len(clashes),
        namespaces=namespaces,
    )
