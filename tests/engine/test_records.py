"""Typed records and seed 003 store defaults; seed 001 add/get/update/delete/list."""

from __future__ import annotations

from datetime import timedelta

from langmem_ext.engine import Episode, Fact, Note, Rule
from langmem_ext.engine.records.models import parse_ts
from langmem_ext.engine.records.policy import effectiveness

from .conftest import START


def test_store_episode_with_defaults(eng, ctx, clock):
    ep = eng.store_episode(ctx, "User asked about recipes")
    got = eng.get(ctx, ep.id)
    assert isinstance(got, Episode)
    assert (got.content, got.scope, got.importance) == ("User asked about recipes", "global", 5.0)
    assert parse_ts(got.expires_at) - parse_ts(got.created_at) == timedelta(days=7)
    assert parse_ts(got.created_at) > START


def test_store_episode_with_custom_importance(eng, ctx):
    ep = eng.store_episode(ctx, "User revealed severe allergy", scope="health", importance=9.0)
    assert eng.get(ctx, ep.id, "episode").importance == 9.0


def test_store_fact_permanence_maps_to_decay_rate(eng, ctx):
    f = eng.store_fact(ctx, "user", "name", "John", permanence="permanent")
    got = eng.get(ctx, f.id, "fact")
    assert isinstance(got, Fact) and got.decay_rate == 0.0 and got.validity == "active"
    v = eng.store_fact(ctx, "user", "mood", "tired", permanence="volatile")
    assert eng.get(ctx, v.id).decay_rate == 0.05


def test_store_rule_is_candidate_with_half_confidence(eng, ctx):
    r = eng.store_rule(ctx, "Always confirm before sending messages", scope="global")
    got = eng.get(ctx, r.id, "rule")
    assert isinstance(got, Rule)
    assert (got.maturity, got.confidence, got.scope) == ("candidate", 0.5, "global")


def test_effectiveness_formula():
    assert effectiveness(5, 0) == 5 / 5.01
    assert effectiveness(2, 1) == 2 / (2 + 4 + 0.01)
    assert effectiveness(0, 0) == 0.0


def test_add_returns_full_entry_and_get(eng, ctx):
    note = eng.add(ctx, "Prefers dark mode", layer="user", tags=["ui"], metadata={"k": 1})
    assert isinstance(note, Note) and note.id and note.created_at and note.layer == "user"
    got = eng.get(ctx, note.id)
    assert got == note


def test_get_nonexistent_returns_none(eng, ctx):
    assert eng.get(ctx, "no-such-id") is None
    assert eng.get(ctx, "no-such-id", "fact") is None


def test_update_content_and_metadata(eng, ctx, store, clock):
    note = eng.add(ctx, "likes tea", metadata={"a": 1})
    clock.advance(seconds=5)
    up = eng.update(ctx, note.id, metadata={"b": 2})
    assert up.metadata == {"a": 1, "b": 2} and up.content == "likes tea"
    assert up.updated_at > note.updated_at
    clock.advance(seconds=5)
    up2 = eng.update(ctx, note.id, content="likes green tea")
    assert eng.get(ctx, note.id).content == "likes green tea"
    assert up2.updated_at > up.updated_at
    hits = eng.search_layers(ctx, "green tea", threshold=0.5)
    assert [h.id for h in hits] == [note.id]


def test_metadata_only_update_does_not_reembed(tmp_path, ctx, clock):
    from langmem_ext import SQLiteStore
    from langmem_ext.engine import MemoryEngine
    from tests.embeddings import WordEmbeddings

    emb = WordEmbeddings(64)
    store = SQLiteStore(tmp_path / "e.db", index={"dims": 64, "embed": emb, "fields": ["content"]})
    engine = MemoryEngine(store, clock=clock)
    note = engine.add(ctx, "likes tea")
    calls = emb.calls
    engine.update(ctx, note.id, metadata={"source": "chat"})
    assert emb.calls == calls  # cached vector reused, not re-generated
    engine.update(ctx, note.id, content="likes coffee")
    assert emb.calls == calls + 1
    store.close()


def test_delete_is_idempotent(eng, ctx):
    note = eng.add(ctx, "temporary")
    assert eng.delete(ctx, note.id) is True
    assert eng.get(ctx, note.id) is None
    assert eng.delete(ctx, note.id) is True
    assert eng.delete(ctx, "never-existed") is True
    assert [e.action for e in eng.history(ctx, note.id)] == ["created", "deleted"]


def test_list_with_cursor_pagination_and_total(eng, ctx):
    ids = [eng.add(ctx, f"note {i}").id for i in range(5)]
    page = eng.list(ctx, limit=2)
    assert page.total_count == 5 and len(page.items) == 2 and page.next_cursor
    seen = [n.id for n in page.items]
    while page.next_cursor:
        page = eng.list(ctx, limit=2, cursor=page.next_cursor)
        seen += [n.id for n in page.items]
    assert seen == list(reversed(ids))  # newest first, no gaps, no repeats


def test_list_filters_tags_or_and_metadata(eng, ctx):
    a = eng.add(ctx, "a", tags=["x"], metadata={"n": 1, "kind": "pref"})
    b = eng.add(ctx, "b", tags=["y"], metadata={"n": 5, "kind": "pref"})
    eng.add(ctx, "c", tags=["z"], metadata={"n": 9, "kind": "other"})
    assert {n.id for n in eng.list(ctx, tags=["x", "y"]).items} == {a.id, b.id}
    assert [
        n.id
        for n in eng.list(ctx, filter={"metadata.n": {"$gte": 5}, "metadata.kind": "pref"}).items
    ] == [b.id]
    assert [n.id for n in eng.list(ctx, filter={"content": {"$contains": "a"}}).items] == [a.id]
    page = eng.list(ctx, filter={"metadata.kind": "pref"})
    assert page.total_count == 2
