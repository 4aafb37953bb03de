"""``erase`` on the surfaces: the command needs ``--confirm`` and prints the
receipt; MCP offers ``memory_erase`` to admins only; the app-level
``erase_user`` also covers prompt versions and drops a user's pending
reflections; the browser's sessions of an erased user end."""

from __future__ import annotations

import json
from typing import Any

import anyio
from langchain_core.messages import AIMessage, HumanMessage
from typer.testing import CliRunner

from langmem_ext import SQLiteStore
from langmem_ext.cli.app import app
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.langmem import PromptVersions, ReflectionExecutor, erase_user
from langmem_ext.testing.chat import ScriptedExtractionModel

runner = CliRunner()


def test_the_command_refuses_without_confirm_then_prints_the_receipt(tmp_path):
    db = str(tmp_path / "m.db")
    ada = ["--user-id", "ada"]
    out = runner.invoke(app, ["memories", "add", "Allergic to peanuts", *ada, "--db", db,
                              "--embed", "none", "--create"])  # fmt: skip
    assert out.exit_code == 0, out.output
    refused = runner.invoke(app, ["memories", "erase", *ada, "--db", db, "--embed", "none"])
    assert refused.exit_code != 0 and "confirm" in refused.output, refused.output
    done = runner.invoke(
        app, ["memories", "erase", *ada, "--confirm", "ada", "--db", db, "--embed", "none"]
    )
    assert done.exit_code == 0, done.output
    receipt = json.loads(done.output[done.output.index("{") :])
    assert receipt["counts"]["memories"] == 1 and receipt["record"]
    assert SQLiteStore(db).search(("user", "ada")) == []


async def _tools(caller) -> set[str]:
    from mcp.client import Client

    from langmem_ext.servers.mcp import create_mcp_server

    server = create_mcp_server(SQLiteStore(), caller=caller).server
    async with Client(server) as client:
        return {t.name for t in (await client.list_tools()).tools}


def test_mcp_offers_erase_to_admins_only():
    assert "memory_erase" not in anyio.run(_tools, MemoryContext(user_id="ada"))
    admin = MemoryContext("acme", user_id="ops", is_admin=True)
    assert "memory_erase" in anyio.run(_tools, admin)


def test_an_admin_erases_over_mcp_after_a_refusal_without_confirm():
    from mcp.client import Client

    from langmem_ext.servers.mcp import create_mcp_server

    store = SQLiteStore()
    MemoryEngine(store).add(MemoryContext("acme", user_id="ada"), "Allergic to peanuts")
    admin = MemoryContext("acme", user_id="ops", is_admin=True)

    async def session() -> tuple[Any, Any]:
        async with Client(create_mcp_server(store, caller=admin).server) as client:
            refused = await client.call_tool("memory_erase", {"user": "ada"})
            done = await client.call_tool("memory_erase", {"user": "ada", "confirm": "ada"})
            return refused, done

    refused, done = anyio.run(session)
    assert refused.is_error and "confirm='ada'" in refused.content[0].text
    receipt = json.loads(done.content[0].text)
    assert receipt["counts"]["memories"] == 1 and receipt["subject"] == "ada"


def test_erase_user_covers_prompt_versions_and_pending_reflections():
    store = SQLiteStore()
    engine, ada = MemoryEngine(store), MemoryContext(user_id="ada")
    config = {"configurable": {"user_id": "ada", "thread_id": "t1"}}
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("greeting", "Hi Ada, zanzibarquux", config)
    engine.add(ada, "Allergic to peanuts")
    model = ScriptedExtractionModel([[("Lives in Berlin", "context", 0.9)]])
    with ReflectionExecutor(model, engine=engine, delay=600) as executor:
        pending = executor.submit([HumanMessage("I live in Berlin"), AIMessage("Nice!")], config)
        assert executor.pending == 1
        receipt = erase_user(engine, ada, confirm="ada", components=[prompts, executor])
        assert executor.pending == 0 and pending.cancelled()
    assert receipt.counts["reflection_jobs"] == 1 and receipt.counts["app"] == 1
    assert prompts.history("greeting", config) == []
    assert engine.search(ada, "peanuts") == []


def test_erase_user_covers_running_summaries():
    from langmem_ext.engine import run_sync
    from langmem_ext.langmem.running_summaries import RunningSummary, SummaryPlace

    store = SQLiteStore()
    engine, ada = MemoryEngine(store), MemoryContext(user_id="ada")
    place = SummaryPlace(("summaries", "{user_id}"), store)
    for user in ("ada", "bob"):
        config = {"configurable": {"user_id": user, "thread_id": "t1"}}
        run_sync(place.save(RunningSummary(f"{user} said zanzibarquux"), config), store)
    engine.add(ada, "Allergic to peanuts")
    receipt = erase_user(engine, ada, confirm="ada", components=[place])
    assert receipt.counts["app"] == 1
    assert store.get(("summaries", "ada"), "t1") is None
    assert store.get(("summaries", "bob"), "t1") is not None


def test_browser_sessions_of_an_erased_user_end():
    from langmem_ext.servers._ui_sessions import Sessions

    sessions = Sessions()
    ada = sessions.open(MemoryContext("acme", user_id="ada"))
    bob = sessions.open(MemoryContext("acme", user_id="bob"))
    assert sessions.close_user("acme", "ada") == 1
    assert sessions.peek(ada) is None and sessions.peek(bob) is not None


def test_the_browser_lets_an_admin_erase_a_user_and_ends_their_sessions(tmp_path):
    import re

    from starlette.testclient import TestClient

    from langmem_ext.servers.callers import Callers
    from langmem_ext.servers.ui import create_ui_app

    callers = Callers(
        {
            "tok-ada-0001": {"tenant_id": "acme", "user_id": "ada"},
            "tok-ops-0001": {"tenant_id": "acme", "user_id": "ops",
                             "permissions": ["memory:admin"]},
        }
    )  # fmt: skip
    store = SQLiteStore(tmp_path / "ui.db")
    engine = MemoryEngine(store)
    engine.add(MemoryContext("acme", user_id="ada"), "Ada's locker code is zanzibarquux")
    app = create_ui_app(store, callers=callers)

    def sign_in(token: str) -> tuple[TestClient, str]:
        client = TestClient(app, base_url="http://127.0.0.1:8765")
        r = client.post("/login", data={"token": token}, follow_redirects=True)
        return client, re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)

    ada, _ = sign_in("tok-ada-0001")
    assert "Erase a user" not in ada.get("/").text
    assert ada.get("/erase").status_code == 403
    ops, csrf = sign_in("tok-ops-0001")
    assert "Erase a user" in ops.get("/").text
    preview = ops.post("/erase", data={"csrf": csrf, "user": "ada"})
    assert "Type the user id" in preview.text and "memories" in preview.text
    assert "zanzibarquux" in ada.get("/").text  # a preview changes nothing
    done = ops.post("/erase", data={"csrf": csrf, "user": "ada", "confirm": "ada"})
    assert "Erased everything of" in done.text and "browser sessions" in done.text
    assert "zanzibarquux" not in json.dumps(store.search((), limit=1000), default=str)
    assert "Sign in" in ada.get("/", follow_redirects=True).text  # her session ended
