"""Running summaries kept in the store, one per thread, so a thread resumed
on another worker (or without a checkpointer) keeps its summary.

``SummarizationNode(..., summaries_namespace=("summaries", "{user_id}"))``
reads the thread's summary from the store when the state has none, and writes
it each time it changes, under the key ``thread_id`` of the run's config. The
store is the one given (``store=``) or the graph's.

A stored summary that is damaged (written by another program: ``summary`` not
text, ``summarized_message_ids`` not a list of texts, a
``last_summarized_message_id`` that is not text) is skipped, logged once per
process: the thread is summarized as if it had none, and the next summary
replaces it.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import run_sync
    >>> place = SummaryPlace(("summaries",), SQLiteStore())
    >>> cfg = {"configurable": {"thread_id": "t-1"}}
    >>> _ = run_sync(place.save(RunningSummary("so far: hi", {"1"}, "1"), cfg), place.store)
    >>> run_sync(place.load(cfg), place.store).summary
    'so far: hi'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp

from ..engine import Batch, NamespaceTemplate, Operation, shown, warn_once
from ..errors import ConfigurationError

__all__ = ["RunningSummary", "SummaryPlace", "allow_in_checkpoints"]


@dataclass
class RunningSummary:
    """The summary so far and which messages it covers (LangMem's shape)."""

    summary: str
    summarized_message_ids: set[str] = field(default_factory=set)
    last_summarized_message_id: str | None = None


def allow_in_checkpoints(*classes: type) -> None:
    """Let LangGraph's checkpoint serializer read ``classes`` back without its
    "Deserializing unregistered type … will be blocked in a future version"
    warning, and in strict mode (``LANGGRAPH_STRICT_MSGPACK=true``) at all.

    ``SummarizationNode`` puts a :class:`RunningSummary` in the graph state,
    so every checkpoint of such a thread holds one; without this, resuming
    the thread warns today and fails once LangGraph blocks unregistered
    types. LangGraph reads its list of always-allowed types
    (``SAFE_MSGPACK_TYPES``) at each load, and offers no other registry that
    reaches checkpointers the app built itself; the classes added here are
    plain dataclasses of text and sets, so rebuilding one runs no code of the
    checkpoint's choosing. A LangGraph without that list changes nothing.

    Examples:
        >>> from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
        >>> serde = JsonPlusSerializer()
        >>> serde.loads_typed(serde.dumps_typed(RunningSummary("hi", {"m1"}))).summary
        'hi'
    """
    try:
        from langgraph.checkpoint.serde import _msgpack
    except ImportError:  # pragma: no cover - a LangGraph before the allowlist
        return
    safe = getattr(_msgpack, "SAFE_MSGPACK_TYPES", None)
    if isinstance(safe, frozenset):
        _msgpack.SAFE_MSGPACK_TYPES = safe | {(c.__module__, c.__qualname__) for c in classes}


allow_in_checkpoints(RunningSummary)


class SummaryPlace:
    """Where a thread's running summary lives: a namespace template and a store
    (None: the graph's store, looked up at run time)."""

    def __init__(self, namespace: Any, store: BaseStore | None = None) -> None:
        self.template = NamespaceTemplate(namespace)
        self.store = store

    def resolve_store(self) -> BaseStore:
        if self.store is not None:
            return self.store
        from langgraph.config import get_store

        try:
            store = get_store()
        except RuntimeError:  # outside a graph
            store = None
        if store is None:
            raise ConfigurationError(
                "summaries_namespace needs a store: compile the graph with store=..., or pass "
                "SummarizationNode(..., store=store)"
            )
        return store

    def _where(self, config: Any) -> tuple[tuple[str, ...], str]:
        thread = ((config or {}).get("configurable") or {}).get("thread_id")
        if thread in (None, ""):
            raise ConfigurationError(
                "summaries_namespace keeps one summary per thread: run the graph with "
                "config={'configurable': {'thread_id': ...}}"
            )
        return self.template(config), str(thread)

    def load(self, config: Any) -> Operation[RunningSummary | None]:
        """The thread's stored summary, or None (none stored, or damaged)."""
        ns, key = self._where(config)
        (item,) = yield Batch([GetOp(ns, key)])
        if item is None:
            return None
        problem = _problem(item.value)
        if problem is not None:
            warn_once(
                item,
                "skipped damaged running summary %s in %s: %s; the thread is summarized "
                "without it, and its next summary replaces it",
                key,
                "/".join(ns),
                problem,
            )
            return None
        v = item.value
        return RunningSummary(
            summary=v.get("summary", ""),
            summarized_message_ids=set(v.get("summarized_message_ids") or ()),
            last_summarized_message_id=v.get("last_summarized_message_id"),
        )

    def save(self, summary: RunningSummary, config: Any) -> Operation[None]:
        """Store ``summary`` as the thread's (not indexed for search)."""
        ns, key = self._where(config)
        value = {
            "kind": "running_summary",
            "summary": summary.summary,
            "summarized_message_ids": sorted(summary.summarized_message_ids),
            "last_summarized_message_id": summary.last_summarized_message_id,
        }
        yield Batch([PutOp(ns, key, value, index=False)])


def _problem(value: Any) -> str | None:
    """What makes a stored value no running summary (None: it is one)."""
    if not isinstance(value, dict):
        return f"its value is not an object: {shown(value)}"
    summary = value.get("summary", "")
    if not isinstance(summary, str):
        return f"summary must be text, got {shown(summary)}"
    ids = value.get("summarized_message_ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return f"summarized_message_ids must be a list of texts, got {shown(ids)}"
    last = value.get("last_summarized_message_id")
    if last is not None and not isinstance(last, str):
        return f"last_summarized_message_id must be text or null, got {shown(last)}"
    return None
