"""``langmem-ext bench store``: store speed and recall, side by side with
LangGraph's stores, in one run.

For every vector kind (:mod:`.store_data`), size and contender, two fresh
processes run one after the other, so memory figures belong to one store:

1. **load**: make the vectors, put the items in batches of 1,000 through
   ``batch()`` (the embedder is a lookup: the store is measured, not the
   model), and compute the exact top 10 of every query with numpy;
2. **search**: open the store again, time the first result (open → first
   result), run the query cases, and record the process's resident memory.
   (LangGraph's InMemoryStore has nothing to reopen: it is searched in step 1,
   and its memory includes the vectors the benchmark made.)

Items live in namespaces ``("user", "u<i % 10>", "s<i // 100>")``: ten of 10 %
each, and ``n / 10`` leaves of 10 items (100,000 at one million items). Cases:
the whole store, one 10 % namespace, a filter matching half the items, and one
leaf; for our stores also a one-item namespace in every search mode. Recall@10
is against exact search, so an approximate index never looks better than it is.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import queue
import resource
import shutil
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.store.base import BaseStore, PutOp

from .store_data import DIMS, make_vectors

__all__ = ["CONTENDERS", "LARGE", "Contender", "disk_needed", "run_store_bench"]

NAMESPACES = 10
CASES = ("whole", "namespace_10pct", "filter", "leaf")
MODES = ("hybrid", "vector", "keyword")
BATCH = 1000


class _DocFile:
    """Document vectors saved with ``np.save``, read a few rows at a time.

    The load phase measures the store's peak memory: the bench's own million
    vectors (1.5 GB) must not count in it, mapped or loaded.
    """

    def __init__(self, path: Path) -> None:
        header = np.load(path, mmap_mode="r")  # only the header is read
        self._offset, self.shape, self.dtype = header.offset, header.shape, header.dtype
        del header
        self._f = open(path, "rb")  # noqa: SIM115 - kept for the phase's lifetime

    def __len__(self) -> int:
        return int(self.shape[0])

    def rows(self, a: int, b: int) -> np.ndarray:
        row = self.shape[1] * self.dtype.itemsize
        self._f.seek(self._offset + a * row)
        return np.frombuffer(self._f.read((b - a) * row), dtype=self.dtype).reshape(b - a, -1)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.rows(i, i + 1)[0]


class _Vectors:
    """The embed function handed to every store: a lookup by text."""

    def __init__(self, docs: Any, queries: np.ndarray, texts: list[str] | None):
        self.docs, self.queries = docs, queries
        self.row = {t: i for i, t in enumerate(texts)} if texts else None

    def __call__(self, texts: list[str]) -> list[list[float]]:
        rows = [self._row(t) for t in texts]
        if isinstance(self.docs, _DocFile) and None not in rows and rows:
            a = rows[0]
            if rows == list(range(a, a + len(rows))):  # a batch of puts: one read
                return self.docs.rows(a, a + len(rows)).tolist()  # type: ignore[no-any-return]
        return [self._one(t).tolist() for t in texts]

    def _row(self, text: str) -> int | None:
        if text.startswith(("{", "query ")) or self.row is not None:
            return None
        return int(text[4:])

    def _one(self, text: str) -> np.ndarray:
        if text.startswith("{"):  # LangGraph's SqliteStore embeds the value's JSON
            text = json.loads(text)["text"]
        if text.startswith("query "):
            return self.queries[int(text[6:])]
        if self.row is not None and text in self.row:
            return self.docs[self.row[text]]  # type: ignore[index]
        return self.docs[int(text[4:])]  # type: ignore[index]


# (index config, scratch dir, dsn or None) -> context manager yielding a store
Factory = Callable[[dict[str, Any], Path, Any], AbstractContextManager[BaseStore]]


@dataclass(frozen=True)
class Contender:
    name: str
    make: Factory
    search_kwargs: dict[str, Any] = field(default_factory=dict)
    query_budget_s: float = 60.0  # per case: slow stores get fewer queries at large sizes
    needs_postgres: bool = False
    reopen: bool = True  # False: nothing persists, searched in the loading process
    max_items: int | None = None  # beyond: not run, with ``why``
    why: str = ""
    ours: bool = False


@contextmanager
def _ours_sqlite(index: dict[str, Any], tmp: Path, dsn: Any) -> Iterator[BaseStore]:
    from langmem_ext.stores import SQLiteStore

    with SQLiteStore(tmp / "ours.db", index={**index, "cache": False}) as store:
        yield store


def _ours_postgres_with(vector_index: dict[str, Any] | None) -> Factory:
    @contextmanager
    def make(index: dict[str, Any], tmp: Path, dsn: Any) -> Iterator[BaseStore]:
        from langmem_ext.stores import PostgresStore

        with PostgresStore.from_conn_string(
            dsn, index={**index, "cache": False}, vector_index=vector_index
        ) as store:
            store.setup()
            yield store

    return make


def _lg_postgres_with(ann: dict[str, Any] | None) -> Factory:
    @contextmanager
    def make(index: dict[str, Any], tmp: Path, dsn: Any) -> Iterator[BaseStore]:
        from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore

        cfg = {**index, "ann_index_config": ann} if ann else index
        with LangGraphPostgresStore.from_conn_string(dsn, index=cfg) as store:  # type: ignore[arg-type]
            store.setup()
            yield store

    return make


@contextmanager
def _lg_inmemory(index: dict[str, Any], tmp: Path, dsn: Any) -> Iterator[BaseStore]:
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore(index=index)  # type: ignore[arg-type]


@contextmanager
def _lg_sqlite(index: dict[str, Any], tmp: Path, dsn: Any) -> Iterator[BaseStore]:
    # LangGraph's SqliteStore needs the sqlite-vec extension, which Python
    # builds without extension loading (this one included) cannot load:
    # pysqlite3's wheels bundle a SQLite that can.
    try:
        import sqlite_vec  # noqa: F401
        from pysqlite3 import dbapi2 as sqlite3_ext
    except ImportError as e:
        raise RuntimeError(
            "needs the 'pysqlite3-binary' and 'sqlite-vec' packages (a SQLite that can "
            "load extensions); install the 'bench' extra"
        ) from e
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3_ext.connect(str(tmp / "lg.db"), check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
        store.setup()
        yield store
    finally:
        conn.close()


_INMEMORY_WHY = (
    "not run: LangGraph's InMemoryStore keeps every vector as a Python list of floats "
    "(about 12 KB per 384-d item, over 11 GB at 1M) and scans them in Python"
)

CONTENDERS: dict[str, Contender] = {
    "sqlite": Contender("langmem_ext SQLiteStore", _ours_sqlite, {"mode": "vector"}, ours=True),
    "postgres": Contender(
        "langmem_ext PostgresStore",
        _ours_postgres_with(None),
        {"mode": "vector"},
        needs_postgres=True,
        ours=True,
    ),
    # The default before the inverted file: HNSW, for the same run's figures.
    "postgres-hnsw": Contender(
        "langmem_ext PostgresStore (HNSW)",
        _ours_postgres_with({"kind": "hnsw"}),
        {"mode": "vector"},
        needs_postgres=True,
        ours=True,
    ),
    "lg-inmemory": Contender(
        "LangGraph InMemoryStore",
        _lg_inmemory,
        query_budget_s=30.0,
        reopen=False,
        max_items=300_000,
        why=_INMEMORY_WHY,
    ),
    "lg-sqlite": Contender("LangGraph SqliteStore (sqlite-vec)", _lg_sqlite),
    "lg-postgres": Contender(
        "LangGraph PostgresStore (HNSW)", _lg_postgres_with(None), needs_postgres=True
    ),
    "lg-postgres-exact": Contender(
        "LangGraph PostgresStore (exact)",
        _lg_postgres_with({"kind": "flat"}),
        needs_postgres=True,
    ),
}


def item(i: int, text: str | None = None) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    ns = ("user", f"u{i % NAMESPACES}", f"s{i // (10 * NAMESPACES)}")
    return ns, f"k{i}", {"text": text or f"doc {i}", "bucket": i % 20}


LEAF = ("user", "u3", "s42")
SOLO = ("solo", "s")  # one item (row n), in the whole store but no other scope
SCOPES: dict[str, tuple[tuple[str, ...], dict[str, Any] | None]] = {
    "whole": ((), None),
    "namespace_10pct": (("user", "u3"), None),
    "filter": ((), {"bucket": {"$lt": 10}}),
    "leaf": (LEAF, None),
}


def _masks(rows: int) -> dict[str, np.ndarray]:
    """Which rows each case searches; the last row is the one-item namespace's."""
    i = np.arange(rows)
    solo = i == rows - 1
    return {
        "whole": np.ones(rows, dtype=bool),
        "namespace_10pct": (i % NAMESPACES == 3) & ~solo,
        "filter": (i % 20 < 10) | solo,  # its bucket is 0
        "leaf": (i % NAMESPACES == 3) & (i // (10 * NAMESPACES) == 42) & ~solo,
    }


def _truth(docs: np.ndarray, queries: np.ndarray, k: int = 10) -> dict[str, np.ndarray]:
    """Exact top-k row indices per case and query (cosine of unit vectors; ties
    by row), in chunks: memory stays at the size of the vectors."""
    masks = _masks(len(docs))
    parts: dict[str, list[list[tuple[np.ndarray, np.ndarray]]]] = {
        c: [[] for _ in queries] for c in masks
    }
    chunk = 100_000
    for a in range(0, len(docs), chunk):
        sims = docs[a : a + chunk] @ queries.T  # rows × queries
        for c, mask in masks.items():
            rows = np.flatnonzero(mask[a : a + chunk])
            if not len(rows):
                continue
            kk = min(k, len(rows))
            top = rows[np.argpartition(-sims[rows], kk - 1, axis=0)[:kk]]  # kk × queries
            for j in range(len(queries)):
                parts[c][j].append((a + top[:, j], sims[top[:, j], j]))
    out = {}
    for c in masks:
        best = []
        for j in range(len(queries)):
            ids = np.concatenate([p[0] for p in parts[c][j]]) if parts[c][j] else np.empty(0)
            sc = np.concatenate([p[1] for p in parts[c][j]]) if parts[c][j] else np.empty(0)
            best.append(ids[np.lexsort((ids, -sc))][:k])
        out[c] = np.asarray(best, dtype=np.int64).reshape(len(queries), -1)
    return out


def _rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if os.uname().sysname == "Darwin" else peak / 1024


# -- the two phases, each in a fresh process ------------------------------------------


def _vectors_phase(job: dict[str, Any], report: Any) -> dict[str, Any]:
    """The document and query vectors and the exact answers, saved to the
    scratch directory: made in a process of their own, so the load phase's
    peak memory is the store's."""
    tmp = Path(job["scratch"])
    report(("phase", "vectors"))
    docs, queries = make_vectors(job["kind"], job["n"] + 1, job["queries"])
    np.save(tmp / "docs.npy", docs)
    report(("phase", "exact search"))
    truth = _truth(docs, queries)
    np.savez(tmp / "truth.npz", queries=queries, **truth)  # type: ignore[arg-type]
    return {}


def _load_phase(job: dict[str, Any], report: Any) -> dict[str, Any]:
    c = CONTENDERS[job["contender"]]
    n, kind = job["n"], job["kind"]
    tmp = Path(job["scratch"])
    saved = np.load(tmp / "truth.npz")
    queries = saved["queries"]
    truth = {case: saved[case] for case in CASES}
    texts = None
    if kind == "text":
        from .store_data import text_corpus

        texts = text_corpus()[0][: n + 1]
    vectors = _Vectors(_DocFile(tmp / "docs.npy"), queries, texts)
    index = {"dims": DIMS, "embed": vectors, "fields": ["text"]}
    out: dict[str, Any] = {}
    report(("phase", "load"))
    with c.make(index, tmp, job.get("dsn")) as store:
        t = time.perf_counter()
        for a in range(0, n, BATCH):
            store.batch(
                [PutOp(*item(i, texts[i] if texts else None)) for i in range(a, min(n, a + BATCH))]
            )
            report(("advance", min(BATCH, n - a)))
        out["load_s"] = time.perf_counter() - t
        out["put_per_s"] = n / out["load_s"]
        store.put(SOLO, f"k{n}", {"text": texts[n] if texts else f"doc {n}", "bucket": 0})
        if c.needs_postgres:
            from ..postgres import settle

            settle(job["dsn"])
        out["load_peak_rss_mb"] = _peak_mb()
        if not c.reopen:
            out.update(_queries(c, store, queries, truth, report))
            out["search_rss_mb"] = _rss_mb()
    return out


def _search_phase(job: dict[str, Any], report: Any) -> dict[str, Any]:
    c = CONTENDERS[job["contender"]]
    tmp = Path(job["scratch"])
    saved = np.load(tmp / "truth.npz")
    queries = saved["queries"]
    truth = {case: saved[case] for case in CASES}
    index = {"dims": DIMS, "embed": _Vectors(None, queries, None), "fields": ["text"]}
    report(("phase", "open"))
    base_rss = _rss_mb()
    t = time.perf_counter()
    with c.make(index, tmp, job.get("dsn")) as store:
        store.search(("user", "u3"), query="query 0", limit=10, **c.search_kwargs)
        out: dict[str, Any] = {"open_to_first_ms": (time.perf_counter() - t) * 1000}
        out.update(_queries(c, store, queries, truth, report))
        if c.ours:
            out["modes"] = _modes(store, len(queries))
        out["search_rss_mb"] = _rss_mb()
        out["search_rss_before_open_mb"] = base_rss
    out["search_peak_rss_mb"] = _peak_mb()
    return out


def _queries(
    c: Contender, store: BaseStore, queries: np.ndarray, truth: dict[str, np.ndarray], report: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for case in CASES:
        report(("phase", case))
        prefix, flt = SCOPES[case]
        lat, hits, t_case = [], [], time.perf_counter()
        for qi in range(len(queries)):
            t = time.perf_counter()
            got = store.search(prefix, query=f"query {qi}", filter=flt, limit=10, **c.search_kwargs)
            lat.append((time.perf_counter() - t) * 1000)
            exact = {f"k{i}" for i in truth[case][qi]}
            keys = {r.key for r in got}
            hits.append(len(keys & exact) / len(exact) if exact else float(not keys))
            report(("advance_q", 1))
            if time.perf_counter() - t_case > c.query_budget_s and qi >= 4:
                break
        out[case] = {
            "median_ms": statistics.median(lat),
            "p95_ms": float(np.percentile(lat, 95)),
            "queries": len(lat),
            "recall_at_10": float(np.mean(hits)),
        }
    return out


def _modes(store: BaseStore, n_queries: int) -> dict[str, dict[str, float]]:
    """Our stores only: the one-item and the 10-item namespace in every mode."""
    out = {}
    for scope_name, scope in (("solo", SOLO), ("leaf", LEAF)):
        for mode in MODES:
            lat = []
            for qi in range(min(n_queries, 20)):
                t = time.perf_counter()
                store.search(scope, query=f"query {qi}", limit=10, mode=mode)  # type: ignore[call-arg]
                lat.append((time.perf_counter() - t) * 1000)
            out[f"{scope_name}_{mode}"] = {"median_ms": statistics.median(lat)}
    return out


def _brute_force(
    docs: np.ndarray, q: np.ndarray, threads: int, pool: Any, k: int = 10
) -> np.ndarray:
    """Top ``k`` rows of ``docs @ q``: one BLAS product on one thread, or the
    rows split in ``threads`` parts scored in a thread pool (BLAS limited to one
    thread each: the split, not the library, sets the parallelism)."""
    if threads == 1:
        sims = docs @ q
        top = np.argpartition(-sims, k - 1)[:k]
        return top[np.argsort(-sims[top])]
    bounds = np.linspace(0, len(docs), threads + 1).astype(int)

    def part(ab: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        a, b = ab
        sims = docs[a:b] @ q
        top = np.argpartition(-sims, k - 1)[:k]
        return a + top, sims[top]

    parts = list(pool.map(part, itertools.pairwise(bounds)))
    ids = np.concatenate([p[0] for p in parts])
    sc = np.concatenate([p[1] for p in parts])
    return ids[np.argsort(-sc)[:k]]


def _yardstick_phase(job: dict[str, Any], report: Any) -> dict[str, Any]:
    """The yardstick every store is divided by: plain numpy brute force (float32,
    top 10) over the same vectors, in memory, on one thread and on every core,
    measured on this machine in this run, so ratios travel between machines
    where milliseconds do not."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    tmp = Path(job["scratch"])
    report(("phase", "brute force"))
    docs = np.load(tmp / "docs.npy")[: job["n"]]
    queries = np.load(tmp / "truth.npz")["queries"].astype(np.float32)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out: dict[str, Any] = {"brute_threads": cores}
    with threadpool_limits(limits=1), ThreadPoolExecutor(max(cores or 1, 1)) as pool:
        for label, threads in (("brute_1t_ms", 1), ("brute_all_ms", cores or 1)):
            _brute_force(docs, queries[0], threads, pool)  # warm: pages and threads
            lat = []
            for q in queries[: min(len(queries), 20)]:
                t = time.perf_counter()
                _brute_force(docs, q, threads, pool)
                lat.append((time.perf_counter() - t) * 1000)
            out[label] = statistics.median(lat)
    return out


def _spin(stop: Any) -> None:
    """A CPU-bound neighbour: pure Python arithmetic until told to stop."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextmanager
def neighbours(n: int) -> Iterator[None]:
    """``n`` CPU-bound processes running beside the block (each keeps one core
    busy), as other work on a shared machine would."""
    if n <= 0:
        yield
        return
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        time.sleep(0.5)  # every neighbour is spinning before the first measure
        yield
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()


def _child(phase: str, job: dict[str, Any], q: Any) -> None:
    try:
        fn = {
            "vectors": _vectors_phase,
            "load": _load_phase,
            "search": _search_phase,
            "yardstick": _yardstick_phase,
        }[phase]
        q.put(("result", fn(job, q.put)))
    except BaseException as e:  # reported to the parent, which carries on
        q.put(("error", f"{type(e).__name__}: {e}", traceback.format_exc()))


def _run_child(
    phase: str, job: dict[str, Any], on_message: Callable[[Any], None]
) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(phase, job, q), daemon=True)
    p.start()
    try:
        while True:
            try:
                msg = q.get(timeout=1.0)
            except queue.Empty:
                if not p.is_alive():
                    raise RuntimeError(
                        f"the {phase} process died (exit code {p.exitcode})"
                    ) from None
                continue
            if msg[0] == "result":
                return msg[1]
            if msg[0] == "error":
                raise RuntimeError(msg[1])
            on_message(msg)
    finally:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()


# -- disk --------------------------------------------------------------------------

#: Sizes above this many items run only when asked for explicitly (``large``):
#: a load takes hours and tens of gigabytes.
LARGE = 2_000_000

# Bytes on disk per item, measured at a million 384-dimension items and
# rounded up: the database, its indexes or vector segments, and the headroom
# a segment merge or an index build needs while both copies exist.
_BYTES_PER_ITEM = {
    "sqlite": 7_000,
    "postgres": 6_000,
    "postgres-hnsw": 7_000,
    "lg-sqlite": 6_000,
    "lg-postgres": 7_000,
    "lg-postgres-exact": 5_000,
    "lg-inmemory": 0,
}
_DEFAULT_BYTES_PER_ITEM = 8_000


def disk_needed(n: int, contender: str) -> int:
    """Bytes of disk one contender's run at ``n`` items needs: the saved
    vectors (float32 documents) and the store itself.

    Examples:
        >>> round(disk_needed(1_000_000, "sqlite") / 1e9, 1)
        8.5
    """
    docs = (n + 1) * DIMS * 4
    return docs + n * _BYTES_PER_ITEM.get(contender, _DEFAULT_BYTES_PER_ITEM)


def check_disk(sizes: list[int], contenders: list[str], where: Path, keep: bool = False) -> None:
    """Refuse, before anything starts, a run the disk at ``where`` cannot hold.

    Runs go one after another and each removes its files, so the largest one
    must fit; with ``keep`` (files kept for later runs) all of them must.

    Raises:
        ConfigurationError: not enough free space; the message names the
            space needed and the space free.
    """
    from langmem_ext.errors import ConfigurationError

    needs = [disk_needed(n, c) for n in sizes for c in contenders]
    if not needs:
        return
    need = sum(needs) if keep else max(needs)
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if need > free:
        raise ConfigurationError(
            f"the benchmark needs about {need / 1e9:,.1f} GB of disk at {probe} and "
            f"{free / 1e9:,.1f} GB is free; run smaller --sizes, fewer --stores, or "
            "set TMPDIR (or --keep) to a disk with more room"
        )


# -- the run -------------------------------------------------------------------------


def run_store_bench(
    sizes: list[int],
    contenders: list[str],
    kinds: list[str] = ["random"],  # noqa: B006 - read only
    n_queries: int = 50,
    load_budget_s: float = 1200.0,
    progress: Any = None,
    keep: Path | None = None,
    n_neighbours: int = 0,
) -> list[dict[str, Any]]:
    """Every kind × size × contender, one embedded PostgreSQL server for all
    (started only if a contender needs it); one row each.

    ``keep``: a directory where the vectors and the loaded stores that persist
    without a server are kept, and reused by a later run with the same kind,
    size and query count (their load figures are the first run's): a million
    items load once, then search runs take minutes.

    ``n_neighbours``: after the quiet search, search again (and measure the
    brute-force yardstick again) with that many CPU-bound processes running
    beside; those figures go under the row's ``"neighbours"``.

    A contender is skipped at a size when its put rate at the previous size
    says loading would take longer than ``load_budget_s`` (the row says so).
    ``progress(description, total)`` returns an ``advance(k)`` callable.
    """
    check_disk(sizes, contenders, keep or Path(tempfile.gettempdir()), keep is not None)
    pg = None
    if any(CONTENDERS[name].needs_postgres for name in contenders):
        from langmem_ext_dev.postgres import start_embedded_postgres

        pg = start_embedded_postgres()
    rows = []
    try:
        for kind in kinds:
            rate: dict[str, float] = {}
            for n in sizes:
                for name in contenders:
                    row = _bench_one(
                        name,
                        kind,
                        n,
                        n_queries,
                        pg,
                        rate,
                        load_budget_s,
                        progress,
                        keep,
                        n_neighbours,
                    )
                    rows.append(row)
    finally:
        if pg is not None:
            pg.stop()
    return rows


def _bench_one(
    name: str,
    kind: str,
    n: int,
    n_queries: int,
    pg: Any,
    rate: dict[str, float],
    load_budget_s: float,
    progress: Any,
    keep: Path | None = None,
    n_neighbours: int = 0,
) -> dict[str, Any]:
    c = CONTENDERS[name]
    row: dict[str, Any] = {"store": c.name, "key": name, "kind": kind, "n": n}
    if kind == "text":
        from .store_data import text_corpus

        if n + 1 > len(text_corpus()[0]):
            return {**row, "unavailable": "the text corpus is smaller than this size"}
    if c.max_items is not None and n > c.max_items:
        return {**row, "unavailable": c.why}
    if name in rate and n / rate[name] > load_budget_s:
        est = n / rate[name]
        return {
            **row,
            "unavailable": f"not run: loading would take ~{est / 60:.0f} min at the "
            f"{rate[name]:,.0f} puts/s measured at the previous size "
            f"(budget {load_budget_s / 60:.0f} min)",
        }
    kept = keep is not None and c.reopen and not c.needs_postgres
    if kept:
        assert keep is not None
        scratch = keep / f"{name}-{kind}-{n}-q{n_queries}"
        scratch.mkdir(parents=True, exist_ok=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="lmx-bench-"))
    loaded = scratch / "loaded.json"
    job = {"contender": name, "kind": kind, "n": n, "queries": n_queries, "scratch": str(scratch)}
    if c.needs_postgres:
        job["dsn"] = pg.fresh_database()
    label = f"{c.name} · {kind} · {n:,}"
    advance = progress(f"{label}: load", n) if progress else (lambda k: None)
    searched = progress(f"{label}: search", n_queries * len(CASES)) if progress else None

    def on_message(msg: Any) -> None:
        if msg[0] == "advance":
            advance(msg[1])
        elif msg[0] == "advance_q" and searched:
            searched(msg[1])

    try:
        if kept and loaded.exists():
            row.update(json.loads(loaded.read_text()), reused=True)
        else:
            _run_child("vectors", job, on_message)
            row.update(_run_child("load", job, on_message))
            if kept:
                loaded.write_text(
                    json.dumps({k: v for k, v in row.items() if k.endswith(("_s", "_mb"))})
                )
        rate[name] = row["put_per_s"]
        row["loadavg_before_search"] = os.getloadavg()[0]
        if c.reopen:
            row.update(_run_child("search", job, on_message))
        row.update(_run_child("yardstick", job, on_message))
        if n_neighbours and c.reopen:
            with neighbours(n_neighbours):
                busy = _run_child("search", job, on_message)
                busy.update(_run_child("yardstick", job, on_message))
                busy["count"] = n_neighbours
                busy["loadavg_1m"] = os.getloadavg()[0]
            row["neighbours"] = busy
    except Exception as e:
        row["unavailable"] = str(e).splitlines()[0][:300]
    finally:
        if not kept:
            shutil.rmtree(scratch, ignore_errors=True)
        if c.needs_postgres:
            from ..postgres import drop_database

            drop_database(str(job["dsn"]))
    # 1-minute load average after this contender: on a small shared machine, other
    # work beside the run moves latencies.
    row["loadavg_1m"] = os.getloadavg()[0]
    return row
