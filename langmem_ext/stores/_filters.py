"""Filter documents → a flat list of typed conditions, shared by every backend.

A filter is a dict from field to condition, all of which must hold::

    {"category": "preference"}                    # equality
    {"importance": {"$gte": 3, "$lt": 8}}         # range, numbers compared as numbers
    {"user.name": {"$in": ["ada", "bob"]}}        # dotted keys reach nested fields
    {"user": {"name": "ada"}}                     # same as {"user.name": "ada"}
    {"tags": {"$contains": "work"}}               # list membership, or substring of a string

Operators and their meaning (a *missing* field never matches, except with
``$ne``, ``$nin`` and ``$exists: False``, which do match it):

========== =================================================================
``$eq``     equal, type-aware: ``1 == 1.0`` but ``"1" != 1``; lists and
            objects compare as whole JSON values; ``None`` matches ``null``
            or a missing field
``$ne``     not ``$eq`` (missing fields match)
``$gt``     greater than; numbers compare with numbers, strings with strings
``$gte``    greater than or equal
``$lt``     less than
``$lte``    less than or equal
``$in``     equal to one of the listed values
``$nin``    equal to none of the listed values (missing fields match)
``$exists`` ``True``: the field is present (even if ``null``); ``False``: absent
``$contains`` the field is a list holding the value (every value, if given a
            list), or a string containing the value as a substring
========== =================================================================

Operands outside what a database compares exactly follow LangGraph's
in-memory store, and are rewritten here into ordinary conditions so every
backend treats them alike:

* integers beyond 64 bits (``>= 2**63`` or ``< -2**63``) compare as floats;
* ``NaN`` equals nothing and orders with nothing: ``$eq``, ``$gt``… ``NaN``
  match no item, ``$ne NaN`` matches every item, ``$in``/``$nin`` ignore it;
* ``±inf``: ``$gt -inf`` / ``$gte -inf`` match every number, ``$lt inf`` /
  ``$lte inf`` likewise, ``$gt inf`` and ``$lt -inf`` match nothing; ``$eq
  ±inf`` matches nothing and ``$ne ±inf`` everything (stored numbers are finite).

Backends compile :class:`Condition` objects into their own SQL; this module does
no I/O.

Examples:
    >>> normalize_filter({"a.b": {"$gt": 1}, "c": "x"})
    [Condition(path=('a', 'b'), op='$gt', value=1), Condition(path=('c',), op='$eq', value='x')]
    >>> normalize_filter({"n": {"$lt": float("inf")}})
    [Condition(path=('n',), op='$lte', value=1.7976931348623157e+308)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import InvalidValueError
from ._ops import check_text

__all__ = ["OPERATORS", "Condition", "normalize_filter"]

OPERATORS: tuple[str, ...] = (
    "$eq",
    "$ne",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$in",
    "$nin",
    "$exists",
    "$contains",
)
_RANGE = ("$gt", "$gte", "$lt", "$lte")


class Condition(NamedTuple):
    """One test on one field: ``path`` (nested keys), operator, operand."""

    path: tuple[str, ...]
    op: str
    value: Any


def normalize_filter(filter: Mapping[str, Any] | None) -> list[Condition]:
    """Validate a filter and flatten it into conditions.

    Raises:
        InvalidValueError: (a ``ValueError``) for an unknown operator (the
            message lists the supported ones), an operand of the wrong type, an
            empty field name, or a filter nested too deeply to be real.
    """
    if filter is None:
        return []
    if not isinstance(filter, Mapping):
        raise InvalidValueError(
            "filter must be a dict such as {'category': 'preference'}, "
            f"got {type(filter).__name__}"
        )
    out: list[Condition] = []
    try:
        for key, cond in filter.items():
            _walk(_split_key(key, ()), cond, out)
    except RecursionError:
        raise InvalidValueError(
            "filter is nested too deeply; nest field conditions a few levels at most"
        ) from None
    return out


def _split_key(key: Any, parent: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(key, str) or not key:
        raise InvalidValueError(
            f"Invalid filter key {key!r}: field names are non-empty strings such as 'category'"
        )
    check_text(key, f"filter field {key[:40]!r}")
    parts = tuple(key.split("."))
    if any(not p for p in parts):
        raise InvalidValueError(
            f"Invalid filter key {key!r}: it has an empty part; use dots only between names"
        )
    for p in parts:
        if p.startswith("$"):
            raise InvalidValueError(
                f"unknown filter operator {p!r} in field {key!r}; "
                f"supported operators: {', '.join(OPERATORS)}"
            )
    return parent + parts


def _walk(path: tuple[str, ...], cond: Any, out: list[Condition]) -> None:
    if isinstance(cond, Mapping):
        ops = [k for k in cond if isinstance(k, str) and k.startswith("$")]
        if ops and len(ops) != len(cond):
            raise InvalidValueError(
                f"filter on {'.'.join(path)!r} mixes operators and field names: {dict(cond)!r}"
            )
        if not ops:
            if not cond:
                out.append(Condition(path, "$eq", {}))
            for sub, subcond in cond.items():
                _walk(_split_key(sub, path), subcond, out)
            return
        for op, operand in cond.items():
            out.append(_check(path, op, operand))
        return
    out.append(_check(path, "$eq", cond))


_MAX = 1.7976931348623157e308  # the largest float: every stored number is within ±_MAX
_NOTHING: tuple[str, list[Any]] = ("$in", [])  # matches no item
_EVERYTHING: tuple[str, list[Any]] = ("$nin", [])  # matches every item, missing field included


def _check(path: tuple[str, ...], op: Any, operand: Any) -> Condition:
    where = ".".join(path)
    if op not in OPERATORS:
        raise InvalidValueError(
            f"unknown filter operator {op!r} on {where!r}; "
            f"supported operators: {', '.join(OPERATORS)}"
        )
    _check_json(operand, f"{op} on {where!r}")
    if op in _RANGE:
        if isinstance(operand, bool) or not isinstance(operand, (int, float, str)):
            raise InvalidValueError(
                f"{op} on {where!r} needs a number or a string, got {type(operand).__name__}"
            )
        return Condition(path, *_range(op, _number(operand)))
    if op in ("$eq", "$ne"):
        operand = _number(operand)
        if isinstance(operand, float) and not math.isfinite(operand):
            # Stored numbers are finite: nothing equals NaN or ±inf.
            return Condition(path, *(_NOTHING if op == "$eq" else _EVERYTHING))
        return Condition(path, op, operand)
    if op in ("$in", "$nin"):
        if not isinstance(operand, (list, tuple, set, frozenset)):
            raise InvalidValueError(
                f"{op} on {where!r} needs a list of values, got {type(operand).__name__}"
            )
        return Condition(path, op, [v for v in map(_number, operand) if _finite(v)])
    if op == "$exists":
        if not isinstance(operand, bool):
            raise InvalidValueError(f"$exists on {where!r} needs True or False, got {operand!r}")
        return Condition(path, op, operand)
    # $contains
    items = operand if isinstance(operand, (list, tuple)) else [operand]
    for v in items:
        if isinstance(v, (dict, list, tuple)):
            raise InvalidValueError(
                f"$contains on {where!r} needs a scalar (or a list of scalars), got {v!r}"
            )
    items = [_number(v) for v in items]
    if not all(_finite(v) for v in items):
        return Condition(path, *_NOTHING)
    return Condition(path, op, items if isinstance(operand, (list, tuple)) else items[0])


def _number(v: Any) -> Any:
    """Integers beyond 64 bits become floats: databases hold 64-bit integers;
    beyond the largest float, ``±inf`` (then compared as ``±inf`` is)."""
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
        if not -_MAX <= v <= _MAX:
            return math.inf if v > 0 else -math.inf
        return float(v)
    return v


def _finite(v: Any) -> bool:
    return not (isinstance(v, float) and not math.isfinite(v))


def _range(op: str, v: Any) -> tuple[str, Any]:
    if not isinstance(v, float) or math.isfinite(v):
        return op, v
    if math.isnan(v):
        return _NOTHING
    upward = op in ("$gt", "$gte")
    if (v > 0) == upward:  # $gt inf, $lt -inf: beyond every stored number
        return _NOTHING
    # $gt -inf, $lt inf: every number (strings and other types still never match)
    return ("$gte", -_MAX) if upward else ("$lte", _MAX)


def _check_json(v: Any, where: str) -> None:
    if isinstance(v, str):
        check_text(v, f"the operand of {where}")
        return
    if v is None or isinstance(v, (bool, int, float)):
        return
    if isinstance(v, Mapping):
        for k, x in v.items():
            if not isinstance(k, str):
                raise InvalidValueError(f"{where}: object keys must be strings, got {k!r}")
            check_text(k, f"an object key in the operand of {where}")
            _check_json(x, where)
        return
    if isinstance(v, (list, tuple, set, frozenset)):
        for x in v:
            _check_json(x, where)
        return
    raise InvalidValueError(
        f"{where}: operands must be JSON values (str, number, bool, None, list, dict), "
        f"got {type(v).__name__}"
    )
