"""What every engine operation works with: the caller's environment (tenant,
layers and their namespaces, the clock), validation that runs before any store
op, and reads by id. No I/O: reads are requests yielded to a runner
(:mod:`._core`).

Reads by id look only into the namespaces of the layers the caller may read
(see :mod:`.layout`): an id is data that names a key there, never a filter, so
another user's memory is as invisible as a missing one.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> env = MemoryEngine(SQLiteStore()).env(MemoryContext("acme", user_id="ada"))
    >>> for layer in env.layers()[:2]:
    ...     print(layer.name, layer.ns)
    user ('tenant', 'acme', 'user', 'ada')
    team ('tenant', 'acme', '_shared', 'team', '_')
    >>> check_id({"$ne": None})
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: id must be a non-empty string, got {'$ne': None}
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.store.base import GetOp, Item, PutOp

from ..errors import (
    ContentTooLongError,
    DamagedMemoryError,
    InvalidMemoryTypeError,
    InvalidValueError,
    MemoryNotFoundError,
)
from ..stores import normalize_filter
from . import layout, policy
from ._core import EngineConfig, StoreCaps
from .checks import check_json, check_number, shown
from .decode import record_from_item
from .layers import check_layer, layer_id, resolve_layers
from .metrics import EngineMetrics
from .models import MemoryEvent, MemoryRecord, new_id, ts
from .requests import Batch, Operation
from .tenancy import MemoryContext

__all__ = [
    "Env",
    "Layer",
    "check_any_content",
    "check_content",
    "check_filter",
    "check_id",
    "check_range",
    "check_tags",
    "check_type",
    "check_types",
    "free_fact_ids",
    "load",
    "load_many",
    "not_found",
    "refuse_damaged",
    "require",
]

logger = logging.getLogger("langmem_ext.engine")

#: The field the engine embeds and keyword-indexes.
INDEX_FIELDS = ["content"]


class Layer(NamedTuple):
    """One layer of one caller: its name, identifier and namespace."""

    name: str
    id: str
    ns: tuple[str, ...]

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.id}"


@dataclass(frozen=True)
class Env:
    """Everything an operation needs besides its arguments."""

    config: EngineConfig
    caps: StoreCaps
    ctx: MemoryContext
    tenant: str
    now: datetime
    metrics: EngineMetrics | None = None

    @classmethod
    def make(
        cls,
        config: EngineConfig,
        caps: StoreCaps,
        ctx: MemoryContext,
        tenant: str | None,
        metrics: EngineMetrics | None = None,
    ) -> Env:
        return cls(config, caps, ctx, ctx.resolve_tenant(tenant), config.clock(), metrics)

    @functools.cached_property
    def stamp(self) -> str:
        # Cached: recall compares every candidate against it (strftime per call showed
        # in profiles); ``now`` never changes within one operation.
        return ts(self.now)

    # -- where things live -----------------------------------------------------------

    def layer(self, name: str) -> Layer:
        """The caller's layer ``name`` (MISSING_IDENTIFIER if it lacks its id)."""
        lid = layer_id(check_layer(name), self.ctx)
        if name == "user":
            ns = layout.user_space(self.tenant, self.ctx.own_space())
        elif name == "session":
            ns = layout.session_space(self.tenant, self.ctx.own_space(), lid)
        else:
            ns = layout.shared_space(self.tenant, name, lid)
        return Layer(name, lid, ns)

    def layers(self, requested: Iterable[str] | None = None) -> list[Layer]:
        """The layers to read: ``requested`` (each checked) or every readable one,
        in precedence order."""
        pairs = resolve_layers(requested, self.ctx)
        return [self.layer(name) for name, _ in pairs]

    def meta(self, layer: Layer, kind: str) -> tuple[str, ...]:
        """A bookkeeping namespace of ``layer``: ``archive``, ``events``, ``refs``…"""
        return layout.meta_space(self.tenant, layer.ns, kind)

    def layer_of(self, record: MemoryRecord) -> Layer:
        return self.layer(record.layer)

    # -- writes ----------------------------------------------------------------------

    def index_fields(self) -> list[str] | None:
        return INDEX_FIELDS

    def put(self, record: MemoryRecord) -> PutOp:
        """Write ``record`` as a current memory of its layer."""
        ns = self.layer_of(record).ns
        return PutOp(ns, record.id, record.to_value(), self.index_fields())

    def retire(self, old: MemoryRecord, new: MemoryRecord) -> list[PutOp]:
        """Move a memory that is no longer current into its layer's archive."""
        layer = self.layer_of(old)
        return [
            PutOp(layer.ns, old.id, None),
            PutOp(self.meta(layer, "archive"), new.id, new.to_value(), False),
        ]

    def event(
        self,
        record: MemoryRecord,
        action: str,
        changes: dict[str, list[Any]] | None = None,
        reason: str | None = None,
    ) -> PutOp:
        ev = MemoryEvent(
            new_id(),
            record.id,
            record.type,
            action,
            self.ctx.actor,
            self.stamp,
            changes or {},
            reason,
        )
        return PutOp(self.meta(self.layer_of(record), "events"), ev.id, ev.to_value(), False)

    # -- metrics ---------------------------------------------------------------------

    def sized(self, records: Iterable[MemoryRecord], delta: int) -> None:
        """Tell the storage-size gauge that these records became (un)retrievable."""
        if self.metrics is not None:
            for r in records:
                self.metrics.size_changed(self.tenant, r.layer_ref, delta)

    def observe_results(self, operation: str, layers: Iterable[str], hits: Iterable[Any]) -> None:
        """Record ``memory.search.results`` per searched layer."""
        if self.metrics is not None:
            self.metrics.search_results(operation, layers, [h.layer for h in hits])

    # -- decoding --------------------------------------------------------------------

    def record(self, item: Item, layer: Layer, live: bool = True) -> MemoryRecord:
        """The record ``item`` holds (a :class:`~.decode.Damaged` one when its
        value is not a valid memory: readers skip those by their type)."""
        return record_from_item(
            item, tenant_id=self.tenant, layer=layer.name, layer_id=layer.id, live=live
        )


