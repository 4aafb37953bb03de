"""``langmem-ext``: the command line. Each command is a thin call into the library."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import LangmemError
from .eval_cli import eval_extraction

app = typer.Typer(
    help="Long-term memory for LangGraph agents: embedded SQLite store with hybrid search.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Long-term memory for LangGraph agents."""


@app.command()
def demo(
    db: Annotated[
        Path | None,
        typer.Option(help="SQLite file to create (must not exist); default: a temp file."),
    ] = None,
) -> None:
    """Store sample memories in a fresh SQLite file and run hybrid, vector,
    keyword and filtered searches, printing the hits with their scores.

    Example: langmem-ext demo --db /tmp/memories.db
    """
    from .demo import run_demo

    console = Console()
    path = db or Path(tempfile.mkdtemp(prefix="langmem-ext-")) / "demo.db"
    started = time.perf_counter()
    try:
        results = run_demo(path)
    except (LangmemError, FileExistsError) as e:
        raise typer.BadParameter(str(e)) from e
    console.print(f"[bold]Store:[/bold] {path}  (embedder: local multilingual-e5-small, 384 dims)")
    for r in results:
        flt = f"  filter={r.filter}" if r.filter else ""
        console.print(
            f"\n[bold]{escape(r.title)}[/bold]: "
            + escape(f"{'/'.join(r.namespace)}  query={r.query!r}{flt}  mode={r.mode}"),
            markup=True,
            highlight=False,
        )
        table = Table()
        table.add_column("score", justify="right")
        table.add_column("item")
        table.add_column("content")
        for score, where, content in r.hits:
            table.add_row("-" if score is None else f"{score:.3f}", where, content)
        console.print(table)
    console.print(f"done in {time.perf_counter() - started:.1f} s")


bench_app = typer.Typer(help="Benchmarks you can rerun on your machine.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file (e.g. locomo10.json).")],
    out: Annotated[Path, typer.Option(help="Directory for locomo.json/png.")] = Path(
        "bench-results"
    ),
    backends: Annotated[
        str, typer.Option(help="Comma-separated: sqlite,postgres,inmemory")
    ] = "sqlite,postgres,inmemory",
    docs: Annotated[str, typer.Option(help="Document sets: turns,observations")] = (
        "turns,observations"
    ),
    date_prefix: Annotated[
        bool, typer.Option(help="Prefix each turn with its session date.")
    ] = True,
    captions: Annotated[bool, typer.Option(help="Append shared photos' captions.")] = True,
    vector_weight: Annotated[
        float, typer.Option(help="Hybrid fusion weight of the vector side.")
    ] = 0.5,
    context_turns: Annotated[
        int, typer.Option(help="Neighbouring turns (each side) indexed as keyword context.")
    ] = 2,
    context_weight: Annotated[float, typer.Option(help="BM25 weight of that context.")] = 0.5,
    conversations: Annotated[
        int, typer.Option(help="Only the first N conversations (0: all).")
    ] = 0,
) -> None:
    """Score recall@k of LoCoMo evidence for every backend and search mode.

    Example: langmem-ext bench locomo --data ../shared/data/locomo/locomo_dev.json
    """
    from rich.progress import Progress

    from ..bench.locomo import BACKENDS, LocomoConfig, run_locomo, write_outputs

    chosen = tuple(b.strip() for b in backends.split(",") if b.strip())
    unknown = [b for b in chosen if b not in BACKENDS]
    if unknown:
        raise typer.BadParameter(f"unknown backends {unknown}; choose from {sorted(BACKENDS)}")
    if not data.exists():
        raise typer.BadParameter(f"{data} does not exist")
    cfg = LocomoConfig(
        data=data,
        backends=chosen,
        doc_sets=tuple(d.strip() for d in docs.split(",") if d.strip()),
        date_prefix=date_prefix,
        captions=captions,
        vector_weight=vector_weight,
        context_turns=context_turns,
        context_weight=context_weight,
        cache=out / "embeddings.db",
        conversations=conversations or None,
    )
    out.mkdir(parents=True, exist_ok=True)
    console = Console()
    with Progress(console=console, transient=True) as progress:
        result = run_locomo(cfg, progress)
    table = Table(title="LoCoMo retrieval, categories 1-4 (k counts dialog turns)")
    for col in ("documents", "retriever", "R@1", "R@5", "R@10", "R@20", "search ms"):
        table.add_column(col, justify="left" if col in ("documents", "retriever") else "right")
    for r in result["rows"]:
        o = r["overall"]
        table.add_row(
            r["doc_set"],
            r["retriever"],
            *(f"{o[k]:.3f}" for k in ("R@1", "R@5", "R@10", "R@20")),
            f"{r['search_ms_median']:.2f}",
        )
    console.print(table)
    ev = result["evidence"]
    console.print(
        f"questions: {result['rows'][0]['questions']} in {len(result['conversations'])} "
        f"conversations; evidence ids repaired {ev.get('repaired', 0)}, split "
        f"{ev.get('split', 0)}, dropped malformed {ev.get('dropped_malformed', 0)}, dropped "
        f"unknown {ev.get('dropped_unknown', 0)}; questions without evidence "
        f"{ev.get('questions_without_evidence', 0)}; embedding took {result['embed_seconds']:.0f} s"
    )
    for path in write_outputs(result, out):
        console.print(f"wrote {path}")


