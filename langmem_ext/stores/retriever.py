"""A store as a LangChain retriever: ``store.as_retriever(namespace_prefix)``.

Each search result becomes a ``Document`` whose text is what the store
indexes of the item (its index ``fields``, else ``content`` or ``text``, else
the value as JSON) and whose metadata holds ``namespace``, ``key``,
``score``, ``created_at``, ``updated_at`` and the ``value``. Works in LCEL
chains and anywhere a ``BaseRetriever`` is taken; sync and async. Any
LangGraph ``BaseStore`` works; ``mode`` needs one of this package's stores.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> store = SQLiteStore()
    >>> store.put(("docs",), "d1", {"text": "The cat sat on the mat"})
    >>> store.put(("docs",), "d2", {"text": "Stock prices rose"})
    >>> docs = store.as_retriever(("docs",), k=1, mode="keyword").invoke("cat")
    >>> docs[0].page_content, docs[0].metadata["key"]
    ('The cat sat on the mat', 'd1')
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.store.base import BaseStore, SearchItem, get_text_at_path, tokenize_path
from pydantic import ConfigDict

from ..errors import ConfigurationError
from ._ops import SEARCH_MODES, SearchMode, check_namespace
from .capabilities import IndexedFields

__all__ = ["StoreRetriever", "as_retriever", "document", "item_text"]

_MAX_K = 10_000


class StoreRetriever(BaseRetriever):
    """Searches ``store`` under ``namespace_prefix`` for each query (see the module)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: BaseStore
    namespace_prefix: tuple[str, ...]
    k: int = 4
    mode: SearchMode | None = None
    filter: dict[str, Any] | None = None

    def _search_kwargs(self, query: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"query": query, "limit": self.k, "filter": self.filter}
        if self.mode is not None:
            kwargs["mode"] = self.mode
        return kwargs

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        items = self.store.search(self.namespace_prefix, **self._search_kwargs(query))
        return [document(self.store, it) for it in items]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        items = await self.store.asearch(self.namespace_prefix, **self._search_kwargs(query))
        return [document(self.store, it) for it in items]


def as_retriever(
    store: BaseStore,
    namespace_prefix: tuple[str, ...],
    *,
    k: int = 4,
    mode: SearchMode | None = None,
    filter: dict[str, Any] | None = None,
) -> StoreRetriever:
    """A :class:`StoreRetriever` over ``store`` (any LangGraph ``BaseStore``).

    Args:
        namespace_prefix: where to search, e.g. ``("memories", "ada")``.
        k: documents per query (1 to 10,000).
        mode: ``"hybrid"``, ``"vector"`` or ``"keyword"`` (this package's
            stores; default: the store's own ``search_mode``).
        filter: conditions on the stored values, as in ``store.search``.

    Raises:
        ConfigurationError: a bad namespace, ``k`` or ``mode``, or ``mode``
            given for a store that has no search modes.
    """
    check_namespace(namespace_prefix, allow_empty=True)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= _MAX_K:
        raise ConfigurationError(f"k must be a whole number from 1 to {_MAX_K:,}, got {k!r}")
    if mode is not None:
        if mode not in SEARCH_MODES:
            raise ConfigurationError(f"unknown mode {mode!r}; use one of {', '.join(SEARCH_MODES)}")
        if not getattr(store, "supports_hybrid", False):  # this package's stores
            raise ConfigurationError(f"{type(store).__name__} has no search modes; leave mode out")
    if filter is not None and not isinstance(filter, dict):
        raise ConfigurationError(f"filter must be a dict or None, got {type(filter).__name__}")
    return StoreRetriever(
        store=store, namespace_prefix=tuple(namespace_prefix), k=k, mode=mode, filter=filter
    )


def document(store: BaseStore, item: SearchItem) -> Document:
    """A search result as a ``Document`` (text: what the store indexes of it)."""
    return Document(
        page_content=item_text(store, item.value),
        metadata={
            "namespace": tuple(item.namespace),
            "key": item.key,
            "score": item.score,
            "created_at": item.created_at.isoformat(),
            "updated_at": item.updated_at.isoformat(),
            "value": item.value,
        },
    )


def item_text(store: BaseStore, value: dict[str, Any]) -> str:
    """What ``store`` indexes of ``value`` (its index ``fields``), else its
    ``content`` or ``text``, else the value as JSON."""
    paths: Any
    if isinstance(store, IndexedFields):  # this package's stores: as they resolved it
        paths = store.indexed_fields
    else:
        config = getattr(store, "index_config", None) or {}
        paths = [tokenize_path(f) for f in config.get("fields") or [] if f != "$"]
    parts = [str(t) for p in paths for t in get_text_at_path(value, p) if t is not None]
    if parts:
        return "\n".join(parts)
    for name in ("content", "text"):
        if isinstance(value.get(name), str):
            return value[name]
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
