"""Store speed: SQLiteStore vs LangGraph's InMemoryStore, side by side, one process.

Identical items and precomputed random 384-dim vectors (the embed function is
a dict lookup, so the store is measured, not the embedder). For each size:
put throughput (batches of 1,000; and single puts for SQLiteStore), query
latency (median, p95) over the whole store, inside one namespace holding 10 %
of the items, and with a filter; and whether the top 10 equal exact search.

    python benchmarks/bench_store.py --sizes 10000,100000 --out bench-results/store.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore

DIMS = 384
NAMESPACES = 10


class Lookup:
    """Embedding function returning precomputed vectors."""

    def __init__(self) -> None:
        self.vectors: dict[str, list[float]] = {}

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def make_data(n: int, n_queries: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIMS)).astype(np.float32)
    qvecs = rng.standard_normal((n_queries, DIMS)).astype(np.float32)
    items = [
        (("user", f"u{i % NAMESPACES}"), f"k{i}", {"text": f"doc {i}", "bucket": i % 20})
        for i in range(n)
    ]
    return items, vecs, qvecs


def exact_top(vecs, qvec, mask, k=10):
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = unit @ (qvec / np.linalg.norm(qvec))
    sims = np.where(mask, sims, -np.inf)
    top = np.argsort(-sims, kind="stable")[:k]
    return [f"k{i}" for i in top if np.isfinite(sims[i])]


def pct(values, p):
    return float(np.percentile(values, p))


def bench_store(name, store, items, vecs, qvecs, lookup, single_puts: bool):
    n = len(items)
    t = time.perf_counter()
    for start in range(0, n, 1000):
        store.batch([PutOp(ns, k, v) for ns, k, v in items[start : start + 1000]])
    put_rate = n / (time.perf_counter() - t)
    row = {"store": name, "n": n, "put_per_s": put_rate}
    if single_puts:
        t = time.perf_counter()
        for i in range(500):
            store.put(("single",), f"s{i}", {"text": f"doc {i}", "bucket": 0})
        row["single_put_per_s"] = 500 / (time.perf_counter() - t)
        for i in range(500):
            store.delete(("single",), f"s{i}")
    buckets = np.array([v["bucket"] for _, _, v in items])
    ns_idx = np.array([int(ns[1][1:]) for ns, _, _ in items])
    cases = {
        "whole": ((), None, np.ones(n, dtype=bool)),
        "namespace_10pct": (("user", "u3"), None, ns_idx == 3),
        "filter_bucket_lt_10": ((), {"bucket": {"$lt": 10}}, buckets < 10),
    }
    budget = 60.0 if n > 20000 else 20.0  # seconds per case for slow stores
    for case, (prefix, flt, mask) in cases.items():
        lat, exact = [], 0
        t_case = time.perf_counter()
        for qi, qvec in enumerate(qvecs):
            text = f"query {qi}"
            lookup.vectors[text] = qvec.tolist()
            kwargs = {"query": text, "filter": flt, "limit": 10}
            if isinstance(store, SQLiteStore):
                kwargs["mode"] = "vector"
            t = time.perf_counter()
            got = store.search(prefix, **kwargs)
            lat.append((time.perf_counter() - t) * 1000)
            if [r.key for r in got] == exact_top(vecs, qvec, mask):
                exact += 1
            if time.perf_counter() - t_case > budget and qi >= 4:
                break
        row[case] = {
            "median_ms": statistics.median(lat),
            "p95_ms": pct(lat, 95),
            "queries": len(lat),
            "identical_to_exact": exact / len(lat),
        }
    if isinstance(store, SQLiteStore):
        lat = []
        for qi in range(min(len(qvecs), 50)):
            text = f"query {qi}"
            t = time.perf_counter()
            store.search(("user", "u3"), query=text, limit=10)
            lat.append((time.perf_counter() - t) * 1000)
        row["namespace_10pct_hybrid"] = {
            "median_ms": statistics.median(lat),
            "p95_ms": pct(lat, 95),
        }
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        items, vecs, qvecs = make_data(n, args.queries)
        for name in ("SQLiteStore", "InMemoryStore"):
            lookup = Lookup()
            for (_, _key, v), vec in zip(items, vecs, strict=True):
                lookup.vectors[v["text"]] = vec.tolist()
            index = {"dims": DIMS, "embed": lookup, "fields": ["text"]}
            with tempfile.TemporaryDirectory() as tmp:
                if name == "SQLiteStore":
                    store = SQLiteStore(Path(tmp) / "bench.db", index={**index, "cache": False})
                    store.setup()
                else:
                    store = InMemoryStore(index=index)
                print(f"[{name} n={n}] running...", file=sys.stderr, flush=True)
                rows.append(
                    bench_store(name, store, items, vecs, qvecs, lookup, name == "SQLiteStore")
                )
                if name == "SQLiteStore":
                    store.close()
    print_table(rows)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"cpu_count": os.cpu_count(), "python": sys.version.split()[0]}
        args.out.write_text(json.dumps({"machine": meta, "rows": rows}, indent=2))
    return 0


def print_table(rows):
    head = (
        f"{'store':<14}{'items':>8}{'put/s':>10}{'1-put/s':>9}"
        f"{'whole med':>11}{'p95':>8}{'ns10% med':>11}{'p95':>8}{'filter med':>12}{'p95':>8}"
        f"{'exact':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        exact = min(
            r[c]["identical_to_exact"] for c in ("whole", "namespace_10pct", "filter_bucket_lt_10")
        )
        print(
            f"{r['store']:<14}{r['n']:>8}{r['put_per_s']:>10.0f}"
            f"{r.get('single_put_per_s', float('nan')):>9.0f}"
            f"{r['whole']['median_ms']:>11.2f}{r['whole']['p95_ms']:>8.2f}"
            f"{r['namespace_10pct']['median_ms']:>11.2f}{r['namespace_10pct']['p95_ms']:>8.2f}"
            f"{r['filter_bucket_lt_10']['median_ms']:>12.2f}{r['filter_bucket_lt_10']['p95_ms']:>8.2f}"
            f"{exact:>7.2f}"
        )
    for r in rows:
        if "namespace_10pct_hybrid" in r:
            h = r["namespace_10pct_hybrid"]
            print(
                f"{r['store']} n={r['n']}: hybrid search in a 10% namespace: "
                f"median {h['median_ms']:.2f} ms, p95 {h['p95_ms']:.2f} ms"
            )
    print("latencies in ms; exact = share of queries whose top 10 equals exact search (worst case)")


if __name__ == "__main__":
    raise SystemExit(main())
