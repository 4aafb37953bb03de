"""PostgresStore vs LangGraph's PostgresStore, on one embedded PostgreSQL server.

Identical items with precomputed random 384-dim vectors (the embed function is
a dict lookup, so embedding costs nothing), in 10 namespaces of 10 % each.
Measures put throughput (batches of 500), query latency (median, p95) over the
whole store and inside one 10 % namespace, recall@10 against exact numpy
search, and how many results each store returns inside the namespace.

LangGraph's store puts ~120 items/s here (one statement per item, HNSW kept
up to date), so loading it through ``batch()`` would take 14 minutes at 100k.
Its put throughput is measured through ``batch()`` on the first
``--lg-measured`` items (2,000); the rest are bulk-inserted into its tables in
SQL with its HNSW index dropped, and the index is then rebuilt with LangGraph's
own definition (same graph as incremental inserts would build, up to insertion
order). Every store is ``VACUUM ANALYZE``-d after loading (what autovacuum does
in steady state: visibility map for index-only scans, planner statistics).

    python benchmarks/bench_postgres.py --sizes 10000,100000 --out bench-results/postgres.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

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


def _ops(n: int) -> list[PutOp]:
    return [PutOp(("user", f"u{i % 10}"), f"k{i}", {"text": f"doc {i}", "i": i}) for i in range(n)]


def _vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def _lg_bulk_rest(dsn: str, docs: np.ndarray, start: int) -> None:
    """Items ``start..n`` straight into LangGraph's tables, HNSW rebuilt after."""
    n = len(docs)
    with psycopg.connect(dsn, autocommit=True) as conn:
        idx = conn.execute(
            "SELECT pg_get_indexdef('store_vectors_embedding_idx'::regclass)"
        ).fetchone()[0]
        conn.execute("DROP INDEX store_vectors_embedding_idx")
        for s in range(start, n, 5000):
            rng = range(s, min(n, s + 5000))
            prefixes = [f"user.u{i % 10}" for i in rng]
            keys = [f"k{i}" for i in rng]
            values = [json.dumps({"text": f"doc {i}", "i": i}) for i in rng]
            vecs = ["[" + ",".join(map(repr, docs[i].tolist())) + "]" for i in rng]
            with conn.transaction():
                conn.execute(
                    "INSERT INTO store (prefix, key, value) "
                    "SELECT * FROM unnest(%s::text[], %s::text[], %s::jsonb[])",
                    [prefixes, keys, values],
                )
                conn.execute(
                    "INSERT INTO store_vectors (prefix, key, field_name, embedding) "
                    "SELECT p, k, 'text', e::vector FROM unnest(%s::text[], %s::text[], "
                    "%s::text[]) AS d(p, k, e)",
                    [prefixes, keys, vecs],
                )
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(idx)


def _run_one(
    name: str,
    store: Any,
    dsn: str,
    docs: np.ndarray,
    queries: np.ndarray,
    measured: int | None = None,
    **kw: Any,
) -> dict:
    n = len(docs)
    ops = _ops(n if measured is None else min(n, measured))
    t = time.perf_counter()
    for s in range(0, len(ops), BATCH):
        store.batch(ops[s : s + BATCH])
    put_s = time.perf_counter() - t
    put_rate = round(len(ops) / put_s)
    if len(ops) < n:
        _lg_bulk_rest(dsn, docs, len(ops))
    _vacuum(dsn)
    ns_mask = np.arange(n) % 10 == 3
    res = {
        "store": name,
        "n": n,
        "put_items_per_s": put_rate,
        "put_measured_on": len(ops),
        "whole": _measure(store, ("user",), _exact(docs, queries, None), **kw),
        "namespace": _measure(store, ("user", "u3"), _exact(docs, queries, ns_mask), **kw),
    }
    print(f"  {name}: {res}", flush=True)
    return res


def run(server: PgServer, sizes: list[int], hnsw: bool, lg_measured: int) -> list[dict]:
    from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore

    results = []
    for n in sizes:
        docs, queries, table = _data(n)

        def embed(texts: list[str], table: dict = table) -> list[list[float]]:
            return [table[t] for t in texts]

        index = {"dims": DIMS, "embed": embed, "fields": ["text"], "cache": False}
        print(f"n={n}", flush=True)
        dsn = server.fresh_database()
        with PostgresStore.from_conn_string(dsn, index=index) as ours:
            results.append(_run_one("langmem_ext default", ours, dsn, docs, queries, mode="vector"))
        if hnsw:
            vi = {"kind": "hnsw", "ef_search": 100}
            dsn = server.fresh_database()
            with PostgresStore.from_conn_string(dsn, index=index, vector_index=vi) as ours:
                results.append(
                    _run_one("langmem_ext hnsw", ours, dsn, docs, queries, mode="vector")
                )
        lg_index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
        dsn = server.fresh_database()
        with LangGraphPostgresStore.from_conn_string(dsn, index=lg_index) as lg:
            lg.setup()
            results.append(_run_one("langgraph default", lg, dsn, docs, queries, lg_measured))
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
    ap.add_argument(
        "--lg-measured", type=int, default=2000, help="LangGraph items put through batch()"
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    server = start_server()
    try:
        t = time.perf_counter()
        results = run(server, sizes, args.hnsw, args.lg_measured)
        print()
        print(_table(results))
        print(f"\n(latency in ms; {N_QUERIES} queries; total {time.perf_counter() - t:.0f} s)")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"dims": DIMS, "cores": os.cpu_count(), "command": " ".join(sys.argv)}
        out.write_text(json.dumps({**meta, "results": results}, indent=2))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
