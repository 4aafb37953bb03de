"""Switching a store's embedder online: ``reindex`` on a store of N items
while a thread searches throughout.

Measures, for vector searches of one namespace holding every item:

* R@10 of the store's search against an exact search (numpy, every vector of
  the space in use) before the rebuild, during it (the old space answers) and
  after the switch (the new space);
* the searches' latency p50 / p99 before and during the rebuild;
* the rebuild's wall time, and the switch's.

The embedders are bags of words over a fixed vocabulary (deterministic,
offline, fast): the old one of ``--old-dims`` dimensions, the new one of
``--new-dims``, so the switch changes the dimension count.

Run: nice -n 10 python benchmarks/bench_reindex.py --store sqlite --n 100000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

VOCAB = [f"w{i}" for i in range(5000)]


class Bag(Embeddings):
    """Sum of fixed random word vectors, normalized."""

    def __init__(self, dims: int, seed: int) -> None:
        self.dims = dims
        self.model_id = f"bag-{dims}-{seed}"
        rng = np.random.default_rng(seed)
        self.table = {w: rng.standard_normal(dims).astype(np.float32) for w in VOCAB}

    def _one(self, text: str) -> list[float]:
        v = np.zeros(self.dims, dtype=np.float32)
        for w in re.findall(r"w\d+", text):
            v += self.table[w]
        n = float(np.linalg.norm(v))
        return (v / n if n else v).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def texts(n: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    # Zipf-like word choice: some words are common, most rare.
    p = 1.0 / np.arange(1, len(VOCAB) + 1) ** 0.8
    p /= p.sum()
    words = rng.choice(len(VOCAB), size=(n, 8), p=p)
    return [" ".join(VOCAB[j] for j in row) for row in words]


def exact_top(matrix: np.ndarray, keys: list[str], q: np.ndarray, k: int = 10) -> set[str]:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    return {keys[i] for i in top}


def percentile(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def open_store(kind: str, index: dict[str, Any], path: str) -> Any:
    if kind == "sqlite":
        from langmem_ext import SQLiteStore

        return SQLiteStore(path, index=index)
    from langmem_ext import PostgresStore

    return PostgresStore(path, index=index)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--old-dims", type=int, default=128)
    ap.add_argument("--new-dims", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    old, new = Bag(args.old_dims, 1), Bag(args.new_dims, 2)
    ns = ("bench",)
    docs = texts(args.n)
    keys = [f"k{i}" for i in range(args.n)]
    server = None
    tmp = tempfile.mkdtemp()
    if args.store == "sqlite":
        where = os.path.join(tmp, "bench.db")
    else:
        from langmem_ext_dev.postgres import start_embedded_postgres

        server = start_embedded_postgres()
        where = server.fresh_database()
    try:
        index_old = {"dims": old.dims, "embed": old, "fields": ["content"]}
        index_new = {"dims": new.dims, "embed": new, "fields": ["content"]}
        store = open_store(args.store, index_old, where)
        t0 = time.perf_counter()
        for start in range(0, args.n, 2000):
            store.batch(
                [
                    PutOp(ns, keys[i], {"content": docs[i]})
                    for i in range(start, min(start + 2000, args.n))
                ]
            )
        load_s = time.perf_counter() - t0
        queries = texts(args.queries, seed=11)
        queries = [" ".join(q.split()[:3]) for q in queries]
        m_old = np.asarray(old.embed_documents(docs), dtype=np.float32)
        m_new = np.asarray(new.embed_documents(docs), dtype=np.float32)
        truth_old = [exact_top(m_old, keys, np.asarray(old.embed_query(q))) for q in queries]
        truth_new = [exact_top(m_new, keys, np.asarray(new.embed_query(q))) for q in queries]

        def search(qi: int) -> tuple[float, set[str]]:
            t = time.perf_counter()
            hits = store.search(ns, query=queries[qi], mode="vector", limit=10)
            return time.perf_counter() - t, {h.key for h in hits}

        def recall(found: list[tuple[int, set[str]]], truth: list[set[str]]) -> float:
            return float(np.mean([len(f & truth[qi]) / 10 for qi, f in found])) if found else 0.0

        for qi in range(min(20, len(queries))):  # warm (segments mapped, caches)
            search(qi)
        before = [search(qi) for qi in range(len(queries))]
        before_lat = [t for t, _ in before]
        before_r = recall([(qi, f) for qi, (_, f) in enumerate(before)], truth_old)

        phase = {"switching": False}
        during: list[tuple[float, int, set[str]]] = []
        stop = threading.Event()

        def loop() -> None:
            qi = 0
            while not stop.is_set():
                switching = phase["switching"]
                t, f = search(qi % len(queries))
                if not switching and not phase["switching"]:
                    during.append((t, qi % len(queries), f))
                qi += 1

        # The switch's start and end, seen from the store's own steps.
        if args.store == "sqlite":
            from langmem_ext.stores.sqlite import _reindex as mod

            real = mod.switch

            def switch(*a: Any, **k: Any) -> Any:
                phase["switching"] = True
                phase["switch_start"] = time.perf_counter()
                out = real(*a, **k)
                return out

            mod.switch = switch
        else:
            from langmem_ext.stores.postgres import _reindex as mod

            real_pg = mod.switch_steps

            def switch_steps(*a: Any, **k: Any) -> Any:
                phase["switching"] = True
                phase["switch_start"] = time.perf_counter()
                return (yield from real_pg(*a, **k))

            mod.switch_steps = switch_steps
        reader = threading.Thread(target=loop)
        ticks: list[tuple[float, int, int]] = []
        t0 = time.perf_counter()
        reader.start()
        out = store.reindex(
            index_new,
            batch_size=args.batch_size,
            progress=lambda d, t: ticks.append((time.perf_counter() - t0, d, t)),
        )
        wall = time.perf_counter() - t0
        switch_s = time.perf_counter() - phase.get("switch_start", time.perf_counter())
        stop.set()
        reader.join()
        after = [search(qi) for qi in range(len(queries))]
        result = {
            "store": args.store,
            "items": args.n,
            "old_dims": old.dims,
            "new_dims": new.dims,
            "batch_size": args.batch_size,
            "load_s": round(load_s, 1),
            "reindex": out,
            "reindex_wall_s": round(wall, 1),
            "switch_s": round(switch_s, 2),
            "recall_at_10": {
                "before": round(before_r, 4),
                "during": round(recall([(qi, f) for _, qi, f in during], truth_old), 4),
                "after": round(recall([(qi, f) for qi, (_, f) in enumerate(after)], truth_new), 4),
            },
            "searches_during": len(during),
            "latency_ms": {
                "before_p50": round(1000 * percentile(before_lat, 50), 2),
                "before_p99": round(1000 * percentile(before_lat, 99), 2),
                "during_p50": round(1000 * percentile([t for t, _, _ in during], 50), 2),
                "during_p99": round(1000 * percentile([t for t, _, _ in during], 99), 2),
                "after_p50": round(1000 * percentile([t for t, _ in after], 50), 2),
                "after_p99": round(1000 * percentile([t for t, _ in after], 99), 2),
            },
            "machine": {
                "cpus": os.cpu_count(),
                "loadavg_1_5_15_at_end": [round(x, 2) for x in os.getloadavg()],
                "python": platform.python_version(),
                "nice": os.nice(0),
            },
        }
        print(json.dumps(result, indent=1))
        if args.out:
            Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        store.close()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
