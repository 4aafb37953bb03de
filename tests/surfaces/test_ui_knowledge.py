"""The memory browser shows when facts held and who they are about: both
times in a fact's corrections, a search as of a date, the people, places and
things of the signed-in user (never another's), stale memories flagged."""

from __future__ import annotations

import re

import pytest

from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryEngine
from tests.embeddings import WordEmbeddings

from .test_ui import ADA, BOB, GINA, signed_in


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.fixture
def kworld(tmp_path):
    store = SQLiteStore(
        tmp_path / "k.db", index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    )
    engine = MemoryEngine(store)
    porto = engine.store_fact(
        ADA, "my sister Clara", "lives_in", "Clara lives in Porto", object="Porto",
        valid_at="2019-05-01",
    )  # fmt: skip
    lisbon = engine.store_fact(
        ADA, "Clara", "lives_in", "Clara lives in Lisbon", object="Lisbon", valid_at="2024-09-01"
    )
    visit = engine.store_fact(
        ADA, "user", "visits", "Visits Clara in Lisbon", derived_from=[lisbon.id]
    )
    engine.store_fact(ADA, "Clara", "lives_in", "Clara lives in Faro", object="Faro")
    engine.store_fact(BOB, "Clara", "job", "Bob's Clara is a pilot")
    engine.store_fact(GINA, "Clara", "job", "Globex Clara is a judge")
    yield store, {"porto": porto, "lisbon": lisbon, "visit": visit}
    store.close()


def test_a_facts_corrections_show_when_each_held_and_when_it_was_recorded(kworld):
    store, f = kworld
    client, _ = signed_in(store)
    page = text(client.get(f"/memory/{f['lisbon'].id}").text)
    assert "held from 2024-09-01" in page
    assert "Clara lives in Porto superseded · held 2019-05-01 – 2024-09-01 · recorded" in page
    assert "Clara lives in Faro" in page and "Clara (" not in page


def test_a_stale_memory_says_so_and_links_what_it_came_from(kworld):
    store, f = kworld
    client, _ = signed_in(store)
    html = client.get(f"/memory/{f['visit'].id}").text
    assert "May no longer hold" in text(html)
    assert f'href="/memory/{f["lisbon"].id}"' in html


def test_search_as_of_a_date_finds_what_held_then(kworld):
    store, _ = kworld
    client, _ = signed_in(store)
    then = text(client.get("/search?q=Clara+lives&as_of=2020-06-01").text)
    assert "Clara lives in Porto" in then and "Clara lives in Faro" not in then
    now = text(client.get("/search?q=Clara+lives").text)
    assert "Clara lives in Faro" in now and "Clara lives in Porto" not in now
    bad = client.get("/search?q=Clara&as_of=2020-13-01")
    assert bad.status_code == 400 and "INVALID_VALUE" in bad.text and "as_of" in bad.text


def test_entities_are_the_signed_in_users_only(kworld):
    store, f = kworld
    client, _ = signed_in(store)
    listing = text(client.get("/entities").text)
    assert "Clara person my sister Clara, my sister" in listing
    assert "pilot" not in listing and "judge" not in listing
    about = text(client.get(f"/entity/{f['lisbon'].subject_entity}").text)
    assert "relation sister of yours" in about and "Clara lives in Faro" in about
    assert "Visits Clara in Lisbon (may be stale)" in about
    assert "pilot" not in about and "judge" not in about
    bob_client, _ = signed_in(store, "tok-bob-0001")
    r = bob_client.get(f"/entity/{f['lisbon'].subject_entity}")  # Ada's entity id
    assert r.status_code == 404 and "Faro" not in r.text
