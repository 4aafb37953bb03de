"""``langmem-ext memories``: look at, fix, back up and move memories from the
command line. Each command opens ``--db`` (a SQLite file or a
``postgresql://`` URL) and makes one store call; namespaces are written with
``/`` between labels (``user/ada``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..errors import LangmemError
from ..stores.transfer import export_jsonl, import_jsonl
from .dbopen import open_store

app = typer.Typer(help="Look at, fix, back up and move memories.", no_args_is_help=True)

Db = Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")]
Embed = Annotated[str, typer.Option(help="Embedder: local, none, or provider:model.")]


def _ns(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split("/") if x)


def _open(db: str, embed: str) -> Any:
    return open_store(db, embed=None if embed == "none" else embed)


def _fail(e: Exception) -> typer.Exit:
    Console(stderr=True).print(f"error: {e}", highlight=False, markup=False)
    return typer.Exit(1)


def _call(db: str, embed: str, action: Callable[[Any], Any]) -> Any:
    """``action(store)`` on the opened store; a package error (or a bad JSON
    argument) is printed as one line and exits with status 1."""
    try:
        with _open(db, embed) as store:
            return action(store)
    except (LangmemError, ValueError, ImportError) as e:  # ImportError: a missing extra
        raise _fail(e) from e


def _table(items: list[Any], scores: bool) -> Table:
    table = Table()
    if scores:
        table.add_column("score", justify="right")
    table.add_column("namespace")
    table.add_column("key")
    table.add_column("content")
    for item in items:
        content = item.value.get("content", item.value)
        row = ["/".join(item.namespace), item.key, str(content)[:100]]
        if scores:
            row.insert(0, "-" if item.score is None else f"{item.score:.3f}")
        table.add_row(*row)
    return table


@app.command("list")
def list_(
    namespace: Annotated[str, typer.Argument(help="Namespace prefix, e.g. user/ada.")] = "",
    db: Db = "memories.db",
    limit: Annotated[int, typer.Option(min=1)] = 20,
    offset: Annotated[int, typer.Option(min=0)] = 0,
    embed: Embed = "none",
) -> None:
    """List items under a namespace, newest first.

    Example: langmem-ext memories list user/ada --db memories.db
    """
    items = _call(db, embed, lambda store: store.search(_ns(namespace), limit=limit, offset=offset))
    Console().print(_table(items, scores=False))


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    namespace: Annotated[str, typer.Option(help="Namespace prefix, e.g. user/ada.")] = "",
    db: Db = "memories.db",
    limit: Annotated[int, typer.Option(min=1)] = 10,
    mode: Annotated[str | None, typer.Option(help="hybrid, vector or keyword.")] = None,
    filter: Annotated[str | None, typer.Option(help='JSON filter, e.g. {"kind": "fact"}.')] = None,
    embed: Embed = "local",
    all_: Annotated[
        bool, typer.Option("--all", help="Also list the items without a score (not indexed).")
    ] = False,
) -> None:
    """Search items with a query (hybrid on this package's stores), best first,
    with scores.

    Example: langmem-ext memories search "where does she live" --namespace user/ada
    """
    try:
        flt = json.loads(filter) if filter else None
    except ValueError as e:
        raise _fail(e) from e
    kwargs = {"mode": mode} if mode else {}
    items = _call(
        db,
        embed,
        lambda store: store.search(_ns(namespace), query=query, filter=flt, limit=limit, **kwargs),
    )
    # Stores list items they could not score (not indexed, or no matching
    # word in keyword mode) after the matches; they are no answer to a query.
    unscored = [i for i in items if i.score is None]
    if not all_:
        items = [i for i in items if i.score is not None]
    Console().print(_table(items, scores=True))
    if unscored and not all_:
        Console().print(f"{len(unscored)} more without a score (not indexed): --all lists them")


@app.command()
def get(
    namespace: Annotated[str, typer.Argument(help="e.g. user/ada")],
    key: Annotated[str, typer.Argument()],
    db: Db = "memories.db",
    embed: Embed = "none",
) -> None:
    """Print one item as JSON.

    Example: langmem-ext memories get user/ada fact_1a2b3c4d
    """
    item = _call(db, embed, lambda store: store.get(_ns(namespace), key))
    if item is None:
        raise _fail(LookupError(f"no item {key!r} in {namespace!r}"))
    typer.echo(json.dumps(item.dict(), ensure_ascii=False, indent=2))


@app.command()
def put(
    namespace: Annotated[str, typer.Argument(help="e.g. user/ada")],
    key: Annotated[str, typer.Argument()],
    value: Annotated[str, typer.Argument(help='JSON object, e.g. {"content": "Likes tea"}')],
    db: Db = "memories.db",
    ttl: Annotated[float | None, typer.Option(help="Minutes until it expires.")] = None,
    index: Annotated[bool, typer.Option(help="Embed and keyword-index it.")] = True,
    embed: Embed = "local",
) -> None:
    """Store an item (replacing the one with this key).

    Example: langmem-ext memories put user/ada m1 '{"content": "Likes tea"}'
    """
    try:
        data = json.loads(value)
    except ValueError as e:
        raise _fail(e) from e
    _call(
        db,
        embed,
        lambda store: store.put(_ns(namespace), key, data, index=None if index else False, ttl=ttl),
    )
    typer.echo(f"stored {'/'.join(_ns(namespace))}/{key}")


@app.command()
def delete(
    namespace: Annotated[str, typer.Argument(help="e.g. user/ada")],
    key: Annotated[str, typer.Argument()],
    db: Db = "memories.db",
    embed: Embed = "none",
) -> None:
    """Delete an item (nothing happens if there is none).

    Example: langmem-ext memories delete user/ada m1
    """
    _call(db, embed, lambda store: store.delete(_ns(namespace), key))
    typer.echo(f"deleted {'/'.join(_ns(namespace))}/{key}")


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
        with _open(db, embed) as store, _progress("import") as bar:
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
