# ruff: noqa: E501 - one entry point per line reads better as a table
"""Fuzzing the public entry points: any value in any argument either works or
raises one of the package's errors (each a ValueError, TypeError, LookupError
or PermissionError subclass with a message), and a call that fails changes
nothing stored. Never a bare TypeError, AttributeError, OverflowError,
RecursionError or UnicodeEncodeError from deep inside. The store calls run on
SQLite and PostgreSQL."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_ext import (
    MemoryPrompt,
    SQLiteStore,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langmem_ext.agents.reflection import ReflectionSettings, memory_context
from langmem_ext.engine import MemoryContext, MemoryEngine, NamespaceTemplate, RetryPolicy
from langmem_ext.errors import LangmemError
from langmem_ext.stores.postgres import PostgresStore
from tests.embeddings import WordEmbeddings

from .test_findings import snapshot


class Deep:
    """Stands for a list nested 3000 deep (built after drawing: hypothesis
    cannot print such a value)."""

    def __repr__(self) -> str:
        return "[[[...3000 deep...]]]"

    @staticmethod
    def build(value: object) -> object:
        if not isinstance(value, Deep):
            return value
        out: list = []
        for _ in range(3000):
            out = [out]
        return out


ODD = st.sampled_from(
    [
        None, True, 0, -1, 2**63, -(2**64), 10**400, math.nan, math.inf, -math.inf, 1e308,
        "", " ", "\x00", "a\x00b", "a\ud800", "\u2028", "💥" * 3, "x" * 100_000, b"bytes", bytearray(b"x"),
        [], {}, (), set(), frozenset({1}), object(), Deep(), {"$ne": None},
        {"a": {"$gt": math.nan}}, ["a", "b"], ("user", "ada"), ("user", ""), ("a", "\x00"),
        ("a.b",), ("*",), {"content": "x"}, {"content": None}, {"content": ["x"]},
    ]
)  # fmt: skip
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
VALUE = st.one_of(ODD, JSONISH, st.text(max_size=30), st.integers())


@pytest.fixture(scope="module")
def world(tmp_path_factory, pg_server):
    index = {"dims": 16, "embed": WordEmbeddings(16), "fields": ["content"]}
    store = SQLiteStore(tmp_path_factory.mktemp("fuzz") / "f.db", index=index)
    engine = MemoryEngine(store, retry=RetryPolicy(retries=0, base_delay=0.0))
    ctx = MemoryContext("acme", user_id="ada")
    fact = engine.store_fact(ctx, "user", "city", "Lives in Berlin")
    store.put(("user", "ada"), "n1", {"content": "a note"})
    # The same store calls on PostgreSQL.
    pg = PostgresStore(pg_server.fresh_schema(), index=index, pool_config={"max_size": 2})
    pg.put(("user", "ada"), "n1", {"content": "a note"})
    yield store, engine, ctx, fact.id, pg
    store.close()
    pg.close()


def _store_points(prefix, store):
    return {
        f"{prefix}.put": lambda a, b, c: store.put(a, b, c),
        f"{prefix}.put(ns)": lambda a, b, c: store.put(("user", "ada"), a, {"content": "x", "n": b}),
        f"{prefix}.put(ttl, index)": lambda a, b, c: store.put(("user", "ada"), "k", {"content": "x"}, ttl=a, index=b),
        f"{prefix}.get": lambda a, b, c: store.get(a, b, refresh_ttl=c),
        f"{prefix}.search": lambda a, b, c: store.search(("user",), query=a, filter=b, limit=c),
        f"{prefix}.search(ns)": lambda a, b, c: store.search(a, offset=b, refresh_ttl=c),
        f"{prefix}.delete": lambda a, b, c: store.delete(a, b),
        f"{prefix}.list_namespaces": lambda a, b, c: store.list_namespaces(prefix=a, max_depth=b, limit=c),
        f"{prefix}.batch": lambda a, b, c: store.batch(a),
    }  # fmt: skip


def _entry_points(store, engine, ctx, fact_id, pg):
    manage = create_manage_memory_tool(store=store)
    search = create_search_memory_tool(store=store)
    cfg = {"configurable": {"user_id": "ada"}}

    def call_tool(tool, args):
        return tool.invoke({"type": "tool_call", "id": "c", "name": tool.name, "args": args}, cfg)

    return {
        # stores, SQLite and PostgreSQL
        **_store_points("store", store),
        **_store_points("pgstore", pg),
        # engine
        "engine.store_fact": lambda a, b, c: engine.store_fact(ctx, a, b, c),
        "engine.store_fact(kw)": lambda a, b, c: engine.store_fact(ctx, "s", "p", "x", importance=a, confidence=b, category=c),
        "engine.store_episode": lambda a, b, c: engine.store_episode(ctx, a, session_id=b, importance=c),
        "engine.store_rule": lambda a, b, c: engine.store_rule(ctx, a, b, c),
        "engine.add_fact": lambda a, b, c: engine.add_fact(ctx, a, b, c),
        "engine.search": lambda a, b, c: engine.search(ctx, a, types=b, limit=c),
        "engine.search(filter)": lambda a, b, c: engine.search(ctx, "x", filter=a, min_confidence=b, mode=c),
        "engine.get": lambda a, b, c: engine.get(ctx, a, b),
        "engine.history": lambda a, b, c: engine.history(ctx, a),
        "engine.update": lambda a, b, c: engine.update(ctx, fact_id, content=a, metadata=b, tags=c),
        "engine.forget": lambda a, b, c: engine.forget(ctx, a, b),
        "engine.confirm": lambda a, b, c: engine.confirm(ctx, a, b),
        "engine(config)": lambda a, b, c: engine.search(a, "x"),
        "engine(tenant)": lambda a, b, c: engine.search(ctx, "x", tenant=a),
        # identity and templates
        "MemoryContext": lambda a, b, c: MemoryContext(a, user_id=b, session_id=c),
        "MemoryContext.from_config": lambda a, b, c: MemoryContext.from_config({"configurable": {"user_id": a, "langgraph_auth_user": b}}),
        "NamespaceTemplate": lambda a, b, c: NamespaceTemplate(a)({"configurable": {"user_id": b}}),
        # tools (as a ToolNode calls them: errors come back as messages)
        "manage_memory": lambda a, b, c: call_tool(manage, {"action": a, "content": b, "id": c}),
        "search_memory": lambda a, b, c: call_tool(search, {"query": a, "limit": b, "filter": c}),
        "create_manage_memory_tool": lambda a, b, c: create_manage_memory_tool(a, instructions=b, schema=c),
        # prompt, context, reflection settings
        "MemoryPrompt": lambda a, b, c: MemoryPrompt(kind=a, max_tokens=b, namespace=c),
        "memory_context": lambda a, b, c: memory_context(engine, ctx, a, b, c),
        "ReflectionSettings": lambda a, b, c: ReflectionSettings(window=a, attempts=b, threshold=c),
    }  # fmt: skip


@settings(
    settings.get_profile("reliability"),
    max_examples=settings.get_profile("reliability").max_examples * 40,
)
@given(data=st.data())
def test_every_entry_point_fails_clearly_and_changes_nothing(world, data, tally):
    t = tally("fuzzed arguments at public entry points")
    sqlite, engine, ctx, fact_id, pg = world
    points = _entry_points(sqlite, engine, ctx, fact_id, pg)
    name = data.draw(st.sampled_from(sorted(points)))
    a, b, c = (Deep.build(data.draw(VALUE)) for _ in range(3))
    store = pg if name.startswith("pgstore.") else sqlite
    before = snapshot(store)
    t.case()
    try:
        out = points[name](a, b, c)
    except LangmemError as e:
        if not str(e) or not isinstance(e, ValueError | TypeError | LookupError | PermissionError):
            t.violation(f"{name}({a!r:.60}, {b!r:.60}, {c!r:.60}) raised unclear {e!r}")
        if snapshot(store) != before:
            t.violation(f"{name}({a!r:.60}, {b!r:.60}, {c!r:.60}) failed but changed the store")
        return
    except Exception as e:
        t.violation(
            f"{name}({a!r:.60}, {b!r:.60}, {c!r:.60}) raised {type(e).__name__}: {e!s:.200}"
        )
        return
    if getattr(out, "status", None) == "error" and snapshot(store) != before:
        t.violation(
            f"{name}({a!r:.60}, {b!r:.60}, {c!r:.60}) answered an error but changed the store"
        )
