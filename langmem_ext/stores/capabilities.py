"""What a store backend may offer beyond LangGraph's ``BaseStore``, declared
as typed protocols with public names. The package's own stores (SQLite,
PostgreSQL sync and async) implement all of them; any other ``BaseStore``
works without them, through its ``batch``/``search`` API (the docs page
"Adding a store backend" says what a backend implements).

* :class:`PagedExport` — ``transfer_page``: export lines in namespace and key
  order, a page at a time, without refreshing TTLs
  (:func:`~langmem_ext.stores.transfer.export_jsonl`);
* :class:`BulkImport` — ``bulk_import()``: an importer that checks and embeds
  every line before writing and writes them in one transaction, timestamps
  restored (:func:`~langmem_ext.stores.transfer.import_jsonl`);
* :class:`IndexedFields` — ``indexed_fields``: the field paths the store's
  index embeds, as the store resolved them (the LangChain retriever's text).

A capability is checked with ``isinstance`` (the protocols are
``runtime_checkable``): a store has it when it has the public name.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = SQLiteStore(index={"embed": lambda texts: [[1.0, 0.0]] * len(texts),
    ...                           "dims": 2, "fields": ["content"]})
    >>> isinstance(store, PagedExport), isinstance(store, BulkImport), store.indexed_fields
    (True, True, (['content'],))
    >>> isinstance(InMemoryStore(), PagedExport)
    False
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import PutOp

__all__ = [
    "BulkImport",
    "BulkImporter",
    "ExportRow",
    "ImportRow",
    "IndexedFields",
    "PagedExport",
    "WriteUnits",
]

#: One export line with its position: ``((namespace joined, key), line)``.
ExportRow = tuple[tuple[str, str], dict[str, Any]]
#: An imported item's timestamps: ``(namespace, key, {"created_at": ...})``.
ImportRow = tuple[tuple[str, ...], str, dict[str, datetime | None]]
#: Writes prepared units and restores their timestamps, inside a savepoint.
WriteUnits = Callable[[list[Any], list[ImportRow]], None]


@runtime_checkable
class PagedExport(Protocol):
    """A store that pages its items out for export in a stable order."""

    def transfer_page(
        self, namespace_prefix: tuple[str, ...], after: tuple[str, str] | None, limit: int
    ) -> list[ExportRow]:
        """Up to ``limit`` items under ``namespace_prefix``, after the position
        ``after`` (``None``: from the start), in namespace and key order;
        expired items skipped, TTLs not refreshed."""
        ...


class BulkImporter(Protocol):
    """One import: prepare every line first, then write in one transaction."""

    def prepare(self, ops: list[PutOp]) -> list[Any]:
        """Check the puts as the store's ``batch`` would and embed them,
        writing nothing: one unit per op, in order. Raises ``ValueError``
        (an error of the package's tree) for a put the store refuses."""
        ...

    def session(self) -> AbstractContextManager[WriteUnits]:
        """A transaction giving a :data:`WriteUnits`; it commits when the
        context ends without an error, and a refused write (its own
        savepoint) leaves the others in place."""
        ...


@runtime_checkable
class BulkImport(Protocol):
    """A store that imports atomically, with timestamps restored."""

    def bulk_import(self) -> BulkImporter:
        """A fresh :class:`BulkImporter` for one import."""
        ...


@runtime_checkable
class IndexedFields(Protocol):
    """A store that says which field paths of a value its index embeds."""

    @property
    def indexed_fields(self) -> Sequence[Sequence[str]]:
        """The tokenized paths (``"$"``, the whole value, left out); empty
        without an index."""
        ...
