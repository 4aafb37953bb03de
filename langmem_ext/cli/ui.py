"""``langmem-ext ui``: serve the memory browser on this machine.

Examples:
    >>> from typer.testing import CliRunner
    >>> from langmem_ext.cli.app import app
    >>> CliRunner().invoke(app, ["ui", "--allow-anonymous"]).exit_code  # who is the user?
    2
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .extras import needs_extra

__all__ = ["ui"]


def ui(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "memories.db",
    host: Annotated[str, typer.Option(help="Address (keep 127.0.0.1 unless proxied).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port.")] = 8765,
    callers: Annotated[
        Path | None,
        typer.Option(
            help="Callers JSON (bearer tokens → tenant, user); default: $LANGMEM_EXT_CALLERS."
        ),
    ] = None,
    user_id: Annotated[
        str | None, typer.Option(help="With --allow-anonymous: the one local user.")
    ] = None,
    allow_anonymous: Annotated[
        bool, typer.Option(help="Serve every browser as --user-id, without signing in.")
    ] = False,
    embed: Annotated[str, typer.Option(help="Embedder: local, none, or provider:model.")] = "local",
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Also answer to this host name (a reverse proxy's); repeat for several.",
        ),
    ] = None,
    session_idle: Annotated[
        float,
        typer.Option(help="Minutes without use after which a browser must sign in again."),
    ] = 30,
    session_lifetime: Annotated[
        float,
        typer.Option(help="Minutes after signing in after which a browser must sign in again."),
    ] = 720,
    create: Annotated[
        bool, typer.Option(help="Create the SQLite file if it does not exist yet.")
    ] = False,
) -> None:
    """Browse, search, edit and forget memories in the web browser.

    Example: langmem-ext ui --db memories.db --callers callers.json
    """
    needs_extra("ui", "uvicorn", "starlette", "jinja2")
    import uvicorn

    from ..engine import MemoryContext
    from ..errors import LangmemError
    from ..servers.callers import Callers
    from ..servers.hosts import allowed_hosts
    from ..servers.ui import create_ui_app
    from .dbopen import open_store

    try:
        if allow_anonymous and user_id is None:
            raise typer.BadParameter("--allow-anonymous needs --user-id (the one local user)")
        if not session_idle > 0 or not session_lifetime >= session_idle:
            raise typer.BadParameter(
                f"--session-idle ({session_idle:g}) must be over 0 minutes and at most "
                f"--session-lifetime ({session_lifetime:g})"
            )
        known = None if allow_anonymous else Callers.load(callers)
        caller = MemoryContext(user_id=user_id) if allow_anonymous else None
        with open_store(db, embed=None if embed == "none" else embed, create=create) as store:
            hosts = allowed_hosts(host, allowed_host or [])
            app = create_ui_app(
                store,
                callers=known,
                caller=caller,
                allowed_hosts=hosts,
                session_idle=session_idle * 60,
                session_lifetime=session_lifetime * 60,
            )
            typer.echo(f"memory browser on http://{host}:{port}/ (Ctrl+C stops it)")
            uvicorn.run(app, host=host, port=port, log_level="warning")
    except LangmemError as e:
        raise typer.BadParameter(str(e)) from e