# -- validation (before any store op, so a bad call changes nothing) ------------


def check_id(id: Any, name: str = "id") -> str:
    """A memory id is a non-empty string; anything else (a dict, a filter
    operator) is rejected before it can reach a store."""
    if not isinstance(id, str) or not id or "\x00" in id:
        raise InvalidValueError(f"{name} must be a non-empty string, got {shown(id)}")
    return id


def check_type(kind: str, allowed: Iterable[str] = policy.MEMORY_TYPES) -> str:
    allowed = tuple(allowed)
    if not isinstance(kind, str) or kind not in allowed:
        raise InvalidMemoryTypeError(
            f"unknown memory type {shown(kind)}; use one of {', '.join(allowed)}",
            type=shown(kind),
            valid=list(allowed),
        )
    return kind


def check_types(types: Any, default: Iterable[str]) -> list[str]:
    """A list of memory types (``default`` for None), each checked."""
    if types is None:
        return list(default)
    if isinstance(types, str) or not isinstance(types, list | tuple | set | frozenset):
        raise InvalidValueError(f"types must be a list of memory types, got {shown(types)}")
    return [check_type(t) for t in types]


def check_filter(filter: Any) -> dict[str, Any] | None:
    """A store filter (None for none), validated before any store op."""
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise InvalidValueError(
            f"filter must be a dict such as {{'category': 'preference'}}, got {shown(filter)}"
        )
    try:
        normalize_filter(filter)
    except RecursionError:
        raise InvalidValueError(
            "filter is nested too deeply; nest conditions a few levels at most"
        ) from None
    except (TypeError, ValueError) as e:
        if isinstance(e, InvalidValueError):
            raise
        raise InvalidValueError(f"invalid filter: {e}") from None
    return dict(filter)


def check_content(env: Env, content: Any, name: str = "content") -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidValueError(f"{name} must be a non-empty string, got {shown(content)}")
    limit = env.config.max_content_length
    if len(content) > limit:
        raise ContentTooLongError(
            f"{name} is {len(content)} characters, the maximum is {limit}; shorten it or "
            "split it into several memories",
            max_length=limit,
            length=len(content),
        )
    return content


def check_any_content(env: Env, content: Any) -> Any:
    """Text (as :func:`check_content`) or structured content (a dict, a list
    or a number, as LangMem's schema memories): JSON only, within the same
    length limit."""
    if isinstance(content, str):
        return check_content(env, content)
    if content is None or (isinstance(content, dict | list) and not content):
        raise InvalidValueError(f"content must not be empty, got {shown(content)}")
    check_json("content", content)
    text = json.dumps(content, ensure_ascii=False, allow_nan=False)
    limit = env.config.max_content_length
    if len(text) > limit:
        raise ContentTooLongError(
            f"content is {len(text)} characters as JSON, the maximum is {limit}; shorten it",
            max_length=limit,
            length=len(text),
        )
    return content


def check_range(name: str, value: Any, bounds: tuple[float, float]) -> float:
    return check_number(name, value, *bounds)


def check_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if (
        isinstance(tags, str)
        or not isinstance(tags, list | tuple)
        or not all(isinstance(t, str) for t in tags)
    ):
        raise InvalidValueError(f"tags must be a list of strings, got {shown(tags)}")
    return list(dict.fromkeys(tags))


