"""The MCP server, driven by the MCP SDK's own client over stdio and streamable
HTTP: the memory tools work, the caller comes from the token, wrong or missing
tokens are refused, and no argument reaches another tenant or user."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

CALLERS = {
    "tokens": {
        "tok-ada-0001": {"tenant_id": "acme", "user_id": "ada"},
        "tok-bob-0001": {"tenant_id": "acme", "user_id": "bob"},
        "tok-gina-001": {"tenant_id": "globex", "user_id": "gina"},
    }
}
TOOLS = {
    "manage_memory",
    "search_memory",
    "memory_store_fact",
    "memory_store_episode",
    "memory_store_rule",
    "memory_search",
    "memory_recall",
    "memory_get",
    "memory_confirm",
    "memory_mark_helpful",
    "memory_mark_harmful",
    "memory_forget",
    "memory_stats",
    "memory_context",
}
TRANSCRIPT: list[str] = []


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def call(client: Client, name: str, args: dict, who: str) -> tuple[bool, str]:
    result = await client.call_tool(name, args)
    out = text(result)
    TRANSCRIPT.append(
        f"{who} -> {name}({json.dumps(args)}) = {'ERROR ' if result.is_error else ''}{out[:140]}"
    )
    return bool(result.is_error), out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps(CALLERS))
    return {**os.environ, "LANGMEM_EXT_CALLERS": callers.read_text()}


CLI = [sys.executable, "-m", "langmem_ext", "mcp", "--embed", "none"]


def test_stdio_session_as_the_configured_caller(tmp_path, capsys):
    db = tmp_path / "m.db"
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "--db", str(db), "--token", "tok-ada-0001"],
        env=_env(tmp_path),
    )

    async def session():
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == TOOLS
            err, fid = await call(
                client,
                "memory_store_fact",
                {"subject": "user", "predicate": "city", "content": "Lives in Berlin"},
                "ada(stdio)",
            )
            assert not err
            err, found = await call(client, "memory_search", {"query": "Berlin"}, "ada(stdio)")
            assert [h["id"] for h in json.loads(found)] == [fid]
            err, out = await call(client, "memory_stats", {"tenant_id": "globex"}, "ada(stdio)")
            assert "TENANT_FORBIDDEN" in out
            err, out = await call(client, "manage_memory", {"content": "Likes tea"}, "ada(stdio)")
            assert not err and out.startswith("created memory ")

    anyio.run(session)
    from langmem_ext import SQLiteStore

    with SQLiteStore(db) as store:  # everything landed in ada's space of tenant acme
        spaces = {i.namespace for i in store.search(("tenant",)) if "_meta" not in i.namespace}
        assert spaces == {("tenant", "acme", "user", "ada")}
    with capsys.disabled():
        print("\n--- MCP over stdio ---\n" + "\n".join(TRANSCRIPT))
    TRANSCRIPT.clear()


@pytest.fixture
def http_server(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [*CLI, "--db", str(tmp_path / "m.db"), "--transport", "http", "--port", str(port)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode()) from None
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def _client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


def test_http_sessions_are_per_caller(http_server, capsys):
    async def sessions():
        async with _client(http_server, "tok-ada-0001") as ada:
            err, fid = await call(
                ada,
                "memory_store_fact",
                {"subject": "user", "predicate": "city", "content": "Lives in Berlin"},
                "ada",
            )
            assert not err
            err, out = await call(ada, "memory_search", {"query": "Berlin"}, "ada")
            assert fid in out
        async with _client(http_server, "tok-bob-0001") as bob:  # same tenant, other user
            err, out = await call(bob, "memory_search", {"query": "Berlin"}, "bob")
            assert json.loads(out) == []
            err, out = await call(bob, "memory_get", {"type": "fact", "id": fid}, "bob")
            assert "MEMORY_NOT_FOUND" in out and "Berlin" not in out
        async with _client(http_server, "tok-gina-001") as gina:  # another tenant
            err, out = await call(
                gina, "memory_search", {"query": "Berlin", "tenant_id": "acme"}, "gina"
            )
            assert "TENANT_FORBIDDEN" in out and "Berlin" not in out
            err, out = await call(gina, "search_memory", {"query": "Berlin"}, "gina")
            assert json.loads(out) == []

    anyio.run(sessions)
    with capsys.disabled():
        print("\n--- MCP over streamable HTTP ---\n" + "\n".join(TRANSCRIPT))
    TRANSCRIPT.clear()


@pytest.mark.parametrize("token", [None, "tok-wrong-0001"])
def test_http_refuses_missing_and_wrong_tokens(http_server, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_stats", "arguments": {}},
    }
    reply = httpx2.post(
        http_server,
        json=body,
        headers={**headers, "Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert reply.status_code == 401
    assert "Berlin" not in reply.text
