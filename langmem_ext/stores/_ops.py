"""Store operations shared by every backend: validation, serialization, the
texts to index, and the search op that carries a mode. Pure functions, no I/O."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)
from langgraph.store.base import validate_op_namespace as _validate_labels

from ..errors import InvalidValueError

__all__ = [
    "HybridSearchOp",
    "PreparedPut",
    "SearchMode",
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


def encode_namespace(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def decode_namespace(prefix: str) -> tuple[str, ...]:
    return tuple(prefix.split(".")) if prefix else ()


def namespace_matches(kind: str, path: tuple[str, ...], ns: tuple[str, ...]) -> bool:
    """Whether ``ns`` matches a ``list_namespaces`` condition: ``path`` against
    its first (``"prefix"``) or last (``"suffix"``) labels, ``"*"`` matching any."""
    if kind not in ("prefix", "suffix"):
        raise ValueError(f"unsupported match type {kind!r}; use 'prefix' or 'suffix'")
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
    ops = list(ops)
    reads: list[tuple[int, Op]] = []
    puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for i, op in enumerate(ops):
        if isinstance(op, SearchOp):
            op = HybridSearchOp(*op)
        if not isinstance(op, GetOp | HybridSearchOp | ListNamespacesOp | PutOp):
            raise ValueError(
                f"unknown operation type {type(op).__name__}; expected GetOp, PutOp, "
                "SearchOp or ListNamespacesOp"
            )
        if isinstance(op, HybridSearchOp):
            _validate_labels(SearchOp(*op[:6]))
            if op.mode is not None and op.mode not in SEARCH_MODES:
                raise ValueError(
                    f"unknown search mode {op.mode!r}; use one of {', '.join(SEARCH_MODES)}"
                )
            if op.limit < 0 or op.offset < 0:
                raise ValueError(
                    f"search limit and offset must be >= 0, got limit={op.limit}, "
                    f"offset={op.offset}"
                )
        else:
            _validate_labels(op)
        if isinstance(op, PutOp):
            if not op.namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if not isinstance(op.key, str) or not op.key:
                raise InvalidValueError(f"key must be a non-empty string, got {op.key!r}")
            puts[(op.namespace, op.key)] = op
        else:
            reads.append((i, op))
    return ops, reads, puts


def dump_value(namespace: tuple[str, ...], key: str, value: Any) -> str:
    """Serialize a value to JSON, or raise a clear :class:`InvalidValueError`."""
    if not isinstance(value, Mapping):
        raise InvalidValueError(
            f"value for {namespace}/{key!r} must be a dict, got {type(value).__name__}; "
            "wrap it, e.g. {'content': ...}"
        )
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise InvalidValueError(
            f"value for {namespace}/{key!r} has non-string keys {bad!r}; JSON objects "
            "only have string keys"
        )
    try:
        return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidValueError(
            f"value for {namespace}/{key!r} cannot be stored as JSON ({e}); store only "
            "dicts, lists, strings, finite numbers, booleans and None"
        ) from e


def check_ttl(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
        raise InvalidValueError(f"ttl must be a number of minutes or None, got {ttl!r}")
    if ttl <= 0:
        raise InvalidValueError(f"ttl must be positive (minutes), got {ttl!r}")
    return float(ttl)


def texts_to_embed(
    value: Mapping[str, Any],
    index: Literal[False] | list[str] | None,
    default_fields: list[tuple[str, Any]],
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
    default_fields: list[tuple[str, Any]] | None,
    embeds: bool,
    context_fields: list[tuple[str, Any]] | None = None,
) -> PreparedPut:
    """Validate one put and compute what to store and index.

    ``default_fields`` is None when the store has no index config, in which
    case the whole document is keyword-indexed and nothing is embedded.
    """
    if op.value is None:
        return PreparedPut(op.namespace, op.key, None, None, [], None)
    value_json = dump_value(op.namespace, op.key, op.value)
    ttl = check_ttl(op.ttl)
    if op.index is False:
        return PreparedPut(op.namespace, op.key, value_json, ttl, [], None)
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
    )