@bench_app.command("store")
def bench_store(
    sizes: Annotated[str, typer.Option(help="Comma-separated store sizes.")] = "1000,10000,100000",
    stores: Annotated[str, typer.Option(help="Comma-separated contenders.")] = (
        "sqlite,postgres,lg-inmemory,lg-sqlite,lg-postgres"
    ),
    queries: Annotated[int, typer.Option(help="Queries per case.")] = 50,
    out: Annotated[Path, typer.Option(help="Directory for store.json/png.")] = Path(
        "bench-results"
    ),
) -> None:
    """Put throughput and query latency (whole store, 10 % namespace, filter) with
    recall@10 against exact search, for our stores and LangGraph's, in one run.

    Example: langmem-ext bench store --sizes 1000,10000
    """
    import json

    from ..bench.store_speed import CONTENDERS, embedder_throughput, plot, run_store_bench

    names = [s.strip() for s in stores.split(",") if s.strip()]
    unknown = [n for n in names if n not in CONTENDERS]
    if unknown:
        raise typer.BadParameter(f"unknown stores {unknown}; choose from {sorted(CONTENDERS)}")
    try:
        ns = [int(x) for x in sizes.split(",") if x.strip()]
    except ValueError as e:
        raise typer.BadParameter(f"--sizes must be integers: {e}") from e
    console = Console()
    rows = run_store_bench(ns, names, queries)
    table = Table(title="Store speed (latency in ms; recall@10 against exact search)")
    for col in (
        "store",
        "items",
        "put/s",
        "whole med",
        "p95",
        "R@10",
        "ns 10% med",
        "p95",
        "R@10",
        "filter med",
        "p95",
        "R@10",
    ):
        table.add_column(col, justify="left" if col == "store" else "right")
    for r in rows:
        if "unavailable" in r:
            table.add_row(r["store"], str(r["n"]), f"unavailable: {r['unavailable']}")
            continue
        cells = [r["store"], str(r["n"]), f"{r['put_per_s']:,.0f}"]
        for case in ("whole", "namespace_10pct", "filter"):
            c = r[case]
            cells += [f"{c['median_ms']:.2f}", f"{c['p95_ms']:.2f}", f"{c['recall_at_10']:.3f}"]
        table.add_row(*cells)
    console.print(table)
    emb = embedder_throughput()
    console.print(
        f"local embedder: load {emb['load_s']:.2f} s, {emb['docs_per_s']:.1f} documents/s "
        f"batched, {emb['query_ms']:.1f} ms per query"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "store.json").write_text(json.dumps({"rows": rows, "embedder": emb}, indent=2))
    console.print(f"wrote {out / 'store.json'}")
    png = plot([r for r in rows if "unavailable" not in r], out / "store.png")
    if png:
        console.print(f"wrote {png}")


app.command("eval-extraction")(eval_extraction)


def main() -> None:
    """Console entry point."""
    app()


if __name__ == "__main__":
    main()
