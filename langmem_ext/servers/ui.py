"""The memory browser: a local web page to look at and fix what an agent remembers.

``langmem-ext ui`` serves it (Starlette, server-rendered pages, no JavaScript).
A caller signs in with a bearer token from the callers file (see
:mod:`langmem_ext.servers.callers`); the page then shows only that caller's
memories — the tenant and user come from the token, never from the URL or a
form. Every page runs operations of the catalogue
(:mod:`langmem_ext.engine.operations`) as that caller, so it reads and changes
exactly what the agent tools, MCP and the command line do, with the same
checks and the same errors (shown on the page, with their code):

* ``/`` — the caller's memories, newest first, by type, with counts by type;
* ``/search?q=...&mode=hybrid`` — search with scores (hybrid, vector, keyword);
* ``/new/fact`` (``rule``, ``episode``) — a form made from the operation's
  parameters;
* ``/memory/{id}`` — one memory: its fields, every version of a fact (what it
  replaced, what replaced it), its audit history; a form that changes only the
  fields you change (and refuses an edit of a memory changed since the page was
  opened), and forgetting, after a confirmation that says what it does;
* ``/export`` — the caller's memories as JSON Lines.

Forms carry a per-session token, and the app answers only its own host names
and same-site forms (:mod:`.hosts`). A session ends after ``session_idle``
seconds without a request (30 minutes), ``session_lifetime`` seconds after
signing in (12 hours), or at sign-out; the browser is then asked to sign in
again (:mod:`._ui_sessions`).

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
import time
from collections.abc import Awaitable, Callable, Sequence
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

from ..engine import OPERATIONS, MemoryContext, MemoryEngine, error_text, not_found
from ..errors import (
    AuthenticationError,
    LangmemError,
    MemoryNotFoundError,
    PermissionDeniedError,
    TenantAccessError,
)
from ._ui_forms import changed_fields, export_own, forget_effect, form_fields, form_values
from ._ui_sessions import DEFAULT_IDLE, DEFAULT_LIFETIME, Sessions, ended_message
from .callers import Callers
from .hosts import LOOPBACK, SameSiteOnly, check_host_names

__all__ = ["BROWSER_ACTIONS", "create_ui_app"]

_COOKIE = "lmx_session"
_TYPES = ("fact", "rule", "episode", "note")
_NEW = {"fact": "store_fact", "rule": "store_rule", "episode": "store_episode"}
#: The catalogue operations the browser's pages run (the operations page's
#: browser column is made from this set).
BROWSER_ACTIONS = frozenset(
    {
        "list",
        "stats",
        "search",
        "entities",
        "about",
        *_NEW.values(),
        "get",
        "versions",
        "history",
        "revise",
        "update_fact",
        "delete",
        "forget",
        "erase",
    }
)
_TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates" / "ui"))


def _status(e: LangmemError) -> int:
    if isinstance(e, MemoryNotFoundError):
        return 404
    if isinstance(e, TenantAccessError):
        return 403
    return 503 if e.retryable else 400


def create_ui_app(
    store: BaseStore,
    *,
    callers: Callers | None = None,
    caller: MemoryContext | None = None,
    allowed_hosts: Sequence[str] = LOOPBACK,
    session_idle: float = DEFAULT_IDLE,
    session_lifetime: float = DEFAULT_LIFETIME,
    clock: Callable[[], float] = time.monotonic,
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
        session_idle: seconds without a request after which a browser must
            sign in again (default 30 minutes).
        session_lifetime: seconds after signing in after which a browser
            must sign in again, however active (default 12 hours).
        clock: monotonic seconds for the session limits (tests pass a fake one).

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
    sessions = Sessions(session_idle, session_lifetime, clock)
    engine = MemoryEngine(store)

    async def act(name: str, who: MemoryContext, **args: Any) -> Any:
        """Run a catalogue operation as the signed-in caller."""
        # The operations page's browser column is BROWSER_ACTIONS: a page
        # that calls another operation fails here, not silently.
        assert name in BROWSER_ACTIONS, f"add {name!r} to BROWSER_ACTIONS"
        spec = OPERATIONS[name]
        return await engine.arun(spec.start(engine, who, args), spec.name)

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        s = sessions.peek(request.cookies.get(_COOKIE))
        context.update(request=request, who=s.caller if s else None, csrf=s.csrf if s else "")
        return _TEMPLATES.TemplateResponse(request, name, context, status_code=status)

    def failed(request: Request, e: LangmemError) -> Response:
        return page(request, "error.html", status=_status(e), code=e.code, message=str(e))

    Handler = Callable[..., Awaitable[Response]]

    def signed_in(handler: Handler) -> Handler:
        async def wrapped(request: Request) -> Response:
            s, ended = sessions.use(request.cookies.get(_COOKIE))
            if s is None and caller is not None:
                # One local user: a session is opened on the first visit so
                # forms still carry a token against cross-site requests. The
                # redirect is relative: never built from the request's Host.
                back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                response = RedirectResponse(back, status_code=303)
                _set_cookie(response, sessions.open(caller), sessions.lifetime)
                return response
            if s is None and ended is not None:
                # Not an error: the sign-in page, saying why (a form sent now is dropped).
                response = RedirectResponse(f"/login?ended={ended}", status_code=303)
                response.delete_cookie(_COOKIE, path="/")
                return response
            if s is None:
                return page(request, "login.html", status=401, error=None)
            try:
                if request.method == "POST":
                    form = await request.form()
                    if not hmac.compare_digest(str(form.get("csrf", "")), s.csrf):
                        message = "this form has expired; reload the page and send it again"
                        return page(request, "error.html", status=403, code=None, message=message)
                    return await handler(request, s.caller, form)
                return await handler(request, s.caller)
            except LangmemError as e:
                return failed(request, e)

        return wrapped

    async def login(request: Request) -> Response:
        if request.method == "GET":
            why = request.query_params.get("ended")
            notice = ended_message(why, sessions.idle, sessions.lifetime)
            return page(request, "login.html", error=None, notice=notice)
        form = await request.form()
        try:
            assert callers is not None
            who = callers.authenticate(f"Bearer {form.get('token', '')}")
        except (AuthenticationError, AssertionError):
            return page(request, "login.html", status=401, error="unknown token")
        # A new id at every sign-in; the browser's previous session ends.
        sessions.close(request.cookies.get(_COOKIE))
        response = RedirectResponse("/", status_code=303)
        _set_cookie(response, sessions.open(who), sessions.lifetime)
        return response

    @signed_in
    async def logout(request: Request, who: MemoryContext, form: Any) -> Response:
        sessions.close(request.cookies.get(_COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(_COOKIE, path="/")
        return response

    @signed_in
    async def memories(request: Request, who: MemoryContext) -> Response:
        kind = request.query_params.get("type") or None
        cursor = request.query_params.get("cursor") or None
        listing = await act(
            "list", who, types=[kind] if kind else None, limit=50, cursor=cursor, damaged=True
        )
        stats = await act("stats", who)
        return page(request, "list.html", items=listing.items, page=listing, kind=kind,
                    types=_TYPES, stats=stats)  # fmt: skip

    @signed_in
    async def search(request: Request, who: MemoryContext) -> Response:
        q = request.query_params.get("q", "").strip()
        mode = request.query_params.get("mode", "hybrid")
        # A date: search what held then (replaced facts included).
        as_of = request.query_params.get("as_of", "").strip() or None
        hits, error, status = [], None, 200
        if q:
            try:
                hits = await act("search", who, query=q, mode=mode, limit=20, as_of=as_of)
            except LangmemError as e:
                error, status = error_text(e), _status(e)
        modes = ("hybrid", "vector", "keyword")
        return page(request, "search.html", status, q=q, mode=mode, modes=modes, hits=hits,
                    error=error, as_of=as_of or "")  # fmt: skip

    @signed_in
    async def entities(request: Request, who: MemoryContext) -> Response:
        found = await act("entities", who)
        return page(request, "entities.html", entities=found)

    @signed_in
    async def entity(request: Request, who: MemoryContext) -> Response:
        known = await act("about", who, entity=request.path_params["id"])
        return page(request, "entity.html", about=known)

    async def new_page(request: Request, kind: str, status: int = 200, **context: Any) -> Response:
        spec = OPERATIONS[_NEW[kind]]
        return page(request, "new.html", status=status, kind=kind, spec=spec,
                    fields=form_fields(spec), values=context.pop("values", {}),
                    **context)  # fmt: skip

    @signed_in
    async def new(request: Request, who: MemoryContext, form: Any = None) -> Response:
        kind = request.path_params["kind"]
        if kind not in _NEW:
            return page(request, "error.html", status=404, code=None, message="no such form")
        if form is None:
            return await new_page(request, kind)
        try:
            made = await act(_NEW[kind], who, **form_values(OPERATIONS[_NEW[kind]], form))
        except LangmemError as e:
            return await new_page(request, kind, 400, error=error_text(e), values=form)
        return RedirectResponse(f"/memory/{quote(made.id, safe='')}", status_code=303)

    async def detail(request: Request, who: MemoryContext, error: str | None = None,
                     status: int = 200, form: Any = None) -> Response:  # fmt: skip
        mid = request.path_params["id"]
        record = await act("get", who, id=mid)
        if record is None:
            raise not_found(mid)
        chain = await act("versions", who, id=mid) if record.type == "fact" else []
        # A damaged item has no form: it can only be looked at and removed.
        events = await act("history", who, id=mid)
        names = {e.id: e.name for e in await act("entities", who)} if record.type != "note" else {}
        return page(request, "memory.html", status=status, m=record, events=events,
                    chain=chain, error=error, form=form or {}, names=names,
                    categories=form_fields(OPERATIONS["update_fact"], "category")[0]["choices"],
                    forgetting=forget_effect(record))  # fmt: skip

    @signed_in
    async def show(request: Request, who: MemoryContext) -> Response:
        return await detail(request, who)

    @signed_in
    async def edit(request: Request, who: MemoryContext, form: Any) -> Response:
        mid = request.path_params["id"]
        record = await act("get", who, id=mid)
        if record is None:
            raise not_found(mid)
        if not record.live or str(form.get("version", "")) != record.updated_at:
            # Someone (another tab, the agent) changed it after this form was shown.
            when = record.updated_at[:19].replace("T", " ")
            what = "replaced or forgotten" if not record.live else "changed"
            message = (
                f"this memory was {what} at {when} after you opened it; your edit was not "
                "saved. Its current version is shown here: edit that one."
            )
            return await detail(request, who, error=message, status=409)
        content, changes = changed_fields(record, form)
        try:
            # Every value is checked before anything is written: a bad
            # confidence must not leave a half-applied edit.
            if content is not None:
                OPERATIONS["revise"].validate({"id": mid, "content": content})
            if changes:
                OPERATIONS["update_fact"].validate({"id": mid, **changes})
            current = record
            if content is not None:
                current = await act("revise", who, id=mid, content=content)
            if changes:
                current = await act("update_fact", who, id=current.id, **changes)
        except LangmemError as e:
            return await detail(request, who, error=error_text(e), status=_status(e), form=form)
        return RedirectResponse(f"/memory/{quote(current.id, safe='')}", status_code=303)

    @signed_in
    async def forget(request: Request, who: MemoryContext, form: Any = None) -> Response:
        mid = request.path_params["id"]
        if form is not None and form.get("confirm") == "yes":
            if form.get("type") == "damaged":  # nothing to keep in a history: removed
                await act("delete", who, id=mid)
            else:
                await act("forget", who, type=form.get("type"), id=mid)
            return RedirectResponse("/", status_code=303)
        record = await act("get", who, id=mid)
        if record is None or not record.live:
            raise not_found(mid)
        return page(request, "forget.html", m=record, forgetting=forget_effect(record))

    @signed_in
    async def erase(request: Request, who: MemoryContext, form: Any = None) -> Response:
        # Admins only: erasing a person for good is not a button for everyone
        # (a user erases their own memories with the command or the engine).
        if not who.is_admin:
            raise PermissionDeniedError("only an admin may erase a user from the browser")
        if form is None:
            return page(request, "erase.html", user="", preview=None, receipt=None)
        user = str(form.get("user", "")).strip()
        confirm = str(form.get("confirm", "")).strip() or None
        if confirm is None:  # the first step: what would go
            preview = await act("erase", who, user=user, dry_run=True)
            return page(request, "erase.html", user=user, preview=preview, receipt=None)
        receipt = await act("erase", who, user=user, confirm=confirm)
        receipt.counts["browser_sessions"] = sessions.close_user(who.tenant_id, user)
        return page(request, "erase.html", user=user, preview=None, receipt=receipt)

    @signed_in
    async def export(request: Request, who: MemoryContext) -> Response:
        body = await run_in_threadpool(export_own, engine, who)
        headers = {"Content-Disposition": 'attachment; filename="memories.jsonl"'}
        return Response(body, media_type="application/x-ndjson", headers=headers)

    routes = [
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", memories),
        Route("/search", search),
        Route("/entities", entities),
        Route("/entity/{id:path}", entity),
        Route("/export", export),
        Route("/erase", erase, methods=["GET", "POST"]),
        Route("/new/{kind}", new, methods=["GET", "POST"]),
        Route("/memory/{id:path}/edit", edit, methods=["POST"]),
        Route("/memory/{id:path}/forget", forget, methods=["GET", "POST"]),
        Route("/memory/{id:path}", show),
    ]
    hosts = check_host_names(allowed_hosts)
    app = Starlette(routes=routes, middleware=[Middleware(SameSiteOnly, hosts=hosts)])
    app.state.sessions = sessions
    return app


def _set_cookie(response: Response, sid: str, lifetime: float) -> None:
    # The browser drops the cookie at the session's end too; the server's
    # table is what decides, so a copied cookie gains nothing from its age.
    response.set_cookie(
        _COOKIE, sid, max_age=int(lifetime), httponly=True, samesite="strict", path="/"
    )
