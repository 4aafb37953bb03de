"""A store's ``purge`` (what the engine's ``erase`` runs): the erased items'
bytes are gone from the files (SQLite: the database, its WAL, the vector
segment files; PostgreSQL: the data directory after the vacuum and a
checkpoint), another user's items are intact and searchable, a dry run
changes nothing, and a process killed (SIGKILL) in the middle leaves all or
nothing, which a rerun completes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from langmem_ext import SQLiteStore
from tests.embeddings import WordEmbeddings

N = 120
ADA_WORD = b"zanzibarquux"
BOB_WORD = b"flamingoplex"
ROOT = Path(__file__).resolve().parents[2]


def _index() -> dict:
    return {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}


def _fill(store, n: int = N) -> None:
    for i in range(0, n, 40):
        for who, word in (("ada", ADA_WORD), ("bob", BOB_WORD)):
            store.batch(
                [
                    _put(("user", who), f"{who}{j}", f"{who} says {word.decode()}{j} peanuts")
                    for j in range(i, min(i + 40, n))
                ]
            )
        # Session and bookkeeping namespaces below and beside the user.
        store.put(("user", "ada", "alpha"), f"s{i}", {"content": f"{ADA_WORD.decode()}-agent"})


def _put(ns, key, text):
    from langgraph.store.base import PutOp

    return PutOp(ns, key, {"content": text})


def _vector_bytes(text: str) -> bytes:
    """16 bytes of the vector stored for ``text`` (float32, little endian, as
    the stores write it), looked for in the files."""
    v = np.asarray(WordEmbeddings(64).embed_documents([text])[0], dtype="<f4")
    return v[:4].tobytes()


def _sqlite_files(path: Path) -> list[Path]:
    seg = Path(f"{path}-vectors")
    return [
        p
        for p in (path, Path(f"{path}-wal"), *(sorted(seg.iterdir()) if seg.exists() else []))
        if p.exists()
    ]


def _count(files: list[Path], needle: bytes) -> int:
    return sum(p.read_bytes().count(needle) for p in files)


def test_sqlite_purge_leaves_no_bytes_of_the_erased_user(tmp_path):
    path = tmp_path / "m.db"
    store = SQLiteStore(path, index=_index())
    _fill(store)
    store.search(("user",), query="peanuts")  # vector segments written
    store._maybe_flush(10**9)
    ada_vec = _vector_bytes(f"ada says {ADA_WORD.decode()}0 peanuts")
    before = _count(_sqlite_files(path), ADA_WORD)
    assert before >= N and _count(_sqlite_files(path), ada_vec) >= 1
    dry = store.purge([("user", "ada")], dry_run=True)
    assert dry.namespaces == {("user", "ada"): N, ("user", "ada", "alpha"): N // 40}
    assert _count(_sqlite_files(path), ADA_WORD) == before  # a dry run changes nothing

    report = store.purge([("user", "ada")])

    assert report.namespaces == dry.namespaces and report.vectors == dry.vectors
    assert report.scrubbed
    files = _sqlite_files(path)
    assert _count(files, ADA_WORD) == 0
    assert _count(files, ada_vec) == 0
    assert _count(files, BOB_WORD) >= N  # the other user's words are all there
    hits = store.search(("user", "bob"), query=f"{BOB_WORD.decode()}7", limit=3)
    assert hits[0].key == "bob7"
    assert len(store.search(("user", "bob"), limit=1000)) == N
    assert store.search(("user", "ada"), query="peanuts") == []
    store.close()
    # Reopened by another process's view: still nothing of ada.
    again = SQLiteStore(path, index=_index())
    assert again.search(("user",), query=ADA_WORD.decode(), limit=5)[0].key.startswith("bob")
    again.close()


_CRASH = """
import os, signal, sys
sys.path[:0] = {paths!r}
from langmem_ext import SQLiteStore
from langmem_ext.stores.sqlite import _purge
from tests.embeddings import WordEmbeddings
where = sys.argv[2]
real_delete, real_scrub = _purge.delete, _purge.scrub
def delete(*a, **k):
    real_delete(*a, **k)
    if where == "inside":  # deletes done, the transaction not committed
        os.kill(os.getpid(), signal.SIGKILL)
def scrub(*a, **k):
    if where == "after":  # committed, nothing overwritten yet
        os.kill(os.getpid(), signal.SIGKILL)
    return real_scrub(*a, **k)
