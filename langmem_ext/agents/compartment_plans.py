"""The compartments' entries and their three tools' plans: what ``save_memory``,
``get_memory`` and ``clear_memory`` would write, worked out without writing
(:mod:`.compartments` runs them in one batch).

Examples:
    >>> ops, answer = plan_save(("run",), [], {"compartment": "run", "content": "step 1 done"},
    ...                         limit=100, ttl=None)
    >>> answer.startswith("saved memory"), len(ops)
    (True, 1)
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from langgraph.store.base import BaseStore, PutOp
from pydantic import BaseModel, Field, create_model

from ..engine import shown, ts
from ..errors import CompartmentFullError, MemoryToolError

__all__ = [
    "COMPARTMENTS",
    "PLANS",
    "MemoryEntry",
    "alist_entries",
    "list_entries",
    "plan_clear",
    "plan_get",
    "plan_save",
    "schemas",
    "ttl_supported",
]

Compartment = Literal["run", "session", "plan"]
COMPARTMENTS: tuple[str, ...] = ("run", "session", "plan")
_PAGE = 500


@dataclass
class MemoryEntry:
    """One entry of a compartment, as stored and as ``get_memory`` returns it."""

    id: str
    content: str
    category: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    access_count: int = 0
    priority: int = 5

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> MemoryEntry:
        known = {k: value[k] for k in cls.__dataclass_fields__ if k in value}
        return cls(**known)


# -- listing -------------------------------------------------------------------------


def list_entries(store: BaseStore, ns: tuple[str, ...]) -> list[MemoryEntry]:
    items, offset = [], 0
    while True:
        page = store.search(ns, limit=_PAGE, offset=offset)
        items.extend(page)
        if len(page) < _PAGE:
            return _entries(items, ns)
        offset += _PAGE


async def alist_entries(store: BaseStore, ns: tuple[str, ...]) -> list[MemoryEntry]:
    items, offset = [], 0
    while True:
        page = await store.asearch(ns, limit=_PAGE, offset=offset)
        items.extend(page)
        if len(page) < _PAGE:
            return _entries(items, ns)
        offset += _PAGE


def _entries(items: list[Any], ns: tuple[str, ...]) -> list[MemoryEntry]:
    # Search matches by prefix; a sub-agent's run memory sits below its parent's.
    out = [MemoryEntry.from_value(it.value) for it in items if tuple(it.namespace) == ns]
    return sorted(out, key=lambda e: (e.created_at, e.id))


# -- the three tools: pure planning, then one batch ----------------------------------


def _select(
    entries: list[MemoryEntry], id: str | None, category: str | None, tags: list[str] | None
) -> list[MemoryEntry]:
    return [
        e
        for e in entries
        if (id is None or e.id == id)
        and (category is None or e.category == category)
        and (not tags or set(tags) & set(e.tags))
    ]


def plan_save(
    ns: tuple[str, ...],
    entries: list[MemoryEntry],
    args: dict[str, Any],
    *,
    limit: int,
    ttl: float | None,
) -> tuple[list[PutOp], str]:
    """The puts that save ``args`` and the tool's answer (nothing is written here)."""
    compartment, content = args["compartment"], args["content"]
    if not content.strip():
        raise MemoryToolError("content is empty; save some text.")
    now = ts(datetime.now(timezone.utc))
    entry_id = args.get("id")
    old = next((e for e in entries if e.id == entry_id), None) if entry_id else None
    if entry_id and old is None:
        known = ", ".join(e.id for e in entries) or "none"
        raise MemoryToolError(
            f"no entry {shown(entry_id)} in {compartment} memory (ids: {known}); omit id to save "
            "a new entry."
        )
    used = sum(len(e.content) for e in entries if e is not old)
    if len(content) > limit:
        raise CompartmentFullError(
            f"this entry has {len(content):,} characters, more than the {compartment} "
            f"compartment's limit of {limit:,}; shorten it."
        )
    if used + len(content) > limit:
        raise CompartmentFullError(_full_message(compartment, used, len(content), limit, entries))
    if old is None:
        taken = {e.id for e in entries}
        entry_id = next(i for i in iter(lambda: uuid.uuid4().hex[:8], None) if i not in taken)
    assert entry_id is not None
    entry = MemoryEntry(
        id=entry_id,
        content=content,
        category=args.get("category"),
        tags=list(args.get("tags") or []),
        metadata=dict(args.get("metadata") or {}),
        created_at=old.created_at if old else now,
        updated_at=now,
        access_count=old.access_count if old else 0,
        priority=args.get("priority") or 5,
    )
    op = PutOp(ns, entry.id, asdict(entry), index=False, ttl=ttl)
    return [op], (
        f"saved memory {entry.id} in {compartment} "
        f"({used + len(content):,}/{limit:,} characters used)"
    )


