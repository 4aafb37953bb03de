"""The crash loop: a writer process is killed (SIGKILL) at random moments while
it writes batches with vectors to one SQLite file; after every kill the file
opens, passes SQLite's integrity check, holds every batch the writer saw
acknowledged, holds each batch whole or not at all, and searches by vector
and keyword still find the acknowledged items."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from langmem_ext import SQLiteStore

from .conftest import SCALE

BATCH = 40
WRITER = textwrap.dedent(
    """
    import sys
    from langgraph.store.base import PutOp
    from langmem_ext import SQLiteStore
    from tests.embeddings import WordEmbeddings
    index = {"dims": 32, "embed": WordEmbeddings(32), "fields": ["content"]}
    store = SQLiteStore(sys.argv[1], index=index)
    start, size = int(sys.argv[2]), int(sys.argv[3])
    for b in range(start, start + 10_000):
        ops = [PutOp(("crash", f"b{b}"), f"i{i}", {"content": f"batch{b} item{i} apples", "b": b})
               for i in range(size)]
        store.batch(ops)
        print(b, flush=True)  # acknowledged: the batch call returned
    """
)


def _batches(store: SQLiteStore) -> dict[int, int]:
    counts: dict[int, int] = {}
    for ns in store.list_namespaces(prefix=("crash",), limit=100_000):
        counts[int(ns[1][1:])] = len(store.search(ns, limit=10_000))
    return counts


def test_kill_9_loop_loses_no_acknowledged_batch_and_tears_none(tmp_path: Path, tally):
    t = tally("kill -9 of a writer mid-batch (SQLite, vectors)")
    path = tmp_path / "crash.db"
    rng = random.Random(7)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    acked: set[int] = set()
    next_batch = 0
    for _ in range(5 * SCALE):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(next_batch), str(BATCH)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=root,
            env=env,
        )
        # kill after the writer has acknowledged a few batches, at a random moment
        wanted = rng.randint(1, 4)
        seen = 0
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while seen < wanted and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.add(int(line))
            seen += 1
        time.sleep(rng.random() * 0.05)
        proc.send_signal(signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
        acked.update(int(x) for x in rest.split())
        assert seen == wanted, err[-2000:]
        next_batch = max(acked) + 2  # the batch after the last ack may be partly written
        t.case()
        with SQLiteStore(path, index={"dims": 32, "embed": _embed(), "fields": ["content"]}) as s:
            ok = s._connect().execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                t.violation(f"integrity check: {ok}")
            counts = _batches(s)
            for b in acked:
                if counts.get(b) != BATCH:
                    t.violation(f"acknowledged batch {b} has {counts.get(b)} of {BATCH} items")
            for b, n in counts.items():
                if n != BATCH:
                    t.violation(f"batch {b} is torn: {n} of {BATCH} items")
            last = max(acked)
            hits = s.search(("crash", f"b{last}"), query=f"batch{last} item3 apples", limit=3)
            if not hits or hits[0].key != "i3":
                t.violation(f"search after the kill: {[h.key for h in hits]}")


def _embed():
    from tests.embeddings import WordEmbeddings

    return WordEmbeddings(32)