_purge.delete, _purge.scrub = delete, scrub
store = SQLiteStore(sys.argv[1], index={{"dims": 64, "embed": WordEmbeddings(64),
                                        "fields": ["content"]}})
store.purge([("user", "ada")])
"""


@pytest.mark.parametrize("where", ["inside", "after"])
def test_sqlite_purge_killed_midway_is_all_or_nothing_and_a_rerun_completes(tmp_path, where):
    path = tmp_path / "m.db"
    store = SQLiteStore(path, index=_index())
    _fill(store)
    store.close()
    script = _CRASH.format(paths=[str(ROOT), str(ROOT / "dev")])
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(path), where],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    store = SQLiteStore(path, index=_index())  # an open finishes a committed erase
    left = len(store.search(("user", "ada"), limit=1000))
    assert left == (N + N // 40 if where == "inside" else 0)  # all or nothing
    assert len(store.search(("user", "bob"), limit=1000)) == N
    report = store.purge([("user", "ada")])  # the rerun
    assert sum(report.namespaces.values()) == (left if where == "inside" else 0)
    assert _count(_sqlite_files(path), ADA_WORD) == 0
    assert len(store.search(("user", "bob"), limit=1000)) == N
    store.close()


def test_purge_removes_embedding_cache_entries_of_the_erased_texts_only(tmp_path):
    store = SQLiteStore(tmp_path / "m.db", index={**_index(), "cache": True})
    store.put(("user", "ada"), "a", {"content": "ada text one"})
    store.put(("user", "bob"), "b", {"content": "bob text two"})
    store.search(("user",), query="a query")
    conn = store._connect()
    assert conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == 3
    report = store.purge([("user", "ada")])
    assert report.cache_entries == 2  # ada's text and the query
    kinds = conn.execute("SELECT kind FROM embedding_cache").fetchall()
    assert kinds == [("doc",)]
    store.close()


# -- PostgreSQL ----------------------------------------------------------------


@pytest.fixture(scope="module")
def own_pg():
    """A server of its own: its data directory holds only this module's rows,
    and it removes WAL segments instead of recycling them (so a switch and a
    checkpoint leave none of the erased rows in ``pg_wal``)."""
    from tests.postgres_server import start_server

    server = start_server({"wal_recycle": "off", "min_wal_size": "32MB"})
    try:
        yield server
    finally:
        server.stop()


def _pg_files(server, sub: str) -> list[Path]:
    return [Path(r) / f for r, _, fs in os.walk(server.pgdata / sub) for f in fs]


def _checkpoint(server, switch: bool = False) -> None:
    import psycopg

    with psycopg.connect(server.dsn, autocommit=True) as c:
        for _ in range(3 if switch else 1):
            if switch:
                c.execute("SELECT pg_switch_wal()")
            c.execute("CHECKPOINT")


def _pg_count(server, needle: bytes, sub: str = "base") -> int:
    n = 0
    for p in _pg_files(server, sub):
        with contextlib.suppress(OSError):  # a file the server removed meanwhile
            n += p.read_bytes().count(needle)
    return n


def test_postgres_purge_leaves_no_bytes_in_the_data_directory(own_pg):
    from langmem_ext import PostgresStore

    store = PostgresStore(own_pg.fresh_database(), index=_index())
    _fill(store)
    _checkpoint(own_pg)
    ada_vec = _vector_bytes(f"ada says {ADA_WORD.decode()}0 peanuts")
    assert _pg_count(own_pg, ADA_WORD) >= N and _pg_count(own_pg, ada_vec) >= 1
    dry = store.purge([("user", "ada")], dry_run=True)
    assert dry.namespaces == {("user", "ada"): N, ("user", "ada", "alpha"): N // 40}

    report = store.purge([("user", "ada")])
    _checkpoint(own_pg, switch=True)

    assert report.scrubbed and report.vectors == dry.vectors
    assert _pg_count(own_pg, ADA_WORD) == 0
    assert _pg_count(own_pg, ada_vec) == 0
    assert _pg_count(own_pg, ADA_WORD, "pg_wal") == 0
    assert _pg_count(own_pg, BOB_WORD) >= N
    assert store.search(("user", "bob"), query=f"{BOB_WORD.decode()}7", limit=3)[0].key == "bob7"
    assert len(store.search(("user", "bob"), limit=1000)) == N
    assert store.search(("user", "ada"), limit=10) == []
    store.close()


_PG_CRASH = """
import os, signal, sys
sys.path[:0] = {paths!r}
from langmem_ext import PostgresStore
from langmem_ext.stores.postgres import _purge
from tests.embeddings import WordEmbeddings
where = sys.argv[2]
real_delete, real_scrub = _purge.delete_steps, _purge.scrub_steps
def delete_steps(*a, **k):
    yield from real_delete(*a, **k)
    if where == "inside":
        os.kill(os.getpid(), signal.SIGKILL)
