"""Memory blocks for the system prompt, within a token budget.

:func:`format_profile` renders a :class:`~langmem_ext.engine.Profile`::

    User Context:
    - Work: ...
    - Personal: ...
    - Top of mind: ...
    History:
    - Recent: ...
    - Earlier: ...
    - Background: ...
    Facts:
    - [preference | 0.90] Prefers dark mode

Facts are sorted by confidence (desc; then newest first, then id). Over
``max_tokens`` (default 2000), facts are dropped from the lowest confidence up;
if the text is still too long it is cut at a character; either way it ends with
``"\\n..."`` and stays within the budget.

:func:`memory_context` builds the block for a trigger prompt: facts
and rules by the recall composite score, recent episodes by the same score
(confidence 1), each section in score order with the tie-breakers score desc,
``created_at`` desc, id asc; sections always present (``- (none)`` when empty).
Each section first gets its quota of the budget (default facts 0.5, rules 0.25,
episodes 0.25); the budget a section leaves unused then goes to the remaining
memories of all sections by score. Within each pass the lowest-scored memories
are left out first. Tokens are counted by a real tokenizer
(:mod:`.tokens`); only the memories shown have their reference counts bumped.

Examples:
    >>> from langmem_ext.engine import Profile
    >>> from langmem_ext.engine import Fact
    >>> fact = Fact(id="fact_1", tenant_id="t", layer="user", layer_id="ada",
    ...             content="Prefers dark mode", category="preference", confidence=0.9)
    >>> print(format_profile(Profile("ada", {"work": "Engineer at Acme"}, {}, [fact])))
    User Context:
    - Work: Engineer at Acme
    Facts:
    - [preference | 0.90] Prefers dark mode
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import Field

from ...engine import (
    CONTEXT_KEYS,
    HISTORY_KEYS,
    OPERATIONS,
    AsOf,
    Caller,
    Env,
    Fact,
    Hit,
    MemoryContext,
    MemoryEngine,
    Operation,
    Profile,
    Rule,
    ScopeFilter,
    Tenant,
    ValidDuring,
    best_first,
    bump,
    check_int,
    check_number,
    check_text,
    composite,
    content_text,
    operation,
    recency_factor,
    relevance,
    run_async,
    run_sync,
    shown,
)
from ...errors import ConfigurationError, InvalidValueError
from ...model_calls.tokens import TokenCounter, token_counter

__all__ = [
    "DEFAULT_CONTEXT_BUDGET",
    "DEFAULT_PROFILE_TOKENS",
    "DEFAULT_QUOTAS",
    "amemory_context",
    "context",
    "context_steps",
    "format_profile",
    "memory_context",
]

DEFAULT_PROFILE_TOKENS = 2000
DEFAULT_CONTEXT_BUDGET = 3000
DEFAULT_QUOTAS: Mapping[str, float] = {"facts": 0.5, "rules": 0.25, "episodes": 0.25}
#: The largest token budget accepted (more than any model's context window).
MAX_TOKENS = 10_000_000
TRUNCATED = "\n..."

_LABELS = {
    "work": "Work",
    "personal": "Personal",
    "top_of_mind": "Top of mind",
    "recent": "Recent",
    "earlier": "Earlier",
    "background": "Background",
}


# -- the profile block ---------------------------------------------------------


def _fact_rows(facts: Sequence[Any]) -> list[tuple[float, str, str, str]]:
    rows = []
    for f in facts:
        get = f.get if isinstance(f, Mapping) else lambda k, f=f: getattr(f, k, None)
        conf = float(get("confidence") or 0.0)
        created = str(get("created_at") or get("createdAt") or "")
        text = f"- [{get('category') or 'fact'} | {conf:.2f}] {get('content')}"
        rows.append((conf, created, str(get("id") or ""), text))
    return best_first(rows, lambda r: r[0], lambda r: r[1], lambda r: r[2])


def _note_row(note: Any) -> dict[str, Any]:
    """A note (what the agent saved with the memory tools) as a fact row: its
    own category and confidence when it has them, else ``note`` and 1.0 — the
    agent chose to remember it."""
    get = note.get if isinstance(note, Mapping) else lambda k, n=note: getattr(n, k, None)
    meta = get("metadata") or {}
    return {
        "id": get("id"),
        "content": content_text(get("content")),
        "category": meta.get("category") or "note",
        "confidence": meta.get("confidence", 1.0),
        "created_at": get("created_at") or get("createdAt"),
    }


def _other_row(record: Any, now: datetime) -> dict[str, Any]:
    """A rule or an episode as a fact row, labelled with its type."""
    conf = record.effective_confidence(now) if isinstance(record, Rule) else 1.0
    return {
        "id": record.id,
        "content": content_text(record.content),
        "category": record.type,
        "confidence": conf,
        "created_at": record.created_at,
    }


def _summary_lines(title: str, keys: tuple[str, ...], values: Mapping[str, Any]) -> list[str]:
    lines = [f"- {_LABELS[k]}: {str(values[k]).strip()}" for k in keys if values.get(k)]
    return [f"{title}:", *lines] if lines else []


def format_profile(
    profile: Profile | Mapping[str, Any],
    max_tokens: int = DEFAULT_PROFILE_TOKENS,
    tokenizer: str | TokenCounter | None = None,
    *,
    also: Sequence[Any] = (),
    now: datetime | None = None,
) -> str:
    """The profile's memory block for the system prompt.

    Args:
        profile: a :class:`Profile`, or a dict with ``user_context``,
            ``history`` and ``facts`` (dicts with ``content``, ``category``,
            ``confidence``).
        max_tokens: the budget (default 2000 tokens).
        tokenizer: encoding name or ``str -> int`` (default cl100k_base).
        also: the user's rules and episodes, listed with the facts as
            ``- [rule | 0.50] ...`` and ``- [episode | 1.00] ...`` (rules at
            their effective confidence at ``now``).
        now: the time of the block (default: now).
    """
    count = token_counter(tokenizer)
    check_int("max_tokens", max_tokens, 1, MAX_TOKENS)
    if not isinstance(profile, Profile | Mapping):
        raise InvalidValueError(
            f"profile must be a Profile or a dict with user_context, history and facts, "
            f"got {shown(profile)}"
        )
    if isinstance(profile, Profile):
        ctx, hist = profile.user_context, profile.history
        facts: list[Any] = list(profile.facts)
        facts += [_note_row(n) for n in profile.notes]
    else:
        ctx = profile.get("user_context") or {}
        hist = profile.get("history") or {}
        facts = list(profile.get("facts") or [])
        facts += [_note_row(n) for n in profile.get("notes") or []]
    facts += [_other_row(r, now or datetime.now(timezone.utc)) for r in also]
    head = _summary_lines("User Context", CONTEXT_KEYS, ctx) + _summary_lines(
        "History", HISTORY_KEYS, hist
    )
    rows = [r[3] for r in _fact_rows(facts)]

    def render(k: int) -> str:
        return "\n".join(head + (["Facts:", *rows[:k]] if k else []))

    full = render(len(rows))
    if count(full) <= max_tokens:
        return full
    # The longest prefix of facts (highest confidence first) that fits with the
    # marker; token counts grow with k, so a binary search needs O(log n) counts.
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(render(mid) + TRUNCATED) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    text = render(lo)
    if count(text + TRUNCATED) <= max_tokens:
        return text + TRUNCATED
    return _cut(text, max_tokens, count)


def _cut(text: str, budget: int, count: TokenCounter) -> str:
    """The longest character prefix of ``text`` that fits with the marker."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid] + TRUNCATED) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + TRUNCATED if count(text[:lo] + TRUNCATED) <= budget else ""


