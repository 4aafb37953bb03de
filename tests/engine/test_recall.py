"""Recall with the composite score, search, stats, and seed 001 layered search."""

from __future__ import annotations

import asyncio
import time

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_ext.engine import MemoryContext, MemoryEngine, ScoreWeights
from langmem_ext.engine.records.scoring import composite
from langmem_ext.errors import MissingIdentifierError
from tests.embeddings import WordEmbeddings


def test_recall_returns_composite_scored_memories_of_every_kind_scoped(eng, ctx):
    f = eng.store_fact(ctx, "user", "diet", "User dietary needs: vegetarian", scope="health")
    r = eng.store_rule(ctx, "Check dietary needs before suggesting food", scope="global")
    eng.store_fact(ctx, "user", "car", "User dietary needs unrelated car", scope="cars")
    e = eng.store_episode(ctx, "Talked about dietary needs", scope="health")
    n = eng.add(ctx, "Dietary needs noted by the agent")
    hits = eng.recall(ctx, "user dietary needs", scope="health")
    assert {h.id for h in hits} == {f.id, r.id, e.id, n.id}  # not the 'cars' scope
    assert {h.type for h in hits} == {"fact", "rule", "episode", "note"}
    only = eng.recall(ctx, "user dietary needs", scope="health", types=["fact", "rule"])
    assert {h.id for h in only} == {f.id, r.id}
    assert all(0 <= h.score <= 1 for h in hits)
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_recall_bumps_reference_counts(eng, ctx):
    f = eng.store_fact(ctx, "user", "pet", "User has a dog named Biscuit")
    eng.recall(ctx, "dog Biscuit")
    eng.recall(ctx, "dog Biscuit")
    assert eng.get(ctx, f.id).reference_count == 2


def test_recall_weights_are_configurable(store, clock, ctx):
    only_importance = ScoreWeights(relevance=0, importance=1, recency=0, confidence=0)
    engine = MemoryEngine(store, clock=clock, weights=only_importance)
    low = engine.store_fact(ctx, "user", "a", "tea tea tea", importance=1.0)
    high = engine.store_fact(ctx, "user", "b", "tea maybe", importance=9.0)
    hits = engine.recall(ctx, "tea")
    assert [h.id for h in hits] == [high.id, low.id]
    assert hits[0].score == pytest.approx(0.9)
    assert (
        composite(relevance=0.5, importance=5, recency=1, confidence=1, weights=only_importance)
        == 0.5
    )


def test_search_across_all_types(eng, ctx):
    ep = eng.store_episode(ctx, "User talked about diet preferences", scope="health")
    f = eng.store_fact(ctx, "user", "diet", "User diet preferences: vegan")
    r = eng.store_rule(ctx, "Respect diet preferences")
    hits = eng.search(ctx, "diet preferences")
    assert {h.id for h in hits} == {ep.id, f.id, r.id}
    assert {"type", "id", "content", "score", "confidence"} <= set(hits[0].to_dict())


def test_search_filtered_to_facts_only(eng, ctx):
    eng.store_episode(ctx, "diet talk", scope="health")
    f = eng.store_fact(ctx, "user", "diet", "diet: vegan")
    assert [h.id for h in eng.search(ctx, "diet", types=["fact"])] == [f.id]


def test_search_defaults_limit_mode_and_min_confidence(eng, ctx, clock):
    for i in range(25):
        eng.store_fact(ctx, "user", f"p{i}", f"coffee fact {i}")
    assert len(eng.search(ctx, "coffee")) == 20
    assert len(eng.search(ctx, "coffee", limit=5, mode="keyword")) == 5
    v = eng.store_fact(ctx, "user", "v", "coffee volatile", permanence="volatile", confidence=0.6)
    clock.advance(days=20)
    ids = {h.id for h in eng.search(ctx, "coffee volatile", min_confidence=0.5, limit=100)}
    assert v.id not in ids and len(ids) == 25


