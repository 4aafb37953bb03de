"""The surfaces against each other, on SQLite and PostgreSQL.

* The surface matrix: a memory written by any surface (the agent tools,
  reflection, the engine, MCP, the command line's import and commands, the
  browser's edit) is found by every reader (``search_memory``, the engine's
  search and recall, MCP's searches, the browser, ``langmem-ext memories
  search``, the memory prompt).
* The error matrix: each bad input gives the same code and the same message on
  every surface that offers the operation (Python, an agent's tool call, MCP,
  the command line, the browser), and stores nothing.

Both are printed (``pytest -s tests/surfaces/test_matrix.py``).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from mcp.client.client import Client
from psycopg.conninfo import conninfo_to_dict
from starlette.testclient import TestClient
from typer.testing import CliRunner

from langmem_ext import (
    MemoryEngine,
    MemoryPrompt,
    PostgresStore,
    ReflectionExecutor,
    SQLiteStore,
    create_manage_memory_tool,
    create_mcp_server,
    create_memory_tools,
    create_search_memory_tool,
    create_ui_app,
)
from langmem_ext.cli.app import app as cli_app
from langmem_ext.engine import MemoryContext
from langmem_ext.engine.runtime.catalogue import error_text
from langmem_ext.errors import LangmemError
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.postgres_server import pg_server  # noqa: F401 - fixture

from .conftest import snapshot

ADA = MemoryContext(user_id="ada")
BOB = MemoryContext(user_id="bob")
CONFIG = {"configurable": {"memory_context": ADA}}
INDEX = {"embed": "local", "fields": ["content"]}
MATRICES: dict[str, list[str]] = {}


@dataclass
class World:
    name: str
    store: Any
    db: str  # what the command line opens
    engine: MemoryEngine
    mcp: Any
    browser: TestClient
    tmp: Path


@pytest.fixture(params=["sqlite", "postgres"])
def world(request, tmp_path) -> Iterator[World]:
    if request.param == "sqlite":
        db = str(tmp_path / "memories.db")
        store = SQLiteStore(db, index=INDEX)
    else:
        server = request.getfixturevalue("pg_server")
        db = server.uri(conninfo_to_dict(server.fresh_database())["dbname"])
        store = PostgresStore(db, index=INDEX)
    store.setup()
    engine = MemoryEngine(store)
    browser = TestClient(create_ui_app(store, caller=ADA), base_url="http://127.0.0.1:8765")
    yield World(request.param, store, db, engine, create_mcp_server(store, caller=ADA).server,
                browser, tmp_path)  # fmt: skip
    store.close()


def mcp(w: World, tool: str, args: dict) -> tuple[bool, str]:
    """A tool call through the MCP SDK's own client (in process)."""

    async def call() -> Any:
        async with Client(w.mcp) as client:
            return await client.call_tool(tool, args)

    result = anyio.run(call)
    return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)


def cli(w: World, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli_app, [*args, "--db", w.db])
    return out.exit_code, out.output


# -- writers: each stores one memory about a word nothing else mentions --------------


def _reflection(w: World, text: str) -> None:
    model = ScriptedExtractionModel([[(text, "context", 0.95)]])
    with ReflectionExecutor(model, engine=w.engine, delay=0) as reflection:
        config = {"configurable": {"user_id": "ada", "thread_id": "t1"}}
        reflection.submit([HumanMessage(text), AIMessage("Noted.")], config).result(timeout=60)


def _import(w: World, text: str) -> None:
    line = {"namespace": ["user", "ada"], "key": "imported-1", "value": {"content": text}}
    path = w.tmp / "import.jsonl"
    path.write_text(json.dumps(line) + "\n")
    code, out = cli(w, "memories", "import", str(path))
    assert code == 0, out


def _browser_edit(w: World, text: str) -> None:
    old = w.engine.store_fact(ADA, "user", "hobby", "Has a hobby")
    page = w.browser.get(f"/memory/{old.id}").text
    form = dict(re.findall(r'name="(csrf|version)" value="([^"]+)"', page))
    reply = w.browser.post(f"/memory/{old.id}/edit", data={**form, "content": text})
    assert reply.status_code == 200, reply.text  # followed the redirect to the new version


