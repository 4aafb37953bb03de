"""What every backend's ``batch``/``abatch`` is wrapped in, without the
backends knowing: the re-ranking stage (:mod:`.rerankers`) and the store
metrics (:mod:`._metrics`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import BaseStore, Op

from ._metrics import op_name, shared_metrics
from .retriever import item_text

__all__ = ["ameasured", "areranked", "measured", "reranked"]


def _listed(ops: Any) -> tuple[Any, list[str]]:
    # Not-a-list input passes through unchanged: the backend's batch() turns it
    # into its clear InvalidValueError; the wrapper must not fail first.
    if isinstance(ops, Iterable) and not isinstance(ops, str | bytes | Mapping):
        ops = list(ops)
        return ops, [op_name(op) for op in ops]
    return ops, []


def reranked(batch: Any) -> Any:
    @functools.wraps(batch)
    def reranked(self: Any, ops: Iterable[Op]) -> list[Any]:
        stage = self._reranker
        if stage is None:
            return batch(self, ops)
        ops, _ = _listed(ops)
        wide, picked = stage.widen(ops, self.search_mode) if isinstance(ops, list) else (ops, {})
        if not picked:
            return batch(self, ops)
        results = batch(self, wide)
        text = functools.partial(item_text, self)
        for i, op in picked.items():
            results[i] = stage.apply(op, results[i], text)
        return results

    return reranked


def areranked(abatch: Any) -> Any:
    @functools.wraps(abatch)
    async def reranked(self: Any, ops: Iterable[Op]) -> list[Any]:
        stage = self._reranker
        if stage is None:
            return await abatch(self, ops)
        ops, _ = _listed(ops)
        wide, picked = stage.widen(ops, self.search_mode) if isinstance(ops, list) else (ops, {})
        if not picked:
            return await abatch(self, ops)
        results = await abatch(self, wide)
        text = functools.partial(item_text, self)
        for i, op in picked.items():
            results[i] = await stage.aapply(op, results[i], text)
        return results

    return reranked


def measured(batch: Any) -> Any:
    @functools.wraps(batch)
    def measured(self: BaseStore, ops: Iterable[Op]) -> list[Any]:
        ops, names = _listed(ops)
        metrics = shared_metrics()
        with metrics.measure(type(self).__name__, names):
            results = batch(self, ops)
        metrics.searched(type(self).__name__, ops, results)
        return results

    return measured


def ameasured(abatch: Any) -> Any:
    @functools.wraps(abatch)
    async def measured(self: BaseStore, ops: Iterable[Op]) -> list[Any]:
        ops, names = _listed(ops)
        metrics = shared_metrics()
        with metrics.measure(type(self).__name__, names):
            results = await abatch(self, ops)
        metrics.searched(type(self).__name__, ops, results)
        return results

    return measured