# -- memory_context --------------------------------------------------------------


@dataclass
class _Entry:
    section: str
    score: float
    created_at: str
    id: str
    line: str
    record: Any


def _order(entries: list[_Entry]) -> list[_Entry]:
    """score desc, created_at desc, id asc (deterministic under ties)."""
    return best_first(entries, lambda e: e.score, lambda e: e.created_at, lambda e: e.id)


_TITLES = {"facts": "## Facts", "rules": "## Rules", "episodes": "## Recent episodes"}


def _render(chosen: dict[str, list[_Entry]]) -> str:
    parts = ["# Memory"]
    for section, title in _TITLES.items():
        rows = [e.line for e in _order(chosen.get(section, []))] or ["- (none)"]
        parts += [title, *rows]
    return "\n".join(parts)


def check_quotas(quotas: Mapping[str, float] | None) -> dict[str, float]:
    if quotas is not None and not isinstance(quotas, Mapping):
        raise InvalidValueError(
            f"quotas maps sections ({', '.join(_TITLES)}) to shares of the budget, "
            f"got {shown(quotas)}"
        )
    q = dict(DEFAULT_QUOTAS if quotas is None else quotas)
    bad = set(q) - set(_TITLES)
    if bad:
        raise InvalidValueError(
            f"quotas maps sections ({', '.join(_TITLES)}) to shares of the budget, "
            f"got {shown(quotas)}"
        )
    q = {s: check_number(f"quotas[{s!r}]", v, 0.0, 1.0) for s, v in q.items()}
    total = sum(q.values())
    if total > 1.0 + 1e-9:
        raise InvalidValueError(f"quotas add up to {total}; they must add up to at most 1")
    return {s: float(q.get(s, 0.0)) for s in _TITLES}