WRITERS: dict[str, tuple[str, Callable[[World, str], Any]]] = {
    "manage_memory tool": (
        "Plays the saxophone on Sundays",
        lambda w, t: create_manage_memory_tool(store=w.store).invoke({"content": t}, CONFIG),
    ),
    "reflection": ("Grows tarragon on the balcony", _reflection),
    "engine store_fact": (
        "Paddles a kayak to work",
        lambda w, t: w.engine.store_fact(ADA, "user", "commute", t),
    ),
    "engine store_episode": (
        "Visited the glacier museum",
        lambda w, t: w.engine.store_episode(ADA, t),
    ),
    "engine store_rule": (
        "Answer telescope questions in detail",
        lambda w, t: w.engine.store_rule(ADA, t),
    ),
    "engine add": ("Collects origami cranes", lambda w, t: w.engine.add(ADA, t)),
    "MCP memory_store_fact": (
        "Trains for a marathon",
        lambda w, t: mcp(
            w, "memory_store_fact", {"subject": "user", "predicate": "sport", "content": t}
        ),
    ),
    "MCP manage_memory": (
        "Keeps bees on the roof",
        lambda w, t: mcp(w, "manage_memory", {"content": t}),
    ),
    "CLI import": ("Knits mittens in winter", _import),
    "CLI memories store-rule": (
        "Mention the harpsichord concert",
        lambda w, t: cli(w, "memories", "store-rule", t, "--user-id", "ada"),
    ),
    "browser edit": ("Restores a lighthouse", _browser_edit),
}


# -- readers: each looks for that word, as its user would ------------------------------


def _word(text: str) -> str:
    return {
        "Plays the saxophone on Sundays": "saxophone",
        "Grows tarragon on the balcony": "tarragon",
        "Paddles a kayak to work": "kayak",
        "Visited the glacier museum": "glacier",
        "Answer telescope questions in detail": "telescope",
        "Collects origami cranes": "origami",
        "Trains for a marathon": "marathon",
        "Keeps bees on the roof": "bees",
        "Knits mittens in winter": "mittens",
        "Mention the harpsichord concert": "harpsichord",
        "Restores a lighthouse": "lighthouse",
    }[text]


READERS: dict[str, Callable[[World, str], str]] = {
    "search_memory": lambda w, q: create_search_memory_tool(store=w.store).invoke(
        {"query": q}, CONFIG
    ),
    "engine search": lambda w, q: " ".join(h.content for h in w.engine.search(ADA, q)),
    "engine recall": lambda w, q: " ".join(h.content for h in w.engine.recall(ADA, q)),
    "MCP memory_search": lambda w, q: mcp(w, "memory_search", {"query": q})[1],
    "MCP memory_recall": lambda w, q: mcp(w, "memory_recall", {"query": q})[1],
    "MCP search_memory": lambda w, q: mcp(w, "search_memory", {"query": q})[1],
    "browser search": lambda w, q: w.browser.get(f"/search?q={q}").text,
    "CLI memories search": lambda w, q: cli(
        w, "memories", "search", q, "--user-id", "ada", "--json"
    )[1],
    "memory prompt": lambda w, q: MemoryPrompt(w.engine).render(CONFIG) or "",
}


def test_every_writer_every_reader(world):
    for _, (text, write) in WRITERS.items():
        write(world, text)
    rows, missing = [], []
    for writer, (text, _) in WRITERS.items():
        row = []
        for reader, read in READERS.items():
            found = text in read(world, _word(text))
            row.append("✓" if found else "✗")
            if not found:
                missing.append(f"{reader} does not find what {writer} wrote")
        rows.append(f"{writer:24} " + "  ".join(f"{c:^3}" for c in row))
    corner = "writer / reader"
    header = f"{corner:24} " + "  ".join(f"{i + 1:^3}" for i in range(len(READERS)))
    legend = "  ".join(f"{i + 1}={r}" for i, r in enumerate(READERS))
    MATRICES[f"surface matrix ({world.name})"] = [header, *rows, legend]
    assert not missing, missing


# -- the error matrix ------------------------------------------------------------------


@dataclass
class Bad:
    what: str
    code: str
    engine: Callable[[MemoryEngine, dict], Any] | None
    tool: tuple[str, dict] | None  # agent tool and MCP tool: name, arguments
    cli: tuple[str, ...] | None
    browser: Callable[[TestClient, dict], Any] | None


def _new(kind: str, form: dict) -> Callable[[TestClient, dict], Any]:
    def post(client: TestClient, ids: dict) -> Any:
        page = client.get(f"/new/{kind}").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        return client.post(f"/new/{kind}", data={"csrf": csrf, **form})

    return post


def _forget(client: TestClient, mid: str) -> Any:
    """The browser's confirmed forget, as its confirmation page sends it."""
    page = client.get("/").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    return client.post(
        f"/memory/{mid}/forget", data={"csrf": csrf, "confirm": "yes", "type": "fact"}
    )


