"""PostgresStore vs LangGraph's PostgresStore, on one throwaway PostgreSQL server.

Two benchmarks, each printing both stores side by side:

``search``: identical items with precomputed 384-dim vectors (the embed
function is a table lookup, so embedding costs nothing): ``clustered``
vectors shaped like real sentence embeddings (a shared direction, 1,000
topics, per-text noise; random pairs have cosine ~0.75) and uniform
``random`` ones, reported separately. Layout: 10 % of the items in one
namespace ``("user", "big")``, one item alone in ``("user", "solo")``, the rest
in one-user-one-namespace fashion, ~9 items in each of ``n/10`` namespaces
``("user", "u…")``. Queries (``mode="vector"``, 10 results): the whole store,
the whole store with a filter passing 10 % (``{"b": 3}``), the 10 %
namespace, the one-item namespace. Latency median/p95 and recall@10 against
exact numpy search. Our store is loaded through ``batch()`` (put rate
measured over its first ``--measure-puts`` items, HNSW index in place), the
rest bulk-loaded with the HNSW index dropped and rebuilt after (build time
reported). LangGraph's store (default HNSW) is loaded in bulk into its own
tables (its ``batch()`` puts ~300 items/s) up to ``--lg-max`` items. Every
store is ``VACUUM ANALYZE``-d after loading.

``concurrency``: ``--calls`` concurrent calls fired at once with
``asyncio.gather`` at each store's ``AsyncPostgresStore`` opened with its
defaults, over 1,000 namespaces: ``mixed`` (a third each ``aput``, ``aget``,
``asearch`` with a filter) and ``reads`` (half ``aget``, half ``asearch``);
wall time, calls/s and errors.

    python benchmarks/bench_postgres.py search --sizes 10000,100000,1000000
    python benchmarks/bench_postgres.py concurrency --calls 60000

Runs above 100k items take minutes and both cores: run them under
``flock /tmp/lmx-heavy.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
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
from langmem_ext_dev.postgres import EmbeddedPostgres, start_embedded_postgres  # noqa: E402

from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore  # noqa: E402

DIMS = 384
N_QUERIES = 50
BATCH = 1000
SERVER = {"shared_buffers": "3GB", "maintenance_work_mem": "2GB", "effective_cache_size": "8GB"}

# -- data ----------------------------------------------------------------------


def _unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def make_vectors(kind: str, n: int, n_queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 384)`` unit document vectors and ``(n_queries, 384)`` queries."""
    rng = np.random.default_rng(seed)
    qrng = np.random.default_rng(seed + 1)
    if kind == "random":
        return (
            _unit(rng.standard_normal((n, DIMS), dtype=np.float32)),
            _unit(qrng.standard_normal((n_queries, DIMS), dtype=np.float32)),
        )
    mean = _unit(rng.standard_normal((1, DIMS)))[0]
    topics = _unit(rng.standard_normal((1000, DIMS)))

    def sample(m: int, r: np.random.Generator) -> np.ndarray:
        out = np.empty((m, DIMS), dtype=np.float32)
        for a in range(0, m, 65536):
            b = min(m, a + 65536)
            t = r.integers(0, len(topics), b - a)
            noise = _unit(r.standard_normal((b - a, DIMS)))
            out[a:b] = _unit(1.7 * mean + 0.75 * topics[t] + 0.65 * noise)
        return out

    return sample(n, rng), sample(n_queries, qrng)


def namespace_of(i: int, n: int) -> tuple[str, ...]:
    big = n // 10
    if i < big:
        return ("user", "big")
    if i == big:
        return ("user", "solo")
    return ("user", f"u{i % max(1, n // 10 - 1)}")


def _value(i: int) -> dict[str, Any]:
    return {"text": f"doc {i}", "i": i, "b": i % 10}


# -- search benchmark ----------------------------------------------------------

QUERIES: dict[str, dict[str, Any]] = {
    "whole": {"prefix": ("user",), "filter": None},
    "filtered": {"prefix": ("user",), "filter": {"b": 3}},
    "ns10": {"prefix": ("user", "big"), "filter": None},
    "solo": {"prefix": ("user", "solo"), "filter": None},
}


def _masks(n: int) -> dict[str, np.ndarray]:
    idx = np.arange(n)
    return {
        "whole": np.ones(n, dtype=bool),
        "filtered": idx % 10 == 3,
        "ns10": idx < n // 10,
        "solo": idx == n // 10,
    }


def _truth(docs: np.ndarray, queries: np.ndarray, mask: np.ndarray) -> list[set[str]]:
    keys = np.flatnonzero(mask)
    sub = docs[keys]
    out = []
    for q in queries:
        sims = sub @ q
        top = keys[np.argsort(-sims)[:10]]
        out.append({f"k{i}" for i in top})
    return out


