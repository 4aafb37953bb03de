"""Rules about argument values that a declared type cannot state, checked
once, before any store request (so a refused call changes nothing): the
content length limit (an engine setting), stored values that must be JSON,
filters in the store's language, ids that can name a key; and the fields
every new record shares.

The declared types of the operations (:mod:`.params`) state everything else
(kinds, layers, ranges, enums); bodies do not check those again.

Examples:
    >>> check_id({"$ne": None})
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: id must be a non-empty string, got {'$ne': None}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import ContentTooLongError, InvalidValueError
from ...stores import normalize_filter
from ..records.checks import check_json, shown
from ..records.models import new_id
from ..records.times import check_when
from ..runtime.env import Env

__all__ = [
    "add_fields",
    "check_any_content",
    "check_content",
    "check_expires_at",
    "check_filter",
    "check_id",
    "check_tags",
]


def check_id(id: Any, name: str = "id") -> str:
    """A memory id is a non-empty string; anything else (a dict, a filter
    operator) is rejected before it can reach a store."""
    if not isinstance(id, str) or not id or "\x00" in id:
        raise InvalidValueError(f"{name} must be a non-empty string, got {shown(id)}")
    return id


def check_expires_at(env: Env, value: Any) -> str | None:
    """A memory's ``expires_at`` (None: never): a time with a zone, after now.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> env = MemoryEngine(SQLiteStore()).env(MemoryContext(user_id="ada"))
        >>> check_expires_at(env, "2199-12-31")
        '2199-12-31T00:00:00.000000+00:00'
        >>> check_expires_at(env, "2001-01-01")
        Traceback (most recent call last):
        ...
        langmem_ext.errors.InvalidValueError: expires_at 2001-01-01T00:00:00.000000+00:00 is ...
    """
    when = check_when("expires_at", value)
    if when is not None and when <= env.stamp:
        raise InvalidValueError(
            f"expires_at {when} is in the past; give a later time, or forget the memory instead"
        )
    return when


def check_filter(filter: Any) -> dict[str, Any] | None:
    """A store filter (None for none), validated before any store op."""
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise InvalidValueError(
            f"filter must be a dict such as {{'category': 'preference'}}, got {shown(filter)}"
        )
    try:
        normalize_filter(filter)
    except RecursionError:
        raise InvalidValueError(
            "filter is nested too deeply; nest conditions a few levels at most"
        ) from None
    except (TypeError, ValueError) as e:
        if isinstance(e, InvalidValueError):
            raise
        raise InvalidValueError(f"invalid filter: {e}") from None
    return dict(filter)


def check_content(env: Env, content: Any, name: str = "content") -> str:
    if not isinstance(content, str) or not content.strip():
        raise InvalidValueError(f"{name} must be a non-empty string, got {shown(content)}")
    limit = env.config.max_content_length
    if len(content) > limit:
        raise ContentTooLongError(
            f"{name} is {len(content)} characters, the maximum is {limit}; shorten it or "
            "split it into several memories",
            max_length=limit,
            length=len(content),
        )
    return content


def check_any_content(env: Env, content: Any) -> Any:
    """Text (as :func:`check_content`) or structured content (a dict, a list
    or a number, as LangMem's schema memories): JSON only, within the same
    length limit."""
    if isinstance(content, str):
        return check_content(env, content)
    if content is None or (isinstance(content, dict | list) and not content):
        raise InvalidValueError(f"content must not be empty, got {shown(content)}")
    check_json("content", content)
    text = json.dumps(content, ensure_ascii=False, allow_nan=False)
    limit = env.config.max_content_length
    if len(text) > limit:
        raise ContentTooLongError(
            f"content is {len(text)} characters as JSON, the maximum is {limit}; shorten it",
            max_length=limit,
            length=len(text),
        )
    return content


def check_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if (
        isinstance(tags, str)
        or not isinstance(tags, list | tuple)
        or not all(isinstance(t, str) for t in tags)
    ):
        raise InvalidValueError(f"tags must be a list of strings, got {shown(tags)}")
    return list(dict.fromkeys(tags))


def add_fields(
    env: Env, content: Any, layer: str | None, scope: str, tags: list[str] | None
) -> dict[str, Any]:
    """The fields every new record shares, from checked arguments (``layer``
    None: the engine's default layer); the content is checked here (its
    length limit is a setting), before any store op."""
    name = layer or env.config.default_layer
    where = env.layer(name)
    return {
        "id": new_id(),
        "tenant_id": env.tenant,
        "layer": name,
        "layer_id": where.id,
        "content": check_any_content(env, content),
        "scope": scope,
        "tags": list(dict.fromkeys(tags or ())),
        "created_at": env.stamp,
        "updated_at": env.stamp,
        "created_by": env.ctx.actor,
    }
