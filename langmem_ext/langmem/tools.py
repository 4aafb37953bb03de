"""LangMem-compatible memory tools for LangGraph / LangChain agents.

``create_manage_memory_tool`` and ``create_search_memory_tool`` have LangMem's
names, arguments, descriptions and return values (``"created memory {id}"``,
``"updated memory {id}"``, ``"Deleted memory {id}"``, a JSON list of items), so
switching is a change of import. What differs:

* ``namespace`` may be left out: it is then built from the caller's identity
  (``{"user_id": "u-123"}`` → ``("user", "u-123")``, see
  :mod:`langmem_ext.engine.namespaces`), and templates also read
  ``Runtime.context``. The tools share each user's memories with reflection,
  the engine and the memory prompt (see :mod:`langmem_ext.engine.layout`):
  search finds the facts reflection extracted, and updating one supersedes it
  (a new id, the old fact kept in its history). Under LangGraph authentication
  the user comes from the auth user, never from the config, and an
  authenticated tenant's namespaces start with ``("tenant", <tenant>)``.
* Search is the store's search: hybrid (vector + keyword) on
  :class:`~langmem_ext.SQLiteStore`, with ``filter`` operators ``$eq $ne $gt
  $gte $lt $lte $in $nin $exists $contains``, ``limit`` and ``offset``.
* A mistake by the model (action not permitted, id on create, no id on
  update/delete, malformed id, unknown id on update, missing or non-JSON
  content, unknown filter operator) raises :class:`MemoryToolError` (a
  ``ValueError``) in a direct call, and becomes an error ``ToolMessage``
  (``status="error"``) when the tool runs from a tool call, e.g. in a graph's
  ``ToolNode``: the model reads it and retries, the run goes on. Nothing is
  stored by a failed call.
* Configuration errors (no store, a namespace key missing from the config) are
  not the model's to fix: they raise
  :class:`~langmem_ext.errors.ConfigurationError` (an ``Exception``) and stop the run.
* Deleting an unknown id succeeds (idempotent), as in LangMem. Every change is
  recorded as an audit event (``MemoryEngine.history``).
* ``strict=True`` gives argument schemas valid for OpenAI strict mode (every
  property required and nullable where optional, no defaults, no free-form
  objects: the search filter becomes a list of ``{field, op, value}``).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> store = SQLiteStore()
    >>> manage = create_manage_memory_tool(("memories",), store=store)
    >>> manage.invoke({"content": "likes green tea"})  # doctest: +ELLIPSIS
    'created memory ...'
    >>> search = create_search_memory_tool(("memories",), store=store)
    >>> import json; [m["value"]["content"] for m in json.loads(search.invoke({"query": "tea"}))]
    ['likes green tea']
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore
from pydantic import BaseModel, BeforeValidator, Field, TypeAdapter, WithJsonSchema, create_model
from pydantic import ValidationError as PydanticValidationError

from ..agents.tooling import MemoryTool, dumps, resolve_store, short
from ..engine import EngineConfig, EnginesByStore, MemoryEngine, NamespaceTemplate
from ..engine.checks import shown
from ..engine.operations import OPERATIONS
from ..errors import (
    ConfigurationError,
    LangmemError,
    MemoryToolError,
    MemoryToolNotFoundError,
    MissingIdentifierError,
)
from ..errors import MemoryNotFoundError as _NotFound
from ..stores import OPERATORS, normalize_filter

__all__ = [
    "MemoryTool",
    "create_manage_memory_tool",
    "create_search_memory_tool",
]

Action = Literal["create", "update", "delete"]
_ACTIONS: tuple[str, ...] = ("create", "update", "delete")

_MANAGE_INSTRUCTIONS = (
    "Proactively call this tool when you:\n\n"
    "1. Identify a new USER preference.\n"
    "2. Receive an explicit USER request to remember something or otherwise alter your "
    "behavior.\n"
    "3. Are working and want to record important context.\n"
    "4. Identify that an existing MEMORY is incorrect or outdated.\n"
)


# -- manage_memory ----------------------------------------------------------------


def create_manage_memory_tool(
    namespace: tuple[str, ...] | str | NamespaceTemplate | None = None,
    *,
    instructions: str = _MANAGE_INSTRUCTIONS,
    schema: Any = str,
    actions_permitted: Sequence[Action] | None = _ACTIONS,  # type: ignore[assignment]
    store: BaseStore | None = None,
    name: str = "manage_memory",
    strict: bool = False,
    default_tenant: str | None = None,
) -> MemoryTool:
    """Create the ``manage_memory`` tool: create, update or delete a memory.

    The tool takes ``content`` (of type ``schema``), ``action`` and ``id``, and
    stores ``{"content": content}`` under a new UUID key (create) or the given
    one (update keeps the item's other fields). It returns ``"created memory
    {id}"``, ``"updated memory {id}"`` or ``"Deleted memory {id}"``.

    Args:
        namespace: Where memories go, e.g. ``("{user_id}", "memories")``, filled
            from ``config["configurable"]`` and ``Runtime.context`` at each call;
            ``None`` builds it from the identity (``("user", "u-123")``).
        instructions: When the model should use the tool; ends the description.
        schema: Type of ``content``: ``str`` or a pydantic model / JSON type.
        actions_permitted: Actions offered to the model (non-empty).
        store: Store to use; by default the running graph's store.
        name: Tool name.
        strict: Make the argument schema valid for OpenAI strict mode.
        default_tenant: Tenant of runs without authentication (default: the
            single-tenant default, whose namespaces carry no tenant prefix).

    Raises:
        ConfigurationError: ``actions_permitted`` is empty or has an unknown action.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> tool = create_manage_memory_tool(store=InMemoryStore())
        >>> cfg = {"configurable": {"user_id": "u-123"}}
        >>> tool.invoke({"content": "vegetarian"}, cfg)  # doctest: +ELLIPSIS
        'created memory ...'
        >>> tool.invoke({"action": "update", "content": "x"}, cfg)
        Traceback (most recent call last):
        ...
        langmem_ext.errors.MemoryToolError: You must provide a MEMORY ID ...
    """
    _check_common(name, instructions, store, strict, default_tenant)
    if actions_permitted is not None and (
        isinstance(actions_permitted, str) or not isinstance(actions_permitted, Sequence)
    ):
        raise ConfigurationError(
            f"actions_permitted must be a list of actions ({', '.join(_ACTIONS)}), "
            f"got {shown(actions_permitted)}"
        )
    actions = tuple(actions_permitted or ())
    if not actions:
        raise ConfigurationError("actions_permitted cannot be empty; permit e.g. ('create',)")
    bad = [shown(a) for a in actions if not isinstance(a, str) or a not in _ACTIONS]
    if bad:
        raise ConfigurationError(
            f"unknown actions {bad} in actions_permitted; use {', '.join(_ACTIONS)}"
        )
    template = NamespaceTemplate(namespace)
    initial_store = store
    default_action = "create" if "create" in actions else actions[0]
    content_adapter, args_schema = _content_schema(name, schema, actions, default_action, strict)
    engines = EnginesByStore(EngineConfig(namespace=template, default_tenant=default_tenant))

    def check(content: Any, action: Any, id: Any) -> tuple[str, str | None, Any]:
        # All of the model's mistakes are found here, before any store access.
        if action is None:
            action = default_action
        if action not in actions:
            raise MemoryToolError(
                f"Invalid action {shown(action)}. Must be one of {', '.join(map(repr, actions))}."
            )
        if action == "create" and id is not None:
            raise MemoryToolError(
                "You cannot provide a MEMORY ID when creating a MEMORY. Please try again, "
                "omitting the id argument."
            )
        if action in ("delete", "update") and not id:
            raise MemoryToolError(
                f"You must provide a MEMORY ID when deleting or updating a MEMORY "
                f"(action={shown(action)}); find it with the search tool."
            )
        key = _check_id(id) if id is not None else None
        if action == "delete":
            return action, key, None
        if content is None:
            raise MemoryToolError(f"content is required to {action} a MEMORY.")
        return action, key, _json_content(content, content_adapter)

    def plan(content: Any, action: Any, id: Any, config: RunnableConfig) -> Any:
        store = resolve_store(initial_store, config, name)
        action, key, value = check(content, action, id)
        engine = engines.get(store)
        _env(engine, config)  # a caller without a user: a configuration error
        return engine, _manage(engine, config, action, key, value)

    def manage_memory(
        content: Any = None,
        action: str = default_action,
        *,
        id: Any = None,
        config: RunnableConfig,
    ) -> str:
        engine, step = plan(content, action, id, config)
        try:
            return engine.run(step, name)
        except LangmemError as e:
            raise for_model(e) from e

    async def amanage_memory(
        content: Any = None,
        action: str = default_action,
        *,
        id: Any = None,
        config: RunnableConfig,
    ) -> str:
        engine, step = plan(content, action, id, config)
        try:
            return await engine.arun(step, name)
        except LangmemError as e:
            raise for_model(e) from e

    return MemoryTool.from_function(  # type: ignore[return-value]
        manage_memory,
        amanage_memory,
        name=name,
        description=_manage_description(actions, instructions),
        args_schema=args_schema,
    )


def _manage_description(actions: tuple[str, ...], instructions: str) -> str:
    # LangMem's wording, so prompts tuned against it keep working.
    if len(actions) == 1:
        verbs = f"{actions[0]} a memory"
    elif len(actions) == 2:
        verbs = f"{actions[0].capitalize()} or {actions[1]} a memory"
    else:
        verbs = f"{', '.join((actions[0].capitalize(), *actions[1:-1]))}, or {actions[-1]} a memory"
    return (
        f"{verbs} to persist across conversations.\n"
        "Include the MEMORY ID when updating or deleting a MEMORY. Omit when creating a new "
        f"MEMORY - it will be created for you.\n{instructions}"
    )


def _manage_schema(
    name: str, schema: Any, actions: tuple[str, ...], default: str, strict: bool
) -> type[BaseModel]:
    content_t = Annotated[schema | None, BeforeValidator(_parse_json_text(schema))]
    action_t = Annotated[Any, WithJsonSchema({"type": "string", "enum": list(actions)})]
    id_t = Annotated[
        Any, WithJsonSchema({"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]})
    ]
    docs = {
        "content": "Content of the new or updated MEMORY; null when deleting.",
        "action": f"One of: {', '.join(actions)}.",
        "id": "ID of the MEMORY to update or delete; null when creating.",
    }
    if strict:  # every field required (nullable instead of defaulted)
        fields: dict[str, Any] = {
            "content": (content_t, Field(description=docs["content"])),
            "action": (action_t, Field(description=docs["action"])),
            "id": (id_t, Field(description=docs["id"])),
        }
    else:
        fields = {
            "content": (content_t, Field(None, description=docs["content"])),
            "action": (action_t, Field(default, description=docs["action"])),
            "id": (id_t, Field(None, description=docs["id"])),
        }
    return create_model(name, __config__={"extra": "forbid"}, **fields)


def _content_schema(
    name: str, schema: Any, actions: tuple[str, ...], default: str, strict: bool
) -> tuple[TypeAdapter[Any], type[BaseModel]]:
    """The content validator and the tool's argument schema, or a
    ConfigurationError naming the schema that pydantic cannot use."""
    if isinstance(schema, str) or schema is None:
        # pydantic would read a string as a forward reference, failing later.
        raise ConfigurationError(
            f"schema must be a type such as str or a pydantic model, got {shown(schema)}"
        )
    try:
        return TypeAdapter(schema), _manage_schema(name, schema, actions, default, strict)
    except Exception as e:  # pydantic raises many kinds for a type it cannot use
        raise ConfigurationError(
            f"schema {shown(schema)} cannot describe a MEMORY: {short(e)}; use str, a JSON "
            "type or a pydantic model"
        ) from e


def _check_common(
    name: Any, instructions: Any, store: Any, strict: Any, default_tenant: Any
) -> None:
    """Arguments both tool factories share, checked when the tool is made."""
    if not isinstance(name, str) or not name.strip() or any(ord(c) < 32 for c in name):
        raise ConfigurationError(
            f"name must be a tool name such as 'manage_memory', got {shown(name)}"
        )
    if not isinstance(instructions, str):
        raise ConfigurationError(f"instructions must be text, got {shown(instructions)}")
    if store is not None and not isinstance(store, BaseStore):
        raise ConfigurationError(f"store must be a LangGraph BaseStore, got {type(store).__name__}")
    if not isinstance(strict, bool):
        raise ConfigurationError(f"strict must be True or False, got {shown(strict)}")
    if default_tenant is not None and (not isinstance(default_tenant, str) or not default_tenant):
        raise ConfigurationError(
            f"default_tenant must be a non-empty string or None, got {shown(default_tenant)}"
        )


def _parse_json_text(schema: Any) -> Any:
    def parse(value: Any) -> Any:
        # Models often send a structured MEMORY as JSON text; accept that, and say
        # plainly when the text is not JSON at all.
        if schema is str or not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError as e:
            raise ValueError(
                f"content must be a JSON value matching the MEMORY schema, got text that "
                f"is not JSON ({e}): {value[:80]!r}"
            ) from None

    return parse


def _json_content(content: Any, adapter: TypeAdapter[Any]) -> Any:
    try:
        content = adapter.validate_python(content)
        plain = adapter.dump_python(content, mode="json")
        json.dumps(plain, allow_nan=False)
    except (PydanticValidationError, TypeError, ValueError) as e:
        raise MemoryToolError(
            f"content cannot be stored as JSON: {short(e)}. Send text, numbers, "
            "booleans, lists or objects matching the MEMORY schema."
        ) from e
    return plain


def _check_id(id: Any) -> str:
    if isinstance(id, uuid.UUID):
        return str(id)
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        return str(uuid.UUID(str(id)))  # any spelling of a UUID names the same key
    text = str(id).strip() if isinstance(id, str | int) and not isinstance(id, bool) else ""
    if not text or len(text) > 200 or any(c.isspace() or ord(c) < 32 for c in text):
        raise MemoryToolError(
            f"MEMORY ID {shown(id)} is not a valid id; copy the key of a search result "
            "(e.g. '123e4567-e89b-12d3-a456-426614174000' or 'fact_1a2b3c4d')."
        )
    return text


def _env(engine: MemoryEngine, config: RunnableConfig) -> Any:
    """The caller's environment; a caller without a user is a configuration
    problem for a tool (not the model's to fix)."""
    env = engine.env(config)
    try:
        env.ctx.own_space()
    except MissingIdentifierError as e:
        raise ConfigurationError(str(e), key="user_id") from None
    return env


def _manage(engine: MemoryEngine, config: Any, action: str, key: str | None, value: Any) -> Any:
    """The tool's one body, a generator of store requests (run sync or async),
    made of the catalogue's operations: ``add``, ``revise`` (a fact reflection
    extracted is superseded: new id, history kept; a note is updated in place)
    and ``delete``."""
    if action == "delete":
        yield from OPERATIONS["delete"].start(engine, config, {"id": key})
        return f"Deleted memory {key}"
    if action == "update":
        try:
            record = yield from OPERATIONS["revise"].start(
                engine, config, {"id": key, "content": value}
            )
        except _NotFound:
            raise _not_found(key, engine.env(config).layer("user").ns) from None
        return f"updated memory {record.id}"
    note = yield from OPERATIONS["add"].start(engine, config, {"content": value})
    return f"created memory {note.id}"


def for_model(e: LangmemError) -> LangmemError:
    """The error a tool raises for ``e``: the model's own mistakes (bad values,
    unknown ids, content too long) as a :class:`MemoryToolError` it reads and
    corrects; configuration and provider failures as they are."""
    if isinstance(e, MemoryToolError | ConfigurationError) or e.retryable:
        return e
    if isinstance(e, ValueError | LookupError):
        return MemoryToolError(f"{e.code}: {e}", **e.details)
    return e


def _not_found(key: Any, ns: tuple[str, ...]) -> MemoryToolNotFoundError:
    return MemoryToolNotFoundError(
        f"No MEMORY with id {key} exists here, so there is nothing to update. Search to "
        "find the right id, or use action='create' to add a new MEMORY.",
        id=str(key),
        namespace=ns,
    )


# -- search_memory ----------------------------------------------------------------


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
    _check_common(name, instructions, store, strict, default_tenant)
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

    def check(query: Any, limit: Any, offset: Any, filter: Any) -> tuple[int, int, Any]:
        if query is not None and not isinstance(query, str):
            raise MemoryToolError(f"query must be text, got {type(query).__name__}.")
        limit = 10 if limit is None else limit
        offset = 0 if offset is None else offset
        for label, v, low in (("limit", limit, 1), ("offset", offset, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= _MAX_PAGE:
                raise MemoryToolError(
                    f"{label} must be a whole number from {low} to {_MAX_PAGE}, got {shown(v)}."
                )
        if isinstance(filter, list):
            filter = _conditions_to_filter(filter)
        try:
            normalize_filter(filter)
        except RecursionError:
            raise MemoryToolError("Invalid filter: nested too deeply.") from None
        except (ValueError, TypeError) as e:
            raise MemoryToolError(f"Invalid filter: {e}.") from None
        return limit, offset, filter or None

    def plan(query: Any, limit: Any, offset: Any, filter: Any, config: RunnableConfig) -> Any:
        store = resolve_store(initial_store, config, name)
        limit, offset, filter = check(query, limit, offset, filter)
        engine = engines.get(store)
        _env(engine, config)  # a caller without a user: a configuration error
        args = {"query": query, "filter": filter, "limit": limit, "offset": offset}
        step = OPERATIONS["search_items"].start(engine, config, {**args, "mode": search_mode})
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


#: The largest limit or offset a model may ask for (larger numbers are
#: mistakes, and some stores cannot bind them).
_MAX_PAGE = 10_000


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
