"""The catalogue's reads: finding and looking at memories (see :mod:`.catalogue`).

Every read returns every kind of memory (notes, facts, episodes, rules) unless
``types`` narrows it: what an agent saved with ``manage_memory`` is found by
``search`` and ``recall`` as much as a fact reflection extracted.
"""

from __future__ import annotations

from typing import Annotated

from langgraph.store.base import SearchItem
from pydantic import Field

from ..errors import MemoryNotFoundError
from . import inventory as inv
from . import lifecycle as lc
from . import provider as pv
from . import recall as rc
from .catalogue import Caller, Spec, operation
from .models import Fact, MemoryEvent, MemoryRecord
from .params import (
    Filter,
    Id,
    Kind,
    Kinds,
    LayerName,
    LayerNames,
    Mode,
    Query,
    ScopeFilter,
    Tags,
    Tenant,
    Text,
)
from .provider import HealthStatus
from .recall import Hit, Page
from .requests import Operation

__all__ = [
    "generate_embedding",
    "get",
    "get_memory",
    "health_check",
    "history",
    "list_memories",
    "recall",
    "search",
    "search_items",
    "search_layers",
    "stats",
    "storage_size",
    "versions",
]

_NOT_FOUND = (MemoryNotFoundError,)


Limit20 = Annotated[
    int, Field(ge=1, le=1000, strict=True, description="Most results to return (20).")
]
Limit10 = Annotated[
    int, Field(ge=1, le=1000, strict=True, description="Most results to return (10).")
]
MinConfidence = Annotated[
    float | None,
    Field(
        ge=0,
        le=1,
        strict=True,
        allow_inf_nan=False,
        description="Leave out facts and rules less sure than this (0 to 1).",
    ),
]


@operation(access="read", browser=True)
def get(
    c: Caller,
    id: Id,
    type: Annotated[Kind | None, Field(description="Its kind, if known.")] = None,
    *,
    tenant: Tenant = None,
) -> Operation[MemoryRecord | None]:
    """The memory with this id, current or not, or None when you have none
    with this id."""
    return rc.get(c.env(tenant), id, type)


@operation(access="read", tool="memory_get", cli=False, errors=_NOT_FOUND)
def get_memory(c: Caller, type: Kind, id: Id, *, tenant: Tenant = None) -> Operation[MemoryRecord]:
    """One memory with all its fields (an unknown id is an error); counts as a use."""
    return rc.get_memory(c.env(tenant), type, id)


