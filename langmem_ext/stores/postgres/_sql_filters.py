"""Store filters as PostgreSQL: each condition on a value's (nested) field
becomes a ``jsonb`` expression with its parameters.

Examples:
    >>> from langmem_ext.stores import normalize_filter
    >>> sql, params = compile_filter(normalize_filter({"kind": "fact"}))
    >>> "jsonb" in sql, len(params) > 0
    (True, True)
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from .._dialect import POSTGRES
from .._dialect import compile_filter as _compile
from .._filters import Condition

__all__ = ["compile_filter", "field_expr"]


def field_expr(path: tuple[str, ...], col: str = "i.value") -> tuple[str, list[Any]]:
    """``value -> 'a' -> 'b'`` with bound keys. ``->`` with a text key yields
    NULL on arrays and scalars, so ``tags.0`` never indexes into a list (as in
    SQLite's ``$."tags"."0"``)."""
    return col + "".join(" -> %s::text" for _ in path), list(path)


class _Leaves:
    """PostgreSQL's filter leaves: a field is ``(jsonb expression, its key
    parameters)``; each test is NULL-safe by itself."""

    dialect = POSTGRES

    def field(self, path: tuple[str, ...], col: str) -> tuple[str, list[Any]]:
        return field_expr(path, col)

    def eq(self, field: tuple[str, list[Any]], value: Any) -> tuple[str, list[Any]]:
        return _eq(*field, value)

    def exists(self, field: tuple[str, list[Any]], present: bool) -> tuple[str, list[Any]]:
        x, xp = field
        return f"(({x}) IS {'NOT ' if present else ''}NULL)", xp

    def contains(self, field: tuple[str, list[Any]], item: Any) -> tuple[str, list[Any]]:
        return _contains(*field, item)

    def compare(self, field: tuple[str, list[Any]], sym: str, value: Any) -> tuple[str, list[Any]]:
        x, xp = field
        if isinstance(value, int | float):
            # CASE, not AND: PostgreSQL may evaluate AND operands in any order and
            # the cast would fail on a string.
            sql = (
                f"(CASE WHEN jsonb_typeof({x}) = 'number' "
                f"THEN ({x})::numeric {sym} %s::numeric ELSE FALSE END)"
            )
            return sql, [*xp, *xp, value]
        sql = (
            f"(CASE WHEN jsonb_typeof({x}) = 'string' "
            f"THEN ({x} #>> '{{}}') COLLATE \"C\" {sym} %s::text ELSE FALSE END)"
        )
        return sql, [*xp, *xp, value]


_LEAVES = _Leaves()


def compile_filter(conditions: list[Condition], col: str = "i.value") -> tuple[str, list[Any]]:
    """AND of all conditions as one SQL boolean (``TRUE`` when empty)."""
    return _compile(_LEAVES, conditions, col)


def _eq(x: str, xp: list[Any], v: Any) -> tuple[str, list[Any]]:
    if v is None:
        return f"COALESCE(jsonb_typeof({x}), 'null') = 'null'", xp
    return f"COALESCE(({x}) = %s::jsonb, FALSE)", [*xp, Jsonb(v)]


def _contains(x: str, xp: list[Any], v: Any) -> tuple[str, list[Any]]:
    arr = f"COALESCE(jsonb_typeof({x}) = 'array' AND ({x}) @> %s::jsonb, FALSE)"
    params: list[Any] = [*xp, *xp, Jsonb([v])]
    if isinstance(v, str):
        text = f"COALESCE(jsonb_typeof({x}) = 'string' AND strpos({x} #>> '{{}}', %s) > 0, FALSE)"
        return f"({arr} OR {text})", [*params, *xp, *xp, v]
    return arr, params
