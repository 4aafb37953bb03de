"""Store operations shared by every backend: validation, serialization, the
texts to index, and the search op that carries a mode. Pure functions, no I/O."""

from __future__ import annotations

import functools
import json
import math
import re
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple

from langgraph.store.base import (
    GetOp,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)
from langgraph.store.base import InvalidNamespaceError as LangGraphNamespaceError
from langgraph.store.base import validate_op_namespace as _validate_labels

from ..errors import InvalidNamespaceError, InvalidValueError

__all__ = [
    "KEYWORD_THEN_REST",
    "MAX_COUNT",
    "MAX_TTL",
    "HybridSearchOp",
    "PreparedPut",
    "SearchMode",
    "check_count",
    "check_expiry",
    "check_namespace",
    "check_text",
    "decode_namespace",
    "encode_namespace",
    "iso_now",
    "keyword_text",
    "namespace_matches",
    "parse_ts",
    "prepare_ops",
    "texts_to_embed",
]

SearchMode = Literal["hybrid", "vector", "keyword"]
SEARCH_MODES: tuple[str, ...] = ("hybrid", "vector", "keyword")
#: The plan's mode of a query on a store without an embedder when no mode was
#: asked for: keyword matches first, then every other item with score None.
#: LangGraph's stores without an index ignore the query and return every
#: item; asking for ``mode="keyword"`` gives the matches only.
KEYWORD_THEN_REST = "keyword, then the rest"


class HybridSearchOp(NamedTuple):
    """A :class:`~langgraph.store.base.SearchOp` with a ranking ``mode``.

    ``mode=None`` uses the store's default mode.
    """

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool = True
    mode: SearchMode | None = None


class PreparedPut(NamedTuple):
    """A validated put: the JSON text to store and the texts to index."""

    namespace: tuple[str, ...]
    key: str
    value_json: str | None  # None deletes
    ttl: float | None
    fields: list[tuple[str, str]]  # (field label, text) to embed
    keyword_text: str | None  # text for the keyword index; None: not indexed
    context_text: str | None = None  # keyword-only context, weighted lower
    expires_at: float | None = None  # an absolute expiry (unix seconds); ttl is then None


