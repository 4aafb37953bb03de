"""Memory observability: the engine's OpenTelemetry metrics.

Only the OpenTelemetry *API* is used here: without a configured SDK every
instrument is a no-op, so metrics cost nothing until an application installs a
``MeterProvider`` (globally, or per engine with ``meter_provider=``).

This module lives in the engine, not in ``surfaces/``, because the engine's
runners record the metrics and a layer may only import from layers below it
(``docs/engine.md``, "Metrics"). Surfaces such as the tools need nothing extra:
they call engine operations, which are measured.

===========================  ==========  ============  ==================================
name                         kind        unit          attributes
===========================  ==========  ============  ==================================
memory.operations.total      counter     {operation}   ``operation``
memory.operations.latency    histogram   s             ``operation``
memory.operations.errors     counter     {error}       ``operation``, ``error.code``
memory.search.results        histogram   {result}      ``operation``, ``layer``
memory.storage.size          gauge       {memory}      ``layer``
===========================  ==========  ============  ==================================

Examples:
    >>> from opentelemetry.sdk.metrics import MeterProvider
    >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> reader = InMemoryMetricReader()
    >>> engine = MemoryEngine(SQLiteStore(), meter_provider=MeterProvider([reader]))
    >>> _ = engine.add(MemoryContext("acme", user_id="ada"), "Ada likes tea")
    >>> collected_points(reader)["memory.operations.total"]
    [({'operation': 'add'}, 1)]
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from threading import Lock
from typing import Any

from opentelemetry import metrics as otel
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from ...errors import LangmemError

__all__ = ["METRIC_NAMES", "EngineMetrics", "collected_points"]

METRIC_NAMES = (
    "memory.operations.total",
    "memory.operations.latency",
    "memory.operations.errors",
    "memory.search.results",
    "memory.storage.size",
)
# Histogram buckets: latencies from 0.5 ms to 10 s; result counts up to the 1000 cap.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
RESULT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 1000)


def error_code(error: BaseException) -> str:
    """The ``error.code`` attribute: our stable code, or ``UNEXPECTED``."""
    return error.code if isinstance(error, LangmemError) else "UNEXPECTED"


class EngineMetrics:
    """The five instruments, created from one meter.

    Args:
        meter_provider: where to record; None uses the global provider
            (a no-op until the application configures the SDK).
    """

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        meter = otel.get_meter("langmem_ext.engine", meter_provider=meter_provider)
        self.total = meter.create_counter(
            "memory.operations.total", "{operation}", "Memory engine operations started"
        )
        self.latency = meter.create_histogram(
            "memory.operations.latency",
            "s",
            "Duration of memory engine operations, store round trips included",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        self.errors = meter.create_counter(
            "memory.operations.errors", "{error}", "Memory engine operations that raised"
        )
        self.results = meter.create_histogram(
            "memory.search.results",
            "{result}",
            "Results a search returned, per searched layer",
            explicit_bucket_boundaries_advisory=RESULT_BUCKETS,
        )
        meter.create_observable_gauge(
            "memory.storage.size",
            [self._observe_sizes],
            "{memory}",
            "Live memories per layer, as last counted by stats/storage_size "
            "and kept up to date by this engine's own writes",
        )
        # (tenant, layer_ref) -> live count. Only layers counted once get deltas, so
        # the gauge never reports a bare delta as if it were a size.
        self._sizes: dict[tuple[str, str], int] = {}
        self._lock = Lock()  # the SDK's collection thread reads while operations write

    @contextmanager
    def measure(self, operation: str) -> Iterator[None]:
        """Count one operation, time it, and count its error if it raises.

        A plain (not async) context manager, so the sync and async wrappers in
        :mod:`.engine` use the same body; it never awaits.
        """
        attrs = {"operation": operation}
        self.total.add(1, attrs)
        start = time.perf_counter()
        try:
            yield
        except BaseException as e:
            if isinstance(e, Exception):  # not cancellation / KeyboardInterrupt
                self.errors.add(1, {**attrs, "error.code": error_code(e)})
            raise
        finally:
            self.latency.record(time.perf_counter() - start, attrs)

    def search_results(
        self, operation: str, layers: Iterable[str], hit_layers: Sequence[str]
    ) -> None:
        """Record how many results each searched layer contributed (0 included)."""
        for layer in dict.fromkeys(layers):
            n = sum(1 for h in hit_layers if h == layer)
            self.results.record(n, {"operation": operation, "layer": layer})

    def set_sizes(self, tenant: str, sizes: dict[str, int]) -> None:
        """Replace counted sizes, keyed by layer reference (``"user:ada"``,
        ``"org:acme"``): one caller sees only its own user/session layer, so
        counts are kept per reference and summed per layer when exported."""
        with self._lock:
            for layer, n in sizes.items():
                self._sizes[(tenant, layer)] = n

    def size_changed(self, tenant: str, layer_ref: str, delta: int) -> None:
        """Apply a write's effect (+1 created, -1 deleted/forgotten/superseded)."""
        with self._lock:
            key = (tenant, layer_ref)
            if key in self._sizes:
                self._sizes[key] = max(0, self._sizes[key] + delta)

    def _observe_sizes(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            per_layer: dict[str, int] = {}
            for (_, ref), n in self._sizes.items():
                layer = ref.split(":", 1)[0]
                per_layer[layer] = per_layer.get(layer, 0) + n
        return [Observation(n, {"layer": layer}) for layer, n in sorted(per_layer.items())]


def collected_points(reader: Any) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """Collect an SDK ``InMemoryMetricReader`` as ``{name: [(attributes, value)]}``.

    Counters and gauges give their value, histograms their ``count``. A helper
    for tests and examples (it needs ``opentelemetry-sdk``, the test extra).

    Examples:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        >>> reader = InMemoryMetricReader()
        >>> EngineMetrics(MeterProvider([reader])).total.add(2, {"operation": "get"})
        >>> collected_points(reader)
        {'memory.operations.total': [({'operation': 'get'}, 2)]}
    """
    out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                pts = out.setdefault(m.name, [])
                for p in m.data.data_points:
                    value = p.count if hasattr(p, "bucket_counts") else p.value
                    pts.append((dict(p.attributes or {}), value))
                pts.sort(key=lambda p: sorted(p[0].items()))
    return out
