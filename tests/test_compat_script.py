"""``scripts/compat`` on made-up checkouts: bad paths are named, a hanging
block is reported as a time-out (never a stuck run), and a block that passes
on the original but not here fails the run unless it is a listed deviation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def compat(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(ROOT / "scripts" / "compat"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def fake_langmem(tmp_path: Path, readme: str) -> Path:
    """A LangMem checkout with one page of examples and a package exporting a
    name langmem_ext does not have."""
    root = tmp_path / "langmem"
    (root / "src" / "langmem").mkdir(parents=True)
    (root / "src" / "langmem" / "__init__.py").write_text("only_in_langmem = 1\n")
    (root / "docs" / "docs").mkdir(parents=True)
    (root / "README.md").write_text(readme)
    return root


def test_a_missing_checkout_is_named(tmp_path):
    out = compat("--langmem", str(tmp_path / "nowhere"), "--only", "docs")
    assert out.returncode != 0
    assert "no such directory; expected a checkout of langchain-ai/langmem" in out.stderr


def test_a_checkout_of_another_project_is_named(tmp_path):
    out = compat("--langmem", str(tmp_path), "--only", "docs")
    assert out.returncode != 0
    assert "is not a checkout of langchain-ai/langmem: src/langmem/__init__.py is missing" in (
        out.stderr
    )
    out = compat("--langgraph", str(tmp_path), "--only", "langgraph")
    assert "is not a checkout of langchain-ai/langgraph" in out.stderr


def test_a_hanging_block_is_a_timeout_and_the_page_stops(tmp_path):
    page = (
        "```python\nx = 1\n```\n\n"
        "```python\nimport time\ntime.sleep(600)\n```\n\n"
        "```python\nprint(x)\n```\n"
    )
    checkout = fake_langmem(tmp_path, page)
    started = time.monotonic()
    out = compat("--langmem", str(checkout), "--only", "docs", "--timeout", "3")
    assert time.monotonic() - started < 200
    assert out.returncode == 0, out.stdout + out.stderr  # the same on both: no regression
    assert "| README.md#2 | timeout | timeout |" in out.stdout
    assert "| README.md#3 | not run | not run |" in out.stdout
    assert "| LangMem docs blocks | 1 | 1 | 3 |" in out.stdout


def test_a_block_only_the_original_passes_fails_the_run(tmp_path):
    checkout = fake_langmem(tmp_path, "```python\nfrom langmem import only_in_langmem\n```\n")
    export = tmp_path / "examples.json"
    out = compat("--langmem", str(checkout), "--only", "docs", "--export", str(export))
    assert out.returncode == 1
    assert "REGRESSION README.md#1: ImportError" in out.stdout
    unit = json.loads(export.read_text())["units"][0]
    assert unit["blocks"] == ["from langmem import only_in_langmem"]  # as written
    assert unit["on_langmem"] == [["pass", ""]]


SUITES = ROOT / "scripts" / "langgraph_suites"
_STORES_BY_EVERY_PATH = """
from langgraph.store.memory import InMemoryStore
from langgraph.store.postgres import AsyncPostgresStore, PostgresStore
from langgraph.store.postgres.aio import AsyncPostgresStore as AioPostgres
from langgraph.store.postgres.base import PostgresStore as BasePostgres
from langgraph.store.sqlite import AsyncSqliteStore, SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore as AioSqlite
from langgraph.store.sqlite.base import SqliteStore as BaseSqlite


def test_every_store_is_ours():
    for cls in (InMemoryStore, AsyncPostgresStore, PostgresStore, AioPostgres, BasePostgres,
                AsyncSqliteStore, SqliteStore, AioSqlite, BaseSqlite):
        assert cls.__module__ == "shim", cls
"""


def run_suite(tmp_path: Path, module: str, stores: str, shim: str | None = None):
    """A staged suite as ``scripts/langgraph-suites`` stages one: our conftest
    and shim beside a test module."""
    root = tmp_path / "suite"
    tests = root / "tests"
    tests.mkdir(parents=True)
    (tests / "__init__.py").write_text("")
    (tests / "embed_test_utils.py").write_text("class CharacterEmbeddings:\n    pass\n")
    (tests / "conftest.py").write_text((SUITES / "conftest.py").read_text())
    (tests / "test_module.py").write_text(module)
    (root / "shim.py").write_text(shim or (SUITES / "shim.py").read_text())
    (root / "sqlite_loader.py").write_text((SUITES / "sqlite_loader.py").read_text())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(ROOT)])}
    env["LMX_SUITE_STORES"] = stores
    cmd = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"]
    cmd += ["--rootdir", str(root)]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_the_shim_replaces_every_import_path_of_langgraphs_stores(tmp_path):
    out = run_suite(tmp_path, _STORES_BY_EVERY_PATH, "ours")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_a_store_the_shim_did_not_replace_fails_the_module(tmp_path):
    # The shim as it was when LangGraph's TTL tests imported AsyncSqliteStore
    # from langgraph.store.sqlite.aio: they ran on LangGraph's store, unnoticed.
    shim = (SUITES / "shim.py").read_text().replace('    "langgraph.store.sqlite.aio",\n', "")
    module = "from langgraph.store.sqlite.aio import AsyncSqliteStore\n\ndef test_x():\n    pass\n"
    out = run_suite(tmp_path, module, "ours", shim)
    assert out.returncode == 1, out.stdout + out.stderr
    assert (
        "this module runs LangGraph's own store, not ours: AsyncSqliteStore is "
        "langgraph.store.sqlite.aio.AsyncSqliteStore" in out.stdout
    )


def test_langgraphs_sqlite_store_runs_with_sqlite_vec_in_the_baseline(tmp_path):
    # The baseline is LangGraph's SqliteStore as its CI runs it: vector search
    # works (it needs the sqlite-vec extension, which this Python's sqlite3
    # cannot load without pysqlite3).
    module = """
import sqlite3

from langgraph.store.sqlite import SqliteStore


def embed(texts):
    return [[float(len(t)), 1.0] for t in texts]


def test_vector_search():
    assert hasattr(sqlite3.Connection, "enable_load_extension")
    assert SqliteStore.__module__ == "langgraph.store.sqlite.base"
    index = {"dims": 2, "embed": embed, "fields": ["text"]}
    with SqliteStore.from_conn_string(":memory:", index=index) as store:
        store.setup()
        store.put(("docs",), "a", {"text": "short"})
        assert [r.key for r in store.search(("docs",), query="short")] == ["a"]
"""
    out = run_suite(tmp_path, module, "langgraph")
    assert out.returncode == 0, out.stdout + out.stderr
