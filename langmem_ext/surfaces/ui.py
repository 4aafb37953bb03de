"""The memory browser: a local web page to look at and fix what an agent remembers.

``langmem-ext ui`` serves it (Starlette, server-rendered pages, no JavaScript).
A caller signs in with a bearer token from the callers file (see
:mod:`langmem_ext.surfaces.callers`); the page then shows only that caller's
memories — the tenant and user come from the token, never from the URL or a
form, and every read and write goes through the memory engine with the caller's
context, so another user's memory id is simply not found. Pages:

* ``/`` — the caller's memories, newest first, by type, with stats;
* ``/search?q=...&mode=hybrid`` — search with scores (hybrid, vector, keyword);
* ``/memory/{id}`` — one memory: its fields, a fact's supersession chain
  (what it replaced, what replaced it), a rule's maturity, an episode's expiry,
  and the audit history; forms to edit it (a fact's new content supersedes it)
  and to forget it;
* ``/export`` — the caller's memories as JSON Lines.

Forms carry a per-session token against cross-site requests, and a form with
bad values is shown again with the error; nothing is stored then.

Examples:
    >>> from starlette.testclient import TestClient
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext
    >>> app = create_ui_app(SQLiteStore(), caller=MemoryContext(user_id="ada"))
    >>> TestClient(app, base_url="http://127.0.0.1:8765").get("/").status_code
    200
"""

from __future__ import annotations

import hmac
import io
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from langgraph.store.base import BaseStore
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from ..engine import Fact, MemoryContext, MemoryEngine, policy
from ..errors import AuthenticationError, LangmemError
from ..stores.transfer import export_jsonl
from ._http import LOOPBACK, SameSiteOnly, check_host_names
from .callers import Callers

__all__ = ["create_ui_app"]

_COOKIE = "lmx_session"
_MODES = ("hybrid", "vector", "keyword")
_TYPES = ("fact", "rule", "episode", "note")
_TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates" / "ui"))


@dataclass
class _Session:
    caller: MemoryContext
    csrf: str


class _Sessions:
    """Signed-in browsers: a random session id (the cookie) → the caller."""

    def __init__(self) -> None:
        self._by_id: dict[str, _Session] = {}

    def open(self, caller: MemoryContext) -> str:
        sid = secrets.token_urlsafe(32)
        self._by_id[sid] = _Session(caller, secrets.token_urlsafe(32))
        return sid

    def get(self, sid: str | None) -> _Session | None:
        return self._by_id.get(sid) if sid else None

    def close(self, sid: str | None) -> None:
        self._by_id.pop(sid or "", None)


