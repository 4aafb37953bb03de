"""LangMem's ``create_search_memory_tool``: the caller's memories searched by
the model, with LangMem's arguments and result shapes (see :mod:`.tools`).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> search = create_search_memory_tool(("memories",), store=SQLiteStore())
    >>> search.name
    'search_memory'
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field, create_model

from ..agents.tooling import MemoryTool, dumps, resolve_store
from ..engine import OPERATIONS, EngineConfig, EnginesByStore, NamespaceTemplate, shown
from ..errors import ConfigurationError, InvalidValueError, LangmemError, MemoryToolError
from ..stores import OPERATORS
from ._tool_common import check_common, tool_env

__all__ = ["create_search_memory_tool"]


def create_search_memory_tool(
    namespace: tuple[str, ...] | str | NamespaceTemplate | None = None,
    *,
    instructions: str = "",
    store: BaseStore | None = None,
    response_format: Literal["content", "content_and_artifact"] = "content",
    name: str = "search_memory",
    strict: bool = False,
    search_mode: Literal["hybrid", "vector", "keyword"] | None = None,
    default_tenant: str | None = None,
) -> MemoryTool:
    """Create the ``search_memory`` tool: find memories by query and filter.

    The tool takes ``query``, ``limit`` (10), ``offset`` (0) and ``filter`` and
    returns the matching items as a JSON list (``namespace``, ``key``, ``value``,
    ``created_at``, ``updated_at``, ``score``), plus the ``SearchItem`` objects
    as artifact with ``response_format="content_and_artifact"``.

    Args:
        namespace: As in :func:`create_manage_memory_tool`.
        instructions: Appended to the description.
        store: Store to use; by default the running graph's store.
        response_format: ``"content"`` or ``"content_and_artifact"``.
        name: Tool name.
        strict: OpenAI strict-mode schema; ``filter`` is then a list of
            ``{"field", "op", "value"}`` conditions.
        search_mode: ``"hybrid"``, ``"vector"`` or ``"keyword"`` for stores that
            rank by mode (:class:`~langmem_ext.SQLiteStore`); default: the store's.
        default_tenant: As in :func:`create_manage_memory_tool`.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> store = SQLiteStore()
        >>> store.put(("user", "u-1"), "m1", {"content": "dark mode", "category": "preference"})
        >>> tool = create_search_memory_tool(store=store, response_format="content_and_artifact")
        >>> msg = tool.invoke({"type": "tool_call", "id": "c1", "name": "search_memory",
        ...     "args": {"query": "mode", "filter": {"category": "preference"}}},
        ...     {"configurable": {"user_id": "u-1"}})
        >>> [item.key for item in msg.artifact]
        ['m1']
    """
    check_common(name, instructions, store, strict, default_tenant)
    if search_mode is not None and search_mode not in ("hybrid", "vector", "keyword"):
        raise ConfigurationError(
            f"search_mode must be 'hybrid', 'vector', 'keyword' or None, got {shown(search_mode)}"
        )
    if response_format not in ("content", "content_and_artifact"):
        raise ConfigurationError(
            "response_format must be 'content' or 'content_and_artifact', "
            f"got {shown(response_format)}"
        )
    template = NamespaceTemplate(namespace)
    initial_store = store
    engines = EnginesByStore(EngineConfig(namespace=template, default_tenant=default_tenant))

    spec = OPERATIONS["search_items"]

    def plan(query: Any, limit: Any, offset: Any, filter: Any, config: RunnableConfig) -> Any:
        store = resolve_store(initial_store, config, name)
        if isinstance(filter, list):  # strict mode's conditions
            filter = _conditions_to_filter(filter)
        args = {
            "query": query,
            "filter": filter or None,
            "limit": 10 if limit is None else limit,
            "offset": 0 if offset is None else offset,
            "mode": search_mode,
        }
        engine = engines.get(store)
        tool_env(engine, config)  # a caller without a user: a configuration error
        # The operation checks the arguments, once, as on every other surface;
        # the tool only words a refusal as a tool error.
        try:
            step = spec.start(engine, config, args)
        except LangmemError as e:
            raise _rejected(e) from e
        return engine, _search(step, response_format, engine.metrics, name)

    def search_memory(
        query: str | None = None,
        *,
        limit: int | None = 10,
        offset: int | None = 0,
        filter: Any = None,
        config: RunnableConfig,
    ) -> Any:
        engine, step = plan(query, limit, offset, filter, config)
        try:
            return engine.run(step, name)
        except (LangmemError, ValueError, ArithmeticError) as e:
            raise _rejected(e) from e

    async def asearch_memory(
        query: str | None = None,
        *,
        limit: int | None = 10,
        offset: int | None = 0,
        filter: Any = None,
        config: RunnableConfig,
    ) -> Any:
        engine, step = plan(query, limit, offset, filter, config)
        try:
            return await engine.arun(step, name)
        except (LangmemError, ValueError, ArithmeticError) as e:
            raise _rejected(e) from e

    description = (
        "Search your long-term memories for information relevant to your current context. "
        f"{instructions}"
    )
    return MemoryTool.from_function(  # type: ignore[return-value]
        search_memory,
        asearch_memory,
        name=name,
        description=description,
        args_schema=_search_schema(name, strict),
        response_format=response_format,
    )


#: Engine bookkeeping the model does not need to read (the artifact keeps it all).
_HIDDEN = frozenset(
    {
        "slot",
        "decay_rate",
        "provenance",
        "last_confirmed_at",
        "created_by",
        "created_at",
        "updated_at",
        "subject",
        "predicate",
        "permanence",
        "validity",
    }
)


def _shown(item: Any) -> dict[str, Any]:
    """An item as the model sees it: LangMem's item dict, with the engine's
    bookkeeping fields left out of the value (short prompts for small models)."""
    out = item.dict()
    value = out.get("value")
    if isinstance(value, dict) and "kind" in value:
        out["value"] = {k: v for k, v in value.items() if k not in _HIDDEN}
    return out


def _search(step: Any, response_format: str, metrics: Any, name: str) -> Any:
    """The search tool's one body: the catalogue's ``search_items`` (the
    caller's own items only), rendered as LangMem does."""
    items = yield from step
    metrics.search_results(name, ["user"], ["user"] * len(items))
    content = dumps([_shown(item) for item in items])
    return (content, items) if response_format == "content_and_artifact" else content


def _rejected(e: Exception) -> Exception:
    if isinstance(e, MemoryToolError | ConfigurationError):
        return e
    if isinstance(e, LangmemError) and e.retryable:
        return e
    if isinstance(e, InvalidValueError):  # a bad argument, worded as on every surface
        return MemoryToolError(f"{e}.")
    return MemoryToolError(f"The store rejected this search: {e}.")


_FILTER_DOC = (
    "Conditions on stored values, e.g. {'category': 'preference'} or "
    "{'importance': {'$gte': 3}}; dotted keys reach nested fields ('content.topic'). "
    f"Operators: {', '.join(OPERATORS)}."
)
_Scalar = str | int | float | bool | None


class FilterCondition(BaseModel):
    """One filter condition in strict mode: ``field op value``."""

    model_config = {"extra": "forbid"}
    field: str = Field(description="Field of the stored value; dots reach nested fields.")
    op: Literal[OPERATORS] = Field(description="Comparison operator.")  # type: ignore[valid-type]
    value: _Scalar | list[str | int | float | bool] = Field(
        description="Operand: a value, or a list for $in / $nin / $contains."
    )


def _search_schema(name: str, strict: bool) -> type[BaseModel]:
    docs = {
        "query": "What to look for, in natural language.",
        "limit": "Maximum number of results (default 10).",
        "offset": "Number of results to skip, for paging (default 0).",
    }
    if strict:
        fields: dict[str, Any] = {
            "query": (str, Field(description=docs["query"])),
            "limit": (int | None, Field(description=docs["limit"])),
            "offset": (int | None, Field(description=docs["offset"])),
            "filter": (
                list[FilterCondition] | None,
                Field(description="Conditions that must all hold; null for none."),
            ),
        }
    else:
        fields = {
            "query": (str, Field(description=docs["query"])),
            "limit": (int, Field(10, description=docs["limit"])),
            "offset": (int, Field(0, description=docs["offset"])),
            "filter": (dict[str, Any] | None, Field(None, description=_FILTER_DOC)),
        }
    return create_model(name, __config__={"extra": "forbid"}, **fields)


def _conditions_to_filter(conditions: list[Any]) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for c in conditions:
        if isinstance(c, FilterCondition):
            c = c.model_dump()
        if not isinstance(c, dict) or {"field", "op", "value"} - set(c):
            raise MemoryToolError(
                f"Invalid filter: each condition needs 'field', 'op' and 'value', got {shown(c)}."
            )
        out.setdefault(c["field"], {})[c["op"]] = c["value"]
    return out
