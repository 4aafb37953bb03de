"""The per-call state of an engine operation: who calls (tenant, layers and
their namespaces), the clock, and how records become store writes and store
items become records. Built once per call, before any store request, so a
caller who may not act in a tenant is refused before anything is read.

Validation of arguments lives with the declarations (:mod:`..operations`);
reads by id in :mod:`..operations.loading`.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> env = MemoryEngine(SQLiteStore()).env(MemoryContext("acme", user_id="ada"))
    >>> for layer in env.layers()[:2]:
    ...     print(layer.name, layer.ns)
    user ('tenant', 'acme', 'user', 'ada')
    team ('tenant', 'acme', '_shared', 'team', '_')
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from langgraph.store.base import Item, PutOp

from ..identity import layout
from ..identity.layers import check_layer, layer_id, resolve_layers
from ..identity.tenancy import MemoryContext
from ..records.decode import record_from_item
from ..records.models import MemoryEvent, MemoryRecord, Note, new_id, ts
from .config import EngineConfig, StoreCaps
from .metrics import EngineMetrics
from .requests import Unrecorded

__all__ = ["INDEX_FIELDS", "Env", "Layer"]

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
        if requested is None and not self.config.history:
            # Only the caller's own memories (EngineConfig.history): reading
            # other layers would touch namespaces its owner never wrote.
            pairs = [p for p in pairs if p[0] == "user"]
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
        value = record.to_value()
        if not self.config.history and isinstance(record, Note):
            # LangMem's own value: the engine reads kind and times back from
            # the item when they are absent (records.decode).
            for key in ("created_at", "updated_at", "created_by"):
                value.pop(key, None)
            if value.get("kind") == "note":
                del value["kind"]
        return PutOp(ns, record.id, value, self.index_fields())

    def retire(self, old: MemoryRecord, new: MemoryRecord) -> list[PutOp]:
        """Move a memory that is no longer current into its layer's archive. A
        fact stays searchable there (reads of the past rank it by the query;
        its text's embedding is usually cached already)."""
        layer = self.layer_of(old)
        index: list[str] | Literal[False] = False
        if new.type == "fact":
            index = INDEX_FIELDS
        return [
            PutOp(layer.ns, old.id, None),
            PutOp(self.meta(layer, "archive"), new.id, new.to_value(), index),
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
        # Without history a note's change leaves no trace (EngineConfig.history);
        # the lifecycle of facts, episodes and rules keeps its events.
        put = Unrecorded if not self.config.history and isinstance(record, Note) else PutOp
        return put(self.meta(self.layer_of(record), "events"), ev.id, ev.to_value(), False)

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