def _measure(store: Any, name: str, truth: list[set[str]], ours: bool) -> dict[str, Any]:
    spec = QUERIES[name]
    kw: dict[str, Any] = {"limit": 10, "filter": spec["filter"]}
    if ours:
        kw["mode"] = "vector"
    for j in range(3):  # warm caches and plans
        store.search(spec["prefix"], query=f"query {j}", **kw)
    lat, recall, counts = [], [], []
    for j in range(N_QUERIES):
        t = time.perf_counter()
        got = store.search(spec["prefix"], query=f"query {j}", **kw)
        lat.append((time.perf_counter() - t) * 1000)
        expected = truth[j]
        recall.append(len(expected & {r.key for r in got}) / len(expected))
        counts.append(len(got))
    lat.sort()
    return {
        "median_ms": round(statistics.median(lat), 2),
        "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2),
        "recall@10": round(float(np.mean(recall)), 4),
        "avg_results": round(float(np.mean(counts)), 2),
    }


def _vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def _bulk(conn: psycopg.Connection[Any], sql: str, rows: list[list[Any]]) -> None:
    with conn.transaction():
        conn.execute(sql, rows)


def _load_ours(
    store: PostgresStore, dsn: str, docs: np.ndarray, measure: int
) -> tuple[int, float | None]:
    """Items through ``batch()`` (timed) up to ``measure``; the rest with the
    HNSW index dropped, then rebuilt (timed), as a bulk migration would."""
    n = len(docs)
    first = min(n, measure)
    t = time.perf_counter()
    for s in range(0, first, BATCH):
        store.batch(
            [PutOp(namespace_of(i, n), f"k{i}", _value(i)) for i in range(s, min(first, s + BATCH))]
        )
    rate = round(first / (time.perf_counter() - t))
    if first == n:
        return rate, None
    with psycopg.connect(dsn, autocommit=True) as conn:
        idx = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'lmx_vectors_hnsw%'"
        ).fetchall()
        for name, _ in idx:
            conn.execute(f"DROP INDEX {name}")
    for s in range(first, n, BATCH):
        store.batch(
            [PutOp(namespace_of(i, n), f"k{i}", _value(i)) for i in range(s, min(n, s + BATCH))]
        )
    t = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        for _, definition in idx:
            conn.execute(definition)
    return rate, round(time.perf_counter() - t, 1)


def _load_langgraph(dsn: str, docs: np.ndarray) -> float:
    """Bulk rows into LangGraph's tables, its HNSW index rebuilt after (timed)."""
    n = len(docs)
    with psycopg.connect(dsn, autocommit=True) as conn:
        idx = conn.execute(
            "SELECT pg_get_indexdef('store_vectors_embedding_idx'::regclass)"
        ).fetchone()[0]
        conn.execute("DROP INDEX store_vectors_embedding_idx")
        for s in range(0, n, 5000):
            rng = range(s, min(n, s + 5000))
            prefixes = [".".join(namespace_of(i, n)) for i in rng]
            keys = [f"k{i}" for i in rng]
            values = [json.dumps(_value(i)) for i in rng]
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
        t = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute(idx)
        return round(time.perf_counter() - t, 1)


