"""Values typed by people (command-line options, the browser's forms) for
catalogue operations: how each parameter is written, and how the text
becomes the value the operation checks. Nothing is refused here: what cannot
be read is passed on as text, and the operation says what was wrong, with the
same coded error as everywhere else.

Examples:
    >>> from langmem_ext.engine.operations import OPERATIONS
    >>> importance = {p.name: p for p in OPERATIONS["store_fact"].params}["importance"]
    >>> shape(importance), metavar(importance), read(importance, "7"), read(importance, "high")
    ('json', 'NUMBER', 7, 'high')
"""

from __future__ import annotations

import json
import types
import typing
from datetime import date, datetime
from typing import Any

from ..engine import Param

__all__ = ["alternatives", "metavar", "read", "shape"]


def shape(p: Param) -> str:
    """How a parameter is written: ``list`` (repeated options, or ``a, b`` in
    a form), ``text`` (as written) or ``json`` (numbers, objects)."""
    types = [t for t in alternatives(p.annotation) if t is not type(None)]
    if all(typing.get_origin(t) is list for t in types):
        return "list"
    # Times are written as text (an ISO date): the operation reads them.
    if all(t in (str, datetime, date) or typing.get_origin(t) is typing.Literal for t in types):
        return "text"
    return "json"


def metavar(p: Param) -> str:
    """What ``--help`` shows a value as: the choices, NUMBER, JSON or TEXT."""
    choices = [
        str(v)
        for t in alternatives(p.annotation)
        for a in ([t] if typing.get_origin(t) is not list else typing.get_args(t))
        if typing.get_origin(a) is typing.Literal
        for v in typing.get_args(a)
    ]
    if choices:
        return "|".join(choices)
    if any(t in (datetime, date) for t in alternatives(p.annotation)):
        return "DATE"
    if shape(p) == "json":
        numbers = all(t in (int, float) for t in alternatives(p.annotation) if t is not type(None))
        return "NUMBER" if numbers else "JSON"
    return "TEXT"


def alternatives(annotation: Any) -> list[Any]:
    """The types a value may have (unions flattened, ``Annotated`` unwrapped)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return alternatives(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(annotation) for t in alternatives(a)]
    return [annotation]


def read(p: Param, raw: Any) -> Any:
    """A command-line value as the operation takes it: text as written, JSON
    for numbers, objects and lists (what is not JSON is passed on as text, for
    the operation to say what was wrong)."""
    how = shape(p)
    if how == "list":
        # Repeated options give a list; a form's text field gives "a, b".
        items = raw.split(",") if isinstance(raw, str) else raw
        return [x.strip() for x in items if x.strip()]
    if how == "text":
        if p.name == "content" and raw[:1] in ("{", "["):
            return _json_or_text(raw)
        return raw
    return _json_or_text(raw)


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
