"""The writes of a store-manager run, all or nothing.

:class:`~.store_manager.MemoryStoreManager` calls the model first (searches,
extraction steps, phases: reads and model calls only), then hands what the
model decided to :func:`apply_changes`, which

* re-reads the current copy of every memory that changes (a change made since
  the search is built upon; one deleted meanwhile fails the run rather than
  coming back);
* plans every write through the engine — new notes, in-place updates, a fact's
  successor with the old fact archived as superseded, deletions, the default
  memory — each with its audit event, validating all of them (a memory that
  is too long, or whose content is empty — blank text, ``{}``, an object of
  blank fields — is refused here, ``INVALID_VALUE``, before anything is
  written);
* makes them in **one** store batch, which our stores run as one transaction:
  a model error, a refused memory or a store refusing the batch leaves the
  user's memories exactly as they were.

Only after the batch does it settle the (subject, predicate) slots of revised
facts (:func:`~langmem_ext.engine.operations.lifecycle.resolve_slot`), which matters
only when another writer changed the same slot meanwhile; a failure there is
logged, the run's own changes being complete and consistent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langgraph.store.base import PutOp
from pydantic import BaseModel

from ..engine import (
    Batch,
    Env,
    Fact,
    MemoryRecord,
    Note,
    Operation,
    add_fields,
    delete_ops,
    load_many,
    plan_revision,
    resolve_slot,
)
from ..errors import MemoryNotFoundError
from .managers import ExtractedMemory, RemoveDoc
from .schemas import refuse_empty

__all__ = ["apply_changes"]

logger = logging.getLogger("langmem_ext.agents.reflection")


def apply_changes(
    env: Env,
    records: dict[str, MemoryRecord],
    extracted: list[ExtractedMemory],
    default: Note | None,
    shown: Callable[[MemoryRecord], tuple[str, Any]],
) -> Operation[list[dict[str, Any]]]:
    """Write the manager's output (``extracted``) over the ``records`` the model
    saw, keeping each item's shape; ``default`` is a planned default memory
    (not stored yet), ``shown`` how a record was shown to the model. Returns
    the puts made (LangMem's ``namespace``, ``key``, ``value``).

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> from langmem_ext.langmem import Memory
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> new = [ExtractedMemory("m1", Memory(content="Likes tea"))]
        >>> step = apply_changes(engine.env(ctx), {}, new, None, lambda r: (r.kind, r.content))
        >>> [p["value"]["content"] for p in engine.run(step)]
        [{'content': 'Likes tea'}]
    """
    ns = env.layer("user").ns
    # The current copies of what changes: a change since the search is
    # built upon, and a memory deleted meanwhile is not written back.
    stored = [m for m, _ in extracted if m in records and records[m] is not default]
    current = dict(zip(stored, (yield from load_many(env, None, stored, archived=False))))
    puts: list[PutOp] = []
    if default is not None:
        refuse_empty(default.id, default.content)
        puts += [env.put(default), env.event(default, "created", reason="default")]
        current[default.id] = default
    made: list[dict[str, Any]] = []
    added: list[MemoryRecord] = []
    gone: list[MemoryRecord] = []
    revised: list[Fact] = []
    for mid, content in extracted:
        seen, old = records.get(mid), current.get(mid)
        if isinstance(content, RemoveDoc):
            if old is not None and old is default:
                puts = puts[2:]  # the default memory: planned, never written
            elif old is not None:
                puts += delete_ops(env, old)
                gone.append(old)
            continue
        if not isinstance(content, BaseModel):
            continue  # an existing memory the model left as it was
        kind = type(content).__name__
        value = content.model_dump(mode="json")
        refuse_empty(mid, value)
        if seen is None:
            note = Note(**add_fields(env, value, None, "global", None), stored_kind=kind)
            note.id = mid
            puts += [env.put(note), env.event(note, "created", reason="manager")]
            added.append(note)
            made.append({"namespace": ns, "key": note.id, "value": note.to_value()})
            continue
        if shown(seen) == (kind, value):
            continue
        if old is None:
            raise MemoryNotFoundError(
                f"memory {mid!r} was deleted while the manager ran; run it again",
                id=mid,
            )
        # Keep the item's shape: text stays text (a fact stays a fact).
        new_content: Any = value
        if isinstance(old.content, str) and set(value) == {"content"}:
            new_content = value["content"]
        new, ops = yield from plan_revision(env, old, new_content)
        puts += ops
        if isinstance(new, Fact):
            revised.append(new)
            added.append(new)
            gone.append(old)
        made.append({"namespace": ns, "key": new.id, "value": new.to_value()})
    if puts:
        yield Batch(puts)
    env.sized(added, +1)
    env.sized(gone, -1)
    for fact in revised:
        try:
            yield from resolve_slot(env, env.layer_of(fact), fact.slot)
        except Exception as e:  # the run's changes are made; another write converges
            logger.warning("could not settle the slot of fact %s: %s", fact.id, e)
    return made
