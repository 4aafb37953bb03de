"""Writers that meet a new person at the same moment, in threads and in
processes, on SQLite and PostgreSQL: one entity comes out, every fact they
acknowledged is stored and linked to it, and every name they used is kept."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest

from langmem_ext.engine import MemoryEngine

from .entity_workers import ADA, in_process, name_them, open_store

WRITERS, EACH = 4, 5


def _spec(kind: str, request: Any, tmp_path: Any) -> tuple[str, str]:
    if kind == "sqlite":
        return ("sqlite", str(tmp_path / "e.db"))
    server = request.getfixturevalue("pg_server")
    dsn = server.fresh_schema()
    store = open_store(("postgres", dsn))
    store.setup()
    store.close()
    return ("postgres", dsn)


def _check(spec: tuple[str, str], acknowledged: list[str]) -> None:
    store = open_store(spec)
    try:
        engine = MemoryEngine(store)
        people = [e for e in engine.entities(ADA) if e.kind == "person"]
        assert len(people) == 1, [(e.name, e.aliases) for e in people]
        clara = people[0]
        assert {"my sister Clara", "Clara", "my sister"} <= set(clara.aliases)
        facts = engine.list(ADA, types=["fact"], limit=1000).items
        assert sorted(f.id for f in facts) == sorted(acknowledged)  # nothing acknowledged lost
        # A fact written while another writer merged a duplicate may still name
        # the duplicate; it stays linked through the merge: what Clara's page
        # shows is every fact.
        assert sorted(f.id for f in engine.about(ADA, clara.id).facts) == sorted(acknowledged)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_threads_meeting_a_new_person_make_one_entity(kind, request, tmp_path):
    spec = _spec(kind, request, tmp_path)
    stores = [open_store(spec) for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)
    done: list[list[str]] = [[] for _ in range(WRITERS)]

    def run(w: int) -> None:
        start.wait(60)
        done[w] = name_them(stores[w], w, EACH)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for s in stores:
        s.close()
    _check(spec, [i for ids in done for i in ids])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_processes_meeting_a_new_person_make_one_entity(kind, request, tmp_path):
    spec = _spec(kind, request, tmp_path)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.engine.entity_workers"])
    start, results = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [
        ctx.Process(target=in_process, args=(start, results, spec, w, EACH)) for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    _check(spec, [i for _, ids in got for i in ids])
