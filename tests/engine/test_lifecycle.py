"""Supersession (also under concurrent writers), decay and confirm, forget with
audit events, episode expiry and sweep, rule feedback and maturity."""

from __future__ import annotations

import threading

import pytest

from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.errors import InvalidOperationError
from tests.embeddings import WordEmbeddings


def test_store_fact_supersedes_active_fact(eng, ctx):
    old = eng.store_fact(ctx, "user", "favorite_color", "blue")
    new = eng.store_fact(ctx, "user", "favorite_color", "green")
    o = eng.get(ctx, old.id)
    assert (o.validity, o.superseded_by, o.live) == ("superseded", new.id, False)
    assert o.content == "blue"  # kept
    assert eng.get(ctx, new.id).validity == "active"
    assert [h.id for h in eng.recall(ctx, "favorite color")] == [new.id]
    events = eng.history(ctx, old.id)
    assert [e.action for e in events] == ["created", "superseded"]
    assert events[1].changes["validity"] == ["active", "superseded"]
    assert events[1].actor == "ada" and events[1].at


def test_supersession_is_case_insensitive_and_per_layer(eng, ctx):
    a = eng.store_fact(ctx, "User", "Favorite_Color", "blue")
    eng.store_fact(ctx, "user", "favorite_color", "red")
    assert eng.get(ctx, a.id).validity == "superseded"
    other = ctx.with_ids(user_id="bob")
    b = eng.store_fact(other, "user", "favorite_color", "pink")
    assert eng.get(other, b.id).validity == "active"  # bob's slot is his own


