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

from .._filters import Condition

__all__ = ["compile_filter", "field_expr"]


def field_expr(path: tuple[str, ...], col: str = "i.value") -> tuple[str, list[Any]]:
    """``value -> 'a' -> 'b'`` with bound keys. ``->`` with a text key yields
    NULL on arrays and scalars, so ``tags.0`` never indexes into a list (as in
    SQLite's ``$."tags"."0"``)."""
    return col + "".join(" -> %s::text" for _ in path), list(path)


def compile_filter(conditions: list[Condition], col: str = "i.value") -> tuple[str, list[Any]]:
    """AND of all conditions as one SQL boolean (``TRUE`` when empty)."""
    parts: list[str] = []
    params: list[Any] = []
    for cond in conditions:
        sql, p = _condition(cond, col)
        parts.append(sql)
        params.extend(p)
    return (" AND ".join(parts) if parts else "TRUE"), params


def _condition(cond: Condition, col: str) -> tuple[str, list[Any]]:
    x, xp = field_expr(cond.path, col)
    op, v = cond.op, cond.value
    if op == "$eq":
        return _eq(x, xp, v)
    if op == "$ne":
        sql, p = _eq(x, xp, v)
        return f"NOT {sql}", p
    if op in ("$in", "$nin"):
        if not v:
            return ("FALSE" if op == "$in" else "TRUE"), []
        sqls, params = [], []
        for item in v:
            s, p = _eq(x, xp, item)
            sqls.append(s)
            params.extend(p)
        any_sql = "(" + " OR ".join(sqls) + ")"
        return (any_sql if op == "$in" else f"NOT {any_sql}"), params
    if op == "$exists":
        return f"(({x}) IS {'NOT ' if v else ''}NULL)", xp
    if op == "$contains":
        sqls, params = [], []
        for item in v if isinstance(v, list | tuple) else [v]:
            s, p = _contains(x, xp, item)
            sqls.append(s)
            params.extend(p)
        return "(" + " AND ".join(sqls) + ")", params
    sym = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    if isinstance(v, int | float):
        # CASE, not AND: PostgreSQL may evaluate AND operands in any order and
        # the cast would fail on a string.
        sql = (
            f"(CASE WHEN jsonb_typeof({x}) = 'number' "
            f"THEN ({x})::numeric {sym} %s::numeric ELSE FALSE END)"
        )
        return sql, [*xp, *xp, v]
    sql = (
        f"(CASE WHEN jsonb_typeof({x}) = 'string' "
        f"THEN ({x} #>> '{{}}') COLLATE \"C\" {sym} %s::text ELSE FALSE END)"
    )
    return sql, [*xp, *xp, v]


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
