"""``erase`` measured: the byte scan before/after on both stores, a receipt of
a real run, and runs killed with SIGKILL at random moments.

For each store: two users with N memories each (Ada's carry a distinctive
word); the engine's ``erase`` of Ada; the database files (SQLite: the file,
its WAL, the vector segments; PostgreSQL: the data directory after a WAL
switch and checkpoints) scanned for Ada's word and for the bytes of one of
her vectors, before and after; Bob's memories counted and searched.

Then ``--kills`` runs: a child process starts the erase and is killed with
SIGKILL after a random delay (within the time an erase takes); the parent
checks that Ada's memories are all there or all gone (and the erasure record
there exactly when they are gone), runs the erase again, and checks that
nothing of Ada is left in the files and Bob's memories are intact.

Run: nice -n 10 python benchmarks/bench_erase.py --n 2000 --kills 20
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORD = "zanzibarquux"

CHILD = """
import sys
sys.path[:0] = {paths!r}
from bench_erase import engine_for
from langmem_ext.engine import MemoryContext
engine = engine_for(sys.argv[1], sys.argv[2])
print("start", flush=True)
engine.erase(MemoryContext("acme", user_id="ada"), confirm="ada")
print("done", flush=True)
"""


def embedder() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_reindex import Bag

    return Bag(64, 3)


def index() -> dict[str, Any]:
    return {"dims": 64, "embed": embedder(), "fields": ["content"]}


def engine_for(kind: str, where: str) -> Any:
    from langmem_ext.engine import MemoryEngine

    if kind == "sqlite":
        from langmem_ext import SQLiteStore

        return MemoryEngine(SQLiteStore(where, index=index()))
    from langmem_ext import PostgresStore

    return MemoryEngine(PostgresStore(where, index=index()))


def fill(engine: Any, n: int) -> None:
    from langmem_ext.engine import MemoryContext

    ada, bob = MemoryContext("acme", user_id="ada"), MemoryContext("acme", user_id="bob")
    engine.bulk_add(ada, [f"w{i} w{i + 7} {WORD}{i} w{i % 50}" for i in range(n)])
    engine.bulk_add(bob, [f"w{i} w{i + 3} flamingo{i} w{i % 40}" for i in range(n)])
    engine.store_fact(ada, "user", "city", f"Lives in {WORD}ville")


def vector_bytes() -> bytes:
    """16 bytes of the vector stored for one of Ada's memories (as the store
    writes it: float32, little endian)."""
    v = np.asarray(embedder().embed_documents([f"w0 w7 {WORD}0 w0"])[0], dtype="<f4")
    return v[:4].tobytes()


def files(kind: str, where: str, server: Any) -> list[Path]:
    if kind == "sqlite":
        seg = Path(f"{where}-vectors")
        extra = sorted(seg.iterdir()) if seg.exists() else []
        return [p for p in (Path(where), Path(f"{where}-wal"), *extra) if p.exists()]
    import psycopg

    with psycopg.connect(server.dsn, autocommit=True) as c:
        for _ in range(3):
            c.execute("SELECT pg_switch_wal()")
            c.execute("CHECKPOINT")
    return [Path(r) / f for r, _, fs in os.walk(server.pgdata) for f in fs]


def scan(paths: list[Path], needle: bytes) -> int:
    n = 0
    for p in paths:
        with contextlib.suppress(OSError):  # a file the server removed meanwhile
            n += p.read_bytes().count(needle)
    return n


def counts(engine: Any) -> tuple[int, int, bool]:
    store = engine.store
    ada = len(store.search(("tenant", "acme", "user", "ada"), limit=100_000))
    bob = len(store.search(("tenant", "acme", "user", "bob"), limit=100_000))
    record = bool(store.search(("tenant", "acme", "_meta", "_erasures", "log"), limit=10))
    return ada, bob, record


def new_place(kind: str, tmp: str, server: Any, i: int) -> str:
    if kind == "sqlite":
        return os.path.join(tmp, f"m{i}.db")
    return server.fresh_database()


def run(kind: str, n: int, kills: int, server: Any, tmp: str) -> dict[str, Any]:
    from langmem_ext.engine import MemoryContext

    out: dict[str, Any] = {"store": kind, "items_per_user": n}
    where = new_place(kind, tmp, server, 0)
    engine = engine_for(kind, where)
    fill(engine, n)
    engine.store.search(("tenant", "acme"), query="w1 w2", limit=5)
    needle, vec = WORD.encode(), vector_bytes()
    before = files(kind, where, server)
    out["before"] = {"word": scan(before, needle), "vector": scan(before, vec)}
    t = time.perf_counter()
    receipt = engine.erase(MemoryContext("acme", user_id="ada"), confirm="ada")
    out["erase_s"] = round(time.perf_counter() - t, 2)
    out["receipt"] = receipt.to_dict()
    after = files(kind, where, server)
    out["after"] = {"word": scan(after, needle), "vector": scan(after, vec)}
    ada, bob, _ = counts(engine)
    bob_hit = engine.search(MemoryContext("acme", user_id="bob"), "flamingo7", limit=1)
    out["after"].update(ada_items=ada, bob_items=bob, bob_search_ok=bob_hit[0].content.find(
        "flamingo7") >= 0)  # fmt: skip
    engine.store.close()
    tally = {"nothing_erased": 0, "all_erased": 0, "finished_first": 0, "violations": 0}
    script = CHILD.format(paths=[str(ROOT), str(ROOT / "dev"), str(ROOT / "benchmarks")])
    for i in range(kills):
        where = new_place(kind, tmp, server, i + 1)
        engine = engine_for(kind, where)
        fill(engine, n)
        total_ada = counts(engine)[0]
        engine.store.close()
        child = subprocess.Popen(
            [sys.executable, "-c", script, kind, where], cwd=ROOT, stdout=subprocess.PIPE
        )
        assert child.stdout is not None
        child.stdout.readline()  # "start": the store is open, the erase begins
        time.sleep(random.uniform(0, out["erase_s"] * 1.2))
        child.send_signal(signal.SIGKILL)
        rest = child.stdout.read().decode()
        child.wait()
        engine = engine_for(kind, where)
        ada, bob, record = counts(engine)
        if "done" in rest:
            tally["finished_first"] += 1
        elif ada == total_ada and not record:
            tally["nothing_erased"] += 1
        elif ada == 0 and record:
            tally["all_erased"] += 1
        else:
            tally["violations"] += 1
        engine.erase(MemoryContext("acme", user_id="ada"), confirm="ada")  # the rerun
        left = scan(files(kind, where, server), needle) if kind == "sqlite" else None
        ada, bob, record = counts(engine)
        if ada != 0 or bob != n or not record or left:
            tally["violations"] += 1
        engine.store.close()
    out["kill9"] = {"runs": kills, **tally}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    random.seed(1)
    tmp = tempfile.mkdtemp()
    results = []
    server = None
    try:
        for kind in args.stores.split(","):
            if kind == "postgres" and server is None:
                from langmem_ext_dev.postgres import start_embedded_postgres

                server = start_embedded_postgres({"wal_recycle": "off", "min_wal_size": "32MB"})
            results.append(run(kind, args.n, args.kills, server, tmp))
            print(json.dumps(results[-1], indent=1), flush=True)
    finally:
        if server is not None:
            server.stop()
    doc = {"results": results, "cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg()}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
