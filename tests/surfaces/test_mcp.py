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
    "memory_entities",
    "memory_about",
    "memory_timeline",
    "memory_stale",
    "memory_merge_entities",
    "memory_unmerge_entities",
    "memory_split_entity",
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
        args=[*CLI[1:], "--db", str(db), "--create", "--token", "tok-ada-0001"],
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
        [
            *CLI,
            "--db",
            str(tmp_path / "m.db"),
            "--create",
            "--transport",
            "http",
            "--port",
            f"{port}",
        ],
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


# -- the tool list: derived from the catalogue, kept on purpose ----------------------

SNAPSHOT = Path(__file__).with_name("mcp_tools.json")


async def _listing(caller) -> list[dict]:
    from langmem_ext import SQLiteStore
    from langmem_ext.servers.mcp import create_mcp_server

    server = create_mcp_server(SQLiteStore(), caller=caller).server
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    return [t.model_dump(by_alias=True, exclude_none=True) for t in tools]


def test_the_tool_list_is_the_snapshot_and_every_parameter_is_described(capsys):
    """A change to the tools (names, parameters, descriptions) is deliberate:
    LMX_UPDATE_SNAPSHOT=1 rewrites tests/surfaces/mcp_tools.json."""
    from langmem_ext.engine import MemoryContext

    user = anyio.run(_listing, MemoryContext(user_id="ada"))
    admin = anyio.run(_listing, MemoryContext("acme", user_id="ops", is_admin=True))
    reader = anyio.run(_listing, MemoryContext(user_id="eve", read_only=True))
    if os.environ.get("LMX_UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(user, indent=1, ensure_ascii=False) + "\n")
    assert user == json.loads(SNAPSHOT.read_text())
    params = [(t["name"], n, p) for t in user for n, p in t["inputSchema"]["properties"].items()]
    undescribed = [(t, n) for t, n, p in params if not p.get("description")]
    assert not undescribed
    names = {n for _, n, _ in params}
    assert not names & {"butler", "tenant_id", "topic", "trigger_prompt", "rule_id"}
    assert "butler" not in json.dumps(user)
    manage = next(t for t in user if t["name"] == "manage_memory")["inputSchema"]["properties"]
    assert manage["action"]["enum"] == ["create", "update", "delete"]
    assert {"type": "string", "format": "uuid"} in manage["id"]["anyOf"]
    # admins are offered the tenant; read-only callers no tool that writes
    assert all("tenant_id" in t["inputSchema"]["properties"] for t in admin if "memory" in t["name"]
               and t["name"].startswith("memory_"))  # fmt: skip
    assert {t["name"] for t in reader} == {
        "memory_get", "memory_search", "memory_recall", "memory_stats", "memory_context",
        "memory_entities", "memory_about", "memory_timeline", "memory_stale", "search_memory",
    }  # fmt: skip
    assert all(t["annotations"]["readOnlyHint"] for t in reader)
    with capsys.disabled():
        print(f"\n--- MCP tool list: {len(user)} tools, {len(params)} parameters, "
              f"{len(params) - len(undescribed)} described ---")  # fmt: skip
        for t in user:
            print(f"{t['name']}({', '.join(t['inputSchema']['properties'])})")


MOOD = {"subject": "user", "predicate": "mood", "content": "calm"}


def test_a_bad_call_is_an_error_result_with_its_message_and_one_log_line(tmp_path, capsys):
    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [
                *CLI,
                "--db",
                str(tmp_path / "m.db"),
                "--create",
                "--transport",
                "http",
                "--port",
                f"{port}",
            ],
            env=_env(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"

        async def session():
            async with _client(url, "tok-ada-0001") as ada:
                calls = [
                    ("manage_memory", {"action": "update", "content": "Likes tea"}),
                    ("manage_memory", {"action": "delete", "id": "not a uuid!"}),
                    (
                        "memory_store_fact",
                        {
                            "subject": "user",
                            "predicate": "mood",
                            "content": "calm",
                            "importance": 11,
                        },
                    ),
                    ("memory_get", {"type": "fact", "id": "no-such-id"}),
                    ("search_memory", {"query": "tea", "filter": {"n": {"$near": 1}}}),
                ]
                out = []
                for name, args in calls:
                    out.append(await call(ada, name, args, "ada"))
                return out

        results = anyio.run(session)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    codes = ["INVALID_TOOL_INPUT", "INVALID_TOOL_INPUT", "INVALID_VALUE", "MEMORY_NOT_FOUND",
             "INVALID_TOOL_INPUT"]  # fmt: skip
    for (is_error, text), code in zip(results, codes, strict=True):
        assert is_error and text.startswith(f"{code}: "), text
    assert "You must provide a MEMORY ID" in results[0][1]
    server_log = log.read_text()
    assert "Traceback" not in server_log
    failures = [line for line in server_log.splitlines() if "failed" in line]
    assert len(failures) == len(calls_made := results), server_log
    for line, (_, text) in zip(failures, results, strict=True):  # the whole message, one line
        assert text.split(". ")[0] in line, line
    with capsys.disabled():
        print("\n--- MCP: model-readable errors (streamable HTTP, the SDK's client) ---")
        print("\n".join(TRANSCRIPT))
        print("--- the server's log for those calls ---\n" + "\n".join(failures))
    TRANSCRIPT.clear()
    assert calls_made


async def _calls(caller, *calls: tuple[str, dict]) -> list[tuple[bool, str]]:
    from langmem_ext import SQLiteStore
    from langmem_ext.servers.mcp import create_mcp_server

    server = create_mcp_server(SQLiteStore(), caller=caller).server
    async with Client(server) as client:
        return [await call(client, name, args, "test") for name, args in calls]


def test_each_refusal_names_the_next_step_that_can_work():
    from langmem_ext.engine import MemoryContext

    reader = MemoryContext(user_id="eve", read_only=True)
    [(err, out)] = anyio.run(_calls, reader, ("manage_memory", {"content": "Likes tea"}))
    # Not "unknown tool ... call manage_memory again": the tool exists, the caller may not write.
    assert err and out.startswith("PERMISSION_DENIED: manage_memory changes memories")
    assert "do not call it again" in out and "unknown" not in out
    [(err, out)] = anyio.run(_calls, reader, ("memory_delete_everything", {}))
    assert err and "there is no tool 'memory_delete_everything'; the tools are memory_get" in out
    assert out.endswith("call one of those tools instead.")
    user = MemoryContext("acme", user_id="ada")
    [(err, out)] = anyio.run(_calls, user, ("memory_stats", {"tenant_id": "globex"}))
    # One next step: drop the argument (not also "tell the user").
    assert err and out.startswith("TENANT_FORBIDDEN: ")
    assert out.endswith("call memory_stats again without the tenant argument.")
    assert "tell the user" not in out
