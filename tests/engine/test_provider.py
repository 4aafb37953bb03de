"""Seed 001's provider contract: capabilities derived from the store in use,
health check, bulk add / delete in one store batch, embedding generation and
its cache, initialize / shutdown as the store's setup / close."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine, RetryPolicy
from langmem_ext.errors import ContentTooLongError, InvalidValueError
from tests.embeddings import WordEmbeddings

from .conftest import snapshot


def spy(monkeypatch: pytest.MonkeyPatch, store: Any) -> list[list[Any]]:
    """Record every batch the engine sends, sync or async (patched on the class:
    InMemoryStore's instances have read-only methods)."""
    calls: list[list[Any]] = []
    cls = type(store)
    sync, asyn = cls.batch, cls.abatch

    def batch(self, ops):
        calls.append(list(ops))
        return sync(self, calls[-1])

    async def abatch(self, ops):
        calls.append(list(ops))
        return await asyn(self, calls[-1])

    monkeypatch.setattr(cls, "batch", batch)
    monkeypatch.setattr(cls, "abatch", abatch)
    return calls


@pytest.mark.parametrize(
    ("kind", "indexed", "expected"),
    [
        ("sqlite", True, (True, 64, ["cosine"], True)),
        ("sqlite", False, (False, None, [], True)),
        ("memory", True, (True, 64, ["cosine"], False)),
        ("memory", False, (False, None, [], False)),
    ],
)
def test_capabilities_are_derived_from_the_store(tmp_path, kind, indexed, expected):
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    if kind == "sqlite":
        store: Any = SQLiteStore(tmp_path / "c.db", index=index if indexed else None)
    else:
        store = InMemoryStore(index=index) if indexed else InMemoryStore()
    caps = MemoryEngine(store).capabilities()
    got = (
        caps["vectorSearch"],
        caps["embeddingDimensions"],
        caps["distanceMetrics"],
        caps["bulkOperations"],
    )
    assert got == expected
    assert caps["store"] == type(store).__name__


def test_health_check_reports_instead_of_raising(eng):
    status = eng.health_check()
    assert status["healthy"] is True and status["error"] is None and status["latency_ms"] >= 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_health_check_of_a_failing_store(mode):
    from .test_errors import Flaky

    engine = MemoryEngine(
        Flaky(10, ConnectionError("down")), retry=RetryPolicy(base_delay=0.0), sleep=lambda s: None
    )
    status = engine.health_check() if mode == "sync" else asyncio.run(engine.ahealth_check())
    assert status["healthy"] is False and status["error"] == "PROVIDER_ERROR"


def test_bulk_add_is_one_store_batch(eng, engine, ctx, monkeypatch):
    calls = spy(monkeypatch, engine.store)
    notes = eng.bulk_add(
        ctx, ["likes tea", {"content": "owns a cat", "tags": ["pet"], "metadata": {"n": 1}}]
    )
    assert len(calls) == 1 and len(calls[0]) == 4  # two records + two audit events
    assert [n.content for n in notes] == ["likes tea", "owns a cat"]
    got = eng.get(ctx, notes[1].id)
    assert got.tags == ["pet"] and got.metadata == {"n": 1} and got.layer == "user"
    assert [e.action for e in eng.history(ctx, notes[0].id)] == ["created"]


@pytest.mark.parametrize(
    ("items", "error"),
    [
        (["ok", "x" * 10_001], ContentTooLongError),
        (["ok", {"text": "no content key"}], InvalidValueError),
        (["ok", {"content": "bad", "metadata": "m"}], InvalidValueError),
        ("not a list", InvalidValueError),
    ],
)
def test_bulk_add_with_one_bad_item_writes_nothing(eng, store, ctx, items, error):
    before = snapshot(store)
    with pytest.raises(error):
        eng.bulk_add(ctx, items)
    assert snapshot(store) == before


def test_bulk_delete_reads_once_writes_once_and_is_idempotent(eng, engine, ctx, monkeypatch):
    notes = eng.bulk_add(ctx, ["a", "b"])
    fact = eng.store_fact(ctx, "user", "drink", "tea")
    other = eng.add(MemoryContext("acme", user_id="bob"), "bob's note")
    calls = spy(monkeypatch, engine.store)
    ids = [notes[0].id, fact.id, "unknown", other.id]
    assert eng.bulk_delete(ctx, ids) == [notes[0].id, fact.id]
    writes = [c for c in calls if any(getattr(op, "value", 0) is None for op in c)]
    assert len(writes) == 1 and len(writes[0]) == 4  # two deletes + two events, one batch
    if eng.mode == "sync":
        assert len(calls) == 2  # and one batch of reads (async issues the reads concurrently)
    assert eng.get(ctx, notes[0].id) is None and eng.get(ctx, fact.id) is None
    assert eng.get(ctx, notes[1].id) is not None
    assert eng.get(MemoryContext("acme", user_id="bob"), other.id) is not None  # not ada's
    assert [e.action for e in eng.history(ctx, fact.id)] == ["created", "deleted"]
    assert eng.bulk_delete(ctx, ids) == []


def test_generate_embedding_uses_the_store_embedder(eng, engine):
    vec = eng.generate_embedding("tea and cats")
    assert vec == pytest.approx(engine.store.embeddings.embed_documents(["tea and cats"])[0])
    with pytest.raises(ContentTooLongError):
        eng.generate_embedding("x" * 10_001)
    assert MemoryEngine(InMemoryStore()).generate_embedding("no embedder") is None


def test_repeated_content_is_not_embedded_again(tmp_path, ctx):
    emb = WordEmbeddings(64)
    store = SQLiteStore(tmp_path / "e.db", index={"dims": 64, "embed": emb, "fields": ["content"]})
    engine = MemoryEngine(store)
    engine.add(ctx, "likes green tea")
    calls = emb.calls
    engine.add(ctx, "likes green tea")  # seed 001: cached embedding, no provider call
    engine.bulk_add(ctx, ["likes green tea"])
    assert emb.calls == calls
    engine.add(ctx, "likes black tea")
    assert emb.calls == calls + 1
    store.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_setup_and_close_map_initialize_and_shutdown(tmp_path, ctx, mode):
    store = SQLiteStore(tmp_path / "s.db")
    engine = MemoryEngine(store)
    if mode == "sync":
        engine.setup()
        assert store._conn is not None  # initialize: schema created, connection open
        engine.add(ctx, "kept")
        engine.close()
    else:

        async def run() -> None:
            await engine.asetup()
            assert store._conn is not None
            await engine.aadd(ctx, "kept")
            await engine.aclose()

        asyncio.run(run())
    assert store._conn is None  # shutdown: the connection is closed
    reopened = MemoryEngine(SQLiteStore(tmp_path / "s.db"))
    assert [n.content for n in reopened.list(ctx).items] == ["kept"]
    reopened.close()
    MemoryEngine(InMemoryStore()).close()  # stores without setup/close: no-ops


def test_search_filters_tags_or_and_metadata(eng, ctx):
    a = eng.add(ctx, "tea notes a", tags=["x"], metadata={"n": 1, "kind": "pref"})
    b = eng.add(ctx, "tea notes b", tags=["y"], metadata={"n": 5, "kind": "pref"})
    eng.add(ctx, "tea notes c", tags=["z"], metadata={"n": 9, "kind": "other"})
    hits = eng.search_layers(ctx, "tea notes", threshold=0.0, tags=["x", "y"])
    assert {h.id for h in hits} == {a.id, b.id}  # tags: OR
    ranged = {"metadata.n": {"$gte": 5}, "metadata.kind": "pref"}
    assert [h.id for h in eng.search_layers(ctx, "tea notes", threshold=0.0, filter=ranged)] == [
        b.id
    ]
    contains = {"content": {"$contains": "notes a"}}
    assert [h.id for h in eng.search_layers(ctx, "tea", threshold=0.0, filter=contains)] == [a.id]
