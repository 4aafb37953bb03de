"""The SQL both stores write the same way, with what differs between SQLite
and PostgreSQL named by a small dialect object: one filter compiler, one
namespace scope, one keyword tokenizer with its stop words. A store module
keeps only its dialect's leaves (how a JSON field is read and compared).

Examples:
    >>> keyword_words("Who's the painter? (painter & 'x')")
    ['s', 'painter', 'x']
    >>> keyword_words("the of")  # only stop words: kept, rather than no query
    ['the', 'of']
    >>> SQLITE.scope("a.b")
    ('(i.prefix = ? OR (i.prefix >= ? AND i.prefix < ?))', ['a.b', 'a.b.', 'a.b/'])
    >>> POSTGRES.scope("")
    ('TRUE', [])
    >>> POSTGRES.live("now()")
    '(i.expires_at IS NULL OR i.expires_at > now())'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from ._filters import Condition

__all__ = [
    "POSTGRES",
    "SQLITE",
    "STOPWORDS",
    "Dialect",
    "FilterLeaves",
    "compile_filter",
    "keyword_words",
]

#: English function words left out of keyword queries (unless nothing else is left).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves""".split()
)
_WORD = re.compile(r"\w+")


def keyword_words(text: str) -> list[str]:
    """Free text → the words a keyword query looks for: ``\\w+`` runs, lower
    case, stop words dropped unless nothing else is left, repeats dropped.
    Only word characters, so query syntax in user text (FTS5's quotes,
    tsquery's ``&|!():*``) never reaches the database's parser."""
    lowered = text.lower()
    words = [w for w in _WORD.findall(lowered) if w not in STOPWORDS]
    if not words:
        words = _WORD.findall(lowered)
    return list(dict.fromkeys(words))


@dataclass(frozen=True)
class Dialect:
    """What differs in the SQL both stores share: the parameter placeholder
    and the boolean literals."""

    placeholder: str
    true: str
    false: str

    def scope(self, prefix: str, col: str = "i.prefix") -> tuple[str, list[Any]]:
        """Rows whose namespace is ``prefix`` or below it.

        Labels cannot contain ``.``, so the descendants of ``a.b`` are exactly
        the strings in [``a.b.``, ``a.b/``) (``/`` follows ``.``): a range on
        the index (byte order: PostgreSQL's prefix columns are ``COLLATE "C"``),
        with no ``LIKE`` wildcards in user labels to escape.
        """
        if not prefix:
            return self.true, []
        p = self.placeholder
        return f"({col} = {p} OR ({col} >= {p} AND {col} < {p}))", [
            prefix,
            prefix + ".",
            prefix + "/",
        ]

    def live(self, now: str, col: str = "i.expires_at") -> str:
        """Rows not expired at ``now`` (an SQL expression): no expiry, or later."""
        return f"({col} IS NULL OR {col} > {now})"


SQLITE = Dialect("?", "1", "0")
POSTGRES = Dialect("%s", "TRUE", "FALSE")


class FilterLeaves(Protocol):
    """A dialect's filter leaves: how a field is read and each test on it.
    Every returned expression is a boolean that is never NULL."""

    dialect: Dialect

    def field(self, path: tuple[str, ...], col: str) -> Any:
        """The field at ``path`` of the JSON column ``col`` (opaque to the compiler)."""
        ...

    def eq(self, field: Any, value: Any) -> tuple[str, list[Any]]: ...

    def exists(self, field: Any, present: bool) -> tuple[str, list[Any]]: ...

    def contains(self, field: Any, item: Any) -> tuple[str, list[Any]]: ...

    def compare(self, field: Any, sym: str, value: Any) -> tuple[str, list[Any]]: ...


_RANGE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def compile_filter(
    leaves: FilterLeaves, conditions: list[Condition], col: str = "i.value"
) -> tuple[str, list[Any]]:
    """AND of all conditions (from :func:`~langmem_ext.stores.normalize_filter`)
    as one SQL boolean with its parameters; the dialect's true when empty."""
    if not conditions:
        return leaves.dialect.true, []
    parts: list[str] = []
    params: list[Any] = []
    for cond in conditions:
        sql, p = _condition(leaves, cond, col)
        parts.append(sql)
        params.extend(p)
    return " AND ".join(parts), params


def _condition(leaves: FilterLeaves, cond: Condition, col: str) -> tuple[str, list[Any]]:
    field = leaves.field(cond.path, col)
    op, v = cond.op, cond.value
    if op == "$eq":
        return leaves.eq(field, v)
    if op == "$ne":
        sql, p = leaves.eq(field, v)
        return f"NOT {sql}", p
    if op in ("$in", "$nin"):
        if not v:
            return (leaves.dialect.false if op == "$in" else leaves.dialect.true), []
        sqls, params = [], []
        for item in v:
            s, p = leaves.eq(field, item)
            sqls.append(s)
            params.extend(p)
        any_sql = "(" + " OR ".join(sqls) + ")"
        return (any_sql if op == "$in" else f"NOT {any_sql}"), params
    if op == "$exists":
        return leaves.exists(field, bool(v))
    if op == "$contains":
        sqls, params = [], []
        for item in v if isinstance(v, list | tuple) else [v]:
            s, p = leaves.contains(field, item)
            sqls.append(s)
            params.extend(p)
        return "(" + " AND ".join(sqls) + ")", params
    # range operators; the operand's type was checked by normalize_filter
    return leaves.compare(field, _RANGE[op], v)
