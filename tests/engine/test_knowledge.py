"""Memory that knows when and who: two times on every fact and episode,
reads of the past, entities and their relations, recall that follows them,
and memories that turn stale when what they came from changes.

Each body runs on SQLite, LangGraph's InMemoryStore (the engine over any
BaseStore) and PostgreSQL, sync and async.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_ext import PostgresStore, SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine, RetryPolicy
from langmem_ext.errors import (
    InvalidOperationError,
    InvalidValueError,
    LangmemError,
    MemoryNotFoundError,
)
from tests.embeddings import WordEmbeddings

from .conftest import FakeClock, snapshot

ADA = MemoryContext("acme", user_id="ada")
BOB = MemoryContext("acme", user_id="bob")
EVE = MemoryContext("globex", user_id="ada")  # same user id, another tenant


def _store(kind: str, request: Any, tmp_path: Any) -> Any:
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "k.db", index=index)
    if kind == "memory":
        return InMemoryStore(index=index)
    store = PostgresStore(
        request.getfixturevalue("pg_server").fresh_schema(),
        index=index,
        pool_config={"min_size": 1, "max_size": 2},
    )
    store.setup()
    return store


class Runner:
    def __init__(self, engine: MemoryEngine, mode: str) -> None:
        self.engine, self.mode = engine, mode

    def __getattr__(self, name: str) -> Any:
        if self.mode == "sync":
            return getattr(self.engine, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run(getattr(self.engine, "a" + name)(*args, **kwargs))

        return call


@pytest.fixture(
    params=["sqlite-sync", "sqlite-async", "memory-sync", "postgres-sync", "postgres-async"]
)
def kn(request, tmp_path):
    kind, mode = request.param.split("-")
    store = _store(kind, request, tmp_path)
    engine = MemoryEngine(store, clock=FakeClock(), retry=RetryPolicy(base_delay=0.0))
    yield Runner(engine, mode)
    if hasattr(store, "close"):
        store.close()


# -- two times ------------------------------------------------------------------------


def test_a_fact_keeps_when_it_held_beside_when_it_was_recorded(kn):
    f = kn.store_fact(ADA, "user", "city", "Lives in Berlin", valid_at="2019-06-01")
    assert f.valid_at == "2019-06-01T00:00:00.000000+00:00" and f.invalid_at is None
    assert f.created_at.startswith("2025-01-01")  # recorded now (the test clock)
    aware = datetime(2020, 1, 1, 12, tzinfo=timezone.utc)
    g = kn.store_fact(ADA, "user", "pet", "Had a cat", valid_at=aware, invalid_at="2022-03-01")
    assert (g.valid_at[:10], g.invalid_at[:10]) == ("2020-01-01", "2022-03-01")


def test_supersession_closes_the_old_fact_when_the_new_one_began(kn):
    old = kn.store_fact(ADA, "user", "city", "Lives in Berlin", valid_at="2019-06-01")
    new = kn.store_fact(ADA, "user", "city", "Lives in Munich", valid_at="2026-02-01")
    gone = kn.get(ADA, old.id)
    assert gone.validity == "superseded" and gone.superseded_by == new.id
    assert gone.invalid_at == new.valid_at  # when the world changed, not when we wrote
    assert gone.valid_to.startswith("2025-01-01")  # recorded time kept apart


def test_a_fact_that_already_ended_never_replaces_one_that_holds(kn):
    now = kn.store_fact(ADA, "user", "city", "Lives in Munich", valid_at="2024-01-01")
    past = kn.store_fact(
        ADA, "user", "city", "Lived in Paris", valid_at="2015-01-01", invalid_at="2018-01-01"
    )
    assert kn.get(ADA, now.id).validity == "active"
    assert kn.get(ADA, past.id).validity == "superseded"  # history, not current


@pytest.mark.parametrize(
    "args, field",
    [
        ({"valid_at": "2026-03-10T09:00:00"}, "valid_at"),  # naive
        ({"valid_at": datetime(2026, 3, 10)}, "valid_at"),  # naive
        ({"invalid_at": "yesterday"}, "invalid_at"),
        ({"valid_at": "1800-01-01"}, "valid_at"),
        ({"valid_at": "2300-01-01"}, "valid_at"),
        ({"valid_at": "2024-05-01", "invalid_at": "2023-01-01"}, "invalid_at"),
    ],
)
def test_bad_times_are_a_coded_error_naming_the_field_and_change_nothing(kn, args, field):
    kn.store_fact(ADA, "user", "city", "Lives in Berlin")
    before = snapshot(kn.engine.store)
    with pytest.raises(InvalidValueError, match=field) as e:
        kn.store_fact(ADA, "user", "city", "Lives in Munich", **args)
    assert e.value.code == "INVALID_VALUE"
    assert snapshot(kn.engine.store) == before


def test_as_of_reads_what_held_then_replaced_facts_included(kn):
    kn.store_fact(ADA, "user", "city", "Lives in Porto", valid_at="2015-01-01")
    kn.store_fact(ADA, "user", "city", "Lives in Berlin", valid_at="2019-06-01")
    kn.store_fact(ADA, "user", "city", "Lives in Munich", valid_at="2026-02-01")
    kn.store_fact(ADA, "user", "diet", "Is vegetarian")  # recorded now, time unknown

    def where(**when: Any) -> list[str]:
        return [h.content for h in kn.recall(ADA, "lives in", **when)]

    assert where()[0] == "Lives in Munich" and "Lives in Berlin" not in where()
    assert where(as_of="2020-01-01")[0] == "Lives in Berlin"
    assert "Lives in Munich" not in where(as_of="2020-01-01")
    assert where(as_of="2016-07-01")[0] == "Lives in Porto"
    searched = [h.content for h in kn.search(ADA, "lives", as_of="2016-07-01")]
    assert "Lives in Porto" in searched and "Lives in Munich" not in searched
    during = {h.content for h in kn.search(ADA, "lives", valid_during=("2018-01-01", "2020-01-01"))}
    assert {"Lives in Porto", "Lives in Berlin"} <= during and "Lives in Munich" not in during
    # a fact with no known time held from when it was recorded (the test clock's 2025)
    assert "Is vegetarian" not in [
        h.content for h in kn.search(ADA, "vegetarian", as_of="2020-01-01")
    ]


def test_a_forgotten_fact_held_at_no_time(kn):
    f = kn.store_fact(ADA, "user", "city", "Lives in Rome", valid_at="2010-01-01")
    kn.forget(ADA, "fact", f.id)
    assert kn.search(ADA, "Rome", as_of="2015-01-01") == []


def test_a_timeline_lists_a_slots_values_over_time(kn):
    kn.store_fact(
        ADA, "Clara", "lives_in", "Clara lives in Porto", object="Porto", valid_at="2019-05-01"
    )
    kn.store_fact(ADA, "my sister Clara", "lives_in", "Clara lives in Lisbon", object="Lisbon",
                  valid_at="2024-09-01")  # fmt: skip
    kn.store_fact(ADA, "Clara Weber", "job", "Clara is a nurse")
    line = kn.timeline(ADA, "my sister", "lives_in")
    assert [(f.object, f.valid_at[:10], (f.invalid_at or "")[:10]) for f in line] == [
        ("Porto", "2019-05-01", "2024-09-01"),
        ("Lisbon", "2024-09-01", ""),
    ]
    assert kn.timeline(BOB, "Clara", "lives_in") == []


# -- entities ---------------------------------------------------------------------------


def test_one_person_however_named(kn):
    a = kn.store_fact(ADA, "my sister Clara", "lives_in", "Lives in Lisbon", object="Lisbon")
    b = kn.store_fact(ADA, "Clara", "job", "Works as a nurse")
    c = kn.store_fact(ADA, "Clara Weber", "hobby", "Plays the cello")
    d = kn.store_fact(ADA, "my sister", "pet", "Has a dog")
    assert a.subject_entity == b.subject_entity == c.subject_entity == d.subject_entity
    people = [e for e in kn.entities(ADA) if e.kind == "person"]
    assert [e.name for e in people] == ["Clara"]
    assert {"my sister Clara", "Clara", "Clara Weber", "my sister"} <= set(people[0].aliases)
    about = kn.about(ADA, "Clara Weber")
    assert {f.content for f in about.facts} == {
        "Lives in Lisbon", "Works as a nurse", "Plays the cello", "Has a dog"
    }  # fmt: skip
    assert [e.name for e in about.linked] == ["Lisbon"]


def test_two_people_of_one_first_name_are_not_merged_on_a_guess(kn):
    kn.store_fact(ADA, "Clara Weber", "job", "Clara Weber is a nurse")
    kn.store_fact(ADA, "Clara Schmidt", "job", "Clara Schmidt is a pilot")
    f = kn.store_fact(ADA, "Clara", "city", "Clara lives in Rome")
    names = sorted(e.name for e in kn.entities(ADA))
    assert names == ["Clara", "Clara Schmidt", "Clara Weber"]  # ambiguous: its own entity
    assert kn.about(ADA, f.subject_entity).entity.name == "Clara"


def test_entities_never_cross_users_or_tenants(kn):
    kn.store_fact(ADA, "my sister Clara", "lives_in", "Lives in Lisbon", object="Lisbon")
    assert kn.entities(BOB) == [] and kn.entities(EVE) == []
    with pytest.raises(MemoryNotFoundError):
        kn.about(BOB, "Clara")
    theirs = kn.store_fact(BOB, "Clara", "job", "Clara is a baker")
    mine = kn.about(ADA, "Clara").entity
    assert theirs.subject_entity != mine.id
    with pytest.raises(MemoryNotFoundError):  # another user's entity id: unknown here
        kn.merge_entities(ADA, mine.id, theirs.subject_entity)


def test_merging_is_audited_and_undone_by_unmerging(kn):
    a = kn.store_fact(ADA, "Dr. Weber", "job", "Dr. Weber is my physician")
    b = kn.store_fact(ADA, "Clara", "hobby", "Clara plays the cello")
    assert a.subject_entity != b.subject_entity
    kept = kn.merge_entities(ADA, b.subject_entity, a.subject_entity)
    assert "Dr. Weber" in kept.aliases
    assert {f.content for f in kn.about(ADA, "Dr. Weber").facts} == {
        "Dr. Weber is my physician", "Clara plays the cello"
    }  # fmt: skip
    assert [e.action for e in kn.history(ADA, a.subject_entity)] == ["merged_into"]
    back = kn.unmerge_entities(ADA, a.subject_entity)
    assert back.id == a.subject_entity and "Dr. Weber" not in kn.about(ADA, "Clara").entity.aliases
    assert [f.content for f in kn.about(ADA, "Dr. Weber").facts] == ["Dr. Weber is my physician"]
    with pytest.raises(InvalidOperationError):
        kn.unmerge_entities(ADA, a.subject_entity)  # not merged any more


def test_a_merge_lets_the_newer_value_of_one_person_replace_the_older(kn):
    old = kn.store_fact(ADA, "Dr. Weber", "city", "Dr. Weber lives in Bonn", valid_at="2020-01-01")
    new = kn.store_fact(ADA, "Clara", "city", "Clara lives in Köln", valid_at="2024-01-01")
    kn.merge_entities(ADA, new.subject_entity, old.subject_entity)
    assert kn.get(ADA, old.id).validity == "superseded"
    assert kn.get(ADA, old.id).invalid_at == new.valid_at


def test_splitting_gives_some_names_and_their_facts_to_a_new_entity(kn):
    a = kn.store_fact(ADA, "Sam", "job", "Sam is a teacher")
    kn.store_fact(ADA, "Sam Lee", "city", "Sam Lee lives in Oslo")
    assert len(kn.entities(ADA)) >= 1 and kn.about(ADA, "Sam").entity.id == a.subject_entity
    new = kn.split_entity(ADA, a.subject_entity, ["Sam Lee"], name="Sam Lee")
    assert [f.content for f in kn.about(ADA, new.id).facts] == ["Sam Lee lives in Oslo"]
    assert [f.content for f in kn.about(ADA, a.subject_entity).facts] == ["Sam is a teacher"]
    with pytest.raises(InvalidValueError, match="not names of"):
        kn.split_entity(ADA, a.subject_entity, ["Somebody"])


# -- recall follows relations -------------------------------------------------------------


def test_recall_reaches_what_an_entity_the_request_names_is_linked_to(kn):
    kn.store_fact(ADA, "Caroline", "moved_to", "Caroline moved to Stockholm", object="Stockholm")
    kn.store_fact(ADA, "Stockholm", "has", "Stockholm has many pride parades")
    for i in range(30):
        kn.store_fact(ADA, "user", f"misc{i}", f"Note number {i} about the city council meeting")
    q = "what does the place Caroline moved to have?"
    found = [h.content for h in kn.recall(ADA, q, limit=5)]
    assert "Stockholm has many pride parades" in found
    plain = [h.content for h in kn.recall(ADA, q, limit=5, expand=False)]
    assert "Stockholm has many pride parades" not in plain


def test_recall_follows_a_relation_word_to_the_person(kn):
    kn.store_fact(ADA, "my sister Clara", "lives_in", "Clara lives in Lisbon", object="Lisbon")
    kn.store_fact(ADA, "my brother Tom", "lives_in", "Tom lives in Oslo", object="Oslo")
    top = kn.recall(ADA, "where does my sister live?", limit=1)[0]
    assert top.content == "Clara lives in Lisbon"


def test_the_graph_can_be_switched_off(tmp_path):
    engine = MemoryEngine(SQLiteStore(tmp_path / "x.db"), graph_hops=0)
    engine.store_fact(ADA, "Caroline", "moved_to", "Moved to Stockholm", object="Stockholm")
    assert engine.recall(ADA, "Stockholm")  # still plain recall
    with pytest.raises(LangmemError, match="graph_hops"):
        MemoryEngine(SQLiteStore(), graph_hops=5)


# -- dependencies -------------------------------------------------------------------------


def test_a_job_change_makes_its_three_dependants_stale_and_nothing_else(kn):
    job = kn.store_fact(ADA, "user", "employer", "Works at Acme", object="Acme")
    commute = kn.store_fact(ADA, "user", "commute", "Bikes to Acme's office", derived_from=[job.id])
    lunch = kn.store_episode(ADA, "Lunch with the Acme team", derived_from=[job.id])
    rule = kn.store_rule(
        ADA, "Mention Acme's dress code when planning outfits", derived_from=[job.id]
    )
    bystander = kn.store_fact(ADA, "user", "diet", "Is vegetarian")
    other = kn.store_fact(BOB, "user", "commute", "Bikes to work", derived_from=[])
    kn.store_fact(ADA, "user", "employer", "Works at Globex", object="Globex")
    stale = {r.id for r in kn.stale(ADA)}
    assert stale == {commute.id, lunch.id, rule.id}
    assert kn.get(ADA, commute.id).stale_because == [job.id]
    assert not kn.get(ADA, bystander.id).stale and not kn.get(BOB, other.id).stale
    assert "stale" in [e.action for e in kn.history(ADA, commute.id)]
    hit = next(h for h in kn.search(ADA, "bikes") if h.id == commute.id)
    assert hit.to_dict()["stale"] is True


def test_staleness_follows_dependants_of_dependants(kn):
    a = kn.store_fact(ADA, "user", "employer", "Works at Acme")
    b = kn.store_fact(ADA, "user", "office", "Office is in Berlin", derived_from=[a.id])
    c = kn.store_rule(ADA, "Suggest Berlin lunch places", derived_from=[b.id])
    kn.forget(ADA, "fact", a.id)
    assert {r.id for r in kn.stale(ADA)} == {b.id, c.id}


def test_derived_from_another_users_memory_is_refused_and_changes_nothing(kn):
    theirs = kn.store_fact(BOB, "user", "employer", "Works at Acme")
    before = snapshot(kn.engine.store)
    with pytest.raises(MemoryNotFoundError, match="derived_from"):
        kn.store_fact(ADA, "user", "commute", "Bikes to Acme", derived_from=[theirs.id])
    assert snapshot(kn.engine.store) == before
