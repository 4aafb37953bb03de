"""The served benchmark runs end to end, briefly: MCP workers, and LangGraph's
API server with our store and with LangGraph's, all over one PostgreSQL,
under concurrent clients, with no failed call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_serve_runs_every_server_without_errors(tmp_path):
    out = tmp_path / "serve.json"
    cmd = [
        sys.executable,
        str(ROOT / "benchmarks" / "bench_serve.py"),
        "--workers", "2", "--clients", "6", "--seconds", "2", "--seed", "3",
        "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert set(rows) == {
        "MCP, langmem_ext PostgresStore",
        "LangGraph API, langmem_ext PostgresStore",
        "LangGraph API, LangGraph PostgresStore",
    }
    for name, row in rows.items():
        assert row["errors"] == 0, (name, row.get("first_errors"))
        assert row["calls"] > 0
        kinds = {k.rsplit("_p50_ms", 1)[0] for k in row if k.endswith("_p50_ms")}
        assert len(kinds) == 2, (name, kinds)  # both the search and the write were served
    assert len(rows["MCP, langmem_ext PostgresStore"]["rss_mb_per_worker"]) == 2
    assert "| MCP, langmem_ext PostgresStore |" in done.stdout