def _drop(server: EmbeddedPostgres, dsn: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def run_search(
    server: EmbeddedPostgres, sizes: list[int], kinds: list[str], args: Any
) -> list[dict]:
    from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore

    results = []
    for n in sizes:
        for kind in kinds:
            docs, queries = make_vectors(kind, n, N_QUERIES)
            table = {"docs": docs, "queries": queries}

            def embed(texts: list[str], t: dict = table) -> np.ndarray:
                return np.stack(
                    [t["docs" if s[0] == "d" else "queries"][int(s.split()[1])] for s in texts]
                )

            masks = _masks(n)
            truth = {name: _truth(docs, queries, masks[name]) for name in QUERIES}
            index = {"dims": DIMS, "embed": embed, "fields": ["text"], "cache": False}
            print(f"{kind} n={n}", flush=True)
            for variant in args.variants.split(","):
                dsn = server.fresh_database()
                vi = {"kind": "exact"} if variant == "exact" else None
                with PostgresStore.from_conn_string(dsn, index=index, vector_index=vi) as ours:
                    rate, build = _load_ours(ours, dsn, docs, args.measure_puts)
                    _vacuum(dsn)
                    name = "langmem_ext" + ("" if variant == "hnsw" else f" {variant}")
                    row = {"store": name, "kind": kind, "n": n, "put_per_s": rate}
                    row["hnsw_build_s"] = build
                    for q in QUERIES:
                        row[q] = _measure(ours, q, truth[q], ours=True)
                    print(f"  {row}", flush=True)
                    results.append(row)
                last = (n, kind, variant) == (sizes[-1], kinds[-1], "hnsw")
                if not (last and args.keep):
                    _drop(server, dsn)  # a 1M-item database takes ~4 GB
            if n > args.lg_max:
                continue
            dsn = server.fresh_database()
            lg_index = {"dims": DIMS, "embed": lambda t: embed(t).tolist(), "fields": ["text"]}
            with LangGraphPostgresStore.from_conn_string(dsn, index=lg_index) as lg:
                lg.setup()
                build = _load_langgraph(dsn, docs)
                _vacuum(dsn)
                row = {"store": "LangGraph", "kind": kind, "n": n, "put_per_s": None}
                row["hnsw_build_s"] = build
                for name in QUERIES:
                    row[name] = _measure(lg, name, truth[name], ours=False)
                print(f"  {row}", flush=True)
                results.append(row)
            _drop(server, dsn)
    return results


def search_table(results: list[dict]) -> str:
    head = f"{'store':<18}{'vectors':<10}{'n':>9}{'put/s':>7}"
    for name in QUERIES:
        head += f"{name + ' ms':>13}{'R@10':>7}"
    lines = [head, "-" * len(head)]
    for r in results:
        line = f"{r['store']:<18}{r['kind']:<10}{r['n']:>9}{r['put_per_s'] or '-':>7}"
        for name in QUERIES:
            line += f"{r[name]['median_ms']:>13}{r[name]['recall@10']:>7}"
        lines.append(line)
    return "\n".join(lines)


# -- concurrency benchmark -----------------------------------------------------


WORKLOADS = ("mixed", "reads")


async def _fire(store: Any, calls: int, workload: str = "mixed") -> dict[str, Any]:
    """``mixed``: a third each aput, aget, asearch; ``reads``: half aget, half asearch."""
    for u in range(1000):  # something to get and search
        await store.aput(("user", f"u{u}"), "seed", {"n": u, "b": u % 3})
    coros: list[Any] = []
    for c in range(calls):
        ns = ("user", f"u{c % 1000}")
        kind = c % 3 if workload == "mixed" else 1 + c % 2
        if kind == 0:
            coros.append(store.aput(ns, f"k{c}", {"n": c, "b": c % 3}))
        elif kind == 1:
            coros.append(store.aget(ns, "seed"))
        else:
            coros.append(store.asearch(ns, filter={"b": 1}, limit=10))
    t = time.perf_counter()
    out = await asyncio.gather(*coros, return_exceptions=True)
    wall = time.perf_counter() - t
    errors = [o for o in out if isinstance(o, BaseException)]
    first = next((str(e).splitlines()[0][:120] for e in errors), None)
    return {
        "workload": workload,
        "calls": len(coros),
        "wall_s": round(wall, 2),
        "calls_per_s": round(len(coros) / wall),
        "errors": len(errors),
        "first_error": first,
    }


async def _concurrency(server: EmbeddedPostgres, calls: int) -> list[dict]:
    from langgraph.store.postgres import AsyncPostgresStore as LangGraphAsyncStore

    results = []
    for workload in WORKLOADS:
        dsn = server.fresh_database()
        async with LangGraphAsyncStore.from_conn_string(dsn) as lg:
            await lg.setup()
            row = await _fire(lg, calls, workload)
        results.append({"store": "LangGraph AsyncPostgresStore", **row})
        print(f"  {results[-1]}", flush=True)
        dsn = server.fresh_database()
        async with AsyncPostgresStore.from_conn_string(dsn) as ours:
            row = await _fire(ours, calls, workload)
        results.append({"store": "langmem_ext AsyncPostgresStore", **row})
        print(f"  {results[-1]}", flush=True)
    return results


def concurrency_table(results: list[dict]) -> str:
    head = f"{'store':<32}{'workload':<10}{'calls':>7}{'wall s':>8}{'calls/s':>9}{'errors':>8}"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(
            f"{r['store']:<32}{r['workload']:<10}{r['calls']:>7}{r['wall_s']:>8}"
            f"{r['calls_per_s']:>9}{r['errors']:>8}"
        )
    errors = {r["first_error"] for r in results if r["first_error"]}
    lines += [f"first error: {e}" for e in sorted(errors)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("search", help="vector search latency and recall")
    s.add_argument("--sizes", default="10000,100000")
    s.add_argument("--kinds", default="clustered,random")
    s.add_argument("--lg-max", type=int, default=100_000, help="largest size run for LangGraph")
    s.add_argument("--measure-puts", type=int, default=20_000, help="items put through batch()")
    c = sub.add_parser("concurrency", help="concurrent async calls")
    c.add_argument("--calls", type=int, default=60_000)
    s.add_argument("--variants", default="hnsw,exact", help="our store's vector_index kinds to run")
    s.add_argument(
        "--keep", action="store_true", help="leave the server and the last database running"
    )
    for p in (s, c):
        p.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    server = start_embedded_postgres(SERVER)
    started = time.perf_counter()
    load = os.getloadavg()[0]
    try:
        if args.cmd == "search":
            sizes = [int(x) for x in args.sizes.split(",")]
            results = run_search(server, sizes, args.kinds.split(","), args)
            table = search_table(results)
        else:
            results = asyncio.run(_concurrency(server, args.calls))
            table = concurrency_table(results)
    finally:
        if getattr(args, "keep", False):
            print(f"server kept: {server.latest_database} (pgdata {server.pgdata})")
        else:
            server.stop()
    print()
    print(table)
    wall = time.perf_counter() - started
    print(f"\n({args.cmd}: {wall:.0f} s wall; 1-minute load average {load:.2f} at the start)")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        meta = {"command": " ".join(sys.argv), "cores": os.cpu_count(), "load_at_start": load}
        out.write_text(json.dumps({**meta, "results": results}, indent=2))


if __name__ == "__main__":
    main()
