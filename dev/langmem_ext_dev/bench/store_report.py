"""The store benchmark's report: a table of the figures beside the reference
stores, and a chart of them (see :mod:`.store_speed`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .store_data import KINDS
from .store_speed import CASES, run_store_bench


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """PNG: per case, median latency against size (top) and recall@10 against
    latency (bottom), so an approximate store never looks better than it is."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = [r for r in rows if "unavailable" not in r]
    stores = list(dict.fromkeys(r["store"] for r in rows))
    colors = {s: plt.cm.tab10(i % 10) for i, s in enumerate(stores)}
    markers = {"random": "o", "clustered": "s", "text": "^"}
    fig, axes = plt.subplots(2, len(CASES), figsize=(5 * len(CASES), 8.5), squeeze=False)
    for col, case in enumerate(CASES):
        top, bottom = axes[0][col], axes[1][col]
        for s in stores:
            for kind in KINDS:
                pts = sorted(
                    (r["n"], r[case]["median_ms"], r[case]["recall_at_10"])
                    for r in rows
                    if r["store"] == s and r["kind"] == kind and case in r
                )
                if not pts:
                    continue
                n, ms, rec = zip(*pts, strict=True)
                style = {"color": colors[s], "marker": markers.get(kind, "o")}
                top.plot(n, ms, **style, label=f"{s} ({kind})")
                bottom.scatter(ms, rec, **style)
                for x, y, size in zip(ms, rec, n, strict=True):
                    bottom.annotate(f"{size:,.0f}", (x, y), fontsize=6, alpha=0.7)
        top.set(xscale="log", yscale="log", xlabel="items", ylabel="median latency (ms)")
        top.set_title(case.replace("_", " "))
        bottom.set(xscale="log", xlabel="median latency (ms)", ylabel="recall@10 vs exact")
        bottom.set_ylim(-0.02, 1.04)
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the command ---------------------------------------------------------------------


_COLUMNS = ("put/s", "open→1st ms", "RSS MB")


def report(
    sizes: list[int],
    stores: list[str],
    kinds: list[str],
    n_queries: int,
    out: Path,
    load_budget_s: float = 1200.0,
    console: Any = None,
    keep: Path | None = None,
    n_neighbours: int = 0,
) -> list[dict[str, Any]]:
    """Run the benchmark with a progress bar, print one table per vector kind,
    and write ``store.json`` and ``store.png`` into ``out``.

    Every median is printed beside its ratio to the brute-force yardstick of
    the same run (numpy over the same vectors on every core): ``0.20×`` is
    five times faster than brute force, on any machine."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    from rich.table import Table

    console = console or Console()
    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )

    def track(description: str, total: int) -> Callable[[int], None]:
        task = bar.add_task(description, total=total)
        return lambda k: bar.advance(task, k)

    with bar:
        rows = run_store_bench(
            sizes, stores, kinds, n_queries, load_budget_s, track, keep, n_neighbours
        )
    for kind in kinds:
        table = Table(
            title=f"Store speed, {kind} vectors (median ms and ratio to brute force "
            "on every core; R@10 against exact search)"
        )
        for col in ("store", "items", *_COLUMNS, "brute 1 thr ms", "brute all ms"):
            table.add_column(col, justify="left" if col == "store" else "right")
        for case in CASES:
            for col in ("med", "p95", "R@10"):
                table.add_column(f"{case.split('_')[0]} {col}", justify="right")
        for r in (r for r in rows if r["kind"] == kind):
            if "unavailable" in r:
                table.add_row(r["store"], f"{r['n']:,}", r["unavailable"])
                continue
            cells = [r["store"], f"{r['n']:,}", f"{r['put_per_s']:,.0f}"]
            first = r.get("open_to_first_ms")
            cells += [f"{first:,.0f}" if first is not None else "n/a", f"{r['search_rss_mb']:,.0f}"]
            cells += [_ms(r.get("brute_1t_ms")), _ms(r.get("brute_all_ms"))]
            for case in CASES:
                c = r[case]
                cells += [
                    ratio_cell(c["median_ms"], r.get("brute_all_ms")),
                    f"{c['p95_ms']:.2f}",
                    f"{c['recall_at_10']:.3f}",
                ]
            table.add_row(*cells)
        console.print(table)
    busy = [r for r in rows if "neighbours" in r]
    if busy:
        table = Table(
            title="Beside CPU-bound neighbours: median ms (ratio to brute force measured "
            "in the same conditions), quiet → with neighbours"
        )
        for col in ("store", "kind", "items", "neighbours", "load 1m", "brute all ms"):
            table.add_column(col, justify="left" if col == "store" else "right")
        for case in ("open→1st", *CASES):
            table.add_column(case.split("_")[0], justify="right")
        for r in busy:
            b = r["neighbours"]
            cells = [
                r["store"],
                r["kind"],
                f"{r['n']:,}",
                str(b["count"]),
                f"{r.get('loadavg_before_search', float('nan')):.2f} → {b['loadavg_1m']:.2f}",
                f"{_ms(r.get('brute_all_ms'))} → {_ms(b.get('brute_all_ms'))}",
                f"{r['open_to_first_ms']:,.0f} → {b['open_to_first_ms']:,.0f}",
            ]
            for case in CASES:
                cells.append(
                    f"{ratio_cell(r[case]['median_ms'], r.get('brute_all_ms'))} → "
                    f"{ratio_cell(b[case]['median_ms'], b.get('brute_all_ms'))}"
                )
            table.add_row(*cells)
        console.print(table)
    modes = [r for r in rows if "modes" in r]
    if modes:
        table = Table(title="Our stores: one-item and 10-item namespace, every mode (median ms)")
        table.add_column("store")
        table.add_column("kind")
        table.add_column("items", justify="right")
        names = list(modes[0]["modes"])
        for name in names:
            table.add_column(name.replace("_", " "), justify="right")
        for r in modes:
            table.add_row(
                r["store"],
                r["kind"],
                f"{r['n']:,}",
                *(f"{r['modes'][m]['median_ms']:.2f}" for m in names),
            )
        console.print(table)
    emb = embedder_throughput()
    console.print(
        f"local embedder: load {emb['load_s']:.2f} s, {emb['docs_per_s']:.1f} documents/s "
        f"batched, {emb['query_ms']:.1f} ms per query"
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "store.json").write_text(json.dumps({"rows": rows, "embedder": emb}, indent=2))
    console.print(f"wrote {out / 'store.json'}")
    png = plot(rows, out / "store.png")
    if png:
        console.print(f"wrote {png}")
    return rows


def _ms(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms:.1f}"


def ratio_cell(ms: float, brute_ms: float | None) -> str:
    """A median with its ratio to the brute-force yardstick.

    Examples:
        >>> ratio_cell(20.0, 100.0)
        '20.00 (0.20×)'
    """
    if not brute_ms:
        return f"{ms:.2f}"
    return f"{ms:.2f} ({ms / brute_ms:.2f}×)"


def embedder_throughput(n: int = 200) -> dict[str, float]:
    """The offline default embedder's own speed (load, texts/s, one query)."""
    t = time.perf_counter()
    from langmem_ext.stores.embeddings import LocalEmbeddings

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
