"""The ``langmem-ext memories`` commands that act as one caller, derived from
the operation catalogue: one command per operation (``store-fact``,
``search``, ``recall``, ``forget``, …), its arguments and help from the
operation's declaration, its answer and errors the same as over MCP.

Values are passed through as written and checked by the operation itself, so a
bad value gets the same coded error as from Python or an agent (``--importance
high`` → ``INVALID_VALUE: importance must be a number, got 'high'``); numbers
and lists are read as JSON (``--importance 7``, ``--filter '{"category":
"preference"}'``). The caller is given with ``--user-id`` (and the other
identifiers, ``--tenant-id``), or ``--token`` from a callers file.

Examples:
    >>> from typer.testing import CliRunner
    >>> from langmem_ext.cli.app import app
    >>> out = CliRunner().invoke(app, ["memories", "store-rule", "--help"]).output
    >>> "Store a rule for how to behave" in out and "--scope" in out
    True
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from ..agents.reflection.context import context as context_op
from ..engine import OPERATIONS, MemoryContext, MemoryEngine, Spec, error_text, to_json
from ..errors import LangmemError, MemoryNotFoundError, MissingIdentifierError
from ..servers.values import metavar, read, shape
from .dbopen import open_store

__all__ = ["CLI_SET", "add_commands"]

#: The operations offered as ``langmem-ext memories`` commands.
CLI_SET: tuple[Spec[Any, Any], ...] = (
    *(spec for spec in OPERATIONS.values() if spec.cli),
    context_op,
)

_CALLER = (
    ("user_id", "The user whose memories these are."),
    ("tenant_id", "Their tenant (default: the single-tenant default)."),
    ("org_id", "Their organisation (the org layer)."),
    ("agent_id", "The agent (the agent layer)."),
    ("project_id", "The project (the project layer)."),
    ("team_id", "The team (the team layer)."),
    ("session_id", "The session (the session layer)."),
)


def add_commands(app: typer.Typer) -> None:
    """Add a command for each operation of :data:`CLI_SET` to ``app``."""
    for spec in CLI_SET:
        app.command(spec.cli, help=_help(spec))(_command(spec))


def _command(spec: Spec[Any, Any]) -> Callable[..., None]:
    params: list[inspect.Parameter] = []
    offered = spec.offered()
    for p in offered:
        flag = "--" + p.public.replace("_", "-")
        annotation: Any = list[str] | None if shape(p) == "list" else str | None
        if p.required and p.positional:
            default: Any = typer.Argument(..., help=p.description, metavar=p.public.upper())
            annotation = str
        elif p.required:
            default = typer.Option(..., flag, help=p.description, metavar=metavar(p))
            annotation = str
        else:
            default = typer.Option(
                None, flag, help=p.description, show_default=False, metavar=metavar(p)
            )
        kind = inspect.Parameter.KEYWORD_ONLY
        params.append(inspect.Parameter(p.name, kind, default=default, annotation=annotation))
    # An operation parameter named like a caller option (store-episode's
    # --session-id) is the operation's; the caller's is then left unset.
    taken = {p.name for p in offered}
    params += [c for c in _caller_params() if c.name not in taken]

    def callback(**values: Any) -> None:
        args = {p.name: read(p, values[p.name]) for p in offered if values[p.name] is not None}
        try:
            ctx = _caller(values)  # before the store is opened: nothing to create for nobody
            with open_store(
                values["db"], embed=_embed(values["embed"]), create=values["create"]
            ) as store:
                engine = MemoryEngine(store, namespace=_template(values["namespace"]))
                result = engine.run(spec.start(engine, ctx, args), spec.name)
                _show(spec, result, engine, args, values["json"])
        except (LangmemError, ImportError, OSError) as e:
            Console(stderr=True, soft_wrap=True).print(
                f"error: {_text(e)}", highlight=False, markup=False
            )
            raise typer.Exit(1) from None

    callback.__name__ = spec.name
    callback.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return callback


def _caller_params() -> list[inspect.Parameter]:
    def opt(name: str, default: Any, help: str, annotation: Any = str | None) -> inspect.Parameter:
        flag = "--" + name.replace("_", "-")
        return inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(default, flag, help=help, rich_help_panel="Caller and store"),
            annotation=annotation,
        )

    out = [opt(k, None, h) for k, h in _CALLER]
    out += [
        opt("token", None, "Act as the caller of this token (see --callers)."),
        opt("callers", None, "Callers JSON file; default: $LANGMEM_EXT_CALLERS.", Path | None),
        opt("namespace", None, "The app's namespace template, e.g. memories/{user_id}."),
        opt("db", "memories.db", "SQLite file or postgresql:// URL.", str),
        opt("embed", "local", "Embedder: local, none, or provider:model.", str),
        opt("json", False, "Print the result as JSON.", bool),
        opt("create", False, "Create the SQLite file if it does not exist yet.", bool),
    ]
    return out


def _help(spec: Spec[Any, Any]) -> str:
    required = [p for p in spec.offered() if p.required]
    shown = " ".join(
        p.public.upper() if p.positional else f"--{p.public.replace('_', '-')} ..."
        for p in required
    )
    return (
        f"{spec.summary}\n\n"
        f"Example: langmem-ext memories {spec.cli} {shown + ' ' if shown else ''}--user-id ada"
    )


def _embed(embed: str) -> str | None:
    return None if embed == "none" else embed


def _template(namespace: str | None) -> Any:
    return tuple(x for x in namespace.split("/") if x) if namespace else None


def _caller(values: dict[str, Any]) -> MemoryContext:
    if values["token"] is not None:
        from ..servers.callers import Callers

        return Callers.load(values["callers"]).authenticate(f"Bearer {values['token']}")
    ids: dict[str, Any] = {k: values.get(k) for k, _ in _CALLER}
    given = {k: v for k, v in ids.items() if v is not None}
    if not given.keys() - {"tenant_id"}:
        # Without a caller every operation would see nobody's memories and
        # print an empty result: say who is missing instead.
        raise MissingIdentifierError(
            "who is the caller? pass --user-id (or --org-id, --agent-id, --project-id, "
            "--team-id, --session-id; or --token with a callers file)",
            identifier="user_id",
        )
    return MemoryContext(**given)


def _text(e: Exception) -> str:
    return error_text(e) if isinstance(e, LangmemError) else str(e)


def _show(spec: Spec[Any, Any], result: Any, engine: MemoryEngine, args: Any, raw: bool) -> None:
    if result is None and spec.name == "get":
        raise MemoryNotFoundError(f"no memory with id {args['id']!r} among your memories")
    data: Any = to_json(result, engine.config.clock())
    rows: Any = data.get("items") if isinstance(data, dict) and "next_cursor" in data else data
    if raw or not _tabular(rows):
        typer.echo(data if isinstance(data, str) else json.dumps(data, indent=2, default=str))
        return
    table = Table()
    # Memories by score, type, id, content and confidence, with their times
    # and staleness when any has them; entities by name, kind and aliases.
    wanted = ["score", "type", "id", "content", "valid_at", "invalid_at", "stale", "confidence"]
    if "type" not in rows[0]:
        wanted = ["name", "kind", "aliases", "id"]
    columns = [c for c in wanted if any(c in r for r in rows)]
    for c in columns:
        table.add_column(c, justify="right" if c in ("score", "confidence") else "left")
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in columns))
    console = Console()
    console.print(table)
    if isinstance(data, dict) and "next_cursor" in data:
        more = f"; next page: --cursor {data['next_cursor']}" if data["next_cursor"] else ""
        console.print(f"{len(rows)} of {data['total_count']}{more}", highlight=False)


def _tabular(rows: Any) -> bool:
    return isinstance(rows, list) and bool(rows) and all(isinstance(r, dict) for r in rows)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if text.endswith("T00:00:00.000000+00:00"):  # a date: no time of day was given
        text = text[:10]
    return text if len(text) <= 100 else text[:99] + "…"
