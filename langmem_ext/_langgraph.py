"""The one module that touches LangGraph's internals.

LangGraph keeps a few things we need outside its public API: the key under
which a node's config carries the ``Runtime``, and the label checks its stores
run on namespaces. Everything else in the package imports them from here, so a
LangGraph release that moves one breaks one file, with a fallback beside it.

Examples:
    >>> validate_labels(("user", "u-1"))
    >>> validate_labels(("user", "a.b"))
    Traceback (most recent call last):
    ...
    langgraph.store.base.InvalidNamespaceError: Invalid namespace label 'a.b' ...
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, InvalidNamespaceError, TTLConfig

__all__ = [
    "RUNTIME_KEY",
    "config_runtime",
    "current_config",
    "ensure_refresh",
    "graph_store",
    "validate_labels",
]

try:  # the key under which LangGraph keeps the Runtime in a node's config
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME as RUNTIME_KEY
except ImportError:  # pragma: no cover - moved in a future LangGraph
    RUNTIME_KEY = "__pregel_runtime"


def validate_labels(namespace: tuple[str, ...]) -> None:
    """Check namespace labels as LangGraph's stores do (strings, non-empty, no
    ``.``, no NUL). Written here rather than imported: LangGraph's helper is
    private and absent from some ``langgraph-checkpoint`` releases.

    Raises:
        InvalidNamespaceError: a label is not a non-empty string without ``.``/NUL.
    """
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels"
                f" must be strings, but got {type(label).__name__}."
            )
        if not label:
            raise InvalidNamespaceError(
                f"Namespace labels cannot be empty strings. Got {label!r} in {namespace}"
            )
        if "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label '{label}' found in {namespace}. Namespace labels "
                "cannot contain periods ('.')."
            )
        if "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {namespace}. Namespace labels "
                "cannot contain NUL bytes ('\\x00')."
            )


def config_runtime(config: RunnableConfig | None) -> Any:
    """The LangGraph ``Runtime`` of the node ``config`` belongs to, if any."""
    if not config:
        return None
    return (config.get("configurable") or {}).get(RUNTIME_KEY)


def current_config(config: RunnableConfig | None = None) -> RunnableConfig:
    """``config``, else the running graph's config, else an empty config."""
    if config is not None:
        return config
    try:
        from langgraph.config import get_config

        return get_config()
    except RuntimeError:
        return {}


def graph_store() -> BaseStore | None:
    """The store of the graph running this code, or None outside a graph."""
    try:
        from langgraph.config import get_store

        return get_store()
    except RuntimeError:
        return None


def ensure_refresh(ttl_config: TTLConfig | None, refresh_ttl: bool | None = None) -> bool:
    """Whether a read refreshes TTLs: the call's ``refresh_ttl``, else the
    store's ``refresh_on_read`` (default True), as LangGraph's stores decide."""
    if refresh_ttl is not None:
        return refresh_ttl
    if ttl_config is not None:
        return ttl_config.get("refresh_on_read", True)
    return True