def scrub_steps(*a, **k):
    if where == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return (yield from real_scrub(*a, **k))
_purge.delete_steps, _purge.scrub_steps = delete_steps, scrub_steps
store = PostgresStore(sys.argv[1], index={{"dims": 64, "embed": WordEmbeddings(64),
                                          "fields": ["content"]}})
store.purge([("user", "ada")])
"""


@pytest.mark.parametrize("where", ["inside", "after"])
def test_postgres_purge_killed_midway_is_all_or_nothing(own_pg, where):
    from langmem_ext import PostgresStore

    dsn = own_pg.fresh_database()
    store = PostgresStore(dsn, index=_index())
    _fill(store)
    script = _PG_CRASH.format(paths=[str(ROOT), str(ROOT / "dev")])
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), dsn, where],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    left = len(store.search(("user", "ada"), limit=1000))
    assert left == (N + N // 40 if where == "inside" else 0)
    report = store.purge([("user", "ada")])
    assert sum(report.namespaces.values()) == (left if where == "inside" else 0)
    assert len(store.search(("user", "bob"), limit=1000)) == N
    store.close()


_WRITER = """
import sys
sys.path[:0] = {paths!r}
from langmem_ext import SQLiteStore
from tests.embeddings import WordEmbeddings
store = SQLiteStore(sys.argv[1], index={{"dims": 64, "embed": WordEmbeddings(64),
                                        "fields": ["content"]}})
for i in range(int(sys.argv[2])):
    store.put(("user", "carol"), f"c{{i}}", {{"content": f"carol writes {{i}}"}})
print("ok", flush=True)
"""


def test_sqlite_purge_beside_writers_in_threads_and_a_process(tmp_path):
    """Other users' writes during an erase (a thread on the same store object,
    a process on the same file) all land; the erased user is all gone."""
    import threading

    path = tmp_path / "m.db"
    store = SQLiteStore(path, index=_index())
    _fill(store)
    script = _WRITER.format(paths=[str(ROOT), str(ROOT / "dev")])
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(path), "150"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    written: list[str] = []

    def write() -> None:
        for i in range(150):
            store.put(("user", "bob"), f"late{i}", {"content": f"bob late note {i}"})
            written.append(f"late{i}")

    writer = threading.Thread(target=write)
    writer.start()
    report = store.purge([("user", "ada")])
    writer.join()
    assert proc.communicate(timeout=120)[0].strip() == b"ok"
    assert sum(report.namespaces.values()) == N + N // 40
    assert store.search(("user", "ada"), limit=1000) == []
    assert len(store.search(("user", "bob"), limit=1000)) == N + len(written) == N + 150
    assert len(store.search(("user", "carol"), limit=1000)) == 150
    assert store.search(("user", "carol"), query="carol writes 77", limit=1)[0].key == "c77"
    store.close()
    if not report.scrubbed:  # a reader held the WAL: the next open finishes (see _purge)
        SQLiteStore(path, index=_index()).setup()
    assert _count(_sqlite_files(path), ADA_WORD) == 0


def test_postgres_purge_on_a_store_partitioned_by_tenant(pg_server):
    from langmem_ext import PostgresStore

    store = PostgresStore(
        pg_server.fresh_schema(),
        index=_index(),
        partition_by_tenant=True,
        tenant_key=("{tenant}",),
    )
    store.put(("acme", "ada"), "a1", {"content": f"ada {ADA_WORD.decode()}"})
    store.put(("acme", "bob"), "b1", {"content": "bob note"})
    store.put(("globex", "ada"), "g1", {"content": "globex ada note"})
    report = store.purge([("acme", "ada")])
    assert report.namespaces == {("acme", "ada"): 1} and report.scrubbed
    assert store.get(("acme", "ada"), "a1") is None
    assert store.get(("acme", "bob"), "b1") is not None
    assert store.search(("globex",), query="ada note", limit=1)[0].key == "g1"
    store.close()
