"""Isolation across tenants and users, property-based: random sequences of
writes and reads by four authenticated callers (two tenants x two users)
through the engine, the memory tools, the memory prompt and reflection. Every
memory carries a marker naming its owner; no read may show another caller's
marker, and no write aimed at another caller's memory may change anything."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langmem_ext import (
    MemoryPrompt,
    PostgresStore,
    SQLiteStore,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langmem_ext.agents.reflection import ReflectionExecutor, ReflectionSettings, memory_context
from langmem_ext.engine import MemoryEngine, RetryPolicy
from langmem_ext.errors import LangmemError
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings

from .test_findings import auth, snapshot

CALLERS = [(t, u) for t in ("acme", "globex") for u in ("ada", "bob")]
MARK = re.compile(r"\bz(\d+)(acme|globex)(ada|bob)\b")
READS = ["engine.search", "engine.get", "engine.history", "search_memory", "prompt", "context"]
WRITES = ["engine.fact", "engine.episode", "engine.rule", "tool.create", "reflect"]
CROSS = ["tool.update", "tool.delete", "engine.forget", "engine.update"]

step = st.tuples(
    st.sampled_from(READS + WRITES + CROSS), st.sampled_from(CALLERS), st.integers(0, 10**6)
)


def _reply(messages) -> list:
    text = str(messages[-1].content)
    return [(f"Reflected {m.group(0)} coffee", "context", 0.9) for m in MARK.finditer(text)]


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_store(request):
    """A new empty store for each example: SQLite in memory, or a PostgreSQL
    schema of its own on the session's server."""
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    if request.param == "sqlite":
        return request.param, lambda: SQLiteStore(index=index)
    server = request.getfixturevalue("pg_server")

    def make():
        pool = {"min_size": 1, "max_size": 2}
        store = PostgresStore(server.fresh_schema(), index=index, pool_config=pool)
        store.setup()
        return store

    return request.param, make


@settings(settings.get_profile("reliability"))
@given(steps=st.lists(step, min_size=4, max_size=14))
def test_random_sequences_never_cross_users_or_tenants(steps, tally, fresh_store):
    backend, make = fresh_store
    t = tally(
        "random operation sequences, 2 tenants x 2 users (engine, tools, prompt, reflection)"
        + ("" if backend == "sqlite" else ", PostgreSQL")
    )
    counter = itertools.count()
    store = make()
    engine = MemoryEngine(store, retry=RetryPolicy(base_delay=0.0))
    manage = create_manage_memory_tool(store=store)
    search = create_search_memory_tool(store=store)
    prompt = MemoryPrompt()
    model = ScriptedExtractionModel([_reply] * len(steps))
    reflection = ReflectionExecutor(
        model, engine=engine, delay=0, settings=ReflectionSettings(backoff=0.01)
    )
    ids: list[tuple[tuple[str, str], str, str, str]] = []  # owner, kind, id, marker
    touched: set[str] = set()  # markers their owner updated or deleted

    def mark(caller: tuple[str, str]) -> str:
        return f"z{next(counter)}{caller[0]}{caller[1]} coffee"

    try:
        for name, caller, pick in steps:
            cfg = auth(caller[1], caller[0], thread_id=f"th{pick % 3}")
            t.case()
            target = ids[pick % len(ids)] if ids else None
            try:
                out = _run(name, caller, cfg, target, mark, locals())
            except LangmemError as e:
                if name in WRITES:  # own writes succeed: the checks below see them
                    t.violation(f"{name} by {caller} failed: {e}")
                continue
            if name in CROSS and target and target[0] != caller:
                continue  # checked inside _run by snapshot
            for m in MARK.finditer(str(out)):
                if (m.group(2), m.group(3)) != caller:
                    t.violation(f"{name} by {caller} showed {m.group(0)}")
        for caller in CALLERS:
            t.case()
            seen = str(engine.search(auth(caller[1], caller[0]), "coffee", limit=100))
            seen += str(
                search.invoke({"query": "coffee", "limit": 100}, auth(caller[1], caller[0]))
            )
            for m in MARK.finditer(seen):
                if (m.group(2), m.group(3)) != caller:
                    t.violation(f"final search by {caller} showed {m.group(0)}")
            # and the test is not vacuous: each caller finds what it wrote
            # and never touched again
            for owner, _, _, marker in ids:
                if owner == caller and marker not in touched and marker.split()[0] not in seen:
                    t.violation(f"{caller} cannot find its own {marker}")
    finally:
        reflection.shutdown(wait=False)
        store.close()


def _run(name, caller, cfg, target, mark, scope) -> object:
    engine, store, ids, t = scope["engine"], scope["store"], scope["ids"], scope["t"]
    text = mark(caller)
    if name == "engine.fact":
        ids.append((caller, "fact", engine.store_fact(cfg, "user", text.split()[0], text).id, text))
    elif name == "engine.episode":
        ids.append((caller, "episode", engine.store_episode(cfg, text).id, text))
    elif name == "engine.rule":
        ids.append((caller, "rule", engine.store_rule(cfg, text).id, text))
    elif name == "tool.create":
        out = scope["manage"].invoke({"action": "create", "content": text}, cfg)
        ids.append((caller, "note", out.removeprefix("created memory "), text))
    elif name == "reflect":
        msgs = [HumanMessage(f"remember {text}"), AIMessage("ok")]
        scope["reflection"].submit(msgs, cfg)
        assert scope["reflection"].flush(timeout=30)
    elif name == "engine.search":
        return engine.search(cfg, "coffee", limit=50)
    elif name == "engine.get" and target:
        return engine.get(cfg, target[2])
    elif name == "engine.history" and target:
        return engine.history(cfg, target[2])
    elif name == "search_memory":
        return scope["search"].invoke({"query": "coffee", "limit": 50}, cfg)
    elif name == "prompt":
        return scope["prompt"].render(cfg, store=store)
    elif name == "context":
        return memory_context(engine, cfg, "coffee", "general")
    elif name in CROSS and target:
        before = snapshot(store) if target[0] != caller else None
        if before is None:
            scope["touched"].add(target[3])
        try:
            if name == "tool.update":
                scope["manage"].invoke({"action": "update", "id": target[2], "content": text}, cfg)
            elif name == "tool.delete":
                scope["manage"].invoke({"action": "delete", "id": target[2]}, cfg)
            elif name == "engine.forget" and target[1] != "note":
                engine.forget(cfg, target[1], target[2])
            elif name == "engine.update":
                engine.update(cfg, target[2], content=text)
        finally:
            if before is not None and snapshot(store) != before:
                t.violation(f"{name} by {caller} changed {target[0]}'s memory {target[2]}")
    return json.dumps(None)
