"""Deliberate differences from LangMem and LangGraph that ``scripts/compat``
accepts: the row's source (``*`` matches anything, for LangGraph's
parametrized tests) -> why. Each is explained to users in
docs/langmem.md or docs/langgraph-migration.md (a test checks each source is
named there), and the examples test expects these blocks to fail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_UNKNOWN_ID = (
    "manage_memory refuses to update an id that does not exist (LangMem creates a "
    "memory under it): a model that invents an id is told to search or create"
)
_AFTER_UNKNOWN_ID = (
    "runs after the unknown-id update above, whose failure leaves the names this "
    "block uses undefined"
)

_WITHIN_MAX = (
    "with a running summary, new messages are summarized once they fill what the "
    "summary leaves of max_tokens, so the output stays within max_tokens; LangMem "
    "waits until they reach max_tokens alone (its output passes max_tokens)"
)

DEVIATIONS: dict[str, str] = {
    "docs/guides/delayed_processing.md#3": (
        "ReflectionExecutor's remote form (a graph on a LangGraph server) is refused "
        "with an error naming the in-process form"
    ),
    "langmem/knowledge/tools.py::create_manage_memory_tool#3": _UNKNOWN_ID,
    "langmem/knowledge/tools.py::create_manage_memory_tool#4": _AFTER_UNKNOWN_ID,
    "langmem/knowledge/tools.py::create_manage_memory_tool#5": _AFTER_UNKNOWN_ID,
    # LangMem's offline tests
    "tests/short_term/*::test_subsequent_summarization_with_new_messages": _WITHIN_MAX,
    "tests/short_term/*::test_subsequent_summarization_with_new_messages[*]": _WITHIN_MAX,
    "tests/short_term/*::test_summarization_updated_messages*": _WITHIN_MAX,
    "tests/short_term/*::test_summarization_node_same_key*": _WITHIN_MAX,
    # LangGraph's store suites: suite::module::test
    "*::test_no_running_loop[*]": (
        "a sync method called on the event loop's thread runs (LangGraph's async "
        "stores raise InvalidStateError)"
    ),
    "async-postgres::test_async_store::test_abatch_uses_single_pool_checkout": (
        "counts checkouts by patching LangGraph's private _ainternal.get_connection, "
        "which our store does not use"
    ),
    "*::test_omit_expired_disabled_preserves_expired_rows[*-default]": (
        "an expired item is never returned unless omit_expired=False is set"
    ),
    "sqlite::test_ttl::test_ttl_override_default": (
        "reads refresh the TTL unless refresh_on_read=False, as TTLConfig documents; "
        "LangGraph's SqliteStore refreshes only with refresh_on_read=True"
    ),
}


def listed(source: str, deviations: Mapping[str, str] = DEVIATIONS) -> str | None:
    """Why ``source`` is a deliberate deviation, or None.

    >>> listed("sqlite::test_store::test_no_running_loop[file]") is not None
    True
    """
    for pattern, why in deviations.items():
        if matches(source, pattern):
            return why
    return None


def matches(source: str, pattern: str) -> bool:
    """``*`` matches anything; every other character (``[`` too) itself."""
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), source) is not None
