"""The steps a conversation generator yields (see :mod:`._core`), and
:func:`gather`, which runs several conversations side by side.

Examples:
    >>> def one(n):
    ...     rows = yield Exec("SELECT %s", [n], fetch=True)
    ...     return rows
    >>> g = gather([one(1), one(2)])
    >>> next(g).steps[1].params
    [2]
    >>> try:
    ...     g.send([[(1,)], [(2,)]])
    ... except StopIteration as stop:
    ...     print(stop.value)
    [[(1,)], [(2,)]]
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, NamedTuple

__all__ = ["Copy", "Exec", "Many", "Step", "Steps", "gather"]


class Exec(NamedTuple):
    """Run ``sql`` with ``params``; the generator receives the rows if ``fetch``.

    ``prepare=False`` keeps psycopg from preparing the statement after five
    runs: a prepared statement soon runs a *generic* plan, blind to the
    parameters, and for searches the best plan depends on them (a namespace of
    ten items or the whole store): measured 11 → 35 ms for a whole-store query
    at 10k items."""

    sql: str
    params: Sequence[Any] | None = None
    fetch: bool = False
    prepare: bool | None = None


class Copy(NamedTuple):
    """``COPY … FROM STDIN (FORMAT BINARY)`` of ``rows`` with these types."""

    sql: str
    types: list[str]
    rows: list[tuple[Any, ...]]


class Many(NamedTuple):
    """Independent statements sent together (one round trip in libpq's pipeline
    mode); the generator receives one result per statement (rows, or None)."""

    steps: tuple[Exec, ...]


Step = Exec | Copy | Many
Steps = Generator[Step, Any, Any]


def gather(conversations: Sequence[Steps]) -> Steps:
    """Run conversations in lockstep: each round sends the next statement of
    every unfinished one as a single :class:`Many`. Returns their results in
    order. The conversations may only yield :class:`Exec` steps."""
    results: list[Any] = [None] * len(conversations)
    pending: dict[int, Exec] = {}

    def advance(i: int, sent: Any) -> None:
        try:
            step = conversations[i].send(sent)
        except StopIteration as stop:
            results[i] = stop.value
            return
        assert isinstance(step, Exec), "gathered conversations yield Exec steps only"
        pending[i] = step

    for i in range(len(conversations)):
        advance(i, None)
    while pending:
        order = list(pending)
        outs = yield Many(tuple(pending[i] for i in order))
        pending.clear()
        for i, out in zip(order, outs, strict=True):
            advance(i, out)
    return results
