"""``erase``: everything of one user (or tenant) goes, in every place the
engine keeps it, with a receipt and one content-free record; refused without
confirmation, to non-admins for anyone else, and for an unknown user, each
refusal changing nothing. Runs on {SQLiteStore, InMemoryStore} x {sync, async}."""

from __future__ import annotations

import json

import pytest

from langmem_ext.engine import MemoryContext
from langmem_ext.errors import (
    InvalidOperationError,
    MemoryNotFoundError,
    PermissionDeniedError,
)
from tests.engine.conftest import snapshot

SECRET = "zanzibarquux"


def _fill(eng, ada, bob):
    """Ada's words in her space, a session, her archive and events, the
    team layer, and an app namespace; Bob's beside them."""
    note = eng.add(ada, f"Ada's locker code is {SECRET}")
    old = eng.store_fact(ada, "user", "city", f"Lives in {SECRET}ville")
    eng.revise(ada, old.id, f"Lives in {SECRET}burg")  # archive + events
    eng.forget(ada, "note", note.id)
    eng.store_episode(ada.with_ids(session_id="s1"), f"Talked about {SECRET}", layer="session")
    team = ada.with_ids(team_id="t1")
    eng.add(team, f"Team note by Ada: {SECRET}", layer="team")
    eng.add(bob.with_ids(team_id="t1"), "Team note by Bob: flamingo", layer="team")
    eng.add(bob, "Bob likes flamingos")


def _words(store) -> str:
    return json.dumps(snapshot(store))


@pytest.fixture
def ada():
    return MemoryContext("acme", user_id="ada")


@pytest.fixture
def bob():
    return MemoryContext("acme", user_id="bob")


def test_erase_removes_every_place_and_keeps_a_content_free_record(eng, store, ada, bob):
    _fill(eng, ada, bob)
    assert SECRET in _words(store)
    dry = eng.erase(ada, dry_run=True)
    assert SECRET in _words(store)  # a dry run changes nothing

    receipt = eng.erase(ada, confirm="ada")

    assert receipt.counts == dry.counts
    assert receipt.counts["memories"] == 1 and receipt.counts["sessions"] == 1
    assert receipt.counts["archive"] >= 2 and receipt.counts["events"] >= 4
    assert receipt.counts["shared"] == 1 and receipt.counts["shared_events"] == 1
    assert receipt.record and not receipt.dry_run
    words = _words(store)
    assert SECRET not in words  # nowhere: space, session, archive, events, team layer
    rest = [x for x in snapshot(store) if "_erasures" not in x[0]]
    assert "ada" not in json.dumps(rest)  # nor her name, outside the record
    records = store.search(("tenant", "acme", "_meta", "_erasures", "log"))
    (rec,) = records
    assert set(rec.value) == {"action", "scope", "subject", "actor", "at", "counts"}
    assert rec.value["counts"]["memories"] == receipt.counts["memories"]
    # Bob is untouched and found.
    assert [h.content for h in eng.search(bob, "flamingos")] == ["Bob likes flamingos"]
    team = eng.search(bob.with_ids(team_id="t1"), "flamingo", layers=["team"])
    assert [h.content for h in team] == ["Team note by Bob: flamingo"]
    assert eng.search(ada, SECRET) == []


def test_erase_without_confirmation_is_refused_with_what_it_would_remove(eng, store, ada, bob):
    _fill(eng, ada, bob)
    before = snapshot(store)
    with pytest.raises(InvalidOperationError) as e:
        eng.erase(ada)
    assert "confirm='ada'" in str(e.value) and "memories" in str(e.value)
    assert e.value.details["would_remove"]["sessions"] == 1
    with pytest.raises(InvalidOperationError):
        eng.erase(ada, confirm="bob")
    assert snapshot(store) == before


def test_a_non_admin_erasing_another_user_is_permission_denied(eng, store, ada, bob):
    _fill(eng, ada, bob)
    before = snapshot(store)
    with pytest.raises(PermissionDeniedError) as e:
        eng.erase(bob, "ada", confirm="ada")
    assert e.value.code == "PERMISSION_DENIED"
    with pytest.raises(PermissionDeniedError):
        eng.erase(ada, scope="tenant", confirm="acme")
    assert snapshot(store) == before


def test_an_admin_erases_another_user_and_a_rerun_is_harmless(eng, store, ada, bob):
    _fill(eng, ada, bob)
    admin = MemoryContext("acme", user_id="root", is_admin=True)
    receipt = eng.erase(admin, "ada", confirm="ada")
    assert receipt.total > 0 and SECRET not in _words(store)
    again = eng.erase(admin, "ada", confirm="ada")  # finishes a run that stopped
    assert again.total == 0 and again.record == receipt.record


def test_erasing_an_unknown_user_says_so_and_changes_nothing(eng, store, ada, bob):
    _fill(eng, ada, bob)
    admin = MemoryContext("acme", user_id="root", is_admin=True)
    before = snapshot(store)
    with pytest.raises(MemoryNotFoundError) as e:
        eng.erase(admin, "nobody", confirm="nobody")
    assert "nothing is stored for user 'nobody'" in str(e.value)
    assert snapshot(store) == before


def test_erase_covers_the_app_namespaces_it_is_given(eng, store, ada, bob):
    store.put(("summaries", "ada"), "thread-1", {"summary": f"Ada said {SECRET}"})
    store.put(("prompts", "ada"), "v1", {"prompt": f"Call her {SECRET}"})
    store.put(("prompts", "bob"), "v1", {"prompt": "Call him Bob"})
    eng.add(ada, "something")
    receipt = eng.erase(
        ada, confirm="ada", namespaces=[("summaries", "{user_id}"), ("prompts", "{user_id}")]
    )
    assert receipt.counts["app"] == 2
    assert SECRET not in _words(store)
    assert store.get(("prompts", "bob"), "v1") is not None


def test_an_admin_erases_a_whole_tenant(eng, store, ada, bob):
    _fill(eng, ada, bob)
    other = MemoryContext("globex", user_id="carol")
    eng.add(other, "Carol's note")
    admin = MemoryContext("acme", user_id="root", is_admin=True)
    with pytest.raises(InvalidOperationError):
        eng.erase(admin, scope="tenant")
    receipt = eng.erase(admin, scope="tenant", confirm="acme")
    assert receipt.total > 0
    assert [k for k in _words(store).split('"') if k == "acme"] == []
    assert [h.content for h in eng.search(other, "note")] == ["Carol's note"]


def test_an_admin_erases_a_user_of_an_app_with_a_namespace_template(store):
    from langmem_ext.engine import MemoryEngine

    engine = MemoryEngine(store, namespace=("memories", "{user_id}"))
    ada, bob = MemoryContext("acme", user_id="ada"), MemoryContext("acme", user_id="bob")
    engine.add(ada, f"Ada's note {SECRET}")
    engine.add(bob, "Bob's note")
    assert store.search(("tenant", "acme", "memories", "ada"))
    admin = MemoryContext("acme", user_id="root", is_admin=True)
    receipt = engine.erase(admin, "ada", confirm="ada")
    assert receipt.counts["memories"] == 1 and SECRET not in _words(store)
    assert [h.content for h in engine.search(bob, "note")] == ["Bob's note"]
