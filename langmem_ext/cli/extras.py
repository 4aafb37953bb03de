"""What a command needs beyond the ``cli`` extra, said in one line.

``langmem-ext ui`` needs the ``ui`` extra and ``langmem-ext mcp`` the ``mcp``
extra; without them the command prints which to install and exits with status
2 (a usage error), instead of a traceback from a failed import.

Examples:
    >>> needs_extra("cli", "json")  # installed: nothing happens
"""

from __future__ import annotations

import importlib.util

import typer

__all__ = ["needs_extra"]


def needs_extra(extra: str, *modules: str) -> None:
    """Exit with one line naming ``pip install 'langmem-ext[extra]'`` when one
    of ``modules`` is not installed."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        typer.echo(
            f"langmem-ext: this command needs the '{extra}' extra ({', '.join(missing)} "
            f"is not installed): pip install 'langmem-ext[{extra}]'",
            err=True,
        )
        raise typer.Exit(2)
