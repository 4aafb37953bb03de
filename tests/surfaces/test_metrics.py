"""Metrics you can see: with an OpenTelemetry SDK MeterProvider installed, a
tool call, the engine work under it and the store's batches are counted."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = """
import json
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider([reader]))

from langmem_ext import SQLiteStore, create_manage_memory_tool, create_search_memory_tool
from langmem_ext.engine.runtime.metrics import collected_points

store = SQLiteStore()
config = {"configurable": {"user_id": "ada"}}
create_manage_memory_tool(store=store).invoke({"content": "Likes tea"}, config)
create_search_memory_tool(store=store).invoke({"query": "tea"}, config)
store.search(("user", "ada"), query="tea")
print(json.dumps(collected_points(reader)))
"""


def test_tool_calls_and_store_searches_are_counted(tmp_path):
    script = tmp_path / "m.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    points = json.loads(done.stdout.strip().splitlines()[-1])
    ops = {p[0]["operation"]: p[1] for p in points["memory.operations.total"]}
    assert ops == {"manage_memory": 1, "search_memory": 1}
    searched = {tuple(sorted(p[0].items())): p[1] for p in points["memory.search.results"]}
    assert searched == {(("layer", "user"), ("operation", "search_memory")): 1}
    store_ops = {(p[0]["store"], p[0]["operation"]): p[1] for p in points["store.operations.total"]}
    assert store_ops[("SQLiteStore", "search")] >= 2  # the tool's search and the direct one
    assert store_ops[("SQLiteStore", "put")] >= 1
    [(attrs, n)] = points["store.search.results"]
    assert attrs == {"store": "SQLiteStore"} and n >= 2
    assert points["store.operations.latency"][0][1] >= 3
