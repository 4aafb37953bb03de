"""``langmem-ext memories``: look at, fix, back up and move memories from the
command line. Each command opens ``--db`` (a SQLite file or a
``postgresql://`` URL). The commands that act as one caller (``search``,
``store-fact``, ``forget``, …) are derived from the operation catalogue
(:mod:`.cli_catalogue`); ``export`` and ``import`` move whole stores.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import LangmemError
from ..stores.transfer import export_jsonl, import_jsonl
from .catalogue import add_commands
from .dbopen import open_store
from .store import fail

app = typer.Typer(
    help="Look at, fix, back up and move memories.", no_args_is_help=True, add_completion=False
)
add_commands(app)

Db = Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")]
Embed = Annotated[str, typer.Option(help="Embedder: local, none, or provider:model.")]


def _ns(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split("/") if x)


def _open(db: str, embed: str, create: bool = False) -> Any:
    return open_store(db, embed=None if embed == "none" else embed, create=create)


_fail = fail


def _progress(label: str) -> Progress:
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


@app.command("export")
def export_(
    out: Annotated[Path, typer.Argument(help="JSON Lines file to write ('-': stdout).")],
    namespace: Annotated[str, typer.Option(help="Only this namespace prefix.")] = "",
    db: Db = "memories.db",
) -> None:
    """Write every item (value, timestamps, indexing, TTL) as JSON Lines.

    Example: langmem-ext memories export backup.jsonl --db memories.db
    """
    try:
        with _open(db, "none") as store, _progress("export") as bar:
            task = bar.add_task("export", total=None)
            if str(out) == "-":
                n = export_jsonl(store, sys.stdout, _ns(namespace))
            else:
                with out.open("w", encoding="utf-8", newline="") as fh:
                    n = export_jsonl(
                        store,
                        fh,
                        _ns(namespace),
                        progress=lambda k: bar.update(task, completed=k),
                    )
    except (LangmemError, OSError) as e:
        raise _fail(e) from e
    Console(stderr=True).print(f"exported {n} items")


@app.command("import")
def import_(
    source: Annotated[Path, typer.Argument(help="JSON Lines file written by export.")],
    db: Db = "memories.db",
    skip_bad: Annotated[
        bool, typer.Option(help="Import the good lines and report the bad ones.")
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(help="Overwrite items that already exist (same namespace and key)."),
    ] = False,
    embed: Embed = "local",
) -> None:
    """Import items written by export (into SQLite or PostgreSQL), all or
    nothing: a bad line, or an item that exists already (without --replace),
    stops the import before anything is written. --skip-bad imports the good
    lines and lists the bad ones.

    Example: langmem-ext memories import backup.jsonl --db postgresql://app@db/memories
    """
    try:
        with source.open("rb") as fh:
            lines = fh.readlines()  # split at b"\n" only, as JSON Lines are
        # Filling a new file is what an import is for (a restore): it creates one.
        with _open(db, embed, create=True) as store, _progress("import") as bar:
            task = bar.add_task("import", total=len(lines))
            report = import_jsonl(
                store,
                lines,
                skip_bad=skip_bad,
                replace=replace,
                progress=lambda k: bar.update(task, completed=k),
            )
    except (LangmemError, OSError) as e:
        bad = e.details.get("bad", []) if isinstance(e, LangmemError) else []
        for number, why in bad if len(bad) > 10 else []:  # the error names ten
            Console(stderr=True).print(f"line {number}: {why}", highlight=False, markup=False)
        raise _fail(e) from e
    for number, why in report.bad:
        Console(stderr=True).print(f"skipped line {number}: {why}", highlight=False, markup=False)
    Console(stderr=True).print(
        f"imported {report.imported} items ({report.created} new, {report.replaced} replaced)"
    )
