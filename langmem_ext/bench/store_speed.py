"""``langmem-ext bench store``: store speed side by side with LangGraph's stores.

Identical items and precomputed random 384-dim vectors (the embed function is
a dict lookup, so the store is measured, not the embedder). Per store and size:
put throughput (batches of 1,000), query latency (median, p95) over the whole
store, inside one namespace holding 10 % of the items, and with a filter, and
recall@10 against exact search.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from ..stores import SQLiteStore

__all__ = ["CONTENDERS", "Contender", "Lookup", "run_store_bench"]

DIMS = 384
NAMESPACES = 10
CASES = ("whole", "namespace_10pct", "filter")


class Lookup(Embeddings):
    """Serves precomputed vectors by text."""

    def __init__(self) -> None:
        self.vectors: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


# (index config, scratch dir, embedded PostgreSQL or None) -> context manager yielding a store
Factory = Callable[[dict[str, Any], Path, Any], AbstractContextManager[BaseStore]]


@dataclass(frozen=True)
class Contender:
    name: str
    make: Factory
    search_kwargs: dict[str, Any]
    query_budget_s: float = 60.0  # slow stores get fewer queries at large sizes
    needs_postgres: bool = False


@contextmanager
def _ours_sqlite(index: dict[str, Any], tmp: Path, pg: Any) -> Iterator[BaseStore]:
    with SQLiteStore(tmp / "ours.db", index={**index, "cache": False}) as store:
        yield store


@contextmanager
def _ours_postgres(index: dict[str, Any], tmp: Path, pg: Any) -> Iterator[BaseStore]:
    from ..stores import PostgresStore

    with PostgresStore.from_conn_string(
        pg.fresh_database(), index={**index, "cache": False}
    ) as store:
        store.setup()
        yield store


@contextmanager
def _lg_postgres(index: dict[str, Any], tmp: Path, pg: Any) -> Iterator[BaseStore]:
    from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore

    with LangGraphPostgresStore.from_conn_string(pg.fresh_database(), index=index) as store:
        store.setup()
        yield store


@contextmanager
def _lg_inmemory(index: dict[str, Any], tmp: Path, pg: Any) -> Iterator[BaseStore]:
    yield InMemoryStore(index=index)


@contextmanager
def _lg_sqlite(index: dict[str, Any], tmp: Path, pg: Any) -> Iterator[BaseStore]:
    import sqlite3

    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        raise RuntimeError("this Python's sqlite3 cannot load extensions (sqlite-vec)")
    from langgraph.store.sqlite import SqliteStore

    with SqliteStore.from_conn_string(str(tmp / "lg.db"), index=index) as store:
        store.setup()
        yield store


CONTENDERS: dict[str, Contender] = {
    "sqlite": Contender("langmem_ext SQLiteStore", _ours_sqlite, {"mode": "vector"}),
    "postgres": Contender(
        "langmem_ext PostgresStore", _ours_postgres, {"mode": "vector"}, needs_postgres=True
    ),
    "lg-inmemory": Contender("LangGraph InMemoryStore", _lg_inmemory, {}, 30.0),
    "lg-sqlite": Contender("LangGraph SqliteStore", _lg_sqlite, {}),
    "lg-postgres": Contender("LangGraph PostgresStore", _lg_postgres, {}, needs_postgres=True),
}


def _settle(dsn: str) -> None:
    """What autovacuum does to a loaded table before long: planner statistics,
    and the visibility map that lets index-only scans skip the heap."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def make_data(n: int, n_queries: int, seed: int = 0) -> tuple[list, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIMS)).astype(np.float32)
    qvecs = rng.standard_normal((n_queries, DIMS)).astype(np.float32)
    items = [
        (("user", f"u{i % NAMESPACES}"), f"k{i}", {"text": f"doc {i}", "bucket": i % 20})
        for i in range(n)
    ]
    return items, vecs, qvecs


def _exact(unit: np.ndarray, qvec: np.ndarray, mask: np.ndarray, k: int = 10) -> list[str]:
    sims = np.where(mask, unit @ (qvec / np.linalg.norm(qvec)), -np.inf)
    return [f"k{i}" for i in np.argsort(-sims, kind="stable")[:k]]


