"""``langmem-ext bench retrieval``: recall of evidence turns on retrieval sets
(the documented JSON shape, or LoCoMo's file), every store and search mode,
dev and held-out splits apart. The measuring lives in
``langmem_ext_dev.bench.retrieval``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from .dev import dev_module

__all__ = ["bench_retrieval"]

_KS = ("R@1", "R@5", "R@10", "R@20")


def bench_retrieval(
    data: Annotated[
        list[Path],
        typer.Option(
            help="A retrieval set (JSON, the shape in docs/retrieval-sets.md) or LoCoMo's "
            "file; give --data again for more sets."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Directory for retrieval.json.")] = Path(
        "bench-results"
    ),
    backends: Annotated[str, typer.Option(help="Comma-separated: sqlite,postgres.")] = (
        "sqlite,postgres"
    ),
    modes: Annotated[str, typer.Option(help="Comma-separated: keyword,vector,hybrid.")] = (
        "keyword,vector,hybrid"
    ),
    split: Annotated[
        str,
        typer.Option(
            help="dev, held-out, or all (both, reported apart). Tune on dev only; held-out "
            "is for reporting."
        ),
    ] = "all",
    categories: Annotated[bool, typer.Option(help="Also print R@10 per category.")] = True,
    date_prefix: Annotated[bool, typer.Option(help="Prefix each turn with its time.")] = True,
    vector_weight: Annotated[
        float, typer.Option(help="Hybrid fusion weight of the vector side.")
    ] = 0.5,
    context_turns: Annotated[
        int, typer.Option(help="Neighbouring turns (each side) indexed as keyword context.")
    ] = 2,
    context_weight: Annotated[float, typer.Option(help="BM25 weight of that context.")] = 0.5,
    conversations: Annotated[
        int, typer.Option(help="Only the first N conversations of each set and split (0: all).")
    ] = 0,
    fusions: Annotated[
        str,
        typer.Option(
            help="Fusion rules measured on each store's own vector and keyword rankings, "
            "comma-separated: fixed (the stores' hybrid), zscore, rrf, adaptive."
        ),
    ] = "",
    passage_words: Annotated[
        int,
        typer.Option(
            help="Also score long turns by their best passage: overlapping windows of this "
            "many words (0: off), measured on each store's rankings like --fusions."
        ),
    ] = 0,
    tune_fusion: Annotated[
        bool,
        typer.Option(
            help="Choose the adaptive rule's constants on the dev split's questions "
            "(held-out rows then report them)."
        ),
    ] = False,
) -> None:
    """Score recall@k of each question's evidence turns for every store and search
    mode, per set, split and category, with milliseconds per query and the load.

    Example: langmem-ext bench retrieval --data my-set.json --split dev
    """
    from rich.progress import Progress

    rd = dev_module("bench.retrieval_data")
    rt = dev_module("bench.retrieval")
    chosen = tuple(b.strip() for b in backends.split(",") if b.strip())
    bad = [b for b in chosen if b not in rt.STORES]
    if bad or not chosen:
        raise typer.BadParameter(f"unknown backends {bad}; choose from {list(rt.STORES)}")
    picked = tuple(m.strip() for m in modes.split(",") if m.strip())
    bad = [m for m in picked if m not in rt.MODES]
    if bad or not picked:
        raise typer.BadParameter(f"unknown modes {bad}; choose from {list(rt.MODES)}")
    if split not in (*rd.SPLITS, "all"):
        raise typer.BadParameter(f"--split {split!r}: choose dev, held-out or all")
    fusion = dev_module("bench.fusion")
    rules = tuple(f.strip() for f in fusions.split(",") if f.strip())
    bad = [f for f in rules if f not in fusion.RULES]
    if bad:
        raise typer.BadParameter(f"unknown fusion rules {bad}; choose from {list(fusion.RULES)}")
    if passage_words and not rules:
        rules = ("fixed",)  # passages are measured on the re-fused rankings
    if tune_fusion and split == "held-out":
        raise typer.BadParameter(
            "--tune-fusion chooses on the dev split only: use --split dev or all"
        )
    if tune_fusion and "adaptive" not in rules:
        rules += ("adaptive",)
    for path in data:
        if not path.exists():
            raise typer.BadParameter(f"{path} does not exist")
    cfg = rt.RetrievalConfig(
        data=tuple(data),
        backends=chosen,
        modes=picked,
        split=split,
        date_prefix=date_prefix,
        vector_weight=vector_weight,
        context_turns=context_turns,
        context_weight=context_weight,
        cache=out / "embeddings.db",
        conversations=conversations or None,
        fusions=rules,
        tune_fusion=tune_fusion,
        passage_words=passage_words,
    )
    out.mkdir(parents=True, exist_ok=True)
    console = Console()
    try:
        with Progress(console=console, transient=True) as progress:
            result = rt.run_retrieval(cfg, progress)
    except rd.DataShapeError as e:
        raise typer.BadParameter(f"not a retrieval set: {e}") from None
    load = result["load"]
    table = Table(
        title="Retrieval: recall of evidence turns (k counts turns); "
        f"load {load['before'][0]:.2f} -> {load['after'][0]:.2f} on {result['cores']} cores"
    )
    for col in ("set", "split", "store", "mode", "questions", *_KS, "ms/query"):
        table.add_column(
            col, justify="left" if col in ("set", "split", "store", "mode") else "right"
        )
    for r in result["rows"]:
        o = r["overall"]
        table.add_row(
            r["set"],
            r["split"],
            r["store"],
            r["mode"],
            str(r["questions"]),
            *(f"{o[k]:.3f}" for k in _KS),
            f"{r['search_ms_median']:.2f}",
        )
    console.print(table)
    if categories:
        _print_categories(console, result["rows"])
    if result.get("query_embed_ms_median") is not None:
        console.print(
            f"query embedding (offline embedder, uncached, not in ms/query): "
            f"{result['query_embed_ms_median']:.1f} ms median per question"
        )
    for name, info in result["sets"].items():
        ev = info["evidence"]
        q = info["questions"]
        c = info["conversations"]
        console.print(
            f"{name}: dev {len(c['dev'])} conversations / {q['dev']} questions, held-out "
            f"{len(c['held-out'])} / {q['held-out']} (scored: the split asked for); evidence "
            f"ids naming no turn {ev.get('evidence_unknown', 0)}, questions left without "
            f"evidence (not scored) {ev.get('questions_without_evidence', 0)}"
            + (f", ids repaired {ev['evidence_repaired']}" if ev.get("evidence_repaired") else "")
            + (f", split {ev['evidence_split']}" if ev.get("evidence_split") else "")
        )
    for name, w in result.get("window", {}).items():
        if w:
            console.print(
                f"{name}: {w['turns_over_window']} of {w['turns']} turns longer than the "
                f"offline embedder's 512-token window; {w['tokens_past_window']} of "
                f"{w['tokens']} tokens ({w['tokens_past_window'] / max(1, w['tokens']):.0%}) "
                f"lie past it (averaged into the item's one vector with the rest); longest "
                f"turn {w['longest']} tokens"
            )
    if result.get("tuned_fusion"):
        t = result["tuned_fusion"]
        console.print(
            f"adaptive fusion constants chosen on the dev split (the fused:adaptive rows use "
            f"them): {t['constants']} "
            f"(worst gain in R@10 over the better single side: {t['worst_gain_R@10']:+.3f})"
        )
    path = out / "retrieval.json"
    path.write_text(json.dumps(result, indent=2))
    console.print(f"wrote {path}")


def _print_categories(console: Console, rows: list[dict]) -> None:
    cats = sorted({c for r in rows for c in r["by_category"]})
    table = Table(title="R@10 per category (questions)")
    for col in ("set", "split", "store", "mode", *cats):
        table.add_column(
            col, justify="left" if col in ("set", "split", "store", "mode") else "right"
        )
    for r in rows:
        by = r["by_category"]
        table.add_row(
            r["set"],
            r["split"],
            r["store"],
            r["mode"],
            *(f"{by[c]['R@10']:.3f} ({by[c]['questions']})" if c in by else "-" for c in cats),
        )
    console.print(table)
