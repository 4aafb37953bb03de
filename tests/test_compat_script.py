"""``scripts/compat`` on made-up checkouts: bad paths are named, a hanging
block is reported as a time-out (never a stuck run), and a block that passes
on the original but not here fails the run unless it is a listed deviation."""

from __future__ import annotations

import json
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
