"""The README's commands, run as a newcomer runs them, in the venv
``./scripts/demo`` builds from nothing: the demo, the agent example (which
writes ``memories.db``), then "See and fix what an agent remembers" (the
memory browser, a search, the MCP server) and the benchmarks.

A fresh venv installs the package and its dependencies from the package index
(minutes), so this runs only when asked: ``LANGMEM_EXT_README_VENV=1`` builds
a fresh venv in a temporary directory; ``LANGMEM_EXT_README_VENV=/some/dir``
builds it there, or reuses it when it exists (``scripts/demo`` installs into
an existing venv again, as it does for ``.venv``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WANTED = os.environ.get("LANGMEM_EXT_README_VENV", "")

pytestmark = pytest.mark.skipif(
    not WANTED,
    reason="builds a fresh venv from the package index (minutes): set LANGMEM_EXT_README_VENV=1",
)


def readme_block(marker: str, lang: str) -> str:
    """The README's ``lang`` code block containing ``marker``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S):
        if marker in block:
            return block
    raise AssertionError(f"no {lang} block with {marker!r} in README.md")


def commands(block: str, bin_dir: Path) -> list[list[str]]:
    """Each command line of a bash block, comments dropped, ``.venv/bin`` → ours."""
    out = []
    for line in block.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line:
            out.append([w.replace(".venv/bin/", f"{bin_dir}/") for w in shlex.split(line)])
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = Path(WANTED) if WANTED not in ("1", "true", "yes") else None
    path = where or tmp_path_factory.mktemp("readme") / "venv"
    demo_db = tmp_path_factory.mktemp("demo") / "demo.db"
    env = {**os.environ, "VENV": str(path)}
    env.pop("PYTHONPATH", None)  # the venv's own install, nothing of the test run's
    out = subprocess.run(
        [str(ROOT / "scripts" / "demo"), "--db", str(demo_db)],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    print(out.stdout[-3000:])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "hybrid search" in out.stdout and "keyword only" in out.stdout
    return path


@pytest.fixture(scope="module")
def workdir(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the README's agent example ran: it leaves ``memories.db`` there."""
    work = tmp_path_factory.mktemp("work")
    script = work / "agent.py"
    script.write_text(readme_block("create_agent(", "python"))
    out = subprocess.run(
        [str(venv / "bin" / "python"), str(script)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Lives in Berlin" in out.stdout
    return work


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_see_and_fix_commands_work_in_the_demo_venv(venv: Path, workdir: Path) -> None:
    block = commands(readme_block("langmem-ext ui", "bash"), venv / "bin")
    ui, search, mcp = block
    assert (ui[1], search[1:3], mcp[1]) == ("ui", ["memories", "search"], "mcp")

    out = subprocess.run(search, cwd=workdir, capture_output=True, text=True, timeout=300,
                         env=_env())  # fmt: skip
    print(" ".join(search[1:]), "->", out.stdout)
    assert out.returncode == 0, out.stderr
    assert "Lives in Berlin" in out.stdout

    port = free_port()
    server = subprocess.Popen(
        [*ui, "--port", str(port)],
        cwd=workdir,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The browser's first answer sets its session cookie and redirects.
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        deadline, page = time.monotonic() + 120, ""
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with browser.open(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    page = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert server.poll() is None, server.communicate()[1][-2000:]
        print(" ".join(ui[1:]), "->", f"HTTP 200, {len(page)} bytes")
        assert "Lives in Berlin" in page
    finally:
        server.terminate()
        server.wait(timeout=30)

    proc = subprocess.Popen(mcp, cwd=workdir, env=_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "readme-test", "version": "1"},
            },
        }
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(hello) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        print(" ".join(mcp[1:]), "->", reply["result"]["serverInfo"])
        assert reply["id"] == 1 and "serverInfo" in reply["result"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_benchmark_commands_say_what_to_install(venv: Path, workdir: Path) -> None:
    # The demo venv has the library, not the development tools: one line each.
    for cmd in commands(readme_block("langmem-ext bench", "bash"), venv / "bin"):
        out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=300,
                             env=_env())  # fmt: skip
        print(" ".join(cmd[1:]), "->", out.returncode, out.stderr.strip())
        assert out.returncode == 2
        assert "Traceback" not in out.stderr
        assert out.stderr.strip().endswith("pip install -e ./dev")
