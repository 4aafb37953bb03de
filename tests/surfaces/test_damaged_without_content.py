"""A memory without content, written straight into a user's space by another
program (``{"kind": "fact"}``), on SQLite and PostgreSQL: every browser page
answers (the list and search skip it or show it as damaged, its own page shows
it as damaged, nothing answers HTTP 500), and every memory tool, sync and
async, either works around it or refuses with a coded error; the user's good
memories stay readable everywhere."""

from __future__ import annotations

import asyncio
import os
import re
import shutil

import pytest
from starlette.testclient import TestClient

from langmem_ext import SQLiteStore
from langmem_ext.agents.tools import MEMORY_TOOL_NAMES, create_memory_tools
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.errors import LangmemError
from langmem_ext.servers.callers import Callers
from langmem_ext.servers.ui import create_ui_app
from tests.embeddings import WordEmbeddings

ADA = MemoryContext("acme", user_id="ada")
CALLERS = Callers({"tok-ada-0001": {"tenant_id": "acme", "user_id": "ada"}})
SPACE = ("tenant", "acme", "user", "ada")  # where the engine keeps Ada's memories
GOOD = "Drinks green tea every morning"
BAD = {
    "fact": {"kind": "fact"},
    "rule": {"kind": "rule", "maturity": "candidate"},
    "episode": {"kind": "episode", "tags": ["tea"]},
}


@pytest.fixture(params=["sqlite", "postgres"])
def world(request):
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    if request.param == "sqlite":
        store = SQLiteStore(index=index)
    else:
        from langmem_ext.stores.postgres import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_server").fresh_schema(), index=index)
    yield _filled(store)
    store.close()


def _filled(store):
    engine = MemoryEngine(store)
    good = engine.store_fact(ADA, "user", "drink", GOOD).id
    for kind, value in BAD.items():
        store.put(SPACE, f"bad-{kind}", value)  # as another program would
    return store, engine, good


def _client(store) -> tuple[TestClient, str]:
    client = TestClient(
        create_ui_app(store, callers=CALLERS),
        base_url="http://127.0.0.1:8765",
        raise_server_exceptions=False,
    )
    r = client.post("/login", data={"token": "tok-ada-0001"}, follow_redirects=True)
    assert r.status_code == 200, r.text[:300]
    return client, re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)


def test_every_browser_page_answers(world):
    store, _, good = world
    client, csrf = _client(store)
    pages = ["/", "/export", "/new/fact", f"/memory/{good}"]
    pages += [f"/?type={t}" for t in ("fact", "rule", "episode", "note")]
    pages += [f"/search?q=tea&mode={m}" for m in ("hybrid", "vector", "keyword")]
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        if path not in ("/new/fact", "/?type=rule", "/?type=episode", "/?type=note"):
            assert GOOD in r.text, path
    listing = client.get("/").text
    assert "content is missing" in listing and f"<b>{len(BAD)}</b> damaged" in listing
    for kind in BAD:
        shown = client.get(f"/memory/bad-{kind}")
        assert shown.status_code == 200, shown.text[:300]
        assert "cannot be read as a memory" in shown.text and "content is missing" in shown.text
        assert f'action="/memory/bad-{kind}/edit"' not in shown.text
        asked = client.get(f"/memory/bad-{kind}/forget")
        assert asked.status_code == 200 and "Remove this damaged item?" in asked.text
        # A hand-made edit of it is refused, not a server error, and changes nothing.
        r = client.post(f"/memory/bad-{kind}/edit", data={"csrf": csrf, "content": "x"})
        assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
        assert store.get(SPACE, f"bad-{kind}").value == BAD[kind]
    r = client.post(
        "/memory/bad-fact/forget", data={"csrf": csrf, "confirm": "yes", "type": "damaged"}
    )
    assert r.status_code == 200 and store.get(SPACE, "bad-fact") is None


def _calls(good: str) -> dict[str, list[dict]]:
    """Arguments for every tool: each reads or acts on the damaged items."""
    on_bad = [{"type": kind, "id": f"bad-{kind}"} for kind in BAD]
    return {
        "memory_store_fact": [{"subject": "user", "predicate": "drink", "content": GOOD + "!"}],
        "memory_store_episode": [{"content": "Had tea with Bob"}],
        "memory_store_rule": [{"content": "Offer tea first"}],
        "memory_confirm": on_bad,
        "memory_mark_helpful": [{"id": a["id"]} for a in on_bad],
        "memory_mark_harmful": [{"id": a["id"], "reason": "wrong"} for a in on_bad],
        "memory_forget": on_bad,
        "memory_get": [*on_bad, {"type": "fact", "id": good}],
        "memory_search": [{"query": "tea"}, {"query": "tea", "types": ["fact", "rule"]}],
        "memory_recall": [{"query": "tea"}],
        "memory_stats": [{}],
        "memory_context": [{"query": "tea"}],
        "memory_entities": [{}],
        "memory_about": [{"entity": "user"}],
        "memory_timeline": [{"subject": "user", "predicate": "drink"}],
        "memory_stale": [{}],
        "memory_merge_entities": [{"into": "user", "other": "tea"}],
        "memory_unmerge_entities": [{"entity": "no-such-entity"}],
        "memory_split_entity": [{"entity": "user", "aliases": ["nobody"]}],
    }


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_memory_tool_works_around_it_or_refuses_it(world, mode):
    store, engine, good = world
    tools = {t.name: t for t in create_memory_tools(engine)}
    config = {"configurable": {"memory_context": ADA}}
    calls = _calls(good)
    assert set(calls) == set(MEMORY_TOOL_NAMES)  # every tool is tried
    crashed = []
    for name, arg_sets in calls.items():
        for args in arg_sets:
            try:
                if mode == "sync":
                    out = tools[name].invoke(args, config)
                else:
                    out = asyncio.run(tools[name].ainvoke(args, config))
            except LangmemError:
                continue  # a coded refusal, as for any memory it cannot act on
            except Exception as e:
                crashed.append(f"{name}({args}): {type(e).__name__}: {e}"[:300])
                continue
            if name in ("memory_search", "memory_recall", "memory_context"):
                assert GOOD in out and "bad-" not in out, (name, out[:300])
    assert not crashed, crashed
    for kind, value in BAD.items():  # never rewritten by a tool
        item = store.get(SPACE, f"bad-{kind}")
        assert item is None or item.value == value


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="no chromium on this machine"
)
def test_in_chromium_the_pages_show_it_as_damaged():
    # The pages are the same over both stores (the TestClient tests cover both).
    import socket
    import threading
    import time

    import uvicorn
    from playwright.sync_api import sync_playwright

    store, _, good = _filled(SQLiteStore(index={"fields": ["content"]}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        create_ui_app(store, callers=CALLERS), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the memory browser did not start"
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url + "/")
            page.fill("input[name=token]", "tok-ada-0001")
            page.click("button:has-text('Sign in')")
            page.wait_for_selector(f"text={GOOD}")
            assert "content is missing" in page.content()
            paths = (
                "/search?q=tea",
                f"/memory/{good}",
                "/memory/bad-fact",
                "/memory/bad-rule/forget",
            )
            for path in paths:
                response = page.goto(url + path)
                assert response is not None and response.status == 200, path
            assert "cannot be read as a memory" in page.goto(url + "/memory/bad-fact").text()
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        store.close()