@operation(access="read", browser=True)
def history(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[list[MemoryEvent]]:
    """What happened to a memory, oldest first: who created, changed, replaced
    or forgot it, and when."""
    return lc.history(c.env(tenant), id)


@operation(access="read", browser=True, errors=_NOT_FOUND)
def versions(c: Caller, id: Id, *, tenant: Tenant = None) -> Operation[list[Fact]]:
    """Every version of a fact, oldest first: the facts it replaced and those
    that replaced it, whether by an edit, a newer fact with the same subject
    and predicate, or reflection.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> old = engine.store_fact(ctx, "user", "city", "Lives in Berlin")
        >>> new = engine.revise(ctx, old.id, "Lives in Munich")
        >>> [f.content for f in engine.versions(ctx, new.id)]
        ['Lives in Berlin', 'Lives in Munich']
    """
    return inv.versions(c.env(tenant), id)


@operation(access="read", tool="memory_search", browser=True)
def search(
    c: Caller,
    query: Query,
    types: Kinds = None,
    scope: ScopeFilter = None,
    mode: Mode = "hybrid",
    limit: Limit20 = 20,
    min_confidence: MinConfidence = None,
    *,
    layers: LayerNames = None,
    tags: Annotated[Tags, Field(description="Only memories with one of these tags.")] = None,
    filter: Filter = None,
    tenant: Tenant = None,
) -> Operation[list[Hit]]:
    """Search your memories (notes, facts, episodes and rules) by relevance;
    keyword mode returns only memories that contain the words.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
        >>> _ = engine.add(ctx, "Allergic to peanuts")
        >>> [h.content for h in engine.search(ctx, "peanuts", mode="keyword")]
        ['Allergic to peanuts']
        >>> engine.search(ctx, "cashews", mode="keyword")
        []
    """
    return rc.search(
        c.env(tenant),
        query,
        types=types,
        scope=scope,
        mode=mode,
        limit=limit,
        min_confidence=min_confidence,
        layers=layers,
        tags=tags,
        filter=filter,
    )


@operation(access="read", cli=False)
def search_layers(
    c: Caller,
    query: Query,
    *,
    layers: LayerNames = None,
    threshold: Annotated[
        float | None,
        Field(
            ge=-1, le=1, strict=True, description="Lowest similarity kept (default: the engine's)."
        ),
    ] = None,
    limit: Limit10 = 10,
    types: Kinds = None,
    tags: Tags = None,
    filter: Filter = None,
    tenant: Tenant = None,
) -> Operation[list[Hit]]:
    """Search every layer at once: results by layer precedence, then score;
    a near-duplicate from a broader layer is dropped."""
    return rc.search_layers(
        c.env(tenant),
        query,
        layers=layers,
        threshold=threshold,
        limit=limit,
        types=types,
        tags=tags,
        filter=filter,
    )


@operation(access="read", tool="memory_recall")
def recall(
    c: Caller,
    query: Query,
    scope: ScopeFilter = None,
    limit: Limit10 = 10,
    types: Kinds = None,
    *,
    layers: LayerNames = None,
    tenant: Tenant = None,
) -> Operation[list[Hit]]:
    """Recall what is most useful for a request: memories ranked by relevance,
    importance, recency and confidence. Use this first when you need to
    remember something."""
    return rc.recall(c.env(tenant), query, scope=scope, limit=limit, layers=layers, types=types)


Cursor = Annotated[
    str | None, Field(description="The next_cursor of the previous page; none for the first.")
]


@operation(access="read", browser=True, name="list")
def list_memories(
    c: Caller,
    *,
    layer: LayerName = None,
    types: Kinds = None,
    filter: Filter = None,
    tags: Tags = None,
    limit: Limit20 = 20,
    cursor: Cursor = None,
    damaged: Annotated[
        bool,
        Field(
            strict=True,
            description="Also list stored items that cannot be read (a field of the wrong "
            "type, written by another program), marked damaged.",
        ),
    ] = False,
    tenant: Tenant = None,
) -> Operation[Page]:
    """A page of your current memories, newest first, with the total count and
    the cursor of the next page."""
    return inv.list_memories(
        c.env(tenant),
        layer=layer,
        types=types,
        filter=filter,
        tags=tags,
        limit=limit,
        cursor=cursor,
        damaged=damaged,
    )


@operation(access="read", tool="memory_stats", browser=True)
def stats(c: Caller, scope: ScopeFilter = None, *, tenant: Tenant = None) -> Operation[dict]:
    """How many memories you have of each kind, and in which state (active,
    fading, superseded, forgotten, expired)."""
    return inv.stats(c.env(tenant), scope)


@operation(access="read", cli=False)
def storage_size(c: Caller, *, tenant: Tenant = None) -> Operation[dict[str, int]]:
    """Current memories per readable layer (reads them all); refreshes the
    ``memory.storage.size`` gauge."""
    return pv.storage_size(c.env(tenant))


Offset = Annotated[
    int, Field(ge=0, le=10_000, strict=True, description="Results to skip, for paging.")
]


@operation(access="read", cli=False)
def search_items(
    c: Caller,
    query: Annotated[str | None, Field(description="What to look for; none lists.")] = None,
    *,
    filter: Filter = None,
    limit: Limit10 = 10,
    offset: Offset = 0,
    mode: Mode = None,
    tenant: Tenant = None,
) -> Operation[list[SearchItem]]:
    """Search the items of your own space as LangGraph's ``store.search``
    would (what the LangMem-style ``search_memory`` tool returns), never
    anyone else's: a caller without a user gets only its own space, not the
    users' spaces beneath it."""
    return rc.search_items(c.env(tenant), query, filter, limit, offset, mode)


@operation(access="read", cli=False, caller=False)
def generate_embedding(c: Caller, text: Text) -> Operation[list[float] | None]:
    """The store's embedding of a text (None without an embedder)."""
    return pv.generate_embedding(c.engine.plain_env(), text)


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
    return pv.health_check()


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
