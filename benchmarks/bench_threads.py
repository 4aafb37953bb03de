"""Search latency of worker processes sharing the cores.

N worker processes each open the same SQLite store (offline embedder) and run
searches with queries no cache has seen: every search embeds its query and
scans. Prints the median and p95 per search for each thread setting and
worker count, side by side, with the machine's load.

    python benchmarks/bench_threads.py --workers 1,4 --searches 30
    python benchmarks/bench_threads.py --compare /path/to/other/checkout  # before/after

``--compare`` runs the same workers with another checkout of the package
first on ``PYTHONPATH`` (e.g. the release before), in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

_WORKER = r"""
import json, os, sys, time
from langmem_ext import SQLiteStore
store = SQLiteStore(sys.argv[1], index={"embed": "local", "fields": ["text"]})
tag, n = sys.argv[2], int(sys.argv[3])
for i in range(3):  # warm up: model load, first pages
    store.search(("docs",), query=f"warm up {tag} {i}", limit=10)
times = []
for i in range(n):
    t = time.perf_counter()
    store.search(("docs",), query=f"what did {tag} say about trip number {i}?", limit=10)
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps(times))
"""

# The environment as the user gave it (importing langmem_ext sets OMP_WAIT_POLICY
# in this process; the workers of the other checkout must not inherit that).
_ENV = dict(os.environ)

TOPICS = ["hiking", "cooking", "music", "travel", "work", "family", "books", "sports"]


def build(path: Path, n: int) -> None:
    from langgraph.store.base import PutOp

    from langmem_ext import SQLiteStore

    store = SQLiteStore(str(path), index={"embed": "local", "fields": ["text"]})
    ops = [
        PutOp(("docs", f"u{j % 10}"), f"k{j}", {"text": f"note {j} about {TOPICS[j % 8]}"})
        for j in range(n)
    ]
    for i in range(0, n, 200):
        store.batch(ops[i : i + 200])
    store.close()


def run(db: Path, workers: int, searches: int, env: dict[str, str]) -> list[float]:
    procs = [
        subprocess.Popen(
            # A fresh tag per worker and run: no query is ever in the embedding cache.
            [sys.executable, "-c", _WORKER, str(db), f"w{k}-{uuid.uuid4().hex[:8]}", str(searches)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(workers)
    ]
    times: list[float] = []
    for p in procs:
        out, _ = p.communicate(timeout=900)
        if p.returncode != 0:
            raise SystemExit(f"a worker failed (exit {p.returncode})")
        times += json.loads(out.strip().splitlines()[-1])
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,4")
    ap.add_argument("--searches", type=int, default=30)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--compare", help="another checkout to run first on PYTHONPATH")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    db = tmp / "store.db"
    t = time.perf_counter()
    build(db, args.items)
    print(f"store: {args.items} items, built in {time.perf_counter() - t:.1f} s")
    base = {k: v for k, v in _ENV.items() if k not in ("LANGMEM_EXT_THREADS",)}
    variants: list[tuple[str, dict[str, str]]] = []
    if args.compare:
        variants.append(("other checkout", {**base, "PYTHONPATH": args.compare}))
    variants += [
        ("this checkout (default)", base),
        ("this checkout, LANGMEM_EXT_THREADS=2", {**base, "LANGMEM_EXT_THREADS": "2"}),
    ]
    rows: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):  # alternate, so load drifts hit every variant
        for name, env in variants:
            for w in (int(x) for x in args.workers.split(",")):
                rows.setdefault((name, w), []).extend(run(db, w, args.searches, env))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    print("| variant | workers | median ms | p95 ms | searches |")
    print("|---|---|---|---|---|")
    for (name, w), times in rows.items():
        p95 = statistics.quantiles(times, n=20)[-1]
        print(f"| {name} | {w} | {statistics.median(times):.1f} | {p95:.1f} | {len(times)} |")


if __name__ == "__main__":
    main()
