"""Pure SQL builders for SQLiteStore: namespace scopes and filters. No I/O.

Filters are compiled from :func:`langmem_ext.stores._filters.normalize_filter`
conditions into SQLite JSON1 expressions. Every comparison checks
``json_type`` first, so numbers compare as numbers and strings as strings
(``{"n": {"$gt": 10}}`` never matches ``9`` or ``"11"``). Field paths are bound
parameters, never spliced into the SQL text.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...errors import InvalidValueError
from .._filters import Condition

__all__ = ["compile_filter", "json_path", "scope_clause", "sql_json_equal"]

_NUM = "('integer','real')"


def json_path(path: tuple[str, ...]) -> str:
    """``("a", "b c")`` → ``$."a"."b c"`` (a SQLite JSON path).

    Each label is written JSON-escaped, the way the key is spelled in the
    stored JSON text, so keys with backslashes, control characters or path
    punctuation (``[``, ``$``, ``*``) are matched exactly. SQLite before 3.45
    ends a quoted label at the first ``"`` whatever precedes it, so there keys
    containing a double quote cannot be addressed.
    """
    labels = []
    for part in path:
        if '"' in part and sqlite3.sqlite_version_info < (3, 45, 0):
            raise InvalidValueError(
                f"this SQLite ({sqlite3.sqlite_version}) cannot filter on field names "
                f"containing a double quote: {part!r}; rename the field or use SQLite 3.45+"
            )
        labels.append(json.dumps(part, ensure_ascii=False)[1:-1])
    return "$" + "".join(f'."{label}"' for label in labels)


def scope_clause(prefix: str, col: str = "i.prefix") -> tuple[str, list[Any]]:
    """Rows whose namespace is ``prefix`` or below it.

    Namespaces are stored with labels joined by ``.`` (labels cannot contain
    one), so the descendants of ``a.b`` are exactly the strings in the half-open
    range [``a.b.``, ``a.b/``): ``/`` is the character after ``.``. A range on
    the index, unlike ``LIKE 'a.b%'``, has no wildcard characters to escape.
    """
    if not prefix:
        return "1", []
    return f"({col} = ? OR ({col} >= ? AND {col} < ?))", [prefix, prefix + ".", prefix + "/"]


def sql_json_equal(json_type: str | None, raw: Any, other: str) -> int:
    """SQL function ``lmx_json_eq``: whole-value equality for lists and objects."""
    if json_type not in ("array", "object"):
        return 0
    return int(json.loads(raw) == json.loads(other))


def compile_filter(conditions: list[Condition], col: str = "i.value") -> tuple[str, list[Any]]:
    """AND of all conditions as one SQL expression (``"1"`` when empty)."""
    if not conditions:
        return "1", []
    parts: list[str] = []
    params: list[Any] = []
    for cond in conditions:
        sql, p = _condition(cond, col)
        parts.append(sql)
        params.extend(p)
    return " AND ".join(parts), params


def _condition(cond: Condition, col: str) -> tuple[str, list[Any]]:
    path = json_path(cond.path)
    op, v = cond.op, cond.value
    if op == "$eq":
        sql, p = _eq(col, path, v)
        return f"COALESCE({sql}, 0)", p
    if op == "$ne":
        sql, p = _eq(col, path, v)
        return f"NOT COALESCE({sql}, 0)", p
    if op in ("$in", "$nin"):
        if not v:
            return ("0" if op == "$in" else "1"), []
        sqls, params = [], []
        for x in v:
            s, p = _eq(col, path, x)
            sqls.append(f"COALESCE({s}, 0)")
            params.extend(p)
        any_sql = "(" + " OR ".join(sqls) + ")"
        return (any_sql if op == "$in" else f"NOT {any_sql}"), params
    if op == "$exists":
        return f"json_type({col}, ?) IS {'NOT ' if v else ''}NULL", [path]
    if op == "$contains":
        sqls, params = [], []
        for x in v if isinstance(v, list | tuple) else [v]:
            s, p = _contains(col, path, x)
            sqls.append(f"COALESCE({s}, 0)")
            params.extend(p)
        return "(" + " AND ".join(sqls) + ")", params
    # range operators; operand type checked by normalize_filter
    sym = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    types = _NUM if isinstance(v, int | float) else "('text')"
    sql = f"(json_type({col}, ?) IN {types} AND json_extract({col}, ?) {sym} ?)"
    return f"COALESCE({sql}, 0)", [path, path, v]


def _eq(col: str, path: str, v: Any) -> tuple[str, list[Any]]:
    if v is None:
        return f"COALESCE(json_type({col}, ?), 'null') = 'null'", [path]
    if isinstance(v, bool):
        return f"json_type({col}, ?) = '{'true' if v else 'false'}'", [path]
    if isinstance(v, int | float):
        return f"(json_type({col}, ?) IN {_NUM} AND json_extract({col}, ?) = ?)", [path, path, v]
    if isinstance(v, str):
        return f"(json_type({col}, ?) = 'text' AND json_extract({col}, ?) = ?)", [path, path, v]
    other = json.dumps(v, ensure_ascii=False)
    return f"lmx_json_eq(json_type({col}, ?), json_extract({col}, ?), ?)", [path, path, other]


def _element_match(v: Any) -> tuple[str, list[Any]]:
    if v is None:
        return "je.type = 'null'", []
    if isinstance(v, bool):
        return f"je.type = '{'true' if v else 'false'}'", []
    if isinstance(v, int | float):
        return f"(je.type IN {_NUM} AND je.value = ?)", [v]
    return "(je.type = 'text' AND je.value = ?)", [v]


def _contains(col: str, path: str, v: Any) -> tuple[str, list[Any]]:
    match, mp = _element_match(v)
    array_sql = (
        f"(json_type({col}, ?) = 'array' AND EXISTS "
        f"(SELECT 1 FROM json_each({col}, ?) AS je WHERE {match}))"
    )
    params: list[Any] = [path, path, *mp]
    if isinstance(v, str):
        text_sql = f"(json_type({col}, ?) = 'text' AND instr(json_extract({col}, ?), ?) > 0)"
        return f"({array_sql} OR {text_sql})", [*params, path, path, v]
    return array_sql, params
