"""The engine's rules, with the helpful and harmful marks they received, as an
input of the prompt optimizers: what the agent was told to do and how it went.

Examples:
    >>> from langmem_ext import MemoryEngine, SQLiteStore
    >>> from langmem_ext.engine import MemoryContext
    >>> engine = MemoryEngine(SQLiteStore())
    >>> ada = MemoryContext("acme", user_id="ada")
    >>> rule = engine.store_rule(ada, "Answer in the user's language")
    >>> _ = engine.mark_helpful(ada, rule.id)
    >>> print(rule_feedback(engine, ada))
    Rules the agent follows, with the feedback each received:
    - "Answer in the user's language": marked helpful 1 time, harmful 0 times (candidate)
"""

from __future__ import annotations

from typing import Any

from ..engine import OPERATIONS, MemoryEngine, Operation

__all__ = ["arule_feedback", "rule_feedback"]

_HEAD = "Rules the agent follows, with the feedback each received:"


def _times(n: int) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


def _text(rules: list[Any]) -> str:
    rated = [r for r in rules if r.success_count or r.harmful_count]
    if not rated:
        return ""
    # The most disputed first: what the prompt most needs to settle.
    rated.sort(key=lambda r: (-r.harmful_count, -r.success_count, r.content))
    lines = [
        f'- "{r.content}": marked helpful {_times(r.success_count)}, harmful '
        f"{_times(r.harmful_count)} ({r.maturity})"
        for r in rated
    ]
    return "\n".join([_HEAD, *lines])


def _steps(engine: MemoryEngine, ctx: Any, limit: int) -> Operation[str]:
    rules: list[Any] = []
    cursor = None
    while len(rules) < limit:
        args = {"types": ["rule"], "limit": min(100, limit - len(rules)), "cursor": cursor}
        page = yield from OPERATIONS["list"].start(engine, ctx, args)
        rules += page.items
        cursor = page.next_cursor
        if not cursor:
            break
    return _text(rules)


def rule_feedback(engine: MemoryEngine, ctx: Any, *, limit: int = 100) -> str:
    """The rules of ``ctx`` that received feedback, as text for a prompt
    optimizer's ``trajectories`` (empty when none has): e.g.
    ``optimizer.invoke({"trajectories": rule_feedback(engine, ctx), "prompt": p})``
    or ``PromptVersions.optimize(optimizer, "main", rule_feedback(engine, ctx), cfg)``.

    Args:
        engine: the memory engine holding the rules.
        ctx: whose rules (a ``MemoryContext`` or a run's config).
        limit: at most this many rules are read.
    """
    return engine.run(_steps(engine, ctx, limit), "rule_feedback")


async def arule_feedback(engine: MemoryEngine, ctx: Any, *, limit: int = 100) -> str:
    """Async :func:`rule_feedback`."""
    return await engine.arun(_steps(engine, ctx, limit), "rule_feedback")
