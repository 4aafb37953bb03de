"""The provider contract beyond add/search/get/update/delete/list: the
health check, the store's embedding of a text, the storage-size count behind
the ``memory.storage.size`` gauge (declared operations, see
:mod:`..runtime.catalogue`), and the store's capabilities.

initialize / shutdown are the store's own ``setup`` / ``close`` (see
:meth:`MemoryEngine.setup`); they are not operations because ``BaseStore`` has
no op for them.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> _ = engine.bulk_add(ctx, ["likes tea", "has a cat"])
    >>> engine.storage_size(ctx)["user"], engine.health_check()["healthy"]
    (2, True)
"""

from __future__ import annotations

import time
from typing import TypedDict

from langgraph.store.base import GetOp

from ..identity import layout
from ..runtime.catalogue import Caller, Spec, operation
from ..runtime.requests import Batch, Embed, Operation
from .fields import check_content
from .lifecycle import records_of
from .params import Tenant, Text

__all__ = ["HealthStatus", "generate_embedding", "health_check", "storage_size"]


class HealthStatus(TypedDict):
    """Result of :meth:`MemoryEngine.health_check`."""

    healthy: bool
    """True when the store answered a read (after the usual retries)."""
    latency_ms: float
    """How long the check took, retries included."""
    error: str | None
    """The error code (``PROVIDER_ERROR``, ``RATE_LIMITED``, …) or exception
    type name when unhealthy."""


@operation(access="read", cli=False, caller=False)
def health_check(c: Caller) -> Operation[HealthStatus]:
    """Whether the store answers a read: ``{"healthy", "latency_ms", "error"}``;
    a failing store gives ``healthy: False`` instead of raising.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from langmem_ext.engine import MemoryEngine
        >>> MemoryEngine(InMemoryStore()).health_check()["healthy"]
        True
    """
    start = time.perf_counter()
    error: str | None = None
    try:
        yield Batch([GetOp((layout.META, "health"), "_")])
    except Exception as e:  # thrown in by the runner after its retries
        error = getattr(e, "code", None) or type(e).__name__
    ms = round((time.perf_counter() - start) * 1000, 3)
    return {"healthy": error is None, "latency_ms": ms, "error": error}


@operation(access="read", cli=False, caller=False)
def generate_embedding(c: Caller, text: Text) -> Operation[list[float] | None]:
    """The store's embedding of a text (None without an embedder)."""
    # Through the store's embedder, so its cache (if any) is used; only the
    # engine's content limit applies (there is no caller).
    check_content(c.env(), text, "text")
    vectors = yield Embed([text])
    return list(vectors[0]) if vectors else None


@operation(access="read", cli=False)
def storage_size(c: Caller, *, tenant: Tenant = None) -> Operation[dict[str, int]]:
    """Current memories per readable layer (reads them all); refreshes the
    ``memory.storage.size`` gauge."""
    env = c.env(tenant)
    counts: dict[str, int] = {}
    for layer in env.layers():
        records = yield from records_of(env, layer)
        counts[layer.ref] = sum(1 for r in records if r.retrievable(env.stamp))
    if env.metrics is not None:
        env.metrics.set_sizes(env.tenant, counts)
    out: dict[str, int] = {}
    for ref, n in counts.items():
        name = ref.split(":", 1)[0]
        out[name] = out.get(name, 0) + n
    return out


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