def encode_namespace(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def decode_namespace(prefix: str) -> tuple[str, ...]:
    return tuple(prefix.split(".")) if prefix else ()


def namespace_matches(kind: str, path: tuple[str, ...], ns: tuple[str, ...]) -> bool:
    """Whether ``ns`` matches a ``list_namespaces`` condition: ``path`` against
    its first (``"prefix"``) or last (``"suffix"``) labels, ``"*"`` matching any."""
    if kind not in ("prefix", "suffix"):
        raise InvalidValueError(f"unsupported match type {shown(kind)}; use 'prefix' or 'suffix'")
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if kind == "prefix" else zip(reversed(ns), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)


def iso_now() -> str:
    """Current UTC time as ISO-8601 with microseconds (sortable as text)."""
    return format_ts(datetime.now(timezone.utc))


def format_ts(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def prepare_ops(
    ops: Iterable[Op],
) -> tuple[list[Op], list[tuple[int, Op]], dict[tuple[tuple[str, ...], str], PutOp]]:
    """Validate ops and split them into reads (with their positions) and puts.

    Like LangGraph's stores, reads run before writes and, of several puts to one
    key in a batch, the last one wins.
    """
    if not isinstance(ops, Iterable) or isinstance(ops, (str, bytes, Mapping)):
        raise InvalidValueError(f"batch() needs a list of operations, got {type(ops).__name__}")
    ops = list(ops)
    reads: list[tuple[int, Op]] = []
    puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for i, given in enumerate(ops):
        op: Any = HybridSearchOp(*given) if isinstance(given, SearchOp) else given
        if not isinstance(op, GetOp | HybridSearchOp | ListNamespacesOp | PutOp):
            raise InvalidValueError(
                f"unknown operation type {type(op).__name__}; expected GetOp, PutOp, "
                "SearchOp or ListNamespacesOp"
            )
        if isinstance(op, HybridSearchOp):
            check_namespace(op.namespace_prefix, allow_empty=True)
            if type(op.namespace_prefix) is not tuple:
                op = op._replace(namespace_prefix=tuple(op.namespace_prefix))
            if op.mode is not None and op.mode not in SEARCH_MODES:
                raise InvalidValueError(
                    f"unknown search mode {shown(op.mode)}; use one of {', '.join(SEARCH_MODES)}"
                )
            check_count(op.limit, "search limit")
            check_count(op.offset, "search offset")
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidValueError(
                    f"search query must be a string or None, got {type(op.query).__name__}"
                )
            check_text(op.query, "the search query")
            _check_refresh(op.refresh_ttl)
        elif isinstance(op, ListNamespacesOp):
            op = _check_list_namespaces(op)
        else:
            check_namespace(op.namespace, allow_empty=isinstance(op, GetOp))
            if type(op.namespace) is not tuple:
                op = op._replace(namespace=tuple(op.namespace))
            if not isinstance(op.key, str) or not op.key or "\x00" in op.key:
                raise InvalidValueError(
                    f"key must be a non-empty string without NUL (\\x00), got {shown(op.key)}"
                )
            check_text(op.key, "the key")
            if isinstance(op, GetOp):
                _check_refresh(op.refresh_ttl)
        if isinstance(op, PutOp):
            if (
                op.index is not None
                and op.index is not False
                and (
                    isinstance(op.index, str)
                    or not isinstance(op.index, list | tuple)
                    or not all(isinstance(p, str) and p for p in op.index)
                )
            ):
                raise InvalidValueError(
                    f"index must be False, None or a list of field paths, got {shown(op.index)}"
                )
            puts[(op.namespace, op.key)] = op
        else:
            reads.append((i, op))
        ops[i] = op
    return ops, reads, puts


def _check_refresh(refresh: Any) -> None:
    if not isinstance(refresh, bool):
        raise InvalidValueError(
            f"refresh_ttl must be True, False or None, got {type(refresh).__name__} "
            f"{shown(refresh)}"
        )


# Larger counts overflow SQLite's (and PostgreSQL's) 64-bit integers.
MAX_COUNT = 2**62


def check_count(n: Any, what: str) -> int:
    """A non-negative ``int`` a database can hold (limits, offsets)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidValueError(f"{what} must be an int, got {type(n).__name__} {shown(n)}")
    if not 0 <= n <= MAX_COUNT:
        raise InvalidValueError(f"{what} must be between 0 and 2**62, got {n}")
    return n


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 5


def shown(value: Any) -> str:
    """``repr`` for error messages, bounded: a value nested thousands deep or
    megabytes long is shortened, never a RecursionError or a huge message."""
    return _REPR.repr(value)


# Code points U+D800-U+DFFF: halves of a UTF-16 pair, not characters. A Python
# string can hold one alone (json.loads('"\\ud800"'), surrogateescape) but no
# database can store it as UTF-8 text.
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text: str | None, what: str) -> None:
    r"""Raise :class:`InvalidValueError` if ``text`` holds a lone surrogate
    (not valid Unicode, so no store can keep it).

    Examples:
        >>> check_text("tea ☕", "the key")
        >>> check_text("a\ud800b", "the key")
        Traceback (most recent call last):
        ...
        langmem_ext.errors.InvalidValueError: the key contains a lone surrogate ('\ud800' ...
    """
    if text is None or text.isascii():
        return
    found = _SURROGATE.search(text)
    if found is not None:
        raise InvalidValueError(
            f"{what} contains a lone surrogate ({found.group()!r} at position "
            f"{found.start()}), which is not valid Unicode text; remove it or decode the "
            "text with errors='replace'"
        )


def check_namespace(namespace: Any, allow_empty: bool = False, wildcards: bool = False) -> None:
    """Raise :class:`InvalidNamespaceError` unless ``namespace`` is a tuple of
    non-empty strings without ``.`` (LangGraph's rules), e.g. ``("user", "u1")``."""
    if not isinstance(namespace, tuple | list):
        raise InvalidNamespaceError(
            f"namespace must be a tuple of strings such as ('user', 'u-123'), got "
            f"{type(namespace).__name__} {shown(namespace)}"
        )
    if not namespace and not allow_empty:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if type(namespace) is tuple and all(type(label) is str for label in namespace):
        _check_labels(namespace)  # the common case, cached: users repeat namespaces
        return
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"namespace labels must be strings, got {type(label).__name__} {shown(label)} "
                f"in {shown(namespace)}"
            )
    _check_labels.__wrapped__(tuple(namespace))


@functools.lru_cache(maxsize=4096)
def _check_labels(namespace: tuple[Any, ...]) -> None:
    try:
        _validate_labels(GetOp(namespace, "k"))
    except LangGraphNamespaceError as e:
        raise InvalidNamespaceError(str(e)) from None
    if any("\x00" in label for label in namespace):
        # PostgreSQL cannot store NUL and SQLite's indexes compare it
        # inconsistently: refused in every store alike.
        raise InvalidNamespaceError(
            f"namespace {shown(namespace)} contains the NUL character (\\x00); remove it"
        )
    for label in namespace:
        try:
            check_text(label, f"namespace label {shown(label)}")
        except InvalidValueError as e:
            raise InvalidNamespaceError(str(e)) from None


def _check_list_namespaces(op: ListNamespacesOp) -> ListNamespacesOp:
    conds = []
    for cond in op.match_conditions or ():
        if getattr(cond, "match_type", None) not in ("prefix", "suffix"):
            raise InvalidValueError(
                "list_namespaces conditions need match_type 'prefix' or 'suffix', "
                f"got {shown(cond)}"
            )
        # LangGraph's own tests write MatchCondition("suffix", "public"): one label.
        path = (cond.path,) if isinstance(cond.path, str) else cond.path
        check_namespace(path, allow_empty=True)
        conds.append(cond._replace(path=tuple(path)))
    if op.max_depth is not None:
        check_count(op.max_depth, "max_depth")
    check_count(op.limit, "list_namespaces limit")
    check_count(op.offset, "list_namespaces offset")
    return op._replace(match_conditions=tuple(conds)) if op.match_conditions else op


def dump_value(namespace: tuple[str, ...], key: str, value: Any) -> str:
    """Serialize a value to JSON, or raise a clear :class:`InvalidValueError`."""
    if not isinstance(value, Mapping):
        raise InvalidValueError(
            f"value for {namespace}/{shown(key)} must be a dict, got {type(value).__name__}; "
            "wrap it, e.g. {'content': ...}"
        )
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise InvalidValueError(
            f"value for {namespace}/{shown(key)} has non-string keys {shown(bad)}; JSON objects "
            "only have string keys"
        )
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
        check_text(text, f"value for {namespace}/{shown(key)}")
        return text
    except RecursionError:
        raise InvalidValueError(
            f"value for {namespace}/{shown(key)} is nested too deeply to store as JSON"
        ) from None
    except (TypeError, ValueError) as e:
        raise InvalidValueError(
            f"value for {namespace}/{shown(key)} cannot be stored as JSON ({e}); store only "
            "dicts, lists, strings, finite numbers, booleans and None"
        ) from e


#: The longest TTL, in minutes (about 1,900 years): the expiry must be a time
#: every store can hold (PostgreSQL's timestamps end in the year 294276).
MAX_TTL = 1e9


def check_ttl(ttl: Any) -> float | None:
    """A TTL in minutes as a float: a positive finite number up to
    :data:`MAX_TTL`, or None (never expires).

    Examples:
        >>> check_ttl(90)
        90.0
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidValueError(f"ttl must be a number of minutes or None, got {shown(ttl)}")
    # Compared as given: float() of an int beyond 1e308 overflows.
    if isinstance(ttl, float) and math.isnan(ttl):
        raise InvalidValueError(f"ttl must be a number of minutes or None, got {shown(ttl)}")
    if ttl <= 0:
        raise InvalidValueError(f"ttl must be positive (minutes), got {shown(ttl)}")
    if ttl > MAX_TTL:
        raise InvalidValueError(
            f"ttl must be at most {MAX_TTL:,.0f} minutes (about 1,900 years), got {shown(ttl)}; "
            "use ttl=None for items that never expire"
        )
    return float(ttl)


def check_expiry(ttl: Any, now: datetime | None = None) -> tuple[float | None, float | None]:
    """A put's ``ttl`` as ``(minutes, expires_at)``: minutes from now (refreshed
    on read when the store says so), or an absolute, timezone-aware
    ``datetime`` (``expires_at`` in unix seconds, never refreshed: the item
    lives until that moment).

    Examples:
        >>> from datetime import datetime, timezone
        >>> check_expiry(90)
        (90.0, None)
        >>> check_expiry(datetime(2999, 1, 1, tzinfo=timezone.utc))
        (None, 32472144000.0)
        >>> check_expiry(datetime(2999, 1, 1))
        Traceback (most recent call last):
        ...
        langmem_ext.errors.InvalidValueError: ttl datetime.datetime(2999, 1, 1, 0, 0) has no ...
    """
    if not isinstance(ttl, datetime):
        return check_ttl(ttl), None
    if ttl.tzinfo is None or ttl.utcoffset() is None:
        raise InvalidValueError(
            f"ttl {shown(ttl)} has no timezone, so the moment it names is ambiguous; pass an "
            "aware datetime such as datetime(2030, 1, 1, tzinfo=timezone.utc)"
        )
    when = ttl.timestamp()
    current = (now or datetime.now(timezone.utc)).timestamp()
    if when <= current:
        raise InvalidValueError(
            f"ttl {ttl.isoformat()} is in the past; give a future moment, or delete the item"
        )
    if when - current > MAX_TTL * 60.0:
        raise InvalidValueError(
            f"ttl {ttl.isoformat()} is more than {MAX_TTL:,.0f} minutes (about 1,900 years) "
            "away; use ttl=None for items that never expire"
        )
    return None, when


def texts_to_embed(
    value: Mapping[str, Any],
    index: Literal[False] | list[str] | None,
    default_fields: Sequence[tuple[str, Any]],
) -> list[tuple[str, str]]:
    """The (field label, text) pairs LangGraph's stores would embed for a put.

    A path that yields several texts (``tags[*]``) gives one vector each,
    labelled ``path.0``, ``path.1``…; an item scores as its best vector.
    """
    if index is False:
        return []
    paths = default_fields if index is None else [(p, tokenize_path(p)) for p in index]
    out: list[tuple[str, str]] = []
    for label, tokens in paths:
        texts = get_text_at_path(value, tokens)
        if len(texts) == 1:
            out.append((label, texts[0]))
        else:
            out.extend((f"{label}.{i}", t) for i, t in enumerate(texts))
    return [(label, t) for label, t in out if t]


def keyword_text(value: Mapping[str, Any], fields: list[tuple[str, str]], whole: bool) -> str:
    """Text for the keyword index: the embedded field texts, or, when the whole
    document (``"$"``) is indexed, its string leaves rather than its JSON text
    (JSON keys and punctuation would otherwise match queries)."""
    if whole:
        return "\n".join(_string_leaves(value))
    return "\n".join(t for _, t in fields)


def _string_leaves(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _string_leaves(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _string_leaves(v)
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        yield str(obj)


def prepare_put(
    op: PutOp,
    default_fields: Sequence[tuple[str, Any]] | None,
    embeds: bool,
    context_fields: Sequence[tuple[str, Any]] | None = None,
) -> PreparedPut:
    """Validate one put and compute what to store and index.

    ``default_fields`` is None when the store has no index config, in which
    case the whole document is keyword-indexed and nothing is embedded.
    """
    if op.value is None:
        return PreparedPut(op.namespace, op.key, None, None, [], None)
    value_json = dump_value(op.namespace, op.key, op.value)
    ttl, expires_at = check_expiry(op.ttl)
    if op.index is False:
        return PreparedPut(op.namespace, op.key, value_json, ttl, [], None, None, expires_at)
    fields_cfg = default_fields if default_fields is not None else [("$", "$")]
    fields = texts_to_embed(op.value, op.index, fields_cfg)
    whole = op.index is None and any(label == "$" for label, _ in fields_cfg)
    kw = keyword_text(op.value, fields, whole)
    context = [t for _, tokens in context_fields or [] for t in get_text_at_path(op.value, tokens)]
    return PreparedPut(
        op.namespace,
        op.key,
        value_json,
        ttl,
        fields if embeds else [],
        kw or None,
        "\n".join(context) or None,
        expires_at,
    )
