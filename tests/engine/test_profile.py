"""Seed 004's fact collection and profile, on {SQLiteStore, InMemoryStore} x {sync, async}."""

from __future__ import annotations

import logging
import re
from datetime import datetime

import pytest

from langmem_ext.engine import FactCandidate, MemoryContext
from langmem_ext.errors import FactNotFoundError, InvalidValueError, MemoryNotFoundError

from .conftest import snapshot, space


def fact(content: str, category: str = "preference", confidence: float = 0.9, **kw):
    return FactCandidate(content, category, confidence, **kw)


def test_create_fact_id_timestamp_persisted(eng, ctx, store):
    f = eng.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    assert re.fullmatch(r"fact_[0-9a-f]{8}", f.id)
    created = datetime.fromisoformat(f.created_at)
    assert created.tzinfo is not None and created.utcoffset().total_seconds() == 0
    item = store.get(space(ctx), f.id)
    assert item.value["content"] == "Prefers dark mode"
    assert item.value["category"] == "preference" and item.value["confidence"] == 0.9
    assert [x.id for x in eng.get_profile(ctx).facts] == [f.id]


def test_delete_fact_removes_it_and_keeps_the_audit(eng, ctx, store):
    f = eng.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    assert eng.delete_fact(ctx, f.id) is None
    assert store.get(space(ctx), f.id) is None
    assert eng.get_profile(ctx).facts == []
    assert [e.action for e in eng.history(ctx, f.id)] == ["created", "deleted"]


def test_delete_unknown_fact_raises_key_error_and_changes_nothing(eng, ctx, store):
    eng.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    before = snapshot(store)
    with pytest.raises(KeyError) as err:
        eng.delete_fact(ctx, "fact_00000000")
    assert isinstance(err.value, MemoryNotFoundError | FactNotFoundError)
    assert "fact_00000000" in str(err.value)
    assert snapshot(store) == before


def test_update_changes_only_given_fields_and_keeps_created_at(eng, ctx, clock, store):
    f = eng.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    clock.advance(days=1)
    g = eng.update_fact(ctx, f.id, content="Prefers light mode")
    assert (g.content, g.category, g.confidence) == ("Prefers light mode", "preference", 0.9)
    assert g.created_at == f.created_at and g.updated_at > f.updated_at
    h = eng.update_fact(ctx, f.id, confidence=0.6)
    assert (h.content, h.category, h.confidence) == ("Prefers light mode", "preference", 0.6)
    i = eng.update_fact(ctx, f.id, category="behavior")
    assert (i.content, i.category, i.confidence) == ("Prefers light mode", "behavior", 0.6)
    stored = store.get(space(ctx), f.id).value
    assert stored["content"] == "Prefers light mode" and stored["created_at"] == f.created_at
    assert [x.content for x in eng.search(ctx, "light mode", types=["fact"])] == [
        "Prefers light mode"
    ]


@pytest.mark.parametrize(
    "kw", [{"category": "hobby"}, {"confidence": 1.5}, {"content": ""}, {"confidence": "high"}]
)
def test_bad_update_is_an_error_and_changes_nothing(eng, ctx, store, kw):
    f = eng.add_fact(ctx, "Prefers dark mode", "preference", 0.9)
    before = snapshot(store)
    with pytest.raises(InvalidValueError):
        eng.update_fact(ctx, f.id, **kw)
    assert snapshot(store) == before
    with pytest.raises(KeyError):
        eng.update_fact(ctx, "fact_deadbeef", content="x")
    assert snapshot(store) == before


