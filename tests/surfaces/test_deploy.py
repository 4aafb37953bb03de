"""The LangGraph deployment recipe (examples/deploy): ``langgraph dev`` serves
the agent on langmem_ext's SQLiteStore; the SDK's store API and a graph run
use it, one user's memories out of another's reach."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langmem_ext_dev.servers import langgraph_dev

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    app = tmp_path / "deploy"
    shutil.copytree(ROOT / "examples" / "deploy", app)
    port = _free_port()
    env = {**os.environ, "MEMORY_DB": str(tmp_path / "memories.db"), "PYTHONPATH": str(ROOT)}
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        langgraph_dev(port),
        cwd=app,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError((tmp_path / "server.log").read_text()[-3000:])
        time.sleep(0.5)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    print((tmp_path / "server.log").read_text()[-1500:])


def test_langgraph_dev_serves_the_agent_on_our_store(server):
    client = get_sync_client(url=server)
    # the store API reads and writes the same store the graphs use
    client.store.put_item(["user", "ada"], "m0", {"content": "Prefers window seats"})
    thread = client.threads.create()
    out = client.runs.wait(
        thread["thread_id"],
        "agent",
        input={"messages": [{"role": "user", "content": "I live in Berlin"}]},
        config={"configurable": {"user_id": "ada"}},
    )
    assert out["messages"][-1]["content"] == "Noted."
    found = client.store.search_items(["user", "ada"], query="Berlin")["items"]
    assert "I live in Berlin" in [i["value"]["content"] for i in found]
    assert client.store.get_item(["user", "ada"], "m0")["value"]["content"] == (
        "Prefers window seats"
    )
    assert client.store.search_items(["user", "bob"])["items"] == []
    print("\nlanggraph dev: store API + agent run on SQLiteStore:", [i["key"] for i in found])


def test_the_docs_client_example_runs_against_langgraph_dev(server, capsys):
    text = (ROOT / "docs" / "deploy.md").read_text()
    blocks = re.findall(r"```python[^\n]*\n(.*?)```", text, re.S)
    block = next(b for b in blocks if "get_sync_client(" in b)
    code = block.replace('"http://127.0.0.1:2024"', repr(server))
    assert code != block
    exec(compile(code, "deploy.md", "exec"), {})
    assert "I live in Berlin" in capsys.readouterr().out
