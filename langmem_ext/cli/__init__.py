"""``langmem-ext``, the command line (``cli`` extra). :func:`main` is the
console entry point; the commands live in :mod:`.app` and the modules beside it.

Examples:
    >>> from typer.testing import CliRunner
    >>> from langmem_ext.cli.app import app
    >>> CliRunner().invoke(app, ["--version"]).output.startswith("langmem-ext ")
    True
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Console entry point: run the command line, or say which extra it needs."""
    try:
        from .app import app
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in ("typer", "rich", "langchain", "trustcall"):
            raise
        print(
            f"langmem-ext: the command line needs the 'cli' extra ({e.name} is not "
            "installed): pip install 'langmem-ext[cli]'",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    app()