FACT = {"subject": "user", "predicate": "mood", "content": "calm"}
BAD = [
    Bad("unknown id", "MEMORY_NOT_FOUND",
        lambda e, ids: e.forget(ADA, "fact", "no-such-id"),
        ("memory_forget", {"type": "fact", "id": "no-such-id"}),
        ("memories", "forget", "fact", "no-such-id"),
        lambda c, ids: _forget(c, "no-such-id")),
    Bad("another user's id", "MEMORY_NOT_FOUND",
        lambda e, ids: e.forget(ADA, "fact", ids["bob"]),
        ("memory_forget", {"type": "fact", "id": "<bob>"}),
        ("memories", "forget", "fact", "<bob>"),
        lambda c, ids: _forget(c, ids["bob"])),
    Bad("wrong type (importance 'high')", "INVALID_VALUE",
        lambda e, ids: e.store_fact(ADA, "user", "mood", "calm", importance="high"),
        ("memory_store_fact", {**FACT, "importance": "high"}),
        ("memories", "store-fact", "user", "mood", "calm", "--importance", "high"),
        _new("fact", {**FACT, "importance": "high"})),
    Bad("out of range (importance 11)", "INVALID_VALUE",
        lambda e, ids: e.store_fact(ADA, "user", "mood", "calm", importance=11),
        ("memory_store_fact", {**FACT, "importance": 11}),
        ("memories", "store-fact", "user", "mood", "calm", "--importance", "11"),
        _new("fact", {**FACT, "importance": "11"})),
    Bad("empty content", "INVALID_VALUE",
        lambda e, ids: e.store_rule(ADA, "   "),
        ("memory_store_rule", {"content": "   "}),
        ("memories", "store-rule", "   "),
        _new("rule", {"content": "   "})),
    Bad("content too long", "CONTENT_TOO_LONG",
        lambda e, ids: e.store_rule(ADA, "x" * 10_001),
        ("memory_store_rule", {"content": "x" * 10_001}),
        ("memories", "store-rule", "x" * 10_001),
        _new("rule", {"content": "x" * 10_001})),
    Bad("unknown memory type", "INVALID_MEMORY_TYPE",
        lambda e, ids: e.search(ADA, "x", types=["memo"]),
        ("memory_search", {"query": "x", "types": ["memo"]}),
        ("memories", "search", "x", "--types", "memo"),
        lambda c, ids: c.get("/?type=memo")),
    Bad("unknown layer", "INVALID_LAYER",
        lambda e, ids: e.store_rule(ADA, "x", layer="galaxy"),
        ("memory_store_rule", {"content": "x", "layer": "galaxy"}),
        ("memories", "store-rule", "x", "--layer", "galaxy"),
        _new("rule", {"content": "x", "layer": "galaxy"})),
    Bad("unknown search mode", "INVALID_VALUE",
        lambda e, ids: e.search(ADA, "x", mode="psychic"),
        ("memory_search", {"query": "x", "mode": "psychic"}),
        ("memories", "search", "x", "--mode", "psychic"),
        lambda c, ids: c.get("/search?q=x&mode=psychic")),
    Bad("limit out of range", "INVALID_VALUE",
        lambda e, ids: e.search(ADA, "x", limit=0),
        ("memory_search", {"query": "x", "limit": 0}),
        ("memories", "search", "x", "--limit", "0"),
        None),
    Bad("a tenant named by a non-admin", "TENANT_FORBIDDEN",
        lambda e, ids: e.stats(ADA, tenant="globex"),
        ("memory_stats", {"tenant_id": "globex"}),
        None, None),
    Bad("a time without a zone", "INVALID_VALUE",
        lambda e, ids: e.store_fact(ADA, "user", "mood", "calm", valid_at="2026-03-10T09:00:00"),
        ("memory_store_fact", {**FACT, "valid_at": "2026-03-10T09:00:00"}),
        ("memories", "store-fact", "user", "mood", "calm", "--valid-at", "2026-03-10T09:00:00"),
        _new("fact", {**FACT, "valid_at": "2026-03-10T09:00:00"})),
    Bad("ended before it began", "INVALID_VALUE",
        lambda e, ids: e.store_fact(ADA, "user", "mood", "calm", valid_at="2025-01-01",
                                    invalid_at="2024-01-01"),
        ("memory_store_fact", {**FACT, "valid_at": "2025-01-01", "invalid_at": "2024-01-01"}),
        ("memories", "store-fact", "user", "mood", "calm", "--valid-at", "2025-01-01",
         "--invalid-at", "2024-01-01"),
        _new("fact", {**FACT, "valid_at": "2025-01-01", "invalid_at": "2024-01-01"})),
    Bad("a date that is no date", "INVALID_VALUE",
        lambda e, ids: e.search(ADA, "x", as_of="2020-13-01"),
        ("memory_search", {"query": "x", "as_of": "2020-13-01"}),
        ("memories", "search", "x", "--as-of", "2020-13-01"),
        lambda c, ids: c.get("/search?q=x&as_of=2020-13-01")),
    Bad("derived from another user's memory", "MEMORY_NOT_FOUND",
        lambda e, ids: e.store_rule(ADA, "x", derived_from=[ids["bob"]]),
        ("memory_store_rule", {"content": "x", "derived_from": ["<bob>"]}),
        ("memories", "store-rule", "x", "--derived-from", "<bob>"),
        lambda c, ids: _new("rule", {"content": "x", "derived_from": ids["bob"]})(c, ids)),
    Bad("confirming an episode", "INVALID_OPERATION",
        lambda e, ids: e.confirm(ADA, "episode", ids["episode"]),
        ("memory_confirm", {"type": "episode", "id": "<episode>"}),
        ("memories", "confirm", "episode", "<episode>"),
        None),
]  # fmt: skip


