"""The machinery of :func:`~langmem_ext.stores.transfer.import_jsonl`: lines
read and checked, the items that already exist found, and the writes, all in
one transaction on this package's stores.

A store takes part through ``store.bulk_import()`` (the
:class:`~langmem_ext.stores.capabilities.BulkImport` capability), an object with

* ``prepare(ops)``: check the puts as the store's own ``batch`` would and embed
  them, writing nothing; one unit per op, in order;
* ``session()``: a context manager giving ``write(units, rows)``, which writes
  units and restores their timestamps (``rows``: ``(namespace, key, times)``)
  inside a savepoint of one transaction, so a refused write leaves the others
  in place. The transaction commits when the context ends without an error.

Other stores are written batch by batch through their API (not atomic).

Examples:
    >>> lines = list(read_lines([b'{"namespace": ["u"], "key": "k", "value": {}}\\n', b"\\xff\\n"]))
    >>> [(n, type(x).__name__) for n, x in lines]
    [(1, '_Line'), (2, 'str')]
    >>> lines[1][1]
    'not UTF-8 text (byte 0xff at position 0); save the file as UTF-8'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp

from ..errors import ConfigurationError, InvalidStateError, InvalidValueError
from ._ops import check_expiry, check_namespace, check_text, check_ttl, dump_value
from .capabilities import BulkImport

__all__ = ["BATCH", "existing", "malformed", "prepare_units", "read_lines", "write_lines"]

BATCH = 500

Row = tuple[tuple[str, ...], str, dict[str, datetime | None]]
Write = Callable[[list[Any], list[Row]], None]


class _Line:
    """A checked line: its number, the put it asks for, its timestamps, and
    whether its item exists in the target store already."""

    __slots__ = ("existed", "number", "op", "times")

    def __init__(self, number: int, op: PutOp, times: dict[str, datetime | None]) -> None:
        self.number, self.op, self.times = number, op, times
        self.existed = False

    @property
    def row(self) -> Row:
        return (self.op.namespace, self.op.key, self.times)


def read_lines(lines: Iterable[str | bytes]) -> Iterator[tuple[int, _Line | str]]:
    """``(line number, checked line or what is wrong with it)`` for each
    non-blank line; bytes are decoded as UTF-8 line by line."""
    for number, raw in enumerate(lines, 1):
        try:
            text = _decode(raw, number)
            if not text.strip():
                continue
            yield number, _parse(number, text)
        except ValueError as e:
            yield number, str(e)


def _decode(raw: str | bytes, number: int) -> str:
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidValueError(
                f"not UTF-8 text (byte 0x{raw[e.start]:02x} at position {e.start}); save the "
                "file as UTF-8"
            ) from None
    # A byte order mark, as some editors write it, is no part of the JSON.
    return text[1:] if number == 1 and text.startswith("\ufeff") else text


def _time(row: dict[str, Any], name: str) -> datetime | None:
    text = row.get(name)
    if text is None:
        return None
    try:
        if not isinstance(text, str):
            raise InvalidValueError(f"{name!r} is not a string")
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidValueError(
            f"{name!r} must be an ISO-8601 time such as 2026-01-31T12:00:00+00:00"
        ) from None
    if ts.tzinfo is None:
        raise InvalidValueError(f"{name!r} needs a time zone (e.g. +00:00)")
    return ts


def _parse(number: int, text: str) -> _Line:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise InvalidValueError("nested too deeply to be an item") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise InvalidValueError(f"not JSON ({e})") from None
    if not isinstance(row, dict):
        raise InvalidValueError("not a JSON object")
    ns, key, value = row.get("namespace"), row.get("key"), row.get("value")
    if not isinstance(key, str) or not key:
        raise InvalidValueError("'key' must be a non-empty string")
    if "\x00" in key:
        raise InvalidValueError("'key' contains the NUL character (\\u0000); remove it")
    check_text(key, "'key'")
    if not isinstance(ns, list) or not ns:
        raise InvalidValueError("'namespace' must be a non-empty list of labels")
    # The checks every store makes, before anything is written; a store's own
    # (NUL on PostgreSQL) run when the lines are prepared.
    check_namespace(tuple(ns))
    dump_value(tuple(ns), key, value)
    ttl = check_ttl(row.get("ttl"))
    indexed = row.get("indexed", True)
    if not isinstance(indexed, bool):
        raise InvalidValueError("'indexed' must be true or false")
    times = {name: _time(row, name) for name in ("created_at", "updated_at", "expires_at")}
    expiry: Any = ttl
    if ttl is None and times["expires_at"] is not None:
        # An item that expires at a date (put with ttl=<datetime>) keeps that date.
        expiry = times["expires_at"]
        check_expiry(expiry)
    return _Line(number, PutOp(tuple(ns), key, value, None if indexed else False, expiry), times)


def malformed(bad: list[tuple[int, str]]) -> InvalidValueError:
    """The error of an import refused for its bad lines, naming the first ten
    (``details["bad"]`` holds every ``(line number, what is wrong)``)."""
    bad = sorted(bad)
    shown = "; ".join(f"line {n}: {why}" for n, why in bad[:10])
    more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""
    return InvalidValueError(
        f"{len(bad)} malformed line(s), nothing imported: {shown}{more}. Fix them, "
        "or import the other lines with skip_bad=True (--skip-bad on the command line)",
        lines=[n for n, _ in bad],
        bad=bad,
    )


def _chunks(items: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def existing(store: BaseStore, lines: list[_Line]) -> list[tuple[int, str]]:
    """Mark the lines whose item exists (and has not expired) in ``store``;
    returns the lines whose item the store cannot even look up (bad lines)."""
    bad: list[tuple[int, str]] = []

    def look(part: Sequence[_Line]) -> None:
        found = store.batch([GetOp(x.op.namespace, x.op.key, refresh_ttl=False) for x in part])
        for line, item in zip(part, found, strict=True):
            line.existed = item is not None

    for chunk in _chunks(lines):
        for _ in _tries(chunk, look, bad):
            pass
    return bad


def prepare_units(store: Any, ops: list[PutOp]) -> list[tuple[Any, Any]]:
    """``prepare`` for this package's stores: ``(prepared put, its vectors or
    None)`` per op, checked by the store's batch plan and embedded."""
    plan = store._plan(ops)
    if len(plan.puts) != len(ops):
        raise InvalidStateError("prepare_units needs ops with distinct (namespace, key)")
    emb = store.embeddings
    vecs = emb.embed_documents_array(plan.doc_texts) if plan.doc_texts and emb else None
    units: list[tuple[Any, Any]] = []
    pos = 0
    for p in plan.puts:
        n = len(p.fields)
        units.append((p, vecs[pos : pos + n] if vecs is not None and n else None))
        pos += n
    return units


