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
from .._dialect import SQLITE
from .._dialect import compile_filter as _compile
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
    """Rows whose namespace is ``prefix`` or below it (:meth:`Dialect.scope`)."""
    return SQLITE.scope(prefix, col)


def sql_json_equal(json_type: str | None, raw: Any, other: str) -> int:
    """SQL function ``lmx_json_eq``: whole-value equality for lists and objects."""
    if json_type not in ("array", "object"):
        return 0
    return int(json.loads(raw) == json.loads(other))


class _Leaves:
    """SQLite's filter leaves: a field is ``(column, JSON path)``, the path a
    bound parameter; each test checks ``json_type`` first."""

    dialect = SQLITE

    def field(self, path: tuple[str, ...], col: str) -> tuple[str, str]:
        return col, json_path(path)

    def eq(self, field: tuple[str, str], value: Any) -> tuple[str, list[Any]]:
        sql, p = _eq(*field, value)
        return f"COALESCE({sql}, 0)", p

    def exists(self, field: tuple[str, str], present: bool) -> tuple[str, list[Any]]:
        col, path = field
        return f"json_type({col}, ?) IS {'NOT ' if present else ''}NULL", [path]

    def contains(self, field: tuple[str, str], item: Any) -> tuple[str, list[Any]]:
        sql, p = _contains(*field, item)
        return f"COALESCE({sql}, 0)", p

    def compare(self, field: tuple[str, str], sym: str, value: Any) -> tuple[str, list[Any]]:
        col, path = field
        types = _NUM if isinstance(value, int | float) else "('text')"
        sql = f"(json_type({col}, ?) IN {types} AND json_extract({col}, ?) {sym} ?)"
        return f"COALESCE({sql}, 0)", [path, path, value]


_LEAVES = _Leaves()


def compile_filter(conditions: list[Condition], col: str = "i.value") -> tuple[str, list[Any]]:
    """AND of all conditions as one SQL expression (``"1"`` when empty)."""
    return _compile(_LEAVES, conditions, col)


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
