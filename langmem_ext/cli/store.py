"""``langmem-ext store``: the store's own items, as ``store.get`` / ``put`` /
``delete`` / ``search`` see them — every namespace of every tenant, like
``sqlite3`` or ``psql`` on the database. Namespaces are written with ``/``
between labels (``user/ada``). For one user's memories as the agent sees them,
use ``langmem-ext memories``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from ..engine import error_text
from ..errors import LangmemError
from .dbopen import open_store

__all__ = ["app"]

app = typer.Typer(
    help="The store's items in every namespace (what the database holds).",
    no_args_is_help=True,
    add_completion=False,
)

Db = Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")]
Embed = Annotated[str, typer.Option(help="Embedder: local, none, or provider:model.")]


def _ns(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split("/") if x)


def fail(e: Exception) -> typer.Exit:
    """Print a package error (or a bad JSON argument) as one line; exit status 1."""
    text = error_text(e) if isinstance(e, LangmemError) else str(e)
    Console(stderr=True, soft_wrap=True).print(f"error: {text}", highlight=False, markup=False)
    return typer.Exit(1)


def _call(db: str, embed: str, action: Callable[[Any], Any], create: bool = False) -> Any:
    """``action(store)`` on the opened store; a package error (or a bad JSON
    argument) is printed as one line and exits with status 1."""
    try:
        with open_store(db, embed=None if embed == "none" else embed, create=create) as store:
            return action(store)
    except (LangmemError, ValueError, ImportError) as e:  # ImportError: a missing extra
        raise fail(e) from e


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

    Example: langmem-ext store list user/ada --db memories.db
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

    Example: langmem-ext store search "where does she live" --namespace user/ada
    """
    try:
        flt = json.loads(filter) if filter else None
    except ValueError as e:
        raise fail(e) from e
    kwargs = {"mode": mode} if mode else {}
    items = _call(
        db,
        embed,
        lambda store: store.search(_ns(namespace), query=query, filter=flt, limit=limit, **kwargs),
    )
    # Stores list the items they could not score after the ranked ones
    # (stored with index=False; or, with no embedder and no --mode, those
    # without the words): they answer no query.
    unscored = [i for i in items if i.score is None]
    if not all_:
        items = [i for i in items if i.score is not None]
    Console().print(_table(items, scores=True))
    if unscored and not all_:
        Console().print(
            f"{len(unscored)} more without a score (not indexed, or without the words): "
            "--all lists them"
        )


@app.command()
def get(
    namespace: Annotated[str, typer.Argument(help="e.g. user/ada")],
    key: Annotated[str, typer.Argument()],
    db: Db = "memories.db",
    embed: Embed = "none",
) -> None:
    """Print one item as JSON.

    Example: langmem-ext store get user/ada fact_1a2b3c4d
    """
    item = _call(db, embed, lambda store: store.get(_ns(namespace), key))
    if item is None:
        raise fail(LookupError(f"no item {key!r} in {namespace!r}"))
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
    create: Annotated[
        bool, typer.Option(help="Create the SQLite file if it does not exist yet.")
    ] = False,
) -> None:
    """Store an item (replacing the one with this key).

    Example: langmem-ext store put user/ada m1 '{"content": "Likes tea"}'
    """
    try:
        data = json.loads(value)
    except ValueError as e:
        raise fail(e) from e
    _call(
        db,
        embed,
        lambda store: store.put(_ns(namespace), key, data, index=None if index else False, ttl=ttl),
        create=create,
    )
    typer.echo(f"stored {'/'.join(_ns(namespace))}/{key}")


@app.command()
def delete(
    namespace: Annotated[str, typer.Argument(help="e.g. user/ada")],
    key: Annotated[str, typer.Argument()],
    db: Db = "memories.db",
    embed: Embed = "none",
) -> None:
    """Delete an item; a key with no item is an error (exit status 1), so a
    mistyped key is not taken for a deletion.

    Example: langmem-ext store delete user/ada m1
    """
    where = f"{'/'.join(_ns(namespace))}/{key}"

    def delete_one(store: Any) -> bool:
        if store.get(_ns(namespace), key) is None:
            return False
        store.delete(_ns(namespace), key)
        return True

    if not _call(db, embed, delete_one):
        raise fail(LookupError(f"no item {key!r} in {namespace!r}; nothing was deleted"))
    typer.echo(f"deleted {where}")


@app.command()
def reindex(
    db: Db = "memories.db",
    to: Annotated[
        str, typer.Option(help="The embedder to switch to: local or provider:model.")
    ] = "local",
    embed: Annotated[
        str, typer.Option(help="The embedder the store uses now (none: it has none yet).")
    ] = "none",
    batch_size: Annotated[int, typer.Option(min=1, help="Items embedded per batch.")] = 256,
) -> None:
    """Embed every item with another embedder while the store serves (the
    old vectors answer searches until the switch), or embed items stored
    before the store had an embedder. Stopped, it resumes when run again.

    Example: langmem-ext store reindex --db memories.db --to openai:text-embedding-3-small
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    index = {"embed": to, "fields": ["content"]}
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    ) as bar:
        task = bar.add_task("embedding", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        out = _call(db, embed, lambda store: store.reindex(index, batch_size=batch_size,
                                                           progress=progress))  # fmt: skip
    typer.echo(
        f"switched to {to}: {out['embedded']} items embedded, {out['vectors']} vectors of "
        f"{out['dims']} dimensions"
    )
