"""The steps a conversation generator yields (see :mod:`._core`)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, NamedTuple

__all__ = ["Copy", "Exec", "Step", "Steps"]


class Exec(NamedTuple):
    """Run ``sql`` with ``params``; the generator receives the rows if ``fetch``."""

    sql: str
    params: Sequence[Any] = ()
    fetch: bool = False


class Copy(NamedTuple):
    """``COPY … FROM STDIN (FORMAT BINARY)`` of ``rows`` with these types."""

    sql: str
    types: list[str]
    rows: list[tuple[Any, ...]]


Step = Exec | Copy
Steps = Generator[Step, Any, Any]