def test_exact_and_case_duplicates_are_skipped_and_logged(eng, ctx, store, caplog):
    f = eng.add_fact(ctx, "Prefers dark mode", "preference", 0.7)
    before = snapshot(store)
    with caplog.at_level(logging.INFO, logger="langmem_ext.profile"):
        assert eng.add_fact(ctx, "Prefers dark mode", "preference", 0.95) is None
        done = eng.add_facts(ctx, [fact("PREFERS  dark MODE"), fact("prefers dark mode ")])
    assert done.added == [] and [s.reason for s in done.skipped] == ["duplicate", "duplicate"]
    assert snapshot(store) == before  # the existing fact is unchanged (confidence 0.7)
    assert (
        eng.get_profile(ctx).facts[0].confidence == 0.7 and eng.get_profile(ctx).facts[0].id == f.id
    )
    assert caplog.text.count("skipped duplicate fact") == 3


def test_duplicates_within_one_call_keep_the_first(eng, ctx):
    done = eng.add_facts(ctx, [fact("Has a cat named Tom"), fact("has a CAT named tom")])
    assert [f.content for f in done.added] == ["Has a cat named Tom"]
    assert [s.reason for s in done.skipped] == ["duplicate"]


def test_confidence_threshold_skips_and_logs(eng, ctx, caplog):
    with caplog.at_level(logging.INFO, logger="langmem_ext.profile"):
        done = eng.add_facts(
            ctx, [fact("Might like jazz", confidence=0.49), fact("Likes tea", confidence=0.5)]
        )
    assert [f.content for f in done.added] == ["Likes tea"]
    assert [(s.content, s.reason) for s in done.skipped] == [("Might like jazz", "low_confidence")]
    assert "skipped low-confidence fact (0.49 < 0.50)" in caplog.text
    strict = eng.add_facts(ctx, [fact("Likes green tea", confidence=0.7)], threshold=0.8)
    assert strict.added == [] and strict.skipped[0].reason == "low_confidence"


REFLECTED = {"source": "reflection", "thread_id": "t1"}


def test_max_facts_archives_the_lowest_confidence_reflection_fact(eng, ctx, store):
    cap = {"max_facts": 3, "provenance": REFLECTED}
    a = eng.add_fact(ctx, "Likes tea", "preference", 0.9, **cap)
    b = eng.add_fact(ctx, "Plays chess", "behavior", 0.6, **cap)
    c = eng.add_fact(ctx, "Lives in Oslo", "context", 0.8, **cap)
    done = eng.add_facts(ctx, [fact("Wants to learn Rust", "goal", 0.7)], **cap)
    assert done.removed == [b.id]
    assert store.get(space(ctx), b.id) is None
    ids = {f.id for f in eng.get_profile(ctx).facts}
    assert ids == {a.id, c.id, done.added[0].id}
    # archived, not deleted: found by id, audited, its text still stored
    evicted = eng.get(ctx, b.id)
    assert (evicted.live, evicted.validity, evicted.content) == (False, "evicted", "Plays chess")
    assert [(e.action, e.reason) for e in eng.history(ctx, b.id)] == [
        ("created", None),
        ("evicted", "max_facts"),
    ]
    # the new fact is added even when it is the least confident
    low = eng.add_facts(ctx, [fact("Owns a bike", "context", 0.55)], **cap)
    assert low.removed == [done.added[0].id] and len(eng.get_profile(ctx).facts) == 3


def test_max_facts_never_evicts_facts_stored_on_purpose(eng, ctx):
    stored = eng.store_fact(ctx, "user", "passport", "Passport number X1234567", confidence=0.1)
    added = eng.add_fact(ctx, "Blood type is AB negative", "context", 0.51)
    cap = {"max_facts": 1, "provenance": REFLECTED}
    first = eng.add_fact(ctx, "Likes tea", "preference", 0.9, **cap)
    done = eng.add_facts(ctx, [fact("Plays chess", "behavior", 0.95)], **cap)
    assert done.removed == [first.id]
    current = {f.id for f in eng.get_profile(ctx).facts}
    assert current == {stored.id, added.id, done.added[0].id}
    # a call that adds stored facts only never counts them either
    more = eng.add_facts(ctx, [fact("Speaks Danish", "context", 0.6)], max_facts=1)
    assert more.removed == [] and len(eng.get_profile(ctx).facts) == 4