def test_stats_counts_with_scope(eng, ctx, clock):
    eng.store_fact(ctx, "user", "a", "fact a", scope="health")
    eng.store_fact(ctx, "user", "a", "fact a2", scope="health")  # supersedes
    eng.store_fact(ctx, "user", "b", "fact b", scope="global", permanence="volatile")
    eng.store_fact(ctx, "user", "c", "fact c", scope="cars")
    r = eng.store_rule(ctx, "rule", scope="health")
    for _ in range(3):
        eng.mark_helpful(ctx, r.id)
    eng.store_rule(ctx, "rule 2")
    clock.advance(days=18)
    eng.store_episode(ctx, "ep", scope="health")
    clock.advance(days=2)  # volatile fact: exp(-0.05 * 20) = 0.37 < 0.5 -> fading
    s = eng.stats(ctx, scope="health")
    assert s["facts"] == {
        "total": 3,
        "active": 2,
        "fading": 1,
        "expired": 0,
        "superseded": 1,
        "retracted": 0,
    }
    assert s["rules"]["total"] == 2 and s["rules"]["established"] == 1
    assert s["rules"]["candidate"] == 1 and s["rules"]["proven"] == 0
    assert s["episodes"]["total"] == 1 and s["episodes"]["unconsolidated"] == 1
    assert s["episodes"]["backlog_age_hours"] == pytest.approx(48, abs=0.01)
    assert eng.stats(ctx)["facts"]["total"] == 4


# -- layers (seed 001) -----------------------------------------------------------


def test_accessible_layers_from_identifiers():
    from langmem_ext.engine import accessible_layers

    ctx = MemoryContext("acme", user_id="u", project_id="p")
    assert accessible_layers(ctx) == ("user", "project", "team", "org", "company")


def test_add_and_search_without_identifier_name_it(eng, store):
    ctx = MemoryContext("acme", user_id="u")
    with pytest.raises(MissingIdentifierError) as e:
        eng.add(ctx, "x", layer="session")
    assert e.value.details["identifier"] == "session_id" and "session_id" in str(e.value)
    with pytest.raises(MissingIdentifierError):
        eng.search_layers(ctx, "x", layers=["session"])


def test_layered_search_precedence_then_score_threshold_and_dedupe(eng):
    ctx = MemoryContext("acme", user_id="u", project_id="p")
    company = eng.add(ctx, "deploy with blue green strategy", layer="company")
    project = eng.add(ctx, "deploy with canary strategy", layer="project")
    dup = eng.add(ctx, "Deploy with canary strategy", layer="company")
    eng.add(ctx, "lunch menu on friday", layer="company")
    hits = eng.search_layers(ctx, "deploy strategy", threshold=0.3)
    assert [h.id for h in hits] == [project.id, company.id]  # dup dropped, menu below threshold
    assert dup.id not in {h.id for h in hits}
    assert all(h.score >= 0.3 for h in hits)
    assert hits[0].layer == "project" and hits[1].layer == "company"


def test_layered_search_default_threshold_is_0_7(eng):
    ctx = MemoryContext("acme", user_id="u")
    exact = eng.add(ctx, "blue green deploys", layer="user")
    eng.add(ctx, "blue whales", layer="user")
    hits = eng.search_layers(ctx, "blue green deploys")
    assert [h.id for h in hits] == [exact.id]
    assert eng.engine.config.threshold == 0.7


def test_layered_search_only_requested_layers(eng):
    ctx = MemoryContext("acme", user_id="u", project_id="p")
    eng.add(ctx, "rollout plan", layer="project")
    u = eng.add(ctx, "rollout plan", layer="user")
    hits = eng.search_layers(ctx, "rollout plan", layers=["user"])
    assert [h.id for h in hits] == [u.id]


def test_layered_search_issues_layers_concurrently(clock):
    class Slow(InMemoryStore):
        active = peak = 0

        async def abatch(self, ops):
            Slow.active += 1
            Slow.peak = max(Slow.peak, Slow.active)
            await asyncio.sleep(0.02)
            try:
                return await super().abatch(ops)
            finally:
                Slow.active -= 1

    store = Slow(index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]})
    engine = MemoryEngine(store, clock=clock)
    ctx = MemoryContext("acme", user_id="u", project_id="p", agent_id="a")
    calls: list = []
    orig = store.batch
    store.batch = lambda ops: calls.append(list(ops)) or orig(ops)  # type: ignore[method-assign]
    engine.search_layers(ctx, "anything")
    assert len(calls) == 1 and len(calls[0]) >= 6  # sync: one batch holds every layer's search
    t0 = time.perf_counter()
    asyncio.run(engine.asearch_layers(ctx, "anything"))
    assert Slow.peak >= 6  # async: all layer searches in flight at once
    assert time.perf_counter() - t0 < 0.02 * 6
