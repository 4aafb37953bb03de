"""The HTTP servers attacked as a web browser would: a page whose domain is
made to resolve to 127.0.0.1 (DNS rebinding), a page of another site posting
forms (sign-in included), and redirects built from the ``Host`` header; then
the same pages in a real Chromium. Each case is counted.
"""

from __future__ import annotations

import io
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from typer.testing import CliRunner

from langmem_ext import SQLiteStore, create_manage_memory_tool
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.servers.callers import Callers
from langmem_ext.servers.mcp import create_mcp_server
from langmem_ext.servers.ui import create_ui_app
from langmem_ext.stores.transfer import export_jsonl

from .conftest import SCALE

ADA = MemoryContext("acme", user_id="ada")
CALLERS = Callers(
    {
        "tok-ada-0001": {"tenant_id": "acme", "user_id": "ada"},
        "tok-eve-0001": {"tenant_id": "acme", "user_id": "eve"},
    }
)
HOSTILE_HOSTS = [
    "evil.example",
    "evil.example:8765",
    "127.0.0.1.evil.example",
    "localhost.evil.example:8765",
    "127.0.0.2:8765",
    "[::2]:8765",
    "",
]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def dump(store) -> str:
    out = io.StringIO()
    export_jsonl(store, out)
    return out.getvalue()


@pytest.fixture
def world(tmp_path):
    store = SQLiteStore(tmp_path / "ui.db")
    fid = MemoryEngine(store).store_fact(ADA, "user", "passport", "Passport number X1234567").id
    yield store, fid
    store.close()


def _apps(store):
    return {
        "anonymous": create_ui_app(store, caller=ADA),
        "signed-in": create_ui_app(store, callers=CALLERS),
    }


def test_a_rebound_domain_reaches_nothing(world, tally):
    store, fid = world
    t = tally("memory browser: DNS rebinding (foreign Host header)")
    before = dump(store)
    for _ in range(SCALE):
        for mode, app in _apps(store).items():
            client = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
            if mode == "signed-in":
                client.post("/login", data={"token": "tok-ada-0001"})
            for host in HOSTILE_HOSTS:
                for method, path in [
                    ("GET", "/"),
                    ("GET", "/export"),
                    ("GET", f"/memory/{fid}"),
                    ("GET", "/search?q=passport"),
                    ("POST", f"/memory/{fid}/forget"),
                    ("POST", "/login"),
                ]:
                    t.case()
                    r = client.request(method, path, headers={"host": host})
                    if r.status_code != 421 or "X1234567" in r.text or "set-cookie" in r.headers:
                        t.violation(f"{mode} {method} {path} Host={host!r}: {r.status_code}")
    if dump(store) != before:
        t.violation("the store changed")


def test_pages_of_other_sites_cannot_post(world, tally):
    store, fid = world
    t = tally("memory browser: cross-site POST (forms, sign-in)")
    before = dump(store)
    foreign = [
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"origin": "http://127.0.0.1.evil.example:8765"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site", "origin": "http://127.0.0.1:9999"},
    ]
    for _ in range(SCALE):
        for mode, app in _apps(store).items():
            client = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
            if mode == "signed-in":
                client.post("/login", data={"token": "tok-ada-0001"})
            page = client.get(f"/memory/{fid}", follow_redirects=True).text
            csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
            version = re.search(r'name="version" value="([^"]+)"', page).group(1)
            for headers in foreign:
                for path, form in [
                    ("/login", {"token": "tok-eve-0001"}),  # login CSRF: signed in as eve
                    (f"/memory/{fid}/forget", {"csrf": csrf, "confirm": "yes"}),
                    (f"/memory/{fid}/edit", {"csrf": csrf, "version": version, "content": "Lost"}),
                    ("/logout", {"csrf": csrf}),
                ]:
                    t.case()
                    r = client.post(path, data=form, headers=headers)
                    if r.status_code != 403 or "set-cookie" in r.headers:
                        t.violation(f"{mode} POST {path} {headers}: {r.status_code}")
            # the browser's own same-origin form still works
            t.case()
            ok = client.post(
                f"/memory/{fid}/edit",
                data={"csrf": csrf, "version": version, "content": "Passport number X1234567"},
                headers={"origin": "http://127.0.0.1:8765", "sec-fetch-site": "same-origin"},
            )
            if ok.status_code != 303:
                t.violation(f"{mode}: a same-origin form was refused ({ok.status_code})")
    if dump(store) != before:
        t.violation("the store changed")


def test_redirects_are_never_built_from_host(world, tally):
    store, _ = world
    t = tally("memory browser: redirect to the request's Host")
    app = create_ui_app(store, caller=ADA)
    for _ in range(SCALE):
        for host in ("localhost:8765", "127.0.0.1:8765", "[::1]:8765"):
            for path in ("/", "/search?q=x", "/export"):
                t.case()  # a first visit, without a session: answered by a redirect
                client = TestClient(app, follow_redirects=False)
                r = client.get(path, headers={"host": host})
                location = r.headers.get("location", "")
                if r.status_code != 303 or not location.startswith("/"):
                    t.violation(f"{path} Host={host}: {r.status_code} {location!r}")


