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
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from langmem_ext import SQLiteStore, create_manage_memory_tool
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.servers.callers import Callers
from langmem_ext.servers.ui import create_ui_app
from langmem_ext.stores.transfer import export_jsonl
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
        "trip": engine.store_episode(ADA, "Planned a trip to Rome").id,
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


class _Form(HTMLParser):
    """The fields of the page's edit form, as a browser would send them."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}
        self._in: str | None = None
        self._select: str | None = None
        self._form = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self._form = a.get("action", "").endswith("/edit")
        if not self._form:
            return
        if tag == "input":
            self.fields[a["name"]] = a.get("value", "")
        elif tag == "textarea":
            self._in, self.fields[a["name"]] = a["name"], ""
        elif tag == "select":
            self._select = a["name"]
        elif (
            tag == "option"
            and self._select
            and ("selected" in a or self._select not in self.fields)
        ):
            self.fields[self._select] = a.get("value", "")
            self._in = self._select if a.get("value") is None else None

    def handle_data(self, data):
        if self._in:
            self.fields[self._in] += data

    def handle_endtag(self, tag):
        if tag in ("textarea", "option"):
            self._in = None
        if tag == "select":
            self._select = None
        if tag == "form":
            self._form = False


def edit_form(client: TestClient, mid: str) -> dict[str, str]:
    parser = _Form()
    parser.feed(client.get(f"/memory/{mid}").text)
    return dict(parser.fields)


def test_editing_a_fact_supersedes_it_and_keeps_chain_and_audit(world):
    store, engine, ids = world
    client, _ = signed_in(store)
    form = edit_form(client, ids["berlin"])
    form.update(content="Lives in Munich", confidence="0.8")
    r = client.post(f"/memory/{ids['berlin']}/edit", data=form, follow_redirects=True)
    assert r.status_code == 200
    assert "Lives in Munich" in r.text and "Lives in Berlin" in r.text  # the chain
    old = engine.get(ADA, ids["berlin"])
    assert old.validity == "superseded" and old.superseded_by
    new = engine.get(ADA, old.superseded_by)
    assert (new.content, new.confidence, new.category) == ("Lives in Munich", 0.8, "context")
    history = client.get(f"/memory/{ids['berlin']}").text
    assert "superseded" in history and "Lives in Munich" in history


def test_an_edit_changes_only_the_fields_the_user_changed(world):
    store, engine, _ = world
    client, _ = signed_in(store)
    plain = engine.store_fact(ADA, "user", "drink", "Drinks tea", confidence=0.123456)
    form = edit_form(client, plain.id)  # the form exactly as the page shows it
    assert form["category"] == "" and form["confidence"] == "0.123456"
    form["content"] = "Drinks green tea"
    r = client.post(f"/memory/{plain.id}/edit", data=form, follow_redirects=True)
    assert r.status_code == 200, r.text
    new = engine.get(ADA, engine.get(ADA, plain.id).superseded_by)
    assert (new.content, new.category, new.confidence) == ("Drinks green tea", None, 0.123456)
    events = [e for e in engine.history(ADA, new.id) if e.action == "updated"]
    assert events == []  # no "None → preference": nothing but the content was touched
    # confidence alone: changed in place, no new version
    form = edit_form(client, new.id)
    form["confidence"] = "0.9"
    client.post(f"/memory/{new.id}/edit", data=form)
    same = engine.get(ADA, new.id)
    assert (same.live, same.confidence, same.content) == (True, 0.9, "Drinks green tea")
    [update] = [e for e in engine.history(ADA, new.id) if e.action == "updated"]
    assert set(update.changes) == {"confidence"}


def test_an_edit_of_a_memory_changed_since_is_refused_with_a_message(world):
    store, _, ids = world
    client, _ = signed_in(store)
    first, second = edit_form(client, ids["rule"]), edit_form(client, ids["rule"])
    first["content"] = "Answer in German when asked twice"
    saved = client.post(f"/memory/{ids['rule']}/edit", data=first, follow_redirects=False)
    assert saved.status_code == 303
    before = dump(store)
    second["content"] = "Answer in French"
    r = client.post(f"/memory/{ids['rule']}/edit", data=second)
    assert r.status_code == 409 and "changed" in r.text and "not saved" in r.text
    assert "Answer in German when asked twice" in r.text  # the current version is shown
    assert dump(store) == before


def test_bad_forms_are_errors_and_change_nothing(world):
    store, _, ids = world
    client, csrf = signed_in(store)
    form = edit_form(client, ids["berlin"])
    before = dump(store)
    bad = [
        ({"content": "   "}, "INVALID_VALUE"),
        ({"content": "x" * 20_000}, "CONTENT_TOO_LONG"),
        ({"content": "Lives in Munich", "confidence": "1.5"}, "INVALID_VALUE"),
        ({"content": "Lives in Munich", "confidence": "high"}, "INVALID_VALUE"),
        ({"content": "Lives in Munich", "category": "hobby"}, "INVALID_VALUE"),
    ]
    for change, code in bad:
        r = client.post(f"/memory/{ids['berlin']}/edit", data={**form, **change})
        assert r.status_code == 400 and 'class="error"' in r.text and code in r.text, change
    r = client.post(f"/memory/{ids['berlin']}/edit", data={"content": "Lives in Munich"})
    assert r.status_code == 403  # no form token: a cross-site request
    r = client.post(
        f"/memory/{ids['bob']}/forget", data={"csrf": csrf, "confirm": "yes", "type": "fact"}
    )
    assert r.status_code == 404
    r = client.post("/new/fact", data={"csrf": csrf, "subject": "user", "predicate": "x",
                                       "content": "y", "importance": "11"})  # fmt: skip
    assert r.status_code == 400 and "importance must be a number from 0 to 10" in r.text
    assert client.get("/memory/a%00b").status_code == 400  # a NUL in an id: a clear error
    assert dump(store) == before


def test_forget_asks_first_and_says_what_it_does(world):
    store, engine, ids = world
    client, csrf = signed_in(store)
    assert "candidate" in client.get(f"/memory/{ids['rule']}").text  # rule maturity
    assert "expires" in client.get(f"/memory/{ids['trip']}").text
    asked = client.get(f"/memory/{ids['rule']}/forget")
    assert "Forget this rule?" in asked.text and "cannot be undone" in asked.text
    unconfirmed = client.post(f"/memory/{ids['rule']}/forget", data={"csrf": csrf})
    assert "Forget this rule?" in unconfirmed.text and engine.get(ADA, ids["rule"]).live
    r = client.post(
        f"/memory/{ids['rule']}/forget",
        data={"csrf": csrf, "confirm": "yes", "type": "rule"},
        follow_redirects=True,
    )
    assert r.status_code == 200 and "Answer in German" not in r.text
    assert not engine.get(ADA, ids["rule"]).live


def test_stats_by_type_and_every_version_of_a_fact(world):
    store, engine, _ = world
    client, _ = signed_in(store)
    create_manage_memory_tool(store=store).invoke(
        {"content": "Allergic to peanuts"}, {"configurable": {"memory_context": ADA}}
    )
    newer = engine.store_fact(ADA, "user", "city", "Lives in Hamburg")  # the same slot
    page = client.get("/").text
    stats = re.sub(r"\s+", " ", re.search(r'class="card stats">(.*?)</div>', page, re.S).group(1))
    assert "<b>1</b> facts" in stats and "<b>1</b> rules" in stats
    assert "<b>1</b> episodes" in stats and "<b>1</b> notes" in stats
    assert "1 replaced" in stats
    page = client.get(f"/memory/{newer.id}").text
    chain = re.search(r"<h3>Corrections</h3>.*?</ol>", page, re.S).group(0)
    assert chain.index("Lives in Berlin") < chain.index("Lives in Hamburg")
    found = client.get("/search?q=peanuts").text
    assert "Allergic to peanuts" in found
    none = client.get("/search?q=cashews&mode=keyword").text
    assert "Nothing found." in none and "0.000" not in none


def test_new_memories_from_the_forms(world):
    store, engine, _ = world
    client, csrf = signed_in(store)
    page = client.get("/new/fact").text
    for field in ("subject", "predicate", "content", "importance", "permanence", "category"):
        assert f'name="{field}"' in page
    assert 'name="tenant_id"' not in page and "Who or what the fact is about" in page
    r = client.post(
        "/new/fact",
        data={"csrf": csrf, "subject": "user", "predicate": "pet", "content": "Has a cat",
              "importance": "7", "tags": "pets, home"},
        follow_redirects=True,
    )  # fmt: skip
    assert r.status_code == 200 and "Has a cat" in r.text
    [hit] = engine.search(ADA, "cat", types=["fact"], mode="keyword")
    assert (hit.record.importance, hit.record.tags) == (7.0, ["pets", "home"])


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
    # What the agent saved with the LangMem-style tool: a note the browser must find.
    create_manage_memory_tool(store=engine.store).invoke(
        {"content": "Allergic to peanuts"}, {"configurable": {"memory_context": ADA}}
    )
    shots = ROOT / "docs" / "img" if os.environ.get("LMX_SCREENSHOTS") else tmp_path
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 640})
        page.goto(url + "/")
        page.fill("input[name=token]", "tok-ada-0001")
        page.click("button:has-text('Sign in')")
        page.wait_for_selector("text=Lives in Berlin")
        assert "Paris" not in page.content()
        assert "<b>1</b> notes" in page.inner_html(".stats")
        page.screenshot(path=shots / "ui-list.png")

        page.click("header >> text=Search")
        page.fill("input[name=q]", "peanuts")
        page.click("button:has-text('Search')")
        page.wait_for_selector("td.score")
        assert "Allergic to peanuts" in page.inner_text("table")
        page.screenshot(path=shots / "ui-search.png")

        page.click("header >> text=Memories")
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
        # A newer fact for the same subject and predicate, stored by the agent.
        newest = engine.store_fact(ADA, "user", "city", "Lives in Hamburg", category="context")
        page.goto(f"{url}/memory/{newest.id}")
        chain = page.inner_text("ol")
        assert chain.index("Berlin") < chain.index("Munich") < chain.index("Hamburg")
        page.screenshot(path=shots / "ui-history.png", full_page=True)

        page.click("text=Forget this memory")
        page.wait_for_selector("text=cannot be undone")
        page.screenshot(path=shots / "ui-forget.png")
        page.click("button:has-text('Forget it')")
        page.wait_for_selector("text=Answer in German")
        browser.close()
    assert engine.get(ADA, ids["berlin"]).validity == "superseded"
    assert engine.get(ADA, newest.id).validity == "retracted"


def test_a_damaged_item_is_shown_as_damaged_and_can_be_removed(world):
    store, engine, _ = world
    client, csrf = signed_in(store)
    space = ("tenant", "acme", "user", "ada")  # written by another program, badly
    store.put(space, "bad-1", {"kind": "fact", "content": "Likes tea", "confidence": "high"})
    page = client.get("/").text
    assert "damaged" in page and "confidence must be a number" in page
    assert "Lives in Berlin" in page  # the rest still works
    assert "<b>1</b> damaged" in page
    shown = client.get("/memory/bad-1").text
    assert "cannot be read as a memory" in shown and '"confidence": "high"' in shown
    assert 'action="/memory/bad-1/edit"' not in shown
    assert "Lives in Berlin" in client.get("/search?q=Berlin").text
    asked = client.get("/memory/bad-1/forget").text
    assert "Remove this damaged item?" in asked and "cannot be undone" in asked
    r = client.post(
        "/memory/bad-1/forget", data={"csrf": csrf, "confirm": "yes", "type": "damaged"}
    )
    assert r.status_code == 200 and store.get(space, "bad-1") is None
    assert engine.stats(ADA)["damaged"] == 0
