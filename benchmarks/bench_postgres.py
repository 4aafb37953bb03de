"""PostgresStore vs LangGraph's PostgresStore, on one embedded PostgreSQL server.

Identical items with precomputed random 384-dim vectors (the embed function is
a dict lookup, so embedding costs nothing), in 10 namespaces of 10 % each.
Measures put throughput (batches of 500), query latency (median, p95) over the
whole store and inside one 10 % namespace, recall@10 against exact numpy
search, and how many results each store returns inside the namespace.

    python benchmarks/bench_postgres.py --sizes 10000,100000 --out bench-results/postgres.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langgraph.store.base import PutOp  # noqa: E402

from langmem_ext.stores.postgres import PostgresStore  # noqa: E402
from tests.postgres_server import PgServer, start_server  # noqa: E402

DIMS = 384
N_QUERIES = 50
BATCH = 500


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict[str, list[float]]]:
    rng = np.random.default_rng(seed)
    docs = rng.standard_normal((n, DIMS)).astype(np.float32)
    queries = rng.standard_normal((N_QUERIES, DIMS)).astype(np.float32)
    table = {f"doc {i}": v.tolist() for i, v in enumerate(docs)}
    table.update({f"query {j}": v.tolist() for j, v in enumerate(queries)})
    return docs, queries, table


def _exact(docs: np.ndarray, queries: np.ndarray, mask: np.ndarray | None) -> list[set[str]]:
    unit = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    out = []
    for q in queries:
        sims = unit @ (q / np.linalg.norm(q))
        if mask is not None:
            sims = np.where(mask, sims, -9.0)
        out.append({f"k{i}" for i in np.argsort(-sims)[:10]})
    return out


def _measure(store: Any, prefix: tuple[str, ...], truth: list[set[str]], **kw: Any) -> dict:
    for j in range(3):  # warm caches and plans
        store.search(prefix, query=f"query {j}", limit=10, **kw)
    lat, recall, counts = [], [], []
    for j in range(N_QUERIES):
        t = time.perf_counter()
        got = store.search(prefix, query=f"query {j}", limit=10, **kw)
        lat.append((time.perf_counter() - t) * 1000)
        counts.append(len(got))
        recall.append(len(truth[j] & {r.key for r in got}) / 10)
    lat.sort()
    return {
        "median_ms": round(statistics.median(lat), 2),
        "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2),
        "recall@10": round(float(np.mean(recall)), 3),
        "avg_results": round(float(np.mean(counts)), 2),
    }


def _run_one(name: str, store: Any, docs: np.ndarray, queries: np.ndarray, **kw: Any) -> dict:
    n = len(docs)
    ops = [PutOp(("user", f"u{i % 10}"), f"k{i}", {"text": f"doc {i}", "i": i}) for i in range(n)]
    t = time.perf_counter()
    for s in range(0, n, BATCH):
        store.batch(ops[s : s + BATCH])
    put_s = time.perf_counter() - t
    ns_mask = np.arange(n) % 10 == 3
    res = {
        "store": name,
        "n": n,
        "put_items_per_s": round(n / put_s),
        "whole": _measure(store, ("user",), _exact(docs, queries, None), **kw),
        "namespace": _measure(store, ("user", "u3"), _exact(docs, queries, ns_mask), **kw),
    }
    print(f"  {name}: {res}", flush=True)
    return res


def run(server: PgServer, sizes: list[int], hnsw: bool) -> list[dict]:
    from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore

    results = []
    for n in sizes:
        docs, queries, table = _data(n)

        def embed(texts: list[str]) -> list[list[float]]:
            return [table[t] for t in texts]

        index = {"dims": DIMS, "embed": embed, "fields": ["text"], "cache": False}
        print(f"n={n}", flush=True)
        with PostgresStore.from_conn_string(server.fresh_database(), index=index) as ours:
            results.append(_run_one("langmem_ext exact", ours, docs, queries, mode="vector"))
        if hnsw:
            vi = {"kind": "hnsw", "ef_search": 100}
            dsn = server.fresh_database()
            with PostgresStore.from_conn_string(dsn, index=index, vector_index=vi) as ours:
                results.append(_run_one("langmem_ext hnsw", ours, docs, queries, mode="vector"))
        lg_index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
        with LangGraphPostgresStore.from_conn_string(server.fresh_database(), index=lg_index) as lg:
            lg.setup()
            results.append(_run_one("langgraph default", lg, docs, queries))
    return results


def _table(results: list[dict]) -> str:
    head = (
        f"{'store':<20}{'n':>8}{'put/s':>9}"
        f"{'all med':>9}{'all p95':>9}{'all R@10':>9}"
        f"{'ns med':>8}{'ns p95':>8}{'ns R@10':>9}{'ns avg#':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        w, s = r["whole"], r["namespace"]
        lines.append(
            f"{r['store']:<20}{r['n']:>8}{r['put_items_per_s']:>9}"
            f"{w['median_ms']:>9}{w['p95_ms']:>9}{w['recall@10']:>9}"
            f"{s['median_ms']:>8}{s['p95_ms']:>8}{s['recall@10']:>9}{s['avg_results']:>8}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--out", default="bench-results/postgres.json")
    ap.add_argument("--hnsw", action="store_true", help="also run our store with HNSW")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server = start_server()
    try:
        t = time.perf_counter()
        results = run(server, sizes, args.hnsw)
        print()
        print(_table(results))
        print(f"\n(latency in ms; {N_QUERIES} queries; total {time.perf_counter() - t:.0f} s)")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"dims": DIMS, "results": results}, indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