class _Plain:
    """Any other store: its API, batch by batch (each batch on its own)."""

    def __init__(self, store: BaseStore) -> None:
        self._store = store

    def prepare(self, ops: list[PutOp]) -> list[Any]:
        return ops

    @contextmanager
    def session(self) -> Iterator[Write]:
        def write(units: list[Any], rows: list[Row]) -> None:
            self._store.batch(units)

        yield write


def _refused(e: ValueError) -> bool:
    """Whether an error is about the lines written (so trying them one by one
    finds the bad ones), not about the store's configuration."""
    return not isinstance(e, ConfigurationError)


def write_lines(
    store: BaseStore,
    lines: list[_Line],
    skip_bad: bool,
    progress: Callable[[int], None] | None,
) -> tuple[list[_Line], list[tuple[int, str]], bool]:
    """Prepare every line, then write them: ``(lines written, bad lines,
    whether timestamps were restored)``. Unless ``skip_bad``, a bad line
    raises :func:`malformed` and nothing is written (on this package's stores;
    other stores keep the batches written before it)."""
    importer: Any = store.bulk_import() if isinstance(store, BulkImport) else _Plain(store)
    bulk = not isinstance(importer, _Plain)
    bad: list[tuple[int, str]] = []
    prepared: list[tuple[Sequence[_Line], list[Any]]] = []
    done = 0
    for chunk in _chunks(lines):
        prepared.extend(_tries(chunk, lambda part: importer.prepare([x.op for x in part]), bad))
        done += len(chunk)
        if progress is not None:
            progress(done)
    if bad and not skip_bad:
        raise malformed(bad)
    written: list[_Line] = []
    session: AbstractContextManager[Write] = importer.session()
    with session as write:
        for chunk, units in prepared:
            by_line = dict(zip((x.number for x in chunk), units, strict=True))

            def put(part: Sequence[_Line]) -> None:
                write([by_line[x.number] for x in part], [x.row for x in part])  # noqa: B023

            for done_part, _ in _tries(chunk, put, bad):
                written.extend(done_part)
        if bad and not skip_bad:
            raise malformed(bad)  # leaving the session: rolled back
    return written, sorted(bad), bulk


def _tries(
    chunk: Sequence[_Line], action: Callable[[Sequence[_Line]], Any], bad: list[tuple[int, str]]
) -> Iterator[tuple[Sequence[_Line], Any]]:
    """``action`` on the whole chunk; if the store refuses it, on each line
    alone, so the refused lines are known by number (and the others go on)."""
    try:
        yield chunk, action(chunk)
        return
    except ValueError as e:
        if not _refused(e):
            raise
        if len(chunk) == 1:
            bad.append((chunk[0].number, str(e)))
            return
    for line in chunk:
        try:
            out = action([line])
        except ValueError as e:
            if not _refused(e):
                raise
            bad.append((line.number, str(e)))
            continue
        yield [line], out
