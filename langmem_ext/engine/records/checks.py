"""Checks of caller-supplied values, shared by every public entry point.

A value of the wrong type or out of range is refused here with a package
error naming the argument (:class:`~langmem_ext.errors.InvalidValueError`, or
the ``error`` class a caller passes, e.g. ``ConfigurationError`` for
constructor arguments), never with a raw ``TypeError``, ``AttributeError``,
``OverflowError`` or ``RecursionError`` from deeper down. Values are quoted in
messages through :func:`shown`, which is bounded: a megabyte of text or a list
nested ten thousand levels deep is shown in a few dozen characters, and
showing it can never fail.

Examples:
    >>> shown("x" * 1000)[:20]
    "'xxxxxxxxxxxxxxxxxxx"
    >>> check_int("limit", 10, 1, 1000)
    10
    >>> check_int("limit", 2**63, 1, 1000)
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: limit must be a whole number from 1 to 1000, got 92...08
    >>> check_number("confidence", 10**400, 0.0, 1.0)
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: confidence must be a number from 0.0 to 1.0, got 100...000
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Mapping
from typing import Any

from ..._langgraph import current_config
from ...errors import ConfigurationError, InvalidValueError, LangmemError

__all__ = [
    "check_config",
    "check_int",
    "check_json",
    "check_mapping",
    "check_number",
    "check_text",
    "run_config",
    "shown",
]

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6


def shown(value: Any) -> str:
    """``repr(value)`` cut to a few dozen characters and a few levels of
    nesting; never raises (a value whose repr fails is shown by its type).

    Examples:
        >>> deep = []
        >>> for _ in range(10_000):
        ...     deep = [deep]
        >>> shown(deep)
        '[[[[...]]]]'
    """
    try:
        return _REPR.repr(value)
    except Exception:  # a repr that recurses, or an int too long to print
        return f"<{type(value).__name__}>"


def check_int(
    name: str, value: Any, lo: int, hi: int, error: type[LangmemError] = InvalidValueError
) -> int:
    """A whole number (not a bool) from ``lo`` to ``hi``."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise error(f"{name} must be a whole number from {lo} to {hi}, got {shown(value)}")
    return value


def check_number(
    name: str,
    value: Any,
    lo: float,
    hi: float,
    error: type[LangmemError] = InvalidValueError,
) -> float:
    """A finite number (not a bool) from ``lo`` to ``hi``, as a float. Integers
    too large for a float are out of range, not an ``OverflowError``."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and isinstance(value, int):
        ok = lo <= value <= hi  # compared exactly: no float conversion of a huge int
    elif ok:
        ok = math.isfinite(value) and lo <= value <= hi
    if not ok:
        raise error(f"{name} must be a number from {lo} to {hi}, got {shown(value)}")
    return float(value)


def check_text(
    name: str,
    value: Any,
    *,
    optional: bool = False,
    error: type[LangmemError] = InvalidValueError,
) -> Any:
    """A string with something besides white space (None too when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        what = "a non-empty string" + (" or None" if optional else "")
        raise error(f"{name} must be {what}, got {shown(value)}")
    return value


def check_mapping(
    name: str,
    value: Any,
    *,
    optional: bool = True,
    error: type[LangmemError] = InvalidValueError,
) -> Any:
    """A dict (any ``Mapping``), or None when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, Mapping):
        raise error(f"{name} must be a dict, got {type(value).__name__} {shown(value)}")
    return value


def check_json(name: str, value: Any, error: type[LangmemError] = InvalidValueError) -> Any:
    """``value`` if it can be stored as JSON: dicts with string keys, lists,
    strings, finite numbers, booleans and None, nested a sane depth."""
    try:
        json.dumps(value, allow_nan=False)
    except RecursionError:
        raise error(f"{name} is nested too deeply to be stored; flatten it") from None
    except (TypeError, ValueError) as e:
        raise error(f"{name} cannot be stored as JSON ({e}): {shown(value)}") from None
    return value


def check_config(config: Any, name: str = "config") -> Mapping[str, Any]:
    """A LangGraph ``RunnableConfig`` (a dict; None is an empty one) whose
    ``configurable``, when present, is a dict.

    Raises:
        ConfigurationError: the config or its ``configurable`` is not a dict.
    """
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"{name} must be a RunnableConfig dict such as "
            f"{{'configurable': {{'user_id': 'ada'}}}} or a MemoryContext, got "
            f"{type(config).__name__} {shown(config)}"
        )
    conf = config.get("configurable")
    if conf is not None and not isinstance(conf, Mapping):
        raise ConfigurationError(
            f"{name}['configurable'] must be a dict, got {type(conf).__name__} {shown(conf)}"
        )
    return config


def run_config(config: Any) -> Any:
    """The config of a call: ``config`` (checked by :func:`check_config`), or
    the running graph's when it is None (an empty one outside a graph)."""
    return current_config(None) if config is None else check_config(config)
