"""The memory browser: signing in, each caller's own memories only, search with
scores, editing (a fact's correction keeps the chain and the audit), forgetting,
bad forms changing nothing; then the same in a real headless Chromium, which
also takes the screenshots in the docs."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.stores.transfer import export_jsonl
from langmem_ext.surfaces.callers import Callers
from langmem_ext.surfaces.ui import create_ui_app
from tests.embeddings import WordEmbeddings

ROOT = Path(__file__).resolve().parents[2]
CALLERS = Callers(
    {
        "tok-ada-0001": {"tenant_id": "acme", "user_id": "ada"},
        "tok-bob-0001": {"tenant_id": "acme", "user_id": "bob"},
        "tok-gina-001": {"tenant_id": "globex", "user_id": "ada"},  # same user id, other tenant
    }
)
ADA, BOB, GINA = (
    MemoryContext("acme", user_id="ada"),
    MemoryContext("acme", user_id="bob"),
    MemoryContext("globex", user_id="ada"),
)


@pytest.fixture
def world(tmp_path):
    store = SQLiteStore(
        tmp_path / "ui.db", index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    )
    engine = MemoryEngine(store)
    ids = {
        "berlin": engine.store_fact(ADA, "user", "city", "Lives in Berlin", category="context").id,
        "rule": engine.store_rule(ADA, "Answer in German when asked").id,
        "trip": engine.store_episode(ADA, "Planned a trip to Rome", "travel").id,
        "bob": engine.store_fact(BOB, "user", "city", "Bob lives in Paris").id,
        "gina": engine.store_fact(GINA, "user", "city", "Globex ada lives in Oslo").id,
    }
    yield store, engine, ids
    store.close()


def browser(app) -> TestClient:
    """A client that reaches the app as a browser on this machine does."""
    return TestClient(app, base_url="http://127.0.0.1:8765")


def signed_in(store, token: str = "tok-ada-0001") -> tuple[TestClient, str]:
    client = browser(create_ui_app(store, callers=CALLERS))
    r = client.post("/login", data={"token": token}, follow_redirects=True)
    assert r.status_code == 200, r.text
    return client, re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)


def dump(store) -> str:
    out = io.StringIO()
    export_jsonl(store, out)
    return out.getvalue()


def test_pages_need_a_valid_token(world):
    store, _, ids = world
    client = browser(create_ui_app(store, callers=CALLERS))
    for path in ("/", "/search?q=Berlin", f"/memory/{ids['berlin']}", "/export"):
        r = client.get(path)
        assert r.status_code == 401 and "Sign in" in r.text and "Berlin" not in r.text
    r = client.post("/login", data={"token": "tok-nope"})
    assert r.status_code == 401 and "unknown token" in r.text
    client.cookies.set("lmx_session", "guessed")
    assert client.get("/").status_code == 401


def test_each_caller_sees_only_their_own_memories(world):
    store, _, ids = world
    client, _ = signed_in(store)
    page = client.get("/").text
    assert "Lives in Berlin" in page and "Answer in German" in page and "trip to Rome" in page
    assert "Paris" not in page and "Oslo" not in page
    for other in (ids["bob"], ids["gina"]):  # another user; the same user id in another tenant
        assert client.get(f"/memory/{other}").status_code == 404
    hits = client.get("/search?q=lives").text
    assert "Berlin" in hits and "Paris" not in hits and "Oslo" not in hits
    exported = [json.loads(line) for line in client.get("/export").text.splitlines()]
    assert {row["value"]["content"] for row in exported} >= {"Lives in Berlin"}
    assert not any("Paris" in json.dumps(r) or "Oslo" in json.dumps(r) for r in exported)
    gina, _ = signed_in(store, "tok-gina-001")
    assert "Oslo" in gina.get("/").text and "Berlin" not in gina.get("/").text


def test_search_shows_scores_in_every_mode(world):
    store, _, _ = world
    client, _ = signed_in(store)
    for mode in ("hybrid", "vector", "keyword"):
        page = client.get(f"/search?q=Berlin&mode={mode}").text
        assert re.search(r'class="score">\d\.\d{3}<', page) and "Lives in Berlin" in page
    assert client.get("/search?q=x&mode=psychic").status_code == 400


def test_editing_a_fact_supersedes_it_and_keeps_chain_and_audit(world):
    store, engine, ids = world
    client, csrf = signed_in(store)
    r = client.post(
        f"/memory/{ids['berlin']}/edit",
        data={
            "csrf": csrf,
            "content": "Lives in Munich",
            "category": "context",
            "confidence": "0.8",
        },
        follow_redirects=True,
    )
    assert r.status_code == 200
    assert "Lives in Munich" in r.text and "Lives in Berlin" in r.text  # the chain
    old = engine.get(ADA, ids["berlin"])
    assert old.validity == "superseded" and old.superseded_by
    new = engine.get(ADA, old.superseded_by)
    assert new.content == "Lives in Munich" and new.confidence == 0.8
    history = client.get(f"/memory/{ids['berlin']}").text
    assert "superseded" in history and "Lives in Munich" in history


def test_bad_forms_are_errors_and_change_nothing(world):
    store, _, ids = world
    client, csrf = signed_in(store)
    before = dump(store)
    bad = [
        {"content": "   "},
        {"content": "x" * 20_000},
        {"content": "Lives in Munich", "confidence": "1.5"},
        {"content": "Lives in Munich", "confidence": "high"},
        {"content": "Lives in Munich", "category": "hobby"},
    ]
    for form in bad:
        r = client.post(f"/memory/{ids['berlin']}/edit", data={"csrf": csrf, **form})
        assert r.status_code == 400 and 'class="error"' in r.text, form
    r = client.post(f"/memory/{ids['berlin']}/edit", data={"content": "Lives in Munich"})
    assert r.status_code == 403  # no form token: a cross-site request
    r = client.post(f"/memory/{ids['bob']}/forget", data={"csrf": csrf})
    assert r.status_code == 404
    assert dump(store) == before


def test_forget_and_rule_and_episode_details(world):
    store, engine, ids = world
    client, csrf = signed_in(store)
    assert "candidate" in client.get(f"/memory/{ids['rule']}").text  # rule maturity
    assert "expires" in client.get(f"/memory/{ids['trip']}").text
    r = client.post(f"/memory/{ids['rule']}/forget", data={"csrf": csrf}, follow_redirects=True)
    assert r.status_code == 200 and "Answer in German" not in r.text
    assert not engine.get(ADA, ids["rule"]).live


def test_one_local_user_needs_no_sign_in(world):
    store, _, _ = world
    client = browser(create_ui_app(store, caller=ADA))
    assert "Lives in Berlin" in client.get("/").text


# -- a real browser ------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(world):
    import uvicorn

    store, engine, ids = world
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_ui_app(store, callers=CALLERS), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the memory browser did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", engine, ids
    server.should_exit = True
    thread.join(timeout=30)


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="no chromium on this machine"
)
def test_in_chromium_sign_in_search_edit_history(served, tmp_path):
    # LMX_SCREENSHOTS=1 writes the screenshots the docs show (docs/img/ui-*.png).
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI needs chromium (scripts/test installs it with apt-get)"
    url, engine, ids = served
    shots = ROOT / "docs" / "img" if os.environ.get("LMX_SCREENSHOTS") else tmp_path
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 640})
        page.goto(url + "/")
        page.fill("input[name=token]", "tok-ada-0001")
        page.click("button:has-text('Sign in')")
        page.wait_for_selector("text=Lives in Berlin")
        assert "Paris" not in page.content()
        page.screenshot(path=shots / "ui-list.png")

        page.click("header >> text=Search")
        page.fill("input[name=q]", "where does ada live Berlin")
        page.click("button:has-text('Search')")
        page.wait_for_selector("td.score")
        page.screenshot(path=shots / "ui-search.png")

        page.click("text=Lives in Berlin")
        page.fill("textarea[name=content]", "Lives in Munich")
        page.fill("input[name=confidence]", "1.7")
        page.click("button:has-text('Save')")
        page.wait_for_selector(".error")
        assert "confidence must be a number from 0 to 1" in page.inner_text(".error")
        page.screenshot(path=shots / "ui-edit-error.png", full_page=True)

        page.fill("input[name=confidence]", "0.9")
        page.click("button:has-text('Save')")
        page.wait_for_selector("h2:has-text('Lives in Munich')")
        page.click("ol >> text=Lives in Berlin")
        page.wait_for_selector("text=superseded")
        page.screenshot(path=shots / "ui-history.png", full_page=True)
        browser.close()
    assert engine.get(ADA, ids["berlin"]).validity == "superseded"