def _core(text: str, code: str) -> str:
    """``"<CODE>: <message>"`` as a surface showed it (without a hint after it)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    start = text.find(f"{code}: ")
    assert start >= 0, text[:300]
    core = text[start:].strip()
    return core.split(" Nothing was changed;")[0].split(" Memory is unavailable")[0].rstrip(".")


def test_each_bad_input_gives_the_same_coded_error_everywhere(world):
    ids = {
        "bob": world.engine.store_fact(BOB, "user", "city", "Bob lives in Paris").id,
        "episode": world.engine.store_episode(ADA, "Met a friend").id,
    }
    tools = {t.name: t for t in create_memory_tools(world.engine)}
    before = snapshot(world.store)
    rows, wrong = [], []

    def fill(args: Any) -> Any:
        if isinstance(args, dict):
            return {k: fill(v) for k, v in args.items()}
        if isinstance(args, tuple):
            return tuple(fill(a) for a in args)
        if isinstance(args, list):
            return [fill(a) for a in args]
        return ids[args[1:-1]] if isinstance(args, str) and args in ("<bob>", "<episode>") else args

    for bad in BAD:
        seen: dict[str, str] = {}
        with pytest.raises(LangmemError) as raised:
            bad.engine(world.engine, ids)
        seen["Python"] = error_text(raised.value).rstrip(".")
        if bad.tool:
            name, args = fill(bad.tool)
            call = {"type": "tool_call", "id": "c1", "name": name, "args": args}
            msg = tools[name].invoke(call, CONFIG)
            assert msg.status == "error", msg
            seen["agent tool"] = _core(msg.content, bad.code)
            is_error, text = mcp(world, name, args)
            assert is_error, text
            seen["MCP"] = _core(text, bad.code)
        if bad.cli:
            code, out = cli(world, *fill(bad.cli), "--user-id", "ada")
            assert code == 1 and out.startswith("error: "), out
            seen["CLI"] = _core(out, bad.code)
        if bad.browser:
            page = bad.browser(world.browser, ids)
            assert page.status_code >= 400, page.text[:300]
            found = re.search(r'class="error">(.*?)</p>', page.text, re.S)
            seen["browser"] = _core(found.group(1), bad.code)
        reference = seen["Python"]
        for surface, text in seen.items():
            if text != reference:
                wrong.append(f"{bad.what}: {surface} said {text!r}, Python {reference!r}")
        cells = " ".join(
            f"{s}:{'✓' if seen.get(s) == reference else ('-' if s not in seen else '✗')}"
            for s in ("Python", "agent tool", "MCP", "CLI", "browser")
        )
        rows.append(f"{bad.what:32} {bad.code:20} {cells}")
    MATRICES[f"error matrix ({world.name})"] = rows
    assert not wrong, wrong
    assert snapshot(world.store) == before  # nothing stored by any refused call


@pytest.fixture(scope="module", autouse=True)
def _print_matrices(request):
    yield
    if MATRICES:
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            for title, rows in MATRICES.items():
                print(f"\n--- {title} ---")
                print("\n".join(rows))