def add_fields(env: Env, content: Any, layer: str | None, scope: str, tags: Any) -> dict[str, Any]:
    """The validated fields every new record shares (raises before any store op)."""
    name = check_layer(layer or env.config.default_layer)
    if not isinstance(scope, str) or not scope:
        raise InvalidValueError(
            f"scope must be a non-empty string such as 'global', got {shown(scope)}"
        )
    where = env.layer(name)
    return {
        "id": new_id(),
        "tenant_id": env.tenant,
        "layer": name,
        "layer_id": where.id,
        "content": check_any_content(env, content),
        "scope": scope,
        "tags": check_tags(tags),
        "created_at": env.stamp,
        "updated_at": env.stamp,
        "created_by": env.ctx.actor,
    }


# -- ids ---------------------------------------------------------------------------


def profile_fact_id() -> str:
    """A new profile fact id: ``fact_`` and 8 hex digits of a UUID4."""
    return f"fact_{uuid.uuid4().hex[:8]}"


def free_fact_ids(env: Env, layer: Layer, n: int) -> Operation[list[str]]:
    """``n`` new profile fact ids used by no current or archived memory of the
    layer: an id already taken is drawn again (and logged), never overwritten."""
    places = (layer.ns, env.meta(layer, "archive"))
    out: list[str] = []
    while len(out) < n:
        drawn = list(dict.fromkeys(profile_fact_id() for _ in range(n - len(out))))
        found = yield Batch([GetOp(ns, i) for i in drawn for ns in places])
        taken = {i for i, hit in zip([i for i in drawn for _ in places], found) if hit}
        for i in drawn:
            if i in taken:
                logger.warning("fact id %s is taken; drawing another", i)
            elif i not in out:
                out.append(i)
    return out


# -- reads by id -------------------------------------------------------------------


def load(
    env: Env, kinds: Sequence[str] | None, id: Any, *, archived: bool = True
) -> Operation[MemoryRecord | None]:
    """The record with this id among the caller's layers (current first, then,
    with ``archived``, the archives), of one of ``kinds`` (None: any), or None.
    A damaged item under the id is returned whatever ``kinds`` (it has no
    trustworthy kind): callers that change records refuse it."""
    [record] = yield from load_many(env, kinds, [id], archived=archived)
    return record


def load_many(
    env: Env, kinds: Sequence[str] | None, ids: Sequence[Any], *, archived: bool = True
) -> Operation[list[MemoryRecord | None]]:
    """:func:`load` for several ids, in one batch of reads."""
    wanted = [i if isinstance(i, str) and i else None for i in ids]
    layers = env.layers()
    places = [(la, la.ns, True) for la in layers]
    if archived:
        places += [(la, env.meta(la, "archive"), False) for la in layers]
    keys = [(i, p) for i in dict.fromkeys(w for w in wanted if w) for p in places]
    if not keys:
        return [None] * len(ids)
    items: list[Item | None] = yield Batch([GetOp(p[1], i) for i, p in keys], parallel=True)
    found: dict[str, MemoryRecord] = {}
    for (i, (la, _, live)), item in zip(keys, items, strict=True):
        if item is None or i in found:
            continue
        record = env.record(item, la, live)
        if kinds is None or record.type in kinds or record.damaged:
            found[i] = record
    return [found.get(w) if w else None for w in wanted]


def not_found(id: Any, kind: str | None = None) -> MemoryNotFoundError:
    """The error for an id the caller has no memory with (another user's id
    included: it is as invisible as a missing one), worded once for every
    surface."""
    if kind is None:
        return MemoryNotFoundError(
            f"no memory with id {shown(id)} among your memories; check the id "
            "(search and listings give the ids)",
            id=id,
        )
    return MemoryNotFoundError(
        f"no {kind} with id {shown(id)} among your memories; check the id and the type "
        "(memory_search lists ids)",
        type=kind,
        id=id,
    )


def require(env: Env, kind: str, id: Any, *, archived: bool = True) -> Operation[MemoryRecord]:
    check_type(kind)
    record = yield from load(env, [kind], check_id(id), archived=archived)
    if record is None:
        raise not_found(id, kind)
    return refuse_damaged(record)


def refuse_damaged(record: MemoryRecord) -> MemoryRecord:
    """``record``, unless it is damaged: changing it would save it again
    without the fields that could not be read."""
    if record.damaged:
        raise DamagedMemoryError(
            f"memory {shown(record.id)} is damaged ({getattr(record, 'reason', '')}) and cannot "
            "be changed; read it with get to see its stored value, then delete it (and store "
            "a corrected copy if you need it)",
            id=record.id,
        )
    return record
