"""Each weakness an attack run once found, as a counted regression test.

1. reads by id of another user's memory (audit trail, get, confirm, marks,
   forget, update) and ids used as filters;
2. identity taken from ``configurable`` over the authenticated user, and
   session memory shared by a guessed session id;
3. NaN / infinite / wrong-length vectors stored and poisoning search;
4. profile fact ids overwritten on a collision;
5. pending async reflections lost when the event loop ends;
6. model-supplied numbers (2**63, ±inf, NaN) crashing a search;
7. sweep, the reflection cursor and namespaces shared between users;
8. wrong-type inputs escaping as TypeError / AttributeError / RecursionError,
   and filters on keys with a backslash never matching.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from langmem_ext import (
    Compartments,
    MemoryPrompt,
    SQLiteStore,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langmem_ext.agents.reflection import ReflectionExecutor, ReflectionSettings
from langmem_ext.engine import MemoryContext, MemoryEngine, RetryPolicy
from langmem_ext.errors import (
    ConfigurationError,
    EmbeddingDimensionError,
    IdentityError,
    InvalidEmbeddingError,
    LangmemError,
    MemoryNotFoundError,
)
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings

from .conftest import SCALE

INDEX = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "r.db", index=INDEX)
    yield s
    s.close()


def snapshot(store) -> list[tuple]:
    """Every stored item, for "nothing changed" checks."""
    items = store.search((), limit=100_000)
    return sorted((i.namespace, i.key, json.dumps(i.value, sort_keys=True)) for i in items)


def auth(user: str, tenant: str = "acme", **configurable) -> dict:
    who = {"identity": user, "tenant_id": tenant, "permissions": []}
    return {"configurable": {"langgraph_auth_user": who, **configurable}}


# 1 ------------------------------------------------------------------------------------


def test_reads_by_id_check_the_owner_and_ids_are_never_filters(store, tally):
    t = tally("another user's memory by id (history, get, confirm, marks, forget, update)")
    engine = MemoryEngine(store, retry=RetryPolicy(base_delay=0.0))
    ada, bob = MemoryContext("acme", user_id="ada"), MemoryContext("acme", user_id="bob")
    ids = []
    for n in range(3 * SCALE):
        ids.append(("fact", engine.store_fact(ada, "user", f"p{n}", f"ada secret {n}").id))
        ids.append(("episode", engine.store_episode(ada, f"ada visit {n}").id))
        ids.append(("rule", engine.store_rule(ada, f"ada rule {n}").id))
    before = snapshot(store)
    filters = [{"$ne": None}, {"$exists": True}, {"$in": [i for _, i in ids]}, ["x"], "", "*"]
    calls = {
        "history": lambda i, kind: engine.history(bob, i),
        "get": lambda i, kind: engine.get(bob, i),
        "confirm": lambda i, kind: engine.confirm(bob, kind, i),
        "mark_helpful": lambda i, kind: engine.mark_helpful(bob, i),
        "mark_harmful": lambda i, kind: engine.mark_harmful(bob, i, "no"),
        "forget": lambda i, kind: engine.forget(bob, kind, i),
        "update": lambda i, kind: engine.update(bob, i, content="bob was here"),
        "delete": lambda i, kind: engine.delete(bob, i),
    }
    for (name, call), (kind, i) in itertools.product(
        calls.items(), ids + [("fact", f) for f in filters]
    ):
        t.case()
        try:
            out = call(i, kind)
        except (MemoryNotFoundError, LangmemError) as e:
            if not isinstance(e, ValueError | LookupError):
                t.violation(f"{name}({i!r}) raised {e!r}")
            continue
        except Exception as e:
            t.violation(f"{name}({i!r}) raised {type(e).__name__}: {e}")
            continue
        if out not in (None, [], False) and not (name == "delete" and out is True):
            # delete is idempotent (True for an id the caller does not have);
            # the snapshot below shows whether anything was removed
            t.violation(f"{name}({i!r}) returned {out!r}")
    if snapshot(store) != before:
        t.violation("ada's memories changed")
    assert len(engine.history(ada, ids[0][1])) >= 1


# 2 ------------------------------------------------------------------------------------


def test_identity_comes_from_authentication_on_every_surface(store, tally):
    t = tally("identity spoofed through configurable (engine, tools, prompt)")
    engine = MemoryEngine(store)
    engine.store_fact(auth("ada"), "user", "city", "Lives in Berlin")
    manage = create_manage_memory_tool(store=store)
    manage.invoke({"action": "create", "content": "ada's door code is 4711"}, auth("ada"))
    search = create_search_memory_tool(store=store)
    prompt = MemoryPrompt()
    spoofs = [
        {"user_id": "ada"},
        {"user_id": "ada", "tenant_id": "acme"},
        {"memory_context": MemoryContext("acme", user_id="ada")},
        {"user_id": "ADA"},
        {"user_id": "ada", "langgraph_auth_user_id": "ada"},
    ]
    surfaces = {
        "engine.search": lambda cfg: engine.search(cfg, "Berlin door code"),
        "search_memory": lambda cfg: search.invoke({"query": "Berlin door code"}, cfg),
        "prompt": lambda cfg: prompt.render(cfg, store=store),
    }
    for _ in range(SCALE):
        for spoof, (name, call) in itertools.product(spoofs, surfaces.items()):
            t.case()
            try:
                out = str(call(auth("bob", **spoof)))
            except (IdentityError, LangmemError):
                continue
            if "Berlin" in out or "4711" in out:
                t.violation(f"{name} with {spoof} showed ada's memory")

    s = tally("session memory read by another user's session id")
    tools = {x.name: x for x in Compartments(store=store).tools}
    for n in range(5 * SCALE):
        cfg = {"thread_id": f"t{n}", "session_id": f"s{n}"}
        tools["save_memory"].invoke(
            {"compartment": "session", "content": f"ada budget {n}"}, auth("ada", **cfg)
        )
        s.case()
        got = tools["get_memory"].invoke({"compartment": "session"}, auth("bob", **cfg))
        if "ada budget" in got:
            s.violation(f"bob read ada's session s{n}")


# 3 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "short"])
def test_bad_vectors_are_refused_and_never_stored(tmp_path, tally, bad):
    t = tally("NaN / infinite / wrong-length vectors from the embedder")

    def embed(texts: list[str]) -> list[list[float]]:
        good = WordEmbeddings(8).embed_documents(texts)
        if bad == "short":
            return [v if "poison" not in x else v[:5] for x, v in zip(texts, good, strict=True)]
        return [v if "poison" not in x else [bad] * 8 for x, v in zip(texts, good, strict=True)]

    s = SQLiteStore(tmp_path / "v.db", index={"dims": 8, "embed": embed, "fields": ["content"]})
    s.put(("u",), "good", {"content": "apples and pears"})
    for n in range(5 * SCALE):
        t.case()
        try:
            s.put(("u",), f"bad{n}", {"content": f"poison {n}"})
            t.violation("a bad vector was stored")
        except EmbeddingDimensionError:
            pass  # a vector of the wrong length: the embedder does not fit the index
        except InvalidEmbeddingError as e:
            if f"poison {n}" not in str(e):
                t.violation(f"error does not name the text: {e}")
        if s.get(("u",), f"bad{n}") is not None:
            t.violation("the item was stored without its vector")
    s.close()
    s = SQLiteStore(tmp_path / "v.db", index={"dims": 8, "embed": embed, "fields": ["content"]})
    hits = s.search(("u",), query="apples")
    t.case()
    if not hits or not all(h.score is not None and math.isfinite(h.score) for h in hits):
        t.violation(f"search after reopening: {hits}")
    s.close()


# 4 ------------------------------------------------------------------------------------


def test_fact_ids_that_collide_are_drawn_again(store, tally, monkeypatch):
    import langmem_ext.engine.operations.loading as env_module

    t = tally("profile fact id collisions")
    engine = MemoryEngine(store)
    ada, bob = MemoryContext("acme", user_id="ada"), MemoryContext("acme", user_id="bob")
    first = engine.add_fact(ada, "Lives in Berlin", "context", 0.9)
    real = env_module.profile_fact_id
    for n in range(5 * SCALE):
        # the generator answers with an id already taken, then a fresh one
        drawn = iter([first.id, first.id, real()])
        monkeypatch.setattr(env_module, "profile_fact_id", lambda d=drawn: next(d))
        t.case()
        new = engine.add_fact(ada, f"Likes tea number {n}", "preference", 0.8)
        if new.id == first.id or engine.get(ada, first.id).content != "Lives in Berlin":
            t.violation("a fact was overwritten")
    assert first.id.startswith("fact_") and len(first.id) == len("fact_") + 8
    monkeypatch.setattr(env_module, "profile_fact_id", real)
    assert engine.get(bob, first.id) is None


# 5 ------------------------------------------------------------------------------------


def test_async_reflections_pending_at_loop_end_are_not_lost(store, tally):
    t = tally("async reflections pending when the event loop ends")
    turns = 10 * SCALE
    model = ScriptedExtractionModel([lambda msgs: _fact_of(msgs)] * turns)
    engine = MemoryEngine(store, retry=RetryPolicy(base_delay=0.0))
    ex = ReflectionExecutor(
        model, engine=engine, delay=3600, settings=ReflectionSettings(backoff=0.01)
    )
    ctx = MemoryContext("acme", user_id="ada")

    async def main() -> None:
        for n in range(turns):
            msgs = [
                HumanMessage(f"I own a boat called B{n}", id=f"h{n}"),
                AIMessage("ok", id=f"a{n}"),
            ]
            await ex.asubmit(msgs, {"configurable": {"memory_context": ctx, "thread_id": f"t{n}"}})

    asyncio.run(main())  # no ashutdown(): the loop ends with every reflection pending
    t.case(turns)
    assert ex.flush(timeout=60)
    ex.shutdown()
    kept = {f.content for f in engine.get_profile(ctx).facts}
    for n in range(turns):
        if f"Owns a boat called B{n}" not in kept:
            t.violation(f"turn {n} lost")


def _fact_of(messages) -> list:
    text = str(messages[-1].content)
    name = text.split("called ")[1].split()[0].strip(".,\"'")
    return [(f"Owns a boat called {name}", "context", 0.9)]


# 6 ------------------------------------------------------------------------------------

NUMBERS = [2**63, -(2**63) - 1, 2**64, 10**30, 1e308, math.inf, -math.inf, math.nan, -0.0]


def test_model_supplied_numbers_are_errors_or_langgraph_results(store, tally):
    t = tally("huge / infinite / NaN numbers in limits and filters")
    ref = InMemoryStore()
    for s in (store, ref):
        for n, v in enumerate([-5, 0, 3, 2**40, 1.5]):
            s.put(("u", "ada"), f"k{n}", {"n": v, "content": f"number {n}"})
    search = create_search_memory_tool(store=store, namespace=("u", "{user_id}"))
    cfg = {"configurable": {"user_id": "ada"}}
    ops = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]
    for _ in range(SCALE):
        for v, op in itertools.product(NUMBERS, ops):
            t.case()
            flt = {"n": {op: v}}
            try:
                got = sorted(i.key for i in store.search(("u",), filter=flt, limit=50))
            except LangmemError as e:
                if not isinstance(e, ValueError):
                    t.violation(f"{flt}: {e!r}")
                continue
            except Exception as e:
                t.violation(f"{flt} raised {type(e).__name__}: {e}")
                continue
            want = sorted(i.key for i in ref.search(("u",), filter=flt, limit=50))
            if got != want:
                t.violation(f"{flt}: {got} where LangGraph's store gives {want}")
        for v in NUMBERS:
            for arg in ("limit", "offset"):
                t.case()
                try:
                    msg = search.invoke(
                        {
                            "type": "tool_call",
                            "id": "c1",
                            "name": "search_memory",
                            "args": {"query": "number", arg: v},
                        },
                        cfg,
                    )
                except Exception as e:
                    t.violation(f"search_memory({arg}={v!r}) raised {type(e).__name__}: {e}")
                    continue
                if msg.status != "error" and not (isinstance(v, float) and v == 0):
                    t.violation(f"search_memory({arg}={v!r}) accepted: {msg.content[:80]}")


# 7 ------------------------------------------------------------------------------------


def test_sweep_cursor_and_namespaces_stay_per_user(store, tally):
    t = tally("sweep, reflection cursor and namespace collisions across users")
    clock = Clock()
    engine = MemoryEngine(store, clock=clock, retry=RetryPolicy(base_delay=0.0))
    ada, bob = MemoryContext("acme", user_id="ada"), MemoryContext("acme", user_id="bob")
    for n in range(3 * SCALE):
        engine.store_episode(ada, f"ada trip {n}")
    clock.now += timedelta(days=3650)
    t.case()
    swept = engine.sweep(bob)
    if swept != {"episodes": 0, "facts": 0, "notes": 0}:
        t.violation(f"bob's sweep touched others: {swept}")
    t.case()
    if engine.sweep(ada)["episodes"] != 3 * SCALE:
        t.violation("ada's own sweep missed her episodes")

    model = ScriptedExtractionModel([lambda msgs: _fact_of(msgs)] * 2)
    ex = ReflectionExecutor(
        model, engine=engine, delay=0, settings=ReflectionSettings(backoff=0.01)
    )
    thread = [HumanMessage("I own a boat called Shared", id="h1"), AIMessage("ok", id="a1")]
    for who in (ada, bob):
        ex.submit(thread, {"configurable": {"memory_context": who, "thread_id": "same"}})
        assert ex.flush(timeout=30)
    ex.shutdown()
    for who in (ada, bob):
        t.case()
        if [f.content for f in engine.get_profile(who).facts] != ["Owns a boat called Shared"]:
            t.violation(f"{who.user_id}'s reflection used another user's cursor")

    manage = create_manage_memory_tool(store=store, namespace=("{user_id}", "memories"))
    with pytest.raises(ConfigurationError, match="reserved"):
        manage.invoke({"action": "create", "content": "x"}, {"configurable": {"user_id": "user"}})
    for user in ("memories", "ada", "notes", "ada_memories"):
        t.case()
        manage.invoke(
            {"action": "create", "content": f"note of {user}"}, {"configurable": {"user_id": user}}
        )
    namespaces = {
        i.namespace
        for i in store.search((), limit=10_000)
        if "note of" in i.value.get("content", "")
    }
    t.case()
    if len(namespaces) != 4:
        t.violation(f"users share a namespace: {sorted(namespaces)}")


# 8 ------------------------------------------------------------------------------------


def test_filters_on_keys_with_backslashes_and_quotes_match(store, tally):
    t = tally("filter keys with backslash, quote, dot, percent")
    ref = InMemoryStore()
    keys = ["a\\b", "per%cent", "under_score", "x\\\\y", "it's"]
    for s in (store, ref):
        for n, k in enumerate(keys):
            s.put(("t",), f"i{n}", {k: n})
    for n, k in enumerate(keys):
        t.case()
        got = [i.key for i in store.search(("t",), filter={k: n})]
        want = [i.key for i in ref.search(("t",), filter={k: n})]
        if got != want:
            t.violation(f"filter on {k!r}: {got} vs LangGraph {want}")
