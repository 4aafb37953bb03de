"""Command lines of the servers tests and benchmarks start."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["langgraph_dev"]


def langgraph_dev(port: int) -> list[str]:
    """LangGraph's API server (``langgraph dev``) of this environment on
    127.0.0.1:``port``, without a browser or reloading; run it in the
    directory of a ``langgraph.json``."""
    return [
        str(Path(sys.executable).parent / "langgraph"),
        "dev",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
    ]
