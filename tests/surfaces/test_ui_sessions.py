"""Signed-in browser sessions end: after an idle limit, after an absolute
limit however active they are, and at sign-out (on the server: a copied
cookie no longer works). An ended session asks to sign in again, with a
message, and shows nothing. A fake clock drives every limit (no sleeps)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.errors import LangmemError
from langmem_ext.servers.callers import Callers
from langmem_ext.servers.ui import create_ui_app

CALLERS = Callers({"tok-ada-0001": {"tenant_id": "acme", "user_id": "ada"}})
ADA = MemoryContext("acme", user_id="ada")
MINUTE, HOUR = 60.0, 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def world():
    store = SQLiteStore(index={"fields": ["content"]})
    MemoryEngine(store).store_fact(ADA, "user", "city", "Lives in Berlin")
    clock = Clock()
    app = create_ui_app(store, callers=CALLERS, clock=clock)
    yield store, clock, app
    store.close()


def _browser(app) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1:8765")


def _sign_in(app) -> tuple[TestClient, str]:
    client = _browser(app)
    r = client.post("/login", data={"token": "tok-ada-0001"}, follow_redirects=True)
    assert r.status_code == 200 and "Lives in Berlin" in r.text
    return client, re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)


def _asks_to_sign_in_again(r, why: str) -> None:
    assert r.status_code == 303, (r.status_code, r.text[:200])
    assert r.headers["location"].startswith("/login?ended=")
    assert "lmx_session=" in r.headers.get("set-cookie", "")  # the cookie is dropped


def test_a_session_ends_after_the_idle_limit(world):
    _, clock, app = world
    client, _ = _sign_in(app)
    for _ in range(4):  # used within the limit: still signed in, hours later
        clock.advance(29 * MINUTE)
        assert "Lives in Berlin" in client.get("/").text
    cookie = client.cookies.get("lmx_session")
    clock.advance(30 * MINUTE + 1)
    r = client.get("/", follow_redirects=False)
    _asks_to_sign_in_again(r, "idle")
    page = client.get(r.headers["location"])
    assert page.status_code == 200 and "Sign in" in page.text
    assert "30 minutes without use" in page.text and "Berlin" not in page.text
    # The old cookie, sent again (copied before it was dropped): still ended.
    other = _browser(app)
    other.cookies.set("lmx_session", cookie)
    again = other.get("/", follow_redirects=False)
    assert again.status_code in (303, 401) and "Berlin" not in again.text


def test_a_session_ends_after_the_absolute_limit_however_active(world):
    _, clock, app = world
    client, _ = _sign_in(app)
    for _ in range(int(12 * HOUR / (20 * MINUTE)) - 1):
        clock.advance(20 * MINUTE)
        assert client.get("/").status_code == 200
    clock.advance(20 * MINUTE + 1)  # 12 hours and a second after signing in
    r = client.get("/search?q=Berlin", follow_redirects=False)
    _asks_to_sign_in_again(r, "lifetime")
    page = client.get(r.headers["location"])
    assert "12 hours" in page.text and "Berlin" not in page.text
    again, _ = _sign_in(app)  # signing in again works at once
    assert again.get("/").status_code == 200


def test_a_form_sent_after_the_session_ended_changes_nothing(world):
    store, clock, app = world
    client, csrf = _sign_in(app)
    clock.advance(31 * MINUTE)
    r = client.post(
        "/new/rule", data={"csrf": csrf, "content": "Answer in German"}, follow_redirects=False
    )
    _asks_to_sign_in_again(r, "idle")
    assert "German" not in str([i.value for i in store.search(("tenant",), limit=100)])


def test_signing_out_ends_the_session_on_the_server(world):
    _, _, app = world
    client, csrf = _sign_in(app)
    copied = client.cookies.get("lmx_session")
    r = client.post("/logout", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    thief = _browser(app)
    thief.cookies.set("lmx_session", copied)
    for path in ("/", "/search?q=Berlin", "/export"):
        r = thief.get(path, follow_redirects=False)
        assert r.status_code == 401 and "Berlin" not in r.text
    r = thief.post("/new/rule", data={"csrf": csrf, "content": "x"}, follow_redirects=False)
    assert r.status_code == 401


def test_signing_in_again_ends_the_browsers_previous_session(world):
    _, _, app = world
    client, _ = _sign_in(app)
    first = client.cookies.get("lmx_session")
    client.post("/login", data={"token": "tok-ada-0001"}, follow_redirects=True)
    assert client.cookies.get("lmx_session") != first
    stale = _browser(app)
    stale.cookies.set("lmx_session", first)
    assert stale.get("/").status_code == 401


def test_forms_still_need_their_sessions_token(world):
    _, _, app = world
    ada, csrf = _sign_in(app)
    _, other_csrf = _sign_in(app)
    assert csrf != other_csrf
    for token in ("", other_csrf):
        r = ada.post("/new/rule", data={"csrf": token, "content": "Answer in German"})
        assert r.status_code == 403 and "this form has expired" in r.text


def test_one_local_user_gets_a_new_session_without_signing_in():
    store = SQLiteStore(index={"fields": ["content"]})
    MemoryEngine(store).store_fact(MemoryContext(user_id="ada"), "user", "c", "Lives in Rome")
    clock = Clock()
    client = _browser(create_ui_app(store, caller=MemoryContext(user_id="ada"), clock=clock))
    assert "Lives in Rome" in client.get("/").text
    clock.advance(13 * HOUR)
    assert "Lives in Rome" in client.get("/").text  # a fresh session, no sign-in page
    store.close()


def test_the_limits_can_be_set_and_are_checked(world):
    store, clock, _ = world
    app = create_ui_app(
        store, callers=CALLERS, clock=clock, session_idle=5 * MINUTE, session_lifetime=HOUR
    )
    client, _ = _sign_in(app)
    clock.advance(5 * MINUTE + 1)
    r = client.get("/", follow_redirects=False)
    _asks_to_sign_in_again(r, "idle")
    assert "5 minutes without use" in client.get(r.headers["location"]).text
    for bad in ({"session_idle": 0}, {"session_lifetime": -1},
                {"session_idle": 2 * HOUR, "session_lifetime": HOUR}):  # fmt: skip
        with pytest.raises(LangmemError, match="session"):
            create_ui_app(store, callers=CALLERS, **bad)


def test_ended_sessions_do_not_pile_up(world):
    _, clock, app = world
    for _ in range(50):
        _sign_in(app)
        clock.advance(31 * MINUTE)
    sessions = app.state.sessions
    assert len(sessions) <= 50
    # An ended session is remembered (to say why it ended) for as long as a
    # session may last, then forgotten.
    clock.advance(13 * HOUR)
    _sign_in(app)
    assert len(sessions) == 1


def test_the_command_line_takes_the_limits_in_minutes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import langmem_ext.servers.ui as ui
    from langmem_ext.cli.app import app

    made = {}

    def record(store, **kwargs):
        made.update(kwargs)
        raise LangmemError("stop here")  # before serving anything

    monkeypatch.setattr(ui, "create_ui_app", record)
    args = [
        "ui",
        "--db",
        str(tmp_path / "m.db"),
        "--create",
        "--embed",
        "none",
        "--allow-anonymous",
    ]
    args += ["--user-id", "ada", "--session-idle", "10", "--session-lifetime", "90"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "stop here" in result.output
    assert (made["session_idle"], made["session_lifetime"]) == (600, 5400)
    monkeypatch.undo()
    bad = CliRunner().invoke(app, [*args[:-4], "--session-idle", "0"])
    assert bad.exit_code == 2 and "--session-idle (0) must be over 0 minutes" in bad.output
