"""Seed 001 "Memory Observability": the five metrics, read back through the
OpenTelemetry SDK's in-memory reader, for sync and async calls alike."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from langmem_ext.engine import MemoryContext, MemoryEngine, RetryPolicy
from langmem_ext.errors import ContentTooLongError, MissingIdentifierError, ProviderError

from .conftest import Runner


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture(params=["sync", "async"])
def meng(request, store, clock, reader) -> Runner:
    engine = MemoryEngine(
        store,
        clock=clock,
        retry=RetryPolicy(base_delay=0.0),
        meter_provider=MeterProvider([reader]),
    )
    return Runner(engine, request.param)


def points(reader: InMemoryMetricReader) -> dict[str, dict[tuple, Any]]:
    """{metric: {sorted attribute items: value}}; histograms give (count, sum)."""
    out: dict[str, dict[tuple, Any]] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    key = tuple(sorted(p.attributes.items()))
                    v = (p.count, p.sum) if hasattr(p, "bucket_counts") else p.value
                    out.setdefault(m.name, {})[key] = v
    return out


def by_op(series: dict[tuple, Any]) -> dict[str, Any]:
    return {dict(k)["operation"]: v for k, v in series.items()}


def test_every_operation_counted_once_with_its_latency(meng, ctx, reader):
    note = meng.add(ctx, "likes tea")
    meng.store_fact(ctx, "user", "drink", "Drinks tea")
    meng.store_fact(ctx, "user", "drink", "Drinks coffee")  # supersession: still one call
    meng.get(ctx, note.id)
    meng.recall(ctx, "drink")
    meng.search(ctx, "tea")
    meng.delete(ctx, note.id)
    p = points(reader)
    assert by_op(p["memory.operations.total"]) == {
        "add": 1,
        "store_fact": 2,
        "get": 1,
        "recall": 1,
        "search": 1,
        "delete": 1,
    }
    latency = by_op(p["memory.operations.latency"])
    assert {op: count for op, (count, _) in latency.items()} == by_op(p["memory.operations.total"])
    assert all(total > 0 for _, total in latency.values())
    assert "memory.operations.errors" not in p


def test_errors_counted_by_code_including_validation_and_store_failures(meng, ctx, reader):
    anonymous = MemoryContext("acme")  # no user_id: the user layer is not addressable
    with pytest.raises(MissingIdentifierError):
        meng.add(anonymous, "x")
    with pytest.raises(ContentTooLongError):
        meng.add(ctx, "x" * 10_001)
    with pytest.raises(ContentTooLongError):
        meng.store_rule(ctx, "y" * 10_001)
    meng.add(ctx, "fine")
    p = points(reader)
    errors = {
        (dict(k)["operation"], dict(k)["error.code"]): v
        for k, v in p["memory.operations.errors"].items()
    }
    assert errors == {
        ("add", "MISSING_IDENTIFIER"): 1,
        ("add", "CONTENT_TOO_LONG"): 1,
        ("store_rule", "CONTENT_TOO_LONG"): 1,
    }
    assert by_op(p["memory.operations.total"]) == {"add": 3, "store_rule": 1}


def test_provider_failure_after_retries_is_one_error(ctx, reader):
    from .test_errors import Flaky

    engine = MemoryEngine(
        Flaky(10, ConnectionError("down")),
        retry=RetryPolicy(base_delay=0.0),
        sleep=lambda s: None,
        meter_provider=MeterProvider([reader]),
    )
    with pytest.raises(ProviderError):
        engine.add(ctx, "lost")
    p = points(reader)
    assert p["memory.operations.errors"] == {
        (("error.code", "PROVIDER_ERROR"), ("operation", "add")): 1
    }
    assert by_op(p["memory.operations.total"]) == {"add": 1}  # retries are not operations


def test_search_results_recorded_per_searched_layer(meng, reader):
    ctx = MemoryContext("acme", user_id="ada", project_id="p1")
    meng.add(ctx, "tea ceremony notes", layer="user")
    meng.add(ctx, "tea ceremony notes for the project", layer="project")
    meng.add(ctx, "tea ceremony company guide", layer="company")
    hits = meng.search_layers(ctx, "tea ceremony", threshold=0.0, layers=["user", "project", "org"])
    results = {
        dict(k)["layer"]: v
        for k, v in points(reader)["memory.search.results"].items()
        if dict(k)["operation"] == "search_layers"
    }
    # one recording per searched layer, its sum the hits that layer contributed
    assert set(results) == {"user", "project", "org"}
    assert results["org"] == (1, 0)
    assert sum(s for _, s in results.values()) == len(hits)
    assert results["user"][1] == sum(1 for h in hits if h.layer == "user") >= 1


def test_recall_and_search_record_results(meng, ctx, reader):
    meng.store_fact(ctx, "user", "drink", "Drinks green tea")
    meng.recall(ctx, "green tea")
    meng.search(ctx, "green tea")
    series = points(reader)["memory.search.results"]
    recall_user = series[(("layer", "user"), ("operation", "recall"))]
    search_user = series[(("layer", "user"), ("operation", "search"))]
    assert recall_user == (1, 1) and search_user == (1, 1)


def test_storage_size_gauge_per_layer_follows_writes(meng, reader):
    ctx = MemoryContext("acme", user_id="ada", org_id="o1")
    meng.add(ctx, "before counting")
    meng.add(ctx, "org wide", layer="org")
    assert "memory.storage.size" not in points(reader)  # nothing counted yet: no guess
    assert meng.storage_size(ctx)["user"] == 1

    def gauge() -> dict[str, int]:
        return {dict(k)["layer"]: v for k, v in points(reader)["memory.storage.size"].items()}

    assert gauge()["user"] == 1 and gauge()["org"] == 1
    note = meng.add(ctx, "second")
    meng.store_fact(ctx, "user", "drink", "tea")
    meng.store_fact(ctx, "user", "drink", "coffee")  # supersedes: net +1
    rule = meng.store_rule(ctx, "be brief")
    assert gauge()["user"] == 4
    meng.forget(ctx, "rule", rule.id)
    meng.delete(ctx, note.id)
    meng.delete(ctx, note.id)  # idempotent: no second decrement
    assert gauge()["user"] == 2
    assert meng.storage_size(ctx)["user"] == 2  # the recount agrees with the deltas
