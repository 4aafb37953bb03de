"""LangMem-compatible memory tools for LangGraph / LangChain agents.

``create_manage_memory_tool`` and ``create_search_memory_tool`` have LangMem's
names, arguments, descriptions and return values (``"created memory {id}"``,
``"updated memory {id}"``, ``"Deleted memory {id}"``, a JSON list of items), so
switching is a change of import. What differs:

* ``namespace`` may be left out: it is then built from the caller's identity
  (``{"user_id": "u-123"}`` → ``("user", "u-123")``, see
  :mod:`langmem_ext.engine.identity.namespaces`), and templates also read
  ``Runtime.context``. The tools share each user's memories with reflection,
  the engine and the memory prompt (see :mod:`langmem_ext.engine.identity.layout`):
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
* Deleting an unknown id succeeds (idempotent), as in LangMem.
* The store holds what LangMem's tools would write, and nothing else: values
  are ``{"content": ...}``, no audit event is written, and only the caller's
  own namespace is read. ``history=True`` keeps the engine's history of each
  change instead (an audit event, ``MemoryEngine.history``; values stamped
  with kind and times). Facts reflection extracted keep their lifecycle.
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

from ..agents.tooling import MemoryTool, resolve_store, short
from ..engine import (
    OPERATIONS,
    EngineConfig,
    EnginesByStore,
    MemoryEngine,
    NamespaceTemplate,
    shown,
)
from ..errors import (
    ConfigurationError,
    InvalidValueError,
    LangmemError,
    MemoryToolError,
    MemoryToolNotFoundError,
)
from ..errors import MemoryNotFoundError as _NotFound
from ._tool_common import check_common, tool_env
from .search_tool import create_search_memory_tool

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
    history: bool = False,
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
        history: Keep the engine's history of the tool's notes: an audit
            event per change (``MemoryEngine.history``, the memory browser's
            history) and values stamped with their kind and times. Off by
            default: the store then holds what LangMem's tool would write
            (``{"content": ...}`` in the namespace, nothing elsewhere). Facts
            reflection extracted keep their history either way.

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
    check_common(name, instructions, store, strict, default_tenant)
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
    if not isinstance(history, bool):
        raise ConfigurationError(f"history must be True or False, got {shown(history)}")
    engines = EnginesByStore(
        EngineConfig(namespace=template, default_tenant=default_tenant, history=history)
    )

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
        tool_env(engine, config)  # a caller without a user: a configuration error
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


def _parse_json_text(schema: Any) -> Any:
    def parse(value: Any) -> Any:
        # Models often send a structured MEMORY as JSON text; accept that, and say
        # plainly when the text is not JSON at all.
        if schema is str or not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError as e:
            raise InvalidValueError(
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