def _fit(entries: list[_Entry], budget: int, quotas: dict[str, float], count: TokenCounter):
    skeleton = count(_render({}))
    if budget < skeleton:
        raise InvalidValueError(
            f"token_budget {budget} is too small: the empty block alone takes {skeleton} tokens"
        )
    free = budget - skeleton
    cost = {id(e): count(e.line + "\n") for e in entries}
    chosen: dict[str, list[_Entry]] = {s: [] for s in _TITLES}
    used = 0
    left: list[_Entry] = []
    for section in _TITLES:
        mine = _order([e for e in entries if e.section == section])
        cap, spent = int(free * quotas[section]), 0
        for i, e in enumerate(mine):
            if spent + cost[id(e)] > cap:
                left += mine[i:]
                break
            chosen[section].append(e)
            spent += cost[id(e)]
        used += spent
    # Unused quota goes to the best remaining memories of any section.
    for e in _order(left):
        if used + cost[id(e)] > free:
            break
        chosen[e.section].append(e)
        used += cost[id(e)]
    # Token counts of lines do not add up exactly when joined; recheck the text.
    while count(_render(chosen)) > budget:
        worst = _order([e for es in chosen.values() for e in es])[-1]
        chosen[worst.section].remove(worst)
    return chosen


def _line(section: str, record: Any, score: float) -> str:
    if section == "rules" and isinstance(record, Rule):
        tag = "avoid" if record.maturity == "anti_pattern" else record.maturity
        return f"- [{tag} | {score:.2f}] {record.content}"
    if section == "episodes":
        return f"- [{record.created_at[:10]} | {score:.2f}] {record.content}"
    conf = getattr(record, "confidence", None)
    label = getattr(record, "category", None) or "fact"
    notes = [] if conf is None else [f"confidence {conf:.2f}"]
    # When it held, where known: the agent can tell "lives" from "lived".
    if getattr(record, "valid_at", None):
        notes.append(f"since {record.valid_at[:10]}")
    if getattr(record, "invalid_at", None):
        notes.append(f"until {record.invalid_at[:10]}")
    if record.stale:
        notes.append("may be stale: what it came from changed")
    return f"- [{label} | {score:.2f}] {record.content}" + (
        f" ({'; '.join(notes)})" if notes else ""
    )


def _episode_score(env: Env, hit: Hit) -> float:
    age = (env.now - datetime.fromisoformat(hit.record.created_at)).total_seconds() / 86400
    w = env.config.weights
    return composite(
        relevance=relevance(hit.score),
        importance=hit.record.importance,
        recency=recency_factor(age, w.half_life_days),
        confidence=1.0,
        weights=w,
    )


