"""Memory engine benchmark: recall latency at N memories for one tenant on
SQLiteStore, and write throughput with vs without supersession + audit.

Embeddings are precomputed and served by a lookup function, so the embedder
costs nothing and the figures are the engine's and the store's own.

Run:  python benchmarks/bench_engine.py --sizes 10000 100000 --queries 50
      (add ``--recall-mode store`` for the store's hybrid ranking, the engine's
      recall before it defaulted to vector mode)

``--rerank-candidates 50`` also times the store's re-ranking stage: the same
searches (hybrid, limit 10) on the same file with no re-ranker and with a
no-op one (every candidate scores 0, so the order is the store's), alternated
query by query; the difference is what the stage itself costs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from langgraph.store.base import PutOp

from langmem_ext import SQLiteStore
from langmem_ext.engine import Fact, MemoryContext, MemoryEngine
from langmem_ext.engine.operations.lifecycle import slot_of
from langmem_ext.engine.records.models import new_id, ts
from langmem_ext.engine.runtime.env import INDEX_FIELDS

DIMS = 64
WORDS = [f"w{i}" for i in range(2000)]


class Lookup:
    """Texts -> vectors from a table filled before the run (random unit vectors)."""

    def __init__(self) -> None:
        self.table: dict[str, list[float]] = {}
        self.rng = np.random.default_rng(0)

    def add(self, text: str) -> None:
        v = self.rng.standard_normal(DIMS)
        self.table[text] = (v / np.linalg.norm(v)).tolist()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def text(rng: np.random.Generator, i: int) -> str:
    return f"memory {i} " + " ".join(rng.choice(WORDS, 8))


def load(engine: MemoryEngine, ctx: MemoryContext, lookup: Lookup, n: int) -> None:
    """Bulk-load n active facts straight into the store (no per-fact engine cost)."""
    rng = np.random.default_rng(1)
    env = engine.env(ctx)
    now = ts(engine.config.clock())
    ops = []
    for i in range(n):
        content = text(rng, i)
        lookup.add(content)
        rec = Fact(
            id=new_id(),
            tenant_id="acme",
            layer="user",
            layer_id="ada",
            content=content,
            subject="user",
            predicate=f"p{i}",
            slot=slot_of("user:ada", "user", f"p{i}"),
            created_at=now,
            updated_at=now,
            last_confirmed_at=now,
        )
        ops.append(PutOp(env.layer("user").ns, rec.id, rec.to_value(), INDEX_FIELDS))
        if len(ops) == 2000:
            engine.store.batch(ops)
            ops = []
    if ops:
        engine.store.batch(ops)


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(xs, p))


def bench_recall(n: int, queries: int, mode: str | None) -> tuple[float, float, float]:
    lookup = Lookup()
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore(
            Path(d) / "b.db", index={"dims": DIMS, "embed": lookup, "fields": ["content"]}
        )
        engine = MemoryEngine(store, recall_mode=mode)
        ctx = MemoryContext("acme", user_id="ada")
        t0 = time.perf_counter()
        load(engine, ctx, lookup, n)
        load_s = time.perf_counter() - t0
        rng = np.random.default_rng(2)
        qs = [" ".join(rng.choice(WORDS, 4)) for _ in range(queries)]
        for q in qs:
            lookup.add(q)
        engine.recall(ctx, qs[0])  # warm the vector cache
        lat = []
        for q in qs:
            t = time.perf_counter()
            engine.recall(ctx, q, limit=10)
            lat.append((time.perf_counter() - t) * 1000)
        store.close()
    return statistics.median(lat), pct(lat, 95), load_s


def bench_rerank_stage(n: int, queries: int, candidates: int) -> tuple[float, float]:
    """Median ms of a hybrid search without and with a no-op re-ranker."""
    lookup = Lookup()
    rng = np.random.default_rng(4)
    texts = [text(rng, i) for i in range(n)]
    for t in texts:
        lookup.add(t)
    qs = [" ".join(rng.choice(WORDS, 4)) for _ in range(queries)]
    for q in qs:
        lookup.add(q)
    index = {"dims": DIMS, "embed": lookup, "fields": ["content"]}
    ns = ("bench", "ada")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.db"
        plain = SQLiteStore(path, index=index)
        plain.batch([PutOp(ns, f"k{i}", {"content": t}) for i, t in enumerate(texts)])
        noop = SQLiteStore(
            path,
            index={
                **index,
                "rerank": lambda q, ts: [0.0] * len(ts),
                "rerank_candidates": candidates,
            },
        )
        for s in (plain, noop):
            s.search(ns, query=qs[0], limit=10)  # warm the vector caches
        lat: dict[str, list[float]] = {"plain": [], "noop": []}
        for q in qs:
            for name, s in (("plain", plain), ("noop", noop)):
                t = time.perf_counter()
                s.search(ns, query=q, limit=10)
                lat[name].append((time.perf_counter() - t) * 1000)
        plain.close()
        noop.close()
    return statistics.median(lat["plain"]), statistics.median(lat["noop"])


def bench_writes(n: int) -> tuple[float, float]:
    lookup = Lookup()
    rng = np.random.default_rng(3)
    texts = [text(rng, i) for i in range(n)]
    for t in texts:
        lookup.add(t)
    with tempfile.TemporaryDirectory() as d:
        store = SQLiteStore(
            Path(d) / "w.db", index={"dims": DIMS, "embed": lookup, "fields": ["content"]}
        )
        engine = MemoryEngine(store)
        ctx = MemoryContext("acme", user_id="ada")
        env = engine.env(ctx)
        t = time.perf_counter()
        for i, c in enumerate(texts):  # plain puts: no slot resolution, no audit event
            rec = Fact(
                id=new_id(),
                tenant_id="acme",
                layer="user",
                layer_id="ada",
                content=c,
                subject="user",
                predicate=f"p{i % 50}",
            )
            store.put((*env.layer("user").ns, "plain"), rec.id, rec.to_value(), index=INDEX_FIELDS)
        plain = n / (time.perf_counter() - t)
        t = time.perf_counter()
        for i, c in enumerate(texts):  # 50 slots: most writes supersede an older fact
            engine.store_fact(ctx, "user", f"p{i % 50}", c)
        full = n / (time.perf_counter() - t)
        store.close()
    return plain, full


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--writes", type=int, default=1000)
    ap.add_argument(
        "--rerank-candidates",
        type=int,
        default=0,
        help="also time the re-ranking stage with a no-op re-ranker over this many candidates",
    )
    ap.add_argument(
        "--recall-mode",
        default="store",
        choices=["vector", "hybrid", "keyword", "store"],
        help="EngineConfig.recall_mode; 'store' = the store's default (hybrid on ours)",
    )
    args = ap.parse_args()
    mode = None if args.recall_mode == "store" else args.recall_mode
    print(f"recall (limit 10, facts+rules, {args.recall_mode} mode, {DIMS} dims, one tenant)")
    for n in args.sizes:
        med, p95, load_s = bench_recall(n, args.queries, mode)
        print(
            f"  {n:>7} memories: median {med:7.2f} ms   p95 {p95:7.2f} ms   (load {load_s:.1f} s)"
        )
    if args.rerank_candidates:
        print(
            f"re-ranking stage (store.search, hybrid, limit 10, "
            f"{args.rerank_candidates} candidates)"
        )
        for n in args.sizes:
            without, noop = bench_rerank_stage(n, args.queries, args.rerank_candidates)
            print(
                f"  {n:>7} items: no re-ranker {without:7.2f} ms   no-op re-ranker "
                f"{noop:7.2f} ms   stage adds {noop - without:+6.2f} ms"
            )
    plain, full = bench_writes(args.writes)
    print(
        f"writes ({args.writes}): plain put {plain:8.1f}/s   store_fact with "
        f"supersession + audit {full:8.1f}/s   ({plain / full:.1f}x cost)"
    )


if __name__ == "__main__":
    main()
