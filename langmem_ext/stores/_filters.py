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

Backends compile :class:`Condition` objects into their own SQL; this module does
no I/O.

Example:
    >>> normalize_filter({"a.b": {"$gt": 1}, "c": "x"})
    [Condition(path=('a', 'b'), op='$gt', value=1), Condition(path=('c',), op='$eq', value='x')]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

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
        ValueError: for an unknown operator (the message lists the supported
            ones), an operand of the wrong type, or an empty field name.
    """
    if not filter:
        return []
    if not isinstance(filter, Mapping):
        raise ValueError(
            "filter must be a dict such as {'category': 'preference'}, "
            f"got {type(filter).__name__}"
        )
    out: list[Condition] = []
    for key, cond in filter.items():
        _walk(_split_key(key, ()), cond, out)
    return out


def _split_key(key: Any, parent: tuple[str, ...]) -> tuple[str, ...]:
    if not isinstance(key, str) or not key:
        raise ValueError(f"filter field names must be non-empty strings, got {key!r}")
    parts = tuple(key.split("."))
    if any(not p for p in parts):
        raise ValueError(f"filter field {key!r} has an empty part; use dots only between names")
    for p in parts:
        if p.startswith("$"):
            raise ValueError(
                f"unknown filter operator {p!r} in field {key!r}; "
                f"supported operators: {', '.join(OPERATORS)}"
            )
    return parent + parts


def _walk(path: tuple[str, ...], cond: Any, out: list[Condition]) -> None:
    if isinstance(cond, Mapping):
        ops = [k for k in cond if isinstance(k, str) and k.startswith("$")]
        if ops and len(ops) != len(cond):
            raise ValueError(
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


def _check(path: tuple[str, ...], op: str, operand: Any) -> Condition:
    where = ".".join(path)
    if op not in OPERATORS:
        raise ValueError(
            f"unknown filter operator {op!r} on {where!r}; "
            f"supported operators: {', '.join(OPERATORS)}"
        )
    if isinstance(operand, float) and not math.isfinite(operand):
        raise ValueError(f"filter operand for {op} on {where!r} must be finite, got {operand!r}")
    if op in _RANGE:
        if isinstance(operand, bool) or not isinstance(operand, (int, float, str)):
            raise ValueError(
                f"{op} on {where!r} needs a number or a string, got {type(operand).__name__}"
            )
    elif op in ("$in", "$nin"):
        if not isinstance(operand, (list, tuple, set, frozenset)):
            raise ValueError(
                f"{op} on {where!r} needs a list of values, got {type(operand).__name__}"
            )
        operand = list(operand)
    elif op == "$exists":
        if not isinstance(operand, bool):
            raise ValueError(f"$exists on {where!r} needs True or False, got {operand!r}")
    elif op == "$contains":
        items = operand if isinstance(operand, (list, tuple)) else [operand]
        for v in items:
            if isinstance(v, (dict, list, tuple)):
                raise ValueError(
                    f"$contains on {where!r} needs a scalar (or a list of scalars), got {v!r}"
                )
    return Condition(path, op, operand)
