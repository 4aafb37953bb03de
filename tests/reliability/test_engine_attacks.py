"""Attacks on the engine's own promises, each counted:

1. the profile cap never destroys a fact a user stored on purpose, and a
   reflection fact pushed out by the cap is archived (audited, findable),
   never deleted;
2. an item of the wrong shape written into a user's space by another
   program never blocks that user's reads, prompt, tools or browser, is shown
   as damaged when read by id, and is never rewritten by a write;
3. a LangMem-compatible store-manager run is all-or-nothing: a model error or
   a refused write leaves the store as it was;
4. two identities of one app configuration never share a namespace, and one's
   namespace is a prefix of another's only where the identity rule says the
   second is narrower.

The first three run on SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import PutOp
from starlette.testclient import TestClient

from langmem_ext import MemoryPrompt, SQLiteStore
from langmem_ext.agents.reflection import FactExtractor, ReflectionSettings, memory_context
from langmem_ext.agents.reflection.reflect import reflect_steps
from langmem_ext.agents.tools import create_memory_tools
from langmem_ext.engine import (
    IDENTITY_KEYS,
    MemoryContext,
    MemoryEngine,
    NamespaceTemplate,
    RetryPolicy,
)
from langmem_ext.engine.identity.tenancy import fill_space
from langmem_ext.errors import ConfigurationError, LangmemError, StoreError
from langmem_ext.langmem import create_memory_store_manager
from langmem_ext.servers.callers import Callers
from langmem_ext.servers.ui import create_ui_app
from langmem_ext.stores.postgres import PostgresStore
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings

from .conftest import SCALE
from .test_findings import snapshot

INDEX = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
BACKENDS = ["sqlite", "postgres"]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now


def make_store(backend: str, request, path, index=INDEX):
    if backend == "sqlite":
        return SQLiteStore(path, index=index)
    dsn = request.getfixturevalue("pg_server").fresh_schema()
    store = PostgresStore(dsn, index=index, pool_config={"min_size": 1, "max_size": 2})
    store.setup()
    return store


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    s = make_store(request.param, request, tmp_path / "attacks.db")
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def plain_store(request, tmp_path):
    """A store without an embedder: near-duplicates by text, so generated
    facts never merge by accident."""
    s = make_store(request.param, request, tmp_path / "plain.db", index=None)
    yield s
    s.close()


def auth(user: str, tenant: str = "acme") -> dict:
    who = {"identity": user, "tenant_id": tenant, "permissions": []}
    return {"configurable": {"langgraph_auth_user": who}}


# 1 ------------------------------------------------------------------------------------


def _word(*seed: int) -> str:
    return hashlib.sha256(repr(seed).encode()).hexdigest()[:12]


def _reflect(engine, ctx, texts: list[str], thread: str, cap: int):
    """One reflection of a turn in which the user says ``texts``."""
    model = ScriptedExtractionModel([[(t, "context", 0.6) for t in texts]])
    turn = [HumanMessage(" and ".join(texts), id=f"{thread}-h"), AIMessage("ok", id=f"{thread}-a")]
    settings = ReflectionSettings(max_facts=cap, backoff=0.01)
    step = reflect_steps(engine.env(ctx), FactExtractor(model), turn, thread, settings)
    return engine.run(step)


def test_profile_cap_never_destroys_what_a_user_stored(plain_store, tally):
    t = tally("profile cap: stored facts kept, reflection facts over the cap archived")
    engine = MemoryEngine(plain_store, clock=Clock(), retry=RetryPolicy(base_delay=0.0))
    ctx = MemoryContext("acme", user_id="ada")
    cap = 3
    explicit = {}
    for n in range(4 * SCALE):
        f = engine.store_fact(ctx, "user", f"document{n}", f"Passport number X{n:07d}Q")
        explicit[f.id] = f.content
    # the profile API, called by a program on the user's behalf
    for text in ("Blood type is AB negative", "Allergic to penicillin"):
        f = engine.add_fact(ctx, text, "context", 0.55)
        explicit[f.id] = f.content
    reflected: dict[str, str] = {}
    for r in range(3 * SCALE):
        texts = [f"I collect {_word(r, i)} stamps" for i in (0, 1)]
        done = _reflect(engine, ctx, texts, f"thread{r}", cap)
        reflected.update({f.id: f.content for f in done.added})
        for fid, content in explicit.items():
            t.case()
            got = engine.get(ctx, fid)
            if got is None or not got.live or got.content != content:
                t.violation(f"round {r}: stored fact {content!r} is {got and got.live}")
        t.case()
        current = {f.id for f in engine.get_profile(ctx).facts}
        over = len(current & set(reflected)) - cap
        if over > 0:
            t.violation(f"round {r}: {over} reflection facts over the cap {cap}")
    everything = json.dumps(snapshot(plain_store))
    for fid, content in {**explicit, **reflected}.items():
        t.case()
        if content not in everything:
            t.violation(f"fact {content!r} is gone from the store")
            continue
        got = engine.get(ctx, fid)
        if got is None:
            t.violation(f"fact {content!r} cannot be found by id")
        elif not got.live and "evicted" not in [e.action for e in engine.history(ctx, fid)]:
            t.violation(f"fact {content!r} left the profile without an audit event")
    t.case()  # not vacuous: reflection went over the cap, and facts were moved out
    if len(reflected) != 6 * SCALE or len(reflected) - cap <= 0:
        t.violation(f"reflection added {len(reflected)} facts, expected {6 * SCALE}")


# 2 ------------------------------------------------------------------------------------

GOOD = "Drinks green tea every morning"
MALFORMED = [
    ("confidence text", {"kind": "fact", "content": "Likes tea", "confidence": "high"}),
    ("importance list", {"kind": "fact", "content": "Likes tea", "importance": [1]}),
    ("created_at number", {"kind": "fact", "content": "Likes tea", "created_at": 5}),
    ("tags text", {"kind": "fact", "content": "Likes tea", "tags": "x"}),
    ("content null", {"kind": "fact", "content": None, "confidence": 0.9}),
    ("content missing", {"kind": "fact"}),
    ("rule without content", {"kind": "rule", "maturity": "candidate"}),
    ("provenance list", {"kind": "fact", "content": "Likes tea", "provenance": [1]}),
    ("metadata text", {"kind": "fact", "content": "Likes tea", "metadata": "m"}),
    ("confirmed not a date", {"kind": "fact", "content": "Likes tea", "last_confirmed_at": "x"}),
    ("naive time", {"kind": "fact", "content": "Likes tea", "created_at": "2024-01-01T00:00"}),
    ("subject number", {"kind": "fact", "content": "Likes tea", "subject": 3}),
    ("rule maturity", {"kind": "rule", "content": "Serve tea", "maturity": "legendary"}),
    ("rule count text", {"kind": "rule", "content": "Serve tea", "success_count": "3"}),
    ("episode expiry", {"kind": "episode", "content": "Had tea", "expires_at": 5}),
    ("note tags", {"kind": "note", "content": "tea note", "tags": "x"}),
    ("note created_at", {"content": "tea note", "created_at": 5}),
    ("note metadata", {"content": "tea note", "metadata": ["category", "x"]}),
    ("value is a list", ["kind", "fact", "content", "Likes tea"]),
]


def _put_raw(store, ns: tuple[str, ...], key: str, value) -> None:
    """Write ``value`` as another program would (a value that is not an object
    needs SQL: the stores refuse to write one)."""
    if isinstance(value, dict):
        store.put(ns, key, value, index=False)
        return
    store.put(ns, key, {"content": "placeholder"}, index=False)
    with sqlite3.connect(store.path) as conn:
        conn.execute(
            "UPDATE items SET value = ? WHERE prefix = ? AND key = ?",
            [json.dumps(value), ".".join(ns), key],
        )


def _reads(engine, store, ctx, cfg, tools, client, bad, prompt):
    """(name, call, check) for every reader a user has; ``check`` gets the
    result and says what is wrong with it (None: fine)."""

    def shows_good(out) -> str | None:
        return None if GOOD in str(out) else f"missing the user's good fact: {str(out)[:200]}"

    def no_damaged(out) -> str | None:
        return f"shows the damaged item {bad}" if bad in str(out) else shows_good(out)

    def page(path):
        def get():
            r = client.get(path)
            if r.status_code != 200:
                raise AssertionError(f"HTTP {r.status_code}: {r.text[:200]}")
            return r.text

        return get

    return [
        ("engine.search", lambda: engine.search(ctx, "tea"), no_damaged),
        ("engine.recall", lambda: engine.recall(ctx, "tea"), no_damaged),
        ("engine.stats", lambda: engine.stats(ctx), lambda s: None),
        ("engine.list", lambda: [r.id for r in engine.list(ctx).items], lambda ids: None),
        ("engine.get_profile", lambda: engine.get_profile(ctx).to_dict(), no_damaged),
        ("engine.sweep", lambda: engine.sweep(ctx), lambda s: None),
        ("memory_search", lambda: tools["memory_search"].invoke({"query": "tea"}, cfg), no_damaged),
        ("memory_recall", lambda: tools["memory_recall"].invoke({"query": "tea"}, cfg), no_damaged),
        (
            "memory_stats",
            lambda: tools["memory_stats"].invoke({}, cfg),
            lambda s: None if s.startswith("{") else s[:200],
        ),
        ("memory_context", lambda: memory_context(engine, ctx, "tea", "general"), no_damaged),
        ("memory prompt", lambda: prompt.render(cfg, store=store), no_damaged),
        ("browser list", page("/"), shows_good),
        ("browser search", page("/search?q=tea"), shows_good),
        (
            "get by id",
            lambda: engine.get(ctx, bad),
            lambda r: (
                None
                if r is not None and getattr(r, "damaged", False) and r.reason
                else f"not shown as damaged: {r!r}"[:200]
            ),
        ),
        (
            "browser page of the item",
            page(f"/memory/{bad}"),
            lambda html: None if "damaged" in html else "not shown as damaged",
        ),
    ]


def _writes(engine, store, ctx, cfg, bad):
    manager_reply = AIMessage(
        "",
        tool_calls=[
            {
                "name": "manage_memories",
                "id": "c1",
                "args": {"memories": [{"kind": "Memory", "content": {"content": "Likes scones"}}]},
            }
        ],
    )
    manager = create_memory_store_manager(
        ScriptedExtractionModel([manager_reply]), namespace=None, store=store, method="tool"
    )
    return [
        ("engine.update", lambda: engine.update(ctx, bad, content="Likes coffee")),
        ("engine.update tags", lambda: engine.update(ctx, bad, tags=["y"])),
        ("engine.revise", lambda: engine.revise(ctx, bad, "Likes coffee")),
        ("engine.update_fact", lambda: engine.update_fact(ctx, bad, confidence=0.5)),
        ("engine.confirm", lambda: engine.confirm(ctx, "fact", bad)),
        ("engine.forget", lambda: engine.forget(ctx, "fact", bad)),
        ("engine.store_fact", lambda: engine.store_fact(ctx, "user", "snack", "Likes scones")),
        ("engine.add_fact", lambda: engine.add_fact(ctx, "Likes tea a lot", "preference", 0.9)),
        ("store manager", lambda: manager.invoke({"messages": [("user", "I like scones")]}, cfg)),
    ]


def test_malformed_items_never_block_a_user(store, tally, caplog):
    t = tally("malformed stored items: every reader of the user keeps working")
    w = tally("malformed stored items: writes never rewrite them")
    caplog.set_level(logging.WARNING, logger="langmem_ext")
    engine = MemoryEngine(store, clock=Clock(), retry=RetryPolicy(base_delay=0.0))
    tools = {x.name: x for x in create_memory_tools(engine)}
    tokens = {}
    for n in range(len(MALFORMED)):
        tokens[f"tok-victim-{n:04d}"] = {"tenant_id": "acme", "user_id": f"victim{n}"}
    app = create_ui_app(store, callers=Callers(tokens))
    prompt = MemoryPrompt(engine)
    for n, (name, value) in enumerate(MALFORMED * SCALE):
        user = f"victim{n % len(MALFORMED)}"
        ctx, cfg = MemoryContext("acme", user_id=user), auth(user)
        ctx_cfg = {"configurable": {"memory_context": ctx}}
        env = engine.env(ctx)
        layer = env.layer("user")
        bad = f"bad-{n}"
        if not isinstance(value, dict) and not isinstance(store, SQLiteStore):
            # PostgresStore itself cannot read a row whose jsonb is not an object
            # (the store layer's own reads fail before the engine sees the item).
            continue
        if n < len(MALFORMED):
            engine.store_fact(ctx, "user", "drink", GOOD)
        _put_raw(store, layer.ns, bad, value)
        _put_raw(store, env.meta(layer, "archive"), f"{bad}-old", value)
        client = TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1:8765")
        client.post("/login", data={"token": f"tok-victim-{n % len(MALFORMED):04d}"})
        reads = _reads(engine, store, ctx, ctx_cfg, tools, client, bad, prompt)
        if SCALE == 1 and not isinstance(store, SQLiteStore):
            # CI: the surfaces over the engine are the same on every store; the
            # engine's own reads are what differ.
            reads = [r for r in reads if r[0].startswith(("engine.", "get by id"))]
        for reader, call, check in reads:
            t.case()
            try:
                problem = check(call())
            except Exception as e:
                problem = f"raised {type(e).__name__}: {str(e)[:200]}"
            if problem:
                t.violation(f"{name}: {reader} {problem}")
        places = [(layer.ns, bad), (env.meta(layer, "archive"), f"{bad}-old")]

        def stored(places=places):
            return [(i.key, i.value) if i else None for i in (store.get(*p) for p in places)]

        for writer, call in _writes(engine, store, ctx, cfg, bad):
            w.case()
            before = stored()
            try:
                call()
            except LangmemError:
                pass
            except Exception as e:
                w.violation(f"{name}: {writer} raised {type(e).__name__}: {str(e)[:200]}")
            after = stored()
            if after != before:
                w.violation(f"{name}: {writer} rewrote the damaged item: {after}")
    t.case()
    warned: dict[str, int] = {}
    for rec in caplog.records:
        for key in re.findall(r"bad-\d+(?:-old)?", rec.getMessage()):
            warned[key] = warned.get(key, 0) + 1
    noisy = {k: v for k, v in warned.items() if v > 1}
    if noisy:
        t.violation(f"damaged items logged more than once: {noisy}")
    if not warned:
        t.violation("no damaged item was logged")


# 3 ------------------------------------------------------------------------------------


class Refusing:
    """A store whose validation refuses any batch writing a value that mentions
    REFUSED (as a store refuses an item it cannot hold)."""

    def batch(self, ops):
        ops = list(ops)
        for op in ops:
            if isinstance(op, PutOp) and "REFUSED" in json.dumps(op.value):
                raise StoreError("the store refused an item")
        return super().batch(ops)


class RefusingSQLite(Refusing, SQLiteStore):
    pass


class RefusingPostgres(Refusing, PostgresStore):
    pass


def _manage(memories, delete=()) -> AIMessage:
    args = {"memories": memories, "delete": list(delete)}
    return AIMessage("", tool_calls=[{"name": "manage_memories", "id": "m", "args": args}])


def _mem(text: str, id: str | None = None) -> dict:
    return {"id": id, "kind": "Memory", "content": {"content": text}}


def test_store_manager_run_is_all_or_nothing(request, tmp_path, tally):
    t = tally("store manager: a failed run leaves the store as it was")
    for n in range(2 * SCALE):
        for backend in BACKENDS:
            if backend == "sqlite":
                store = RefusingSQLite(tmp_path / f"m{n}.db", index=INDEX)
            else:
                dsn = request.getfixturevalue("pg_server").fresh_schema()
                store = RefusingPostgres(dsn, index=INDEX, pool_config={"max_size": 2})
                store.setup()
            try:
                _failed_runs(store, n, t)
            finally:
                store.close()


def _failed_runs(store, n: int, t) -> None:
    engine = MemoryEngine(store, retry=RetryPolicy(base_delay=0.0))
    cfg = auth("ada")
    tools = {x.name: x for x in create_memory_tools(engine)}
    ctx_cfg = {"configurable": {"memory_context": MemoryContext("acme", user_id="ada")}}
    fact_id = tools["memory_store_fact"].invoke(
        {"subject": "user", "predicate": "drink", "content": "Drinks green tea"}, ctx_cfg
    )
    note = engine.add(MemoryContext("acme", user_id="ada"), "Owns a tea pot")
    long_text = "tea " * (engine.config.max_content_length // 4 + 10)
    cases = {
        # the model answers, then fails on its second call (a consolidation phase)
        "model fails on its second call": (
            [_manage([_mem("Drinks black tea", fact_id), _mem("Likes scones")]), RuntimeError()],
            {"phases": [{"instructions": "consolidate"}]},
        ),
        # the second of several steps fails, after the default memory was planned
        "model fails on the second step": (
            [_manage([_mem("Likes jam")]), RuntimeError("model down")],
            {"default": "Knows nothing yet"},
        ),
        # a later memory is refused by the engine (too long) after earlier changes
        "later memory too long": (
            [_manage([_mem("Drinks black tea", fact_id), _mem(long_text)], [note.id])],
            {"enable_deletes": True},
        ),
        # a later write is refused by the store
        "store refuses a later write": (
            [_manage([_mem("Drinks black tea", fact_id), _mem("REFUSED scones")], [note.id])],
            {"enable_deletes": True},
        ),
    }
    for name, (script, kwargs) in cases.items():
        manager = create_memory_store_manager(
            ScriptedExtractionModel(script), namespace=None, store=store, method="tool", **kwargs
        )
        # a user without memories when the default memory applies
        cfg = auth(f"new{n}") if "default" in kwargs else auth("ada")
        before = snapshot(store)
        t.case()
        try:
            manager.invoke({"messages": [("user", "I drink black tea now")], "max_steps": 2}, cfg)
        except Exception:
            pass
        else:
            t.violation(f"{name}: the run did not fail")
        after = snapshot(store)
        if after != before:
            added = [x[:2] for x in after if x not in before]
            gone = [x[:2] for x in before if x not in after]
            t.violation(f"{name}: the failed run changed the store: +{added} -{gone}")
    # and the same changes, when nothing fails, are made
    t.case()
    script = [_manage([_mem("Drinks black tea", fact_id), _mem("Likes scones")], [note.id])]
    manager = create_memory_store_manager(
        ScriptedExtractionModel(script), namespace=None, store=store, method="tool"
    )
    manager.invoke({"messages": [("user", "I drink black tea now")]}, auth("ada"))
    ada = MemoryContext("acme", user_id="ada")
    now = sorted(str(r.content) for r in engine.list(ada).items)
    if now != ["Drinks black tea", "Owns a tea pot", "{'content': 'Likes scones'}"]:
        t.violation(f"a run that did not fail made other changes: {now}")


# 4 ------------------------------------------------------------------------------------

#: Ids equal to labels templates and the layout use, or with "/", "%", "-".
TRICKY = "a b a-b b-a memories user org agent a/b a%2Fb % / _ meta enant tenant x".split()
TEMPLATES = [
    None,
    ("{user_id}", "memories"),
    ("memories", "{user_id}"),
    ("{org_id}", "{user_id}"),
    ("memories", "{org_id}", "{agent_id}"),
    ("user", "{user_id}"),
    ("{org_id}-{user_id}",),
    ("t{user_id}", "{org_id}"),
    ("_{user_id}", "memories"),
]
_ENGINE = MemoryEngine(SQLiteStore())
#: A few id values; every identity over them (and the default tenant) is tried.
pools = st.lists(
    st.one_of(st.sampled_from(TRICKY), st.text("ab-", min_size=1, max_size=3)),
    min_size=1,
    max_size=3,
    unique=True,
)


def _owned(template, tenant: str, values: dict) -> dict[str, tuple[str, ...]]:
    """Every namespace of the caller's own memories (space, session,
    bookkeeping), or {} when the identity is refused."""
    try:
        ctx = fill_space(MemoryContext(tenant, **values, session_id="s1"), template)
        env = _ENGINE.env(ctx)
        user, session = env.layer("user"), env.layer("session")
    except LangmemError:
        return {}
    out = {"space": user.ns, "session": session.ns}
    for kind in ("archive", "events", "refs", "profile", "reflection"):
        out[kind] = env.meta(user, kind)
        out[f"session {kind}"] = env.meta(session, kind)
    return out


def _narrower(template, a: tuple, b: tuple, what_a: str, what_b: str) -> bool:
    """The identity rule's documented nesting: ``b`` adds ids to ``a``'s."""
    return (
        template is None and what_a == what_b == "space" and a[0] == b[0] and set(a[1]) < set(b[1])
    )


@settings(settings.get_profile("reliability"))
@given(pool=pools)
@example(pool=["a", "b-a", "a-b"])  # ids running together in one label
@example(pool=["enant", "acme"])  # a filled label equal to the tenant prefix
@example(pool=["meta", "a"])  # ... or to the bookkeeping prefix
def test_identities_never_share_a_namespace(pool, tally):
    t = tally("namespace templates and the identity rule: distinct identities, distinct spaces")
    for template in TEMPLATES:
        try:
            keys = [k for k in NamespaceTemplate(template).keys if k in IDENTITY_KEYS]
        except ConfigurationError:
            continue  # a template refused at construction serves nobody
        owner: dict[tuple[str, ...], tuple[tuple, str]] = {}
        people = 0
        for tenant in ["default", *pool]:
            for values in itertools.product([None, *pool], repeat=len(keys)):
                given_ = frozenset((k, v) for k, v in zip(keys, values) if v is not None)
                spaces = _owned(template, tenant, dict(given_))
                people += bool(spaces)
                for what, ns in spaces.items():
                    owner.setdefault(ns, ((tenant, given_), what))
        t.case(people * (people - 1) // 2)
        bad: dict[tuple, tuple] = {}  # (a, b) -> (same, namespace): one per pair
        for ns, (b, what_b) in owner.items():
            for n in range(1, len(ns) + 1):
                found = owner.get(ns[:n])
                if found is None or found[0] == b:
                    continue
                a, what_a = found
                if n == len(ns) or not _narrower(template, a, b, what_a, what_b):
                    bad.setdefault((a, b), (n == len(ns), ns[:n]))
        # equal namespaces: the second owner never made it into ``owner``
        for tenant in ["default", *pool]:
            for values in itertools.product([None, *pool], repeat=len(keys)):
                given_ = frozenset((k, v) for k, v in zip(keys, values) if v is not None)
                for ns in _owned(template, tenant, dict(given_)).values():
                    first = owner[ns][0]
                    if first != (tenant, given_):
                        bad.setdefault((first, (tenant, given_)), (True, ns))
        for (a, b), (same, ns) in bad.items():
            how = "share" if same else "nest under"
            t.violation(f"{template}: {sorted(a[1])}@{a[0]} and {sorted(b[1])}@{b[0]} {how} {ns}")