def test_a_proxy_host_can_be_allowed(world):
    store, _ = world
    app = create_ui_app(store, caller=ADA, allowed_hosts=["memory.example.com"])
    client = TestClient(app, base_url="https://memory.example.com")
    assert "X1234567" in client.get("/").text
    assert TestClient(app, base_url="http://evil.example").get("/").status_code == 421


def _mcp_post(client: TestClient, host: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
    headers = {"accept": "application/json, text/event-stream", "host": host}
    return client.post("/mcp", json=body, headers=headers).status_code


def test_mcp_answers_only_its_host_names_and_a_proxy_can_be_allowed(world, tally):
    store, _ = world
    t = tally("MCP server: DNS rebinding and proxy host names")
    default = create_mcp_server(store, caller=ADA).http_app()
    proxied = create_mcp_server(
        store, caller=ADA, allowed_hosts=["127.0.0.1", "memory.example.com"]
    ).http_app()
    with TestClient(default) as plain, TestClient(proxied) as behind_proxy:
        for _ in range(SCALE):
            for host in HOSTILE_HOSTS[:-1]:
                for client in (plain, behind_proxy):
                    t.case()
                    if _mcp_post(client, host) != 421:
                        t.violation(f"Host={host!r} was answered")
            t.case()
            if _mcp_post(behind_proxy, "memory.example.com") == 421:
                t.violation("the proxy's host name was refused")
            t.case()
            if _mcp_post(plain, "127.0.0.1:8000") == 421:
                t.violation("the loopback address was refused")


# -- in a real browser -----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(app) -> Iterator[int]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


READ_AND_FORGET = """
async () => {
  const out = {};
  try {
    const r = await fetch('/export', {credentials: 'include'});
    out.export_status = r.status; out.export = await r.text();
  } catch (e) { out.export_error = String(e); }
  try {
    const r = await fetch('/memory/%s', {credentials: 'include'});
    const page = await r.text();
    const m = page.match(/name="csrf" value="([^"]+)"/);
    if (m) {
      const f = new URLSearchParams({csrf: m[1]});
      const p = await fetch('/memory/%s/forget', {method: 'POST', body: f, credentials: 'include'});
      out.forget_status = p.status;
    }
  } catch (e) { out.forget_error = String(e); }
  return out;
}
"""


@pytest.mark.skipif(not CHROMIUM, reason="no chromium on this machine")
def test_in_chromium_rebinding_and_login_csrf_pages_are_refused(world, tally):
    from playwright.sync_api import sync_playwright

    store, fid = world
    t = tally("memory browser in Chromium: rebinding page, login CSRF page")
    before = dump(store)

    def attacker(ui_port: int) -> Starlette:
        form = f"""<form id=f method=post action="http://127.0.0.1:{ui_port}/login">
            <input name=token value="tok-eve-0001"></form>
            <script>document.getElementById('f').submit()</script>"""
        return Starlette(routes=[Route("/", lambda r: HTMLResponse(form))])

    with (
        serving(create_ui_app(store, caller=ADA)) as anon_port,
        serving(create_ui_app(store, callers=CALLERS)) as ui_port,
        serving(attacker(ui_port)) as evil_port,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-background-networking",
                # evil.test resolves to this machine: what a rebinding DNS server does
                "--host-resolver-rules=MAP evil.test 127.0.0.1",
            ],
        )
        # 1. a page of evil.test, now resolving to 127.0.0.1, reads and forgets
        page = browser.new_page()
        t.case()
        response = page.goto(f"http://evil.test:{anon_port}/")
        out = page.evaluate(READ_AND_FORGET % (fid, fid))
        if response.status != 421 or "X1234567" in str(out) or out.get("forget_status") == 303:
            t.violation(f"rebinding page: {response.status} {out}")
        # 2. a page of another site signs the browser in as eve
        context = browser.new_context()
        victim = context.new_page()
        t.case()
        victim.goto(f"http://evil.test:{evil_port}/")
        victim.wait_for_load_state("networkidle")
        landing = victim.goto(f"http://127.0.0.1:{ui_port}/")
        signed_in_as_eve = "eve" in victim.inner_text("header")
        if signed_in_as_eve or landing.status != 401:
            t.violation(f"login CSRF: the browser is signed in ({landing.status})")
        # 3. the user's own sign-in still works in the same browser
        t.case()
        victim.fill("input[name=token]", "tok-ada-0001")
        victim.click("button:has-text('Sign in')")
        victim.wait_for_selector("text=Passport number X1234567")
        browser.close()
    if dump(store) != before:
        t.violation("the store changed")


# -- an org caller and its users -----------------------------------------------------

