"""OpenTelemetry metrics of this package's stores.

Only the OpenTelemetry *API* is used: without an SDK ``MeterProvider`` every
instrument is a no-op. Every ``batch``/``abatch`` of a store records:

===========================  ==========  ===========  =================================
name                         kind        unit         attributes
===========================  ==========  ===========  =================================
store.operations.total       counter     {operation}  ``store``, ``operation`` (get, put,
                                                      search, list_namespaces)
store.operations.latency     histogram   s            ``store`` (one batch)
store.operations.errors      counter     {error}      ``store``, ``error.type``
store.search.results         histogram   {result}     ``store``
===========================  ==========  ===========  =================================

Examples:
    >>> from opentelemetry.sdk.metrics import MeterProvider
    >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    >>> from opentelemetry import metrics
    >>> reader = InMemoryMetricReader()
    >>> m = StoreMetrics(MeterProvider([reader]))
    >>> with m.measure("SQLiteStore", ["search"]):
    ...     pass
    >>> m.total is not None
    True
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp
from opentelemetry import metrics as otel

__all__ = ["StoreMetrics", "instrument_stores", "op_name", "shared_metrics"]

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
RESULT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 1000)


def op_name(op: Any) -> str:
    """``get``, ``put``, ``search`` or ``list_namespaces``."""
    if isinstance(op, GetOp):
        return "get"
    if isinstance(op, PutOp):
        return "put"
    if isinstance(op, ListNamespacesOp):
        return "list_namespaces"
    if isinstance(op, SearchOp) or hasattr(op, "namespace_prefix"):
        return "search"
    return type(op).__name__


class StoreMetrics:
    """The store instruments, from one meter (the global provider by default)."""

    def __init__(self, meter_provider: Any = None) -> None:
        meter = otel.get_meter("langmem_ext.stores", meter_provider=meter_provider)
        self.total = meter.create_counter(
            "store.operations.total", "{operation}", "Store operations run"
        )
        self.latency = meter.create_histogram(
            "store.operations.latency",
            "s",
            "Duration of a store batch",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        self.errors = meter.create_counter(
            "store.operations.errors", "{error}", "Store batches that raised"
        )
        self.results = meter.create_histogram(
            "store.search.results",
            "{result}",
            "Results of one store search",
            explicit_bucket_boundaries_advisory=RESULT_BUCKETS,
        )

    @contextmanager
    def measure(self, store: str, ops: Sequence[str]) -> Iterator[None]:
        """Count a batch's operations, time it, count its error if it raises."""
        for name in ops:
            self.total.add(1, {"store": store, "operation": name})
        start = time.perf_counter()
        try:
            yield
        except Exception as e:
            self.errors.add(1, {"store": store, "error.type": type(e).__name__})
            raise
        finally:
            self.latency.record(time.perf_counter() - start, {"store": store})

    def searched(self, store: str, ops: Iterable[Any], results: Sequence[Any]) -> None:
        for op, result in zip(ops, results, strict=False):
            if op_name(op) == "search" and isinstance(result, list):
                self.results.record(len(result), {"store": store})


_shared: StoreMetrics | None = None


def shared_metrics() -> StoreMetrics:
    """The instruments every store records to: on the global ``MeterProvider``
    (OpenTelemetry's proxy forwards to the provider the application sets,
    whenever it sets it), unless :func:`instrument_stores` chose another."""
    global _shared
    if _shared is None:
        _shared = StoreMetrics()
    return _shared


def instrument_stores(meter_provider: Any) -> StoreMetrics:
    """Record every store's metrics to ``meter_provider`` from now on (instead of
    the global provider); returns the instruments.

    Examples:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> _ = instrument_stores(MeterProvider())
        >>> _ = instrument_stores(None)  # back to the global provider
    """
    global _shared
    _shared = StoreMetrics(meter_provider)
    return _shared
