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


def main() -> None:
    """Console entry point."""
    app()


if __name__ == "__main__":
    main()
