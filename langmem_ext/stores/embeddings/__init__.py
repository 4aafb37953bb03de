"""Embedding configuration: LangGraph's ``index`` config, resolved once.

``index={"dims": ..., "embed": ..., "fields": [...]}`` as in LangGraph, where
``embed`` is one of

- a LangChain ``Embeddings`` (``OpenAIEmbeddings(...)``, ...),
- a sync or async function ``list[str] -> list[list[float]]``,
- a ``"provider:model"`` string resolved by LangChain's ``init_embeddings``
  (``"openai:text-embedding-3-small"``),
- ``"local"``: the offline default, :class:`LocalEmbeddings` (384 dims;
  ``dims`` may then be omitted).

``index={"fields": [...]}`` without ``embed`` configures keyword search only.
Every embedder is wrapped in :class:`CachedEmbeddings`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

from langchain_core.embeddings import Embeddings
from langgraph.store.base import ensure_embeddings, tokenize_path

from ...errors import ConfigurationError
from .cache import CacheBackend, CachedEmbeddings
from .local import LOCAL_DIMS, LocalEmbeddings

__all__ = [
    "CacheBackend",
    "CachedEmbeddings",
    "IndexConfig",
    "IndexInput",
    "LocalEmbeddings",
    "ResolvedIndex",
    "model_identity",
    "resolve_index",
]


class IndexConfig(TypedDict, total=False):
    """LangGraph's ``IndexConfig`` plus two keys of ours."""

    dims: int
    """Vector length of the embedder (optional for ``"local"``: 384)."""
    embed: (
        Embeddings
        | Callable[[Sequence[str]], list[list[float]]]
        | Callable[[Sequence[str]], Awaitable[list[list[float]]]]
        | str
    )
    """Embedder: ``Embeddings``, (async) function, ``"provider:model"`` or ``"local"``."""
    fields: list[str] | None
    """Paths to index, LangGraph syntax (``"content"``, ``"tags[*]"``); default ``["$"]``."""
    vector_weight: float
    """Weight of the vector side in hybrid scores, in [0, 1]; default 0.5."""
    cache: bool
    """Cache embeddings by (model, text hash); default True."""
    context_fields: list[str]
    """Paths indexed for keyword search only, weighted below ``fields`` (for example
    the neighbouring turns of a dialog turn); default none."""
    context_weight: float
    """BM25 weight of ``context_fields`` relative to ``fields`` (1.0); default 0.5."""


IndexInput = IndexConfig | Mapping[str, Any]

_KNOWN_KEYS = {
    "dims",
    "embed",
    "fields",
    "vector_weight",
    "cache",
    "context_fields",
    "context_weight",
}


class ResolvedIndex(NamedTuple):
    """An ``index`` config after validation."""

    dims: int | None
    embeddings: CachedEmbeddings | None
    fields: list[tuple[str, Any]]  # (path, tokenized path) pairs, as LangGraph stores them
    vector_weight: float
    context_fields: Sequence[tuple[str, Any]] = ()
    context_weight: float = 0.5


def model_identity(embed: Any) -> str | None:
    """A stable name for an embedder, used in cache keys; None if unknown."""
    explicit = getattr(embed, "model_id", None)
    if isinstance(explicit, str):
        return explicit
    for attr in ("model", "model_name"):
        name = getattr(embed, attr, None)
        if isinstance(name, str) and name:
            cls = type(embed)
            return f"{cls.__module__}.{cls.__qualname__}:{name}"
    return None


def resolve_index(
    index: Mapping[str, Any] | None, backend: CacheBackend | None = None
) -> ResolvedIndex | None:
    """Validate an ``index`` config and build its (cached) embedder.

    Examples:
        >>> r = resolve_index({"embed": "local", "fields": ["content"]})
        >>> (r.dims, r.fields[0][0])
        (384, 'content')
    """
    if index is None:
        return None
    if not isinstance(index, Mapping):
        raise ConfigurationError(
            "index must be a dict like {'dims': 384, 'embed': 'local'}, "
            f"got {type(index).__name__}"
        )
    unknown = set(index) - _KNOWN_KEYS
    if unknown:
        raise ConfigurationError(
            f"unknown index config keys {sorted(unknown)}; known keys: {sorted(_KNOWN_KEYS)}"
        )
    fields = _paths(index.get("fields") or ["$"], "fields")
    weight = _weight(index, "vector_weight")
    context = _paths(index.get("context_fields") or [], "context_fields")
    cweight = _weight(index, "context_weight")
    if not isinstance(index.get("cache", True), bool):
        raise ConfigurationError(f"index['cache'] must be True or False, got {index['cache']!r}")
    embed = index.get("embed")
    if embed is None:
        return ResolvedIndex(None, None, fields, weight, context, cweight)
    dims = index.get("dims")
    if isinstance(embed, str) and embed.split(":", 1)[0] == "local":
        inner: Embeddings = LocalEmbeddings()
        dims = LOCAL_DIMS if dims is None else dims
    elif not isinstance(embed, Embeddings | str) and not callable(embed):
        raise ConfigurationError(
            f"index['embed'] must be a LangChain Embeddings, an embedding function, a "
            f"'provider:model' string or 'local', got {type(embed).__name__}"
        )
    else:
        try:
            inner = ensure_embeddings(embed)
        except Exception as e:
            raise ConfigurationError(
                f"cannot build the embedder {embed!r}: {e}. Pass a LangChain Embeddings, an "
                "embedding function, a 'provider:model' string whose package is installed, "
                "or 'local' for the offline default"
            ) from e
    if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
        raise ConfigurationError(
            f"index['dims'] must be a positive int (the embedder's vector length), got {dims!r}"
        )
    model_id = model_identity(inner)
    if model_id is not None:
        model_id = f"{model_id}#{dims}"
    cached = CachedEmbeddings(
        inner,
        model_id=model_id if index.get("cache", True) else None,
        dims=dims,
        backend=backend,
    )
    return ResolvedIndex(dims, cached, fields, weight, context, cweight)


def _weight(index: Mapping[str, Any], key: str) -> float:
    w = index.get(key, 0.5)
    if isinstance(w, bool) or not isinstance(w, int | float) or not 0.0 <= w <= 1.0:
        raise ConfigurationError(f"index[{key!r}] must be a number within [0, 1], got {w!r}")
    return float(w)


def _paths(paths: Any, key: str) -> list[tuple[str, Any]]:
    if not isinstance(paths, list | tuple) or not all(isinstance(f, str) and f for f in paths):
        raise ConfigurationError(
            f"index[{key!r}] must be a list of field paths such as ['content'], got {paths!r}"
        )
    return [(p, tokenize_path(p)) if p != "$" else (p, p) for p in paths]