@pytest.mark.parametrize("threads", [8])
def test_concurrent_supersession_leaves_exactly_one_active(tmp_path, threads):
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    store = SQLiteStore(tmp_path / "c.db", index=index)
    engine = MemoryEngine(store)
    ctx = MemoryContext("acme", user_id="ada")
    ids: list[str] = []
    barrier = threading.Barrier(threads)

    def write(i: int) -> None:
        barrier.wait()
        for j in range(3):
            ids.append(engine.store_fact(ctx, "user", "city", f"city {i}-{j}").id)

    workers = [threading.Thread(target=write, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    facts = [engine.get(ctx, i) for i in ids]
    active = [f for f in facts if f.validity == "active"]
    assert len(facts) == 3 * threads and len(active) == 1
    winner = active[0]
    assert winner.id == max(facts, key=lambda f: (f.created_at, f.id)).id
    for f in facts:
        if f.id != winner.id:
            assert f.validity == "superseded" and f.superseded_by is not None
    store.close()


def test_confidence_decays_and_confirm_resets_clock(eng, ctx, clock):
    f = eng.store_fact(ctx, "user", "job", "Works as a nurse", confidence=0.9)
    clock.advance(days=30)
    decayed = eng.get(ctx, f.id).effective_confidence(clock.now)
    assert decayed == pytest.approx(0.9 * 2.718281828 ** (-0.01 * 30), rel=1e-6)
    confirmed = eng.confirm(ctx, "fact", f.id)
    assert confirmed.last_confirmed_at > f.last_confirmed_at
    assert eng.get(ctx, f.id).effective_confidence(clock()) == pytest.approx(0.9, abs=1e-9)
    assert [e.action for e in eng.history(ctx, f.id)] == ["created", "confirmed"]


def test_permanent_fact_does_not_decay(eng, ctx, clock):
    f = eng.store_fact(ctx, "user", "name", "John", permanence="permanent")
    clock.advance(days=3650)
    assert eng.get(ctx, f.id).effective_confidence(clock.now) == 1.0


def test_confirm_episode_rejected(eng, ctx, store):
    from .conftest import snapshot

    ep = eng.store_episode(ctx, "chatted")
    before = snapshot(store)
    with pytest.raises(InvalidOperationError) as e:
        eng.confirm(ctx, "episode", ep.id)
    assert e.value.code == "INVALID_OPERATION"
    assert snapshot(store) == before


def test_forget_fact_retracts_and_excludes_from_recall(eng, ctx):
    f = eng.store_fact(ctx, "user", "diet", "User is vegetarian diet")
    assert [h.id for h in eng.recall(ctx, "vegetarian diet")] == [f.id]
    forgotten = eng.forget(ctx, "fact", f.id)
    assert forgotten.validity == "retracted"
    assert eng.recall(ctx, "vegetarian diet") == []
    assert eng.search(ctx, "vegetarian diet") == []
    assert eng.get(ctx, f.id).validity == "retracted"  # visible to history/get
    events = eng.history(ctx, f.id)
    assert events[-1].action == "forgotten"
    assert events[-1].changes["validity"] == ["active", "retracted"]


def test_forget_rule_and_episode_are_tombstoned(eng, ctx):
    r = eng.store_rule(ctx, "Answer in French")
    ep = eng.store_episode(ctx, "Talked in French")
    assert eng.forget(ctx, "rule", r.id).status == "forgotten"
    assert eng.forget(ctx, "episode", ep.id).status == "forgotten"
    assert eng.search(ctx, "French") == []
    assert eng.forget(ctx, "rule", r.id).status == "forgotten"  # idempotent
    assert [e.action for e in eng.history(ctx, r.id)] == ["created", "forgotten"]


def test_legacy_forgotten_validity_is_an_alias():
    from langmem_ext.engine.records.policy import VALIDITY_ALIASES

    assert VALIDITY_ALIASES["forgotten"] == "retracted"


def test_expired_episodes_leave_search_and_are_swept(eng, ctx, clock):
    ep = eng.store_episode(ctx, "User asked about recipes")
    assert [h.id for h in eng.search(ctx, "recipes")] == [ep.id]
    clock.advance(days=7, seconds=1)
    assert eng.search(ctx, "recipes") == []
    assert eng.stats(ctx)["episodes"]["expired"] == 1
    assert eng.sweep(ctx) == {"episodes": 1, "facts": 0, "notes": 0}
    got = eng.get(ctx, ep.id)
    assert (got.status, got.live) == ("expired", False)
    assert eng.sweep(ctx) == {"episodes": 0, "facts": 0, "notes": 0}
    assert eng.history(ctx, ep.id)[-1].action == "expired"


def test_facts_and_notes_expire_at_a_date_then_are_swept(eng, ctx, clock):
    """``expires_at`` on a fact or a note: recalled until that moment, never
    after, and retired by the sweep with an "expired" event (like episodes)."""
    until = "2025-03-31T00:00:00+00:00"
    fact = eng.store_fact(ctx, "user", "employer", "Works at Initech", expires_at=until)
    note = eng.add(ctx, "Initech badge number 4711", expires_at=until)
    keep = eng.add(ctx, "Initech is in Austin")
    assert {h.id for h in eng.search(ctx, "Initech")} == {fact.id, note.id, keep.id}
    assert eng.get(ctx, fact.id).expires_at == "2025-03-31T00:00:00.000000+00:00"
    clock.advance(days=90)
    assert [h.id for h in eng.search(ctx, "Initech")] == [keep.id]
    assert eng.sweep(ctx) == {"episodes": 0, "facts": 1, "notes": 1}
    assert eng.get(ctx, fact.id).validity == "expired"
    assert eng.history(ctx, note.id)[-1].action == "expired"
    assert eng.sweep(ctx) == {"episodes": 0, "facts": 0, "notes": 0}


@pytest.mark.parametrize("when", ["2024-12-31", "2025-06-01T12:00:00"])
def test_expires_at_in_the_past_or_naive_is_refused(eng, ctx, when):
    from langmem_ext.errors import InvalidValueError

    with pytest.raises(InvalidValueError) as e:
        eng.store_fact(ctx, "user", "employer", "Works at Initech", expires_at=when)
    assert e.value.code == "INVALID_VALUE"
    with pytest.raises(InvalidValueError):
        eng.add(ctx, "Initech badge", expires_at=when)
    assert eng.search(ctx, "Initech") == []


def test_sweep_expires_decayed_facts(eng, ctx, clock):
    f = eng.store_fact(ctx, "user", "mood", "tired", permanence="ephemeral")
    keep = eng.store_fact(ctx, "user", "name", "John", permanence="permanent")
    clock.advance(days=30)  # exp(-0.2*30) = 0.0025 < 0.05
    assert eng.sweep(ctx) == {"episodes": 0, "facts": 1, "notes": 0}
    assert eng.get(ctx, f.id).validity == "expired"
    assert eng.get(ctx, keep.id).validity == "active"


def test_mark_helpful_increments_counts(eng, ctx):
    r = eng.store_rule(ctx, "Always confirm before sending messages")
    for _ in range(4):
        eng.mark_helpful(ctx, r.id)
    assert eng.get(ctx, r.id).success_count == 4
    after = eng.mark_helpful(ctx, r.id)
    assert (after.success_count, after.applied_count) == (5, 5)
    assert after.effectiveness_score == pytest.approx(5 / 5.01, abs=1e-6)
    assert after.last_applied_at
    assert after.maturity == "established" and after.confidence == 0.75


def test_mark_harmful_recalculates_with_4x_weight(eng, ctx):
    r = eng.store_rule(ctx, "Reply tersely")
    eng.mark_helpful(ctx, r.id)
    after = eng.mark_harmful(ctx, r.id, reason="caused incorrect response")
    assert (after.harmful_count, after.applied_count) == (1, 2)
    assert after.effectiveness_score == pytest.approx(1 / (1 + 4 + 0.01), abs=1e-6)
    ev = eng.history(ctx, r.id)[-1]
    assert ev.action == "marked_harmful" and ev.reason == "caused incorrect response"


def test_rule_maturity_path_and_anti_pattern(eng, ctx):
    r = eng.store_rule(ctx, "Use metric units")
    for _ in range(10):
        r = eng.mark_helpful(ctx, r.id)
    assert r.maturity == "proven" and r.confidence == 0.9
    bad = eng.store_rule(ctx, "Guess the answer")
    for _ in range(3):
        bad = eng.mark_harmful(ctx, bad.id)
    assert bad.maturity == "anti_pattern"
