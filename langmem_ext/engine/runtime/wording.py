"""How a refused argument is worded, the same on every surface: the first
problem pydantic found in an operation's arguments, as the parameter's coded
error (:func:`invalid`), and how every surface shows an error
(:func:`error_text`).

Examples:
    >>> from langmem_ext.engine.operations import OPERATIONS
    >>> try:
    ...     OPERATIONS["store_fact"].validate(
    ...         {"subject": "u", "predicate": "p", "content": "x", "importance": 11})
    ... except Exception as e:
    ...     print(error_text(e))
    INVALID_VALUE: importance must be a number from 0 to 10, got 11
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from ...errors import InvalidValueError, LangmemError
from ..records.checks import shown

__all__ = ["error_text", "invalid"]


class _Param(Protocol):
    # What the wording reads of a declared parameter (the catalogue's ``Param``).
    @property
    def annotation(self) -> Any: ...
    @property
    def field(self) -> FieldInfo: ...
    @property
    def meta(self) -> Any: ...
    @property
    def name(self) -> str: ...
    @property
    def public(self) -> str: ...
    @property
    def description(self) -> str: ...


class _Spec(Protocol):
    # What the wording reads of a declared operation (the catalogue's ``Spec``);
    # a protocol so the catalogue, which words its refusals here, is not imported.
    @property
    def name(self) -> str: ...
    @property
    def tool(self) -> str | None: ...
    @property
    def params(self) -> Sequence[_Param]: ...
    def offered(self, *, admin: bool = ...) -> Sequence[_Param]: ...


_MESSAGES = {
    "string_type": "must be text",
    "string_pattern_mismatch": "must contain text",
    "string_too_short": "must not be empty",
    "string_too_long": "is too long",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object (a dict)",
    "missing": "is required",
}


def invalid(spec: _Spec, error: ValidationError) -> LangmemError:
    """The coded error for the first problem pydantic found in an operation's
    arguments (also used by the tool surfaces, which validate with
    :meth:`Spec.tool_model`)."""
    by_name = {p.public: p for p in spec.params} | {p.name: p for p in spec.params}
    # An unknown name first: it usually explains the missing one (an old name).
    errs = sorted(error.errors(), key=lambda x: x["type"] != "extra_forbidden")
    err = errs[0]
    loc = [str(x) for x in err["loc"]]
    param = by_name.get(loc[0]) if loc else None
    where = (param.public if param else (loc[0] if loc else "arguments")) + "".join(
        f"[{x}]" for x in loc[1:]
    )
    kind, got, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "extra_forbidden":
        names = ", ".join(p.public for p in spec.offered(admin=True))
        return InvalidValueError(
            f"{spec.tool or spec.name} has no parameter {where!r}; its parameters are {names}"
        )
    error_class = param.meta.error if param else InvalidValueError
    if kind in ("literal_error", "enum"):
        what = (param.meta.what if param else None) or where
        values = _literals(param.annotation) if param else []
        allowed = ", ".join(map(str, values)) or ctx.get("expected", "")
        return error_class(f"unknown {what} {shown(got)}; use one of {allowed}", **{where: got})
    bounds = {
        "greater_than_equal": f"must be at least {_num(ctx.get('ge'))}",
        "greater_than": f"must be more than {_num(ctx.get('gt'))}",
        "less_than_equal": f"must be at most {_num(ctx.get('le'))}",
        "less_than": f"must be less than {_num(ctx.get('lt'))}",
    }
    if kind in bounds and param is not None:
        lo, hi = _range(param.field.metadata, param.annotation)
        if lo is not None and hi is not None:
            number = "number" if float in _flat(param.annotation) else "whole number"
            bounds[kind] = f"must be a {number} from {_num(lo)} to {_num(hi)}"
    if kind == "missing":
        hint = f" ({param.description})" if param and param.description else ""
        return InvalidValueError(f"{where} is required{hint}")
    said = bounds.get(kind) or _MESSAGES.get(kind) or err["msg"][0].lower() + err["msg"][1:]
    cls = InvalidValueError if kind in bounds or kind in _MESSAGES else error_class
    return cls(f"{where} {said}, got {shown(got)}")


def _flat(annotation: Any) -> list[Any]:
    """The types of a union, ``Annotated`` unwrapped."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _flat(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    if args and typing.get_origin(annotation) not in (list, dict, Literal):
        return [t for a in args for t in _flat(a)]
    return [annotation]


def _num(x: Any) -> str:
    """A bound as people write it (10, not 10.0)."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def _range(metadata: Sequence[Any], annotation: Any) -> tuple[Any, Any]:
    """A value's inclusive bounds (``ge``, ``le``): from its field, else from
    an ``Annotated`` alternative of its type (``Confidence | None``)."""
    found = [*metadata]
    for arg in (annotation, *typing.get_args(annotation)):
        for m in getattr(arg, "__metadata__", ()):
            found += m.metadata if isinstance(m, FieldInfo) else [m]
    lo = next((m.ge for m in found if getattr(m, "ge", None) is not None), None)
    hi = next((m.le for m in found if getattr(m, "le", None) is not None), None)
    return lo, hi


def _literals(annotation: Any) -> list[Any]:
    """The allowed values of a ``Literal`` inside an annotation, in order."""
    if typing.get_origin(annotation) is Literal:
        return list(typing.get_args(annotation))
    return [v for arg in typing.get_args(annotation) for v in _literals(arg)]


def error_text(error: LangmemError) -> str:
    """How every surface shows an error: ``"<CODE>: <message>"``.

    Examples:
        >>> from langmem_ext.errors import MemoryNotFoundError
        >>> error_text(MemoryNotFoundError("no fact with id 'x' among your memories"))
        "MEMORY_NOT_FOUND: no fact with id 'x' among your memories"
    """
    text = str(error)
    return text if text.startswith(f"{error.code}: ") else f"{error.code}: {text}"