def create_ui_app(
    store: BaseStore,
    *,
    callers: Callers | None = None,
    caller: MemoryContext | None = None,
    allowed_hosts: Sequence[str] = LOOPBACK,
) -> Starlette:
    """The memory browser as an ASGI app.

    Args:
        store: the store the agent's memories are in.
        callers: bearer tokens → callers; each browser signs in with a token.
        caller: serve every browser as this one caller, without signing in —
            for a single user on their own machine only.
        allowed_hosts: the host names the browser is reached by (default: this
            machine's loopback names). Requests for any other name are refused,
            so a web page cannot reach the browser by making its own domain
            resolve to 127.0.0.1; add a reverse proxy's name here.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> callers = Callers.from_json('{"tokens": {"tok-ada-123": {"user_id": "ada"}}}')
        >>> app = create_ui_app(SQLiteStore(), callers=callers)
    """
    if (callers is None) == (caller is None):
        raise LangmemError(
            "give either callers= (each browser signs in with a token) or caller= "
            "(one local user, no sign-in)"
        )
    engine = MemoryEngine(store)
    sessions = _Sessions()

    def session_of(request: Request) -> _Session | None:
        found = sessions.get(request.cookies.get(_COOKIE))
        return found

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        s = session_of(request)
        context.update(request=request, who=s.caller if s else None, csrf=s.csrf if s else "")
        return _TEMPLATES.TemplateResponse(request, name, context, status_code=status)

    def signed_in(handler: Any) -> Any:
        async def wrapped(request: Request) -> Response:
            s = session_of(request)
            if s is None and caller is not None:
                # One local user: a session is opened on the first visit so
                # forms still carry a token against cross-site requests.
                sid = sessions.open(caller)
                # A relative redirect: never built from the request's Host header.
                back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                response = RedirectResponse(back, status_code=303)
                _set_cookie(response, sid)
                return response
            if s is None:
                return page(request, "login.html", status=401, error=None)
            if request.method == "POST":
                form = await request.form()
                if not hmac.compare_digest(str(form.get("csrf", "")), s.csrf):
                    return page(request, "error.html", status=403, message="expired form; reload")
                return await handler(request, s.caller, form)
            return await handler(request, s.caller)

        return wrapped

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return page(request, "login.html", error=None)
        form = await request.form()
        try:
            assert callers is not None
            who = callers.authenticate(f"Bearer {form.get('token', '')}")
        except (AuthenticationError, AssertionError):
            return page(request, "login.html", status=401, error="unknown token")
        response = RedirectResponse("/", status_code=303)
        _set_cookie(response, sessions.open(who))
        return response

    @signed_in
    async def logout(request: Request, who: MemoryContext, form: Any) -> Response:
        sessions.close(request.cookies.get(_COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(_COOKIE)
        return response

    @signed_in
    async def memories(request: Request, who: MemoryContext) -> Response:
        kind = request.query_params.get("type") or None
        if kind is not None and kind not in _TYPES:
            return page(request, "error.html", status=400, message=f"unknown type {kind!r}")
        cursor = request.query_params.get("cursor") or None
        try:
            listing = await engine.alist(
                who, types=[kind] if kind else None, limit=50, cursor=cursor
            )
        except LangmemError as e:
            return page(request, "error.html", status=400, message=str(e))
        stats = await engine.astats(who)
        return page(request, "list.html", items=listing.items, page=listing, kind=kind,
                    types=_TYPES, stats=stats)  # fmt: skip

    @signed_in
    async def search(request: Request, who: MemoryContext) -> Response:
        q = request.query_params.get("q", "").strip()
        mode = request.query_params.get("mode", "hybrid")
        if mode not in _MODES:
            return page(request, "error.html", status=400, message=f"unknown mode {mode!r}")
        hits, error = [], None
        if q:
            try:
                hits = await engine.asearch(who, q, mode=mode, limit=20)
            except LangmemError as e:
                error = str(e)
        return page(request, "search.html", q=q, mode=mode, modes=_MODES, hits=hits, error=error)

    async def detail(request: Request, who: MemoryContext, error: str | None = None,
                     status: int = 200, form: Any = None) -> Response:  # fmt: skip
        mid = request.path_params["id"]
        record = await engine.aget(who, mid)
        if record is None:
            return page(request, "error.html", status=404, message="no such memory")
        older, newer = await _chain(engine, who, record)
        events = await engine.ahistory(who, mid)
        return page(request, "memory.html", status=status, m=record, events=events, older=older,
                    newer=newer, error=error, form=form or {},
                    categories=policy.FACT_CATEGORIES)  # fmt: skip

    @signed_in
    async def show(request: Request, who: MemoryContext) -> Response:
        return await detail(request, who)

    @signed_in
    async def edit(request: Request, who: MemoryContext, form: Any) -> Response:
        mid = request.path_params["id"]
        record = await engine.aget(who, mid)
        if record is None:
            return page(request, "error.html", status=404, message="no such memory")
        try:
            content, changes = _checked_edit(record, form, engine.config.max_content_length)
        except ValueError as e:
            return await detail(request, who, error=str(e), status=400, form=form)
        try:
            current = record
            if content is not None and content != record.content:
                current = await engine.arevise(who, mid, content)
            if changes:
                current = await engine.aupdate_fact(who, current.id, **changes)
        except LangmemError as e:
            return await detail(request, who, error=str(e), status=400, form=form)
        return RedirectResponse(f"/memory/{quote(current.id, safe='')}", status_code=303)

    @signed_in
    async def forget(request: Request, who: MemoryContext, form: Any) -> Response:
        mid = request.path_params["id"]
        record = await engine.aget(who, mid)
        if record is None or not record.live:
            return page(request, "error.html", status=404, message="no such memory")
        if record.type == "note":
            await engine.adelete(who, mid)
        else:
            await engine.aforget(who, record.type, mid)
        return RedirectResponse("/", status_code=303)

    @signed_in
    async def export(request: Request, who: MemoryContext) -> Response:
        own = engine.env(who).layer("user").ns  # the caller's own memories only

        def dump() -> str:
            out = io.StringIO()
            export_jsonl(store, out, own)
            return out.getvalue()

        body = await run_in_threadpool(dump)
        headers = {"Content-Disposition": 'attachment; filename="memories.jsonl"'}
        return Response(body, media_type="application/x-ndjson", headers=headers)

    routes = [
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", memories),
        Route("/search", search),
        Route("/export", export),
        Route("/memory/{id:path}/edit", edit, methods=["POST"]),
        Route("/memory/{id:path}/forget", forget, methods=["POST"]),
        Route("/memory/{id:path}", show),
    ]
    hosts = check_host_names(allowed_hosts)
    return Starlette(routes=routes, middleware=[Middleware(SameSiteOnly, hosts=hosts)])


def _set_cookie(response: Response, sid: str) -> None:
    response.set_cookie(_COOKIE, sid, httponly=True, samesite="strict", path="/")


def _checked_edit(record: Any, form: Any, longest: int) -> tuple[str | None, dict[str, Any]]:
    """The edit form's values, all checked before anything is written."""
    content = str(form.get("content", "")).strip() if "content" in form else None
    if content is not None and not content:
        raise ValueError("content is empty; write what the memory should say")
    if content is not None and len(content) > longest:
        raise ValueError(f"content is longer than {longest:,} characters; shorten it")
    changes: dict[str, Any] = {}
    if isinstance(record, Fact):
        raw = str(form.get("confidence", "")).strip()
        if raw:
            try:
                confidence = float(raw)
            except ValueError:
                raise ValueError(f"confidence must be a number from 0 to 1, got {raw!r}") from None
            if not 0.0 <= confidence <= 1.0:
                raise ValueError(f"confidence must be a number from 0 to 1, got {raw}")
            if confidence != record.confidence:
                changes["confidence"] = confidence
        category = str(form.get("category", "")).strip()
        if category and category != record.category:
            if category not in policy.FACT_CATEGORIES:
                raise ValueError(
                    f"unknown category {category!r}; use one of "
                    + ", ".join(policy.FACT_CATEGORIES)
                )
            changes["category"] = category
    return content, changes


async def _chain(engine: MemoryEngine, who: MemoryContext, record: Any) -> tuple[list, list]:
    """A fact's corrections: the facts it replaced (oldest first) and the facts
    that replaced it (newest last)."""
    older: list[Any] = []
    newer: list[Any] = []
    if not isinstance(record, Fact):
        return older, newer
    seen = {record.id}
    back = record.provenance.get("replaces")
    while isinstance(back, str) and back not in seen and len(older) < 50:
        prev = await engine.aget(who, back)
        if prev is None:
            break
        older.insert(0, prev)
        seen.add(back)
        back = prev.provenance.get("replaces") if isinstance(prev, Fact) else None
    ahead = record.superseded_by
    while isinstance(ahead, str) and ahead not in seen and len(newer) < 50:
        nxt = await engine.aget(who, ahead)
        if nxt is None:
            break
        newer.append(nxt)
        seen.add(ahead)
        ahead = nxt.superseded_by if isinstance(nxt, Fact) else None
    return older, newer