def context_steps(
    env: Env,
    query: str,
    scope: str | None,
    token_budget: int,
    quotas: Mapping[str, float] | None,
    tokenizer: str | TokenCounter | None,
    limit: int = 50,
    *,
    as_of: Any = None,
    valid_during: Any = None,
) -> Operation[str]:
    """The ``memory_context`` block (see the module docstring); ``as_of`` /
    ``valid_during``: of what held then."""
    count = token_counter(tokenizer)
    check_text("query", query)
    check_text("scope", scope, optional=True)
    check_int("token_budget", token_budget, 1, MAX_TOKENS)
    q = check_quotas(quotas)
    then = {"as_of": as_of, "valid_during": valid_during}
    recalled = yield from OPERATIONS["recall"].within(
        env, query, scope=scope, limit=limit, types=["fact", "rule"], bump_refs=False, **then
    )
    episodes = yield from OPERATIONS["search"].within(
        env, query, types=["episode"], scope=scope, mode=None, limit=limit, **then
    )
    entries = [
        _Entry(
            "rules" if isinstance(h.record, Rule) else "facts",
            h.score,
            h.record.created_at,
            h.id,
            _line("rules" if isinstance(h.record, Rule) else "facts", h.record, h.score),
            h.record,
        )
        for h in recalled
        if isinstance(h.record, Fact | Rule)
    ]
    for h in episodes:
        s = _episode_score(env, h)
        entries.append(
            _Entry(
                "episodes", s, h.record.created_at, h.id, _line("episodes", h.record, s), h.record
            )
        )
    chosen = _fit(entries, token_budget, q, count)
    shown = [e.record for es in chosen.values() for e in es if e.section != "episodes"]
    yield from bump(env, shown, counted=True)
    return _render(chosen)


Budget = Annotated[
    int,
    Field(ge=1, le=MAX_TOKENS, strict=True, description="Most tokens the block may take (3000)."),
]


@operation(access="read", tool="memory_context")
def context(
    c: Caller,
    query: Annotated[str, Field(pattern=r"\S", description="The request to prepare memory for.")],
    scope: ScopeFilter = None,
    token_budget: Budget = DEFAULT_CONTEXT_BUDGET,
    *,
    as_of: AsOf = None,
    valid_during: ValidDuring = None,
    tenant: Tenant = None,
) -> Operation[str]:
    """The memory block to put into a system prompt for a request: the facts,
    rules and recent episodes most useful for it, within a token budget (of
    what held at ``as_of`` or during ``valid_during``, when given)."""
    return context_steps(
        c.env(tenant),
        query,
        scope,
        token_budget,
        None,
        None,
        as_of=as_of,
        valid_during=valid_during,
    )


def memory_context(
    engine: MemoryEngine,
    ctx: MemoryContext | Mapping[str, Any],
    query: str,
    scope: str | None = None,
    token_budget: int = DEFAULT_CONTEXT_BUDGET,
    *,
    quotas: Mapping[str, float] | None = None,
    tokenizer: str | TokenCounter | None = None,
    tenant: str | None = None,
    as_of: Any = None,
    valid_during: Any = None,
) -> str:
    """``memory_context``: the memory block for ``query``, of the memories of
    ``scope`` and ``global`` (all scopes when None), within ``token_budget``
    tokens (see the module docstring); ``as_of`` / ``valid_during``: of what
    held then.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
        >>> _ = engine.store_fact(ctx, "user", "diet", "Is vegetarian", scope="health")
        >>> "Is vegetarian" in memory_context(engine, ctx, "Help user with diet", "health")
        True
    """
    _check_engine(engine)
    with engine.metrics.measure("context"):
        env = engine.env(ctx, tenant)
        step = context_steps(
            env,
            query,
            scope,
            token_budget,
            quotas,
            tokenizer,
            as_of=as_of,
            valid_during=valid_during,
        )
        return run_sync(step, engine.store, engine.config)


async def amemory_context(
    engine: MemoryEngine,
    ctx: MemoryContext | Mapping[str, Any],
    query: str,
    scope: str | None = None,
    token_budget: int = DEFAULT_CONTEXT_BUDGET,
    *,
    quotas: Mapping[str, float] | None = None,
    tokenizer: str | TokenCounter | None = None,
    tenant: str | None = None,
    as_of: Any = None,
    valid_during: Any = None,
) -> str:
    """Async :func:`memory_context`."""
    _check_engine(engine)
    with engine.metrics.measure("context"):
        env = engine.env(ctx, tenant)
        step = context_steps(
            env,
            query,
            scope,
            token_budget,
            quotas,
            tokenizer,
            as_of=as_of,
            valid_during=valid_during,
        )
        return await run_async(step, engine.store, engine.config)


def _check_engine(engine: Any) -> None:
    if not isinstance(engine, MemoryEngine):
        raise ConfigurationError(f"engine must be a MemoryEngine, got {type(engine).__name__}")