def test_near_duplicate_is_merged_into_the_existing_fact(eng, ctx, clock):
    f = eng.add_fact(ctx, "Lives in Berlin, Germany", "context", 0.7)
    clock.advance(days=30)
    done = eng.add_facts(
        ctx, [fact("lives in Berlin Germany", "context", 0.95)], provenance={"thread_id": "t9"}
    )
    assert done.added == [] and [m.id for m in done.merged] == [f.id]
    merged = eng.get(ctx, f.id)
    assert merged.confidence == 0.95 and merged.last_confirmed_at > f.last_confirmed_at
    assert merged.provenance["merged"] == [{"thread_id": "t9"}]
    assert merged.created_at == f.created_at
    assert [e.action for e in eng.history(ctx, f.id)] == ["created", "merged"]


def test_replaces_supersedes_the_corrected_fact(eng, ctx):
    old = eng.add_fact(ctx, "Works at Acme", "context", 0.9)
    new = eng.add_fact(ctx, "Works at Globex now", "correction", 0.95, replaces=old.id)
    gone = eng.get(ctx, old.id)
    assert gone.validity == "superseded" and gone.superseded_by == new.id
    assert new.provenance["replaces"] == old.id
    assert [f.id for f in eng.get_profile(ctx).facts] == [new.id]


def test_subject_predicate_slot_supersedes(eng, ctx):
    done = eng.add_facts(
        ctx, [fact("Home city: Berlin", "context", 0.9, subject="user", predicate="home_city")]
    )
    later = eng.add_facts(
        ctx, [fact("Home city: Munich", "context", 0.9, subject="user", predicate="home_city")]
    )
    assert later.superseded == [done.added[0].id]
    assert [f.content for f in eng.get_profile(ctx).facts] == ["Home city: Munich"]


def test_one_bad_candidate_writes_nothing(eng, ctx, store):
    before = snapshot(store)
    for bad in (
        {"content": "x", "category": "hobby", "confidence": 0.9},
        {"content": "x", "category": "goal", "confidence": 2},
        {"content": "", "category": "goal", "confidence": 0.9},
        {"content": "x", "category": "goal"},
    ):
        with pytest.raises(InvalidValueError):
            eng.add_facts(ctx, [fact("Fine fact"), bad])
    assert snapshot(store) == before


def test_profile_summary_and_order(eng, ctx):
    eng.add_fact(ctx, "Likes tea", "preference", 0.6)
    eng.add_fact(ctx, "Is a nurse", "context", 0.95)
    p = eng.update_profile(
        ctx,
        user_context={"work": "Night-shift nurse", "top_of_mind": "Moving flats"},
        history={"recent": "Started a new job"},
    )
    assert p.user_context == {"work": "Night-shift nurse", "top_of_mind": "Moving flats"}
    p = eng.update_profile(ctx, user_context={"top_of_mind": ""}, history={"earlier": "Studied"})
    assert p.user_context == {"work": "Night-shift nurse"}
    assert p.history == {"recent": "Started a new job", "earlier": "Studied"}
    assert [f.content for f in p.facts] == ["Is a nurse", "Likes tea"]
    d = p.to_dict()
    assert d["facts"][0]["createdAt"] == p.facts[0].created_at
    with pytest.raises(InvalidValueError, match="work, personal, top_of_mind"):
        eng.update_profile(ctx, user_context={"job": "x"})


def test_profiles_are_per_user(eng, ctx, store):
    f = eng.add_fact(ctx, "Likes tea", "preference", 0.9)
    bob = MemoryContext("acme", user_id="bob")
    assert eng.get_profile(bob).facts == []
    assert eng.add_fact(bob, "Likes tea", "preference", 0.9) is not None  # not a duplicate
    before = snapshot(store)
    with pytest.raises(KeyError):
        eng.delete_fact(bob, f.id)
    with pytest.raises(KeyError):
        eng.update_fact(MemoryContext("globex", user_id="ada"), f.id, content="x")
    assert snapshot(store) == before