def _full_message(compartment: str, used: int, need: int, limit: int, entries: list[Any]) -> str:
    ranked = sorted(entries, key=lambda e: (e.priority, e.access_count, e.updated_at))
    listing = "; ".join(
        f"id={e.id} ({len(e.content):,} chars, priority {e.priority}, read {e.access_count}x"
        f"{', category ' + e.category if e.category else ''}): {e.content[:40]!r}"
        for e in ranked[:10]
    )
    return (
        f"the {compartment} compartment is full: it holds {used:,} of {limit:,} characters "
        f"and this entry needs {need:,}. Delete entries you no longer need with "
        f"clear_memory(compartment={shown(compartment)}, id=...) and save again. Entries, least "
        f"important first: {listing}."
    )


def plan_get(
    ns: tuple[str, ...],
    entries: list[MemoryEntry],
    args: dict[str, Any],
    *,
    limit: int,
    ttl: float | None,
) -> tuple[list[PutOp], str]:
    """The puts that count the reads of the chosen entries, and the entries as JSON."""
    chosen = _select(entries, args.get("id"), args.get("category"), args.get("tags"))
    if args.get("id") and not chosen:
        raise MemoryToolError(
            f"no entry {shown(args['id'])} in {args['compartment']} memory; call get_memory "
            "without id to list the entries."
        )
    for e in chosen:
        e.access_count += 1
    ops = [PutOp(ns, e.id, asdict(e), index=False, ttl=ttl) for e in chosen]
    return ops, json.dumps([asdict(e) for e in chosen], ensure_ascii=False)


def plan_clear(
    ns: tuple[str, ...],
    entries: list[MemoryEntry],
    args: dict[str, Any],
    *,
    limit: int,
    ttl: float | None,
) -> tuple[list[PutOp], str]:
    """The deletes of the chosen entries."""
    chosen = _select(entries, args.get("id"), args.get("category"), args.get("tags"))
    ops = [PutOp(ns, e.id, None) for e in chosen]
    return ops, f"cleared {len(ops)} entries from {args['compartment']}"


PLANS = {"save_memory": plan_save, "get_memory": plan_get, "clear_memory": plan_clear}


def ttl_supported(store: BaseStore, ops: list[PutOp]) -> list[PutOp]:
    # Stores without TTL keep run entries until the next run of the thread clears them.
    if getattr(store, "supports_ttl", False):
        return ops
    return [op._replace(ttl=None) for op in ops]


def schemas(limits: dict[str, int]) -> dict[str, tuple[type[BaseModel], str]]:
    """The three tools' argument models and descriptions."""
    comp: Any = (Compartment, Field(description="run, session or plan."))
    select: dict[str, Any] = {
        "id": (str | None, Field(None, description="Select the entry with this id.")),
        "category": (str | None, Field(None, description="Select entries of this category.")),
        "tags": (
            list[str] | None,
            Field(None, description="Select entries having any of these tags."),
        ),
    }
    sizes = ", ".join(f"{k} {v:,}" for k, v in limits.items())
    save = create_model(
        "save_memory",
        __config__={"extra": "forbid"},
        compartment=comp,
        content=(str, Field(description="The note to remember.")),
        category=(str | None, Field(None, description="A category, e.g. 'preference'.")),
        tags=(list[str] | None, Field(None, description="Tags for finding the entry later.")),
        metadata=(dict[str, str] | None, Field(None, description="Extra key-value details.")),
        priority=(
            int | None,
            Field(5, ge=1, le=10, description="Importance 1-10 (10 highest); default 5."),
        ),
        id=(str | None, Field(None, description="Id of an entry to overwrite; omit for new.")),
    )
    config: Any = {"extra": "forbid"}
    get = create_model("get_memory", __config__=config, compartment=comp, **select)
    clear = create_model("clear_memory", __config__=config, compartment=comp, **select)
    return {
        "save_memory": (
            save,
            "Save a note in one of your memory compartments. 'run': scratch notes for the "
            "current task, shown to you in every step of this run and erased when it ends. "
            "'session': facts for the whole session, kept across runs and shared with "
            "sub-agents; read them with get_memory. 'plan': the steps of a multi-step plan "
            f"and their progress. Size limits in characters: {sizes}; when a compartment is "
            "full, delete entries with clear_memory. Pass id to overwrite an entry.",
        ),
        "get_memory": (
            get,
            "Read entries from a memory compartment (run, session or plan), all of them or "
            "those matching id, category or tags. Returns a JSON list of entries.",
        ),
        "clear_memory": (
            clear,
            "Delete entries from a memory compartment: the one with id, those with the "
            "category or any of the tags, or all entries when nothing is selected.",
        ),
    }