def bench_one(
    c: Contender, n: int, n_queries: int, pg: Any = None, progress: Any = None
) -> dict[str, Any]:
    items, vecs, qvecs = make_data(n, n_queries)
    lookup = Lookup()
    for (_, _, v), vec in zip(items, vecs, strict=True):
        lookup.vectors[v["text"]] = vec.tolist()
    for qi, q in enumerate(qvecs):
        lookup.vectors[f"query {qi}"] = q.tolist()
    index = {"dims": DIMS, "embed": lookup, "fields": ["text"]}
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    ns_idx = np.arange(n) % NAMESPACES
    buckets = np.arange(n) % 20
    cases = {
        "whole": ((), None, np.ones(n, dtype=bool)),
        "namespace_10pct": (("user", "u3"), None, ns_idx == 3),
        "filter": ((), {"bucket": {"$lt": 10}}, buckets < 10),
    }
    row: dict[str, Any] = {"store": c.name, "n": n}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            cm = c.make(index, Path(tmp), pg)
            store = cm.__enter__()
        except Exception as e:
            return {**row, "unavailable": str(e)}
        try:
            t = time.perf_counter()
            for start in range(0, n, 1000):
                store.batch([PutOp(ns, k, v) for ns, k, v in items[start : start + 1000]])
            row["put_per_s"] = n / (time.perf_counter() - t)
            if c.needs_postgres:
                _settle(pg.latest_database)
            for case, (prefix, flt, mask) in cases.items():
                lat, hits, t_case = [], [], time.perf_counter()
                for qi, qvec in enumerate(qvecs):
                    t = time.perf_counter()
                    got = store.search(
                        prefix, query=f"query {qi}", filter=flt, limit=10, **c.search_kwargs
                    )
                    lat.append((time.perf_counter() - t) * 1000)
                    exact = _exact(unit, qvec, mask)
                    hits.append(len({r.key for r in got} & set(exact)) / 10)
                    if time.perf_counter() - t_case > c.query_budget_s and qi >= 4:
                        break
                row[case] = {
                    "median_ms": statistics.median(lat),
                    "p95_ms": float(np.percentile(lat, 95)),
                    "queries": len(lat),
                    "recall_at_10": float(np.mean(hits)),
                }
                if progress:
                    progress()
        finally:
            cm.__exit__(None, None, None)
    # 1-minute load average after this contender: on a small shared machine, other
    # work beside the run (and BLAS threads competing with it) moves latencies.
    row["loadavg_1m"] = os.getloadavg()[0]
    return row


def run_store_bench(
    sizes: list[int], contenders: list[str], n_queries: int = 50, progress: Any = None
) -> list[dict[str, Any]]:
    """Every contender at every size, in one process, against one embedded
    PostgreSQL server (started only if a contender needs it); one row each."""
    pg = None
    if any(CONTENDERS[name].needs_postgres for name in contenders):
        from ..testing import start_embedded_postgres

        pg = start_embedded_postgres()
    try:
        return [
            bench_one(CONTENDERS[name], n, n_queries, pg, progress)
            for n in sizes
            for name in contenders
        ]
    finally:
        if pg is not None:
            pg.stop()


def embedder_throughput(n: int = 200) -> dict[str, float]:
    """The offline default embedder's own speed (load, texts/s, one query)."""
    t = time.perf_counter()
    from ..stores.embeddings import LocalEmbeddings

    emb = LocalEmbeddings()
    emb.embed_query("warm up")
    load = time.perf_counter() - t
    base = "I went hiking with my sister last weekend and we saw a waterfall near the lake"
    texts = [f"{base} ({i})" for i in range(n)]
    t = time.perf_counter()
    emb.embed_documents(texts)
    rate = n / (time.perf_counter() - t)
    t = time.perf_counter()
    for i in range(20):
        emb.embed_query(f"where did she go hiking {i}")
    return {"load_s": load, "docs_per_s": rate, "query_ms": (time.perf_counter() - t) / 20 * 1000}


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """PNG: median latency against store size, one line per store and case."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(CASES), figsize=(5 * len(CASES), 4), squeeze=False)
    for ax, case in zip(axes[0], CASES, strict=True):
        for name in dict.fromkeys(r["store"] for r in rows):
            pts = sorted(
                (r["n"], r[case]["median_ms"]) for r in rows if r["store"] == name and case in r
            )
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("items")
        ax.set_ylabel("median query latency (ms)")
        ax.set_title(case.replace("_", " "))
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