USERS = {"ada": "Ada's passport is X1234567", "bob": "Bob's salary is 90k"}


def test_an_org_caller_never_reads_its_users_memories(tmp_path, tally):
    import anyio
    from mcp.client.client import Client

    from langmem_ext import create_search_memory_tool
    from langmem_ext.cli.app import app as cli

    t = tally("org caller reading its users' memories (tools, MCP, browser, CLI)")
    db = tmp_path / "org.db"
    store = SQLiteStore(db)
    engine = MemoryEngine(store)
    for user, secret in USERS.items():
        member = MemoryContext(org_id="acme", user_id=user)
        create_manage_memory_tool(store=store).invoke(
            {"content": secret}, {"configurable": {"memory_context": member}}
        )
        engine.store_fact(member, "user", "secret", secret)
    org = MemoryContext(org_id="acme")
    create_manage_memory_tool(store=store).invoke(
        {"content": "The org's holiday is in May"}, {"configurable": {"memory_context": org}}
    )
    config = {"configurable": {"memory_context": org}}
    server = create_mcp_server(store, caller=org).server
    browser = TestClient(create_ui_app(store, caller=org), base_url="http://127.0.0.1:8765")

    def leaked(text: str) -> bool:
        return any(secret.split(" is ")[1] in text for secret in USERS.values())

    async def mcp(name: str, args: dict) -> str:
        async with Client(server) as client:  # the MCP SDK's client, in process
            result = await client.call_tool(name, args)
        return "".join(getattr(c, "text", "") for c in result.content)

    for _ in range(SCALE):
        for query in ("passport", "salary", "holiday", ""):
            seen = {
                "search_memory tool": create_search_memory_tool(store=store).invoke(
                    {"query": query, "limit": 50}, config
                ),
                "MCP search_memory": anyio.run(mcp, "search_memory", {"query": query}),
                "MCP memory_search": anyio.run(mcp, "memory_search", {"query": query or "x"}),
                "MCP memory_recall": anyio.run(mcp, "memory_recall", {"query": query or "x"}),
                "browser search": browser.get(f"/search?q={query or 'x'}").text,
                "browser list": browser.get("/").text,
                "browser export": browser.get("/export").text,
                "CLI memories search": CliRunner()
                .invoke(
                    cli,
                    [
                        "memories",
                        "search",
                        query or "x",
                        "--org-id",
                        "acme",
                        "--db",
                        str(db),
                        "--embed",
                        "none",
                    ],
                )
                .output,
            }
            for surface, text in seen.items():
                t.case()
                if leaked(text):
                    t.violation(f"{surface} ({query!r}) showed a user's memory")
    # the org's own memory is still found
    assert "holiday" in create_search_memory_tool(store=store).invoke({"query": "holiday"}, config)
    store.close()


ODD_IDS = ["a%00b", "%00", "..%2F..%2Fetc", "%E2%80%A8", "x" * 5000, "%F0%9F%A6%84", "%25", "'"]


def test_odd_ids_and_concurrent_edits_in_the_browser(world, tally):
    store, fid = world
    odd = tally("memory browser: odd ids in paths (NUL, separators, very long)")
    race = tally("memory browser: an edit of a memory changed since the form was shown")
    client = TestClient(create_ui_app(store, caller=ADA), base_url="http://127.0.0.1:8765")
    page = client.get(f"/memory/{fid}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    for n in range(SCALE):
        before = dump(store)
        for mid in ODD_IDS:
            for method, path, data in [
                ("GET", f"/memory/{mid}", None),
                ("GET", f"/memory/{mid}/forget", None),
                ("POST", f"/memory/{mid}/forget", {"csrf": csrf, "confirm": "yes", "type": "fact"}),
                ("POST", f"/memory/{mid}/edit", {"csrf": csrf, "version": "x", "content": "y"}),
            ]:
                odd.case()
                r = client.request(method, path, data=data)
                if r.status_code >= 500 or r.status_code < 400 or 'class="error"' not in r.text:
                    odd.violation(f"{method} {path[:40]}: {r.status_code}")
        if dump(store) != before:
            odd.violation("the store changed")
        # two tabs: the second edit of the same version is refused with a message
        shown = client.get(f"/memory/{fid}").text
        version = re.search(r'name="version" value="([^"]+)"', shown).group(1)
        renewed = f"Passport number X1234567 (renewed {n})"
        first = {"csrf": csrf, "version": version, "content": renewed}
        client.post(f"/memory/{fid}/edit", data=first)
        current = [h for h in MemoryEngine(store).search(ADA, "passport") if h.content == renewed]
        after_first = dump(store)
        race.case()
        second = {"csrf": csrf, "version": version, "content": "Passport lost"}
        r = client.post(f"/memory/{fid}/edit", data=second)
        if r.status_code != 409 or "not saved" not in r.text or dump(store) != after_first:
            race.violation(f"the second edit: {r.status_code}")
        fid = current[0].id  # the memory the next round edits
