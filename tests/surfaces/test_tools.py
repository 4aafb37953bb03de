"""manage_memory / search_memory called directly (the graph tests are in test_agents)."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from langmem_ext import create_manage_memory_tool, create_search_memory_tool
from langmem_ext.errors import ConfigurationError, MemoryToolError, MemoryToolNotFoundError

from .conftest import plain, snapshot

U123 = {"configurable": {"user_id": "u-123"}}
LANGMEM_DESCRIPTION = (
    "Create, update, or delete a memory to persist across conversations.\n"
    "Include the MEMORY ID when updating or deleting a MEMORY. Omit when creating a new "
    "MEMORY - it will be created for you.\n"
    "Proactively call this tool when you:\n\n"
    "1. Identify a new USER preference.\n"
    "2. Receive an explicit USER request to remember something or otherwise alter your "
    "behavior.\n"
    "3. Are working and want to record important context.\n"
    "4. Identify that an existing MEMORY is incorrect or outdated.\n"
)


def created_id(result: str) -> str:
    prefix = "created memory "
    assert result.startswith(prefix), result
    return result[len(prefix) :]


# -- manage_memory: seed 000 scenarios ------------------------------------------------


def test_create_lands_in_identity_namespace(any_store):
    tool = create_manage_memory_tool(store=any_store)
    key = created_id(tool.invoke({"content": "prefers dark mode", "action": "create"}, U123))
    uuid.UUID(key)  # a generated UUID
    item = any_store.get(("user", "u-123"), key)
    assert item.value == {"content": "prefers dark mode"}  # LangMem's value, nothing added
    assert snapshot(any_store) == [(("user", "u-123"), key, {"content": "prefers dark mode"})]


# -- what the tools leave in the store -------------------------------------------------


def test_the_tools_write_only_what_langmem_writes(any_store):
    # A LangMem user's store shows only their memories: no audit events, no
    # archive, no other layer's namespace (LangGraph's InMemoryStore lists a
    # namespace as soon as anything reads it), values as LangMem writes them.
    manage = create_manage_memory_tool(("memories",), store=any_store)
    search = create_search_memory_tool(("memories",), store=any_store)
    keep = created_id(manage.invoke({"content": "likes tea"}, U123))
    gone = created_id(manage.invoke({"content": "likes cake"}, U123))
    manage.invoke({"action": "update", "id": keep, "content": "likes green tea"}, U123)
    manage.invoke({"action": "delete", "id": gone}, U123)
    manage.invoke({"action": "delete", "id": str(uuid.uuid4())}, U123)  # unknown: idempotent
    assert "green tea" in search.invoke({"query": "tea"}, U123)
    assert any_store.list_namespaces() == [("memories",)]
    assert [(tuple(i.namespace), i.key, i.value) for i in any_store.search(())] == [
        (("memories",), keep, {"content": "likes green tea"})
    ]


async def test_the_async_tools_write_only_what_langmem_writes(any_store):
    manage = create_manage_memory_tool(("memories",), store=any_store)
    key = created_id(await manage.ainvoke({"content": "likes tea"}, U123))
    await manage.ainvoke({"action": "update", "id": key, "content": "likes mint tea"}, U123)
    assert await any_store.alist_namespaces() == [("memories",)]
    assert [i.value for i in await any_store.asearch(())] == [{"content": "likes mint tea"}]


def test_history_is_kept_when_asked_for(any_store):
    from langmem_ext import MemoryEngine
    from langmem_ext.engine import EngineConfig

    manage = create_manage_memory_tool(("memories",), store=any_store, history=True)
    key = created_id(manage.invoke({"content": "likes tea"}, U123))
    manage.invoke({"action": "update", "id": key, "content": "likes green tea"}, U123)
    value = any_store.get(("memories",), key).value
    assert value["kind"] == "note" and value["created_by"] == "u-123"
    assert ("_meta", "memories", "events") in any_store.list_namespaces()
    engine = MemoryEngine(any_store, EngineConfig(namespace=("memories",)))
    assert [e.action for e in engine.history(U123, key)] == ["created", "updated"]


def test_a_fact_corrected_by_the_tool_keeps_its_history(store):
    # Reflection's facts live in the same namespace and keep their lifecycle:
    # the tool supersedes one (a new id; the old one archived with its events),
    # while the tool's own notes leave no trace.
    from langmem_ext import MemoryEngine

    engine = MemoryEngine(store)
    old = engine.add_fact(U123, "Lives in Berlin", "context", 0.9)
    manage = create_manage_memory_tool(store=store)
    out = manage.invoke({"action": "update", "id": old.id, "content": "Lives in Munich"}, U123)
    new_id = out.removeprefix("updated memory ")
    assert new_id != old.id
    assert [f.content for f in engine.get_profile(U123).facts] == ["Lives in Munich"]
    assert engine.get(U123, old.id).validity == "superseded"
    assert [e.action for e in engine.history(U123, old.id)] == ["created", "superseded"]


def test_history_must_be_a_bool():
    with pytest.raises(ConfigurationError, match="history must be True or False"):
        create_manage_memory_tool(history="yes")  # type: ignore[arg-type]


def test_org_agent_identity_namespace(store):
    tool = create_manage_memory_tool(store=store)
    key = created_id(
        tool.invoke({"content": "x"}, {"configurable": {"org_id": "acme", "agent_id": "alpha"}})
    )
    assert store.get(("org", "acme", "alpha"), key) is not None


def test_template_namespace_from_configurable(store):
    tool = create_manage_memory_tool(("{user_id}", "memories"), store=store)
    key = created_id(tool.invoke({"content": "x"}, {"configurable": {"user_id": 42}}))
    assert plain(store.get(("42", "memories"), key).value) == {"content": "x"}


def test_update_returns_updated_and_keeps_other_fields(any_store):
    tool = create_manage_memory_tool(store=any_store)
    key = created_id(tool.invoke({"content": "old"}, U123))
    any_store.put(("user", "u-123"), key, {"content": "old", "category": "preference"})
    out = tool.invoke({"content": "new", "action": "update", "id": key}, U123)
    assert out == f"updated memory {key}"
    assert plain(any_store.get(("user", "u-123"), key).value) == {
        "content": "new",
        "category": "preference",
    }


def test_update_accepts_uppercase_uuid(store):
    tool = create_manage_memory_tool(store=store)
    key = created_id(tool.invoke({"content": "old"}, U123))
    assert (
        tool.invoke({"content": "n", "action": "update", "id": key.upper()}, U123)
        == f"updated memory {key}"
    )


def test_delete_returns_deleted(any_store):
    tool = create_manage_memory_tool(store=any_store)
    key = created_id(tool.invoke({"content": "x"}, U123))
    assert tool.invoke({"action": "delete", "id": key}, U123) == f"Deleted memory {key}"
    assert any_store.get(("user", "u-123"), key) is None


def test_delete_of_unknown_id_is_idempotent_success(store):
    tool = create_manage_memory_tool(store=store)
    key = str(uuid.uuid4())
    assert tool.invoke({"action": "delete", "id": key}, U123) == f"Deleted memory {key}"
    assert tool.invoke({"action": "delete", "id": key}, U123) == f"Deleted memory {key}"


def test_description_matches_langmem_and_carries_instructions():
    # StructuredTool strips trailing whitespace, as it does for LangMem
    assert create_manage_memory_tool().description == LANGMEM_DESCRIPTION.strip()
    tool = create_manage_memory_tool(instructions="Only remember food allergies.")
    assert tool.description.endswith("Only remember food allergies.")
    assert tool.name == "manage_memory"
    assert create_manage_memory_tool(name="remember").name == "remember"


def test_actions_permitted_limits_schema_and_description(store):
    tool = create_manage_memory_tool(actions_permitted=("create", "update"), store=store)
    assert tool.description.startswith("Create or update a memory")
    params = convert_to_openai_tool(tool)["function"]["parameters"]
    assert params["properties"]["action"]["enum"] == ["create", "update"]
    key = created_id(tool.invoke({"content": "x"}, U123))
    before = snapshot(store)
    with pytest.raises(
        ValueError, match=r"Invalid action 'delete'\. Must be one of 'create', 'update'"
    ):
        tool.invoke({"action": "delete", "id": key}, U123)
    assert snapshot(store) == before
    only_update = create_manage_memory_tool(actions_permitted=("update",), store=store)
    assert only_update.description.startswith("update a memory")


@pytest.mark.parametrize("bad", [(), ("create", "archive")])
def test_bad_actions_permitted_rejected(bad):
    with pytest.raises(ConfigurationError):
        create_manage_memory_tool(actions_permitted=bad)


# -- manage_memory: bad input changes nothing ------------------------------------------


def _bad_calls(key: str) -> list[tuple[dict, type, str]]:
    return [
        ({"content": "x", "action": "update"}, MemoryToolError, "must provide a MEMORY ID"),
        ({"action": "delete"}, MemoryToolError, "must provide a MEMORY ID"),
        (
            {"content": "x", "action": "create", "id": key},
            MemoryToolError,
            "cannot provide a MEMORY ID",
        ),
        (
            {"content": "x", "action": "update", "id": "has spaces in it"},
            MemoryToolError,
            "not a valid id",
        ),
        ({"action": "delete", "id": ""}, MemoryToolError, "must provide a MEMORY ID"),
        ({"action": "delete", "id": {"$ne": None}}, MemoryToolError, "not a valid id"),
        (
            {"content": "x", "action": "update", "id": "fact_00000000"},
            MemoryToolNotFoundError,
            "No MEMORY with id",
        ),
        (
            {"content": "x", "action": "update", "id": str(uuid.uuid4())},
            MemoryToolNotFoundError,
            "No MEMORY with id",
        ),
        ({"action": "create"}, MemoryToolError, "content is required"),
        ({"content": "x", "action": "archive"}, MemoryToolError, "Invalid action 'archive'"),
        ({"content": "x", "colour": "red"}, ValueError, "Extra inputs"),
    ]


def test_every_bad_call_raises_value_error_and_changes_nothing(any_store):
    tool = create_manage_memory_tool(store=any_store)
    key = created_id(tool.invoke({"content": "keep me"}, U123))
    before = snapshot(any_store)
    for args, error, match in _bad_calls(key):
        with pytest.raises(error, match=match):
            tool.invoke(args, U123)
        assert snapshot(any_store) == before, args


def test_bad_calls_from_a_tool_call_return_error_tool_messages(store):
    tool = create_manage_memory_tool(store=store)
    key = created_id(tool.invoke({"content": "keep me"}, U123))
    before = snapshot(store)
    for args, _, match in _bad_calls(key)[:-1]:  # the last is a schema error (see test_agents)
        msg = tool.invoke(
            {"type": "tool_call", "id": "c1", "name": "manage_memory", "args": args}, U123
        )
        assert isinstance(msg, ToolMessage) and msg.status == "error", args
        assert match in msg.content and "Nothing was changed" in msg.content
    assert snapshot(store) == before


class Profile(BaseModel):
    name: str
    age: int | None = None


def test_structured_schema_content_stored_as_json(store):
    tool = create_manage_memory_tool(schema=Profile, store=store)
    key = created_id(tool.invoke({"content": {"name": "Ada", "age": 36}}, U123))
    assert plain(store.get(("user", "u-123"), key).value) == {"content": {"name": "Ada", "age": 36}}
    # models often send the object as JSON text
    tool.invoke({"content": '{"name": "Ada", "age": 37}', "action": "update", "id": key}, U123)
    assert store.get(("user", "u-123"), key).value["content"]["age"] == 37


def test_non_json_content_rejected(store):
    tool = create_manage_memory_tool(schema=Profile, store=store)
    with pytest.raises(ValueError, match="not JSON"):
        tool.invoke({"content": "Ada, 36 years old"}, U123)
    nums = create_manage_memory_tool(schema=float, store=store)
    with pytest.raises(MemoryToolError, match="cannot be stored as JSON"):
        nums.invoke({"content": float("nan")}, U123)
    anything = create_manage_memory_tool(schema=object, store=store)
    with pytest.raises(MemoryToolError, match="cannot be stored as JSON"):
        anything.invoke({"content": object()}, U123)
    assert snapshot(store) == []


# -- configuration errors --------------------------------------------------------------


def test_no_store_outside_a_graph_says_so():
    tool = create_manage_memory_tool(("memories",))
    with pytest.raises(ConfigurationError, match="has no store: create it with store="):
        tool.invoke({"content": "x"})
    search = create_search_memory_tool(("memories",))
    with pytest.raises(ConfigurationError, match="search_memory has no store"):
        search.invoke({"query": "x"})


def test_missing_config_key_is_configuration_error_and_stores_nothing(store):
    tool = create_manage_memory_tool(("{user_id}", "memories"), store=store)
    with pytest.raises(
        ConfigurationError, match=r"missing key 'user_id'.*available keys: \['thread_id'\]"
    ):
        tool.invoke({"content": "x"}, {"configurable": {"thread_id": "t"}})
    with pytest.raises(ConfigurationError, match="has no user"):
        create_manage_memory_tool(store=store).invoke({"content": "x"})
    assert snapshot(store) == []


# -- search_memory ----------------------------------------------------------------------


def _seed(store) -> None:
    ns = ("user", "u-123")
    store.put(
        ns, "m1", {"content": "prefers dark mode in every editor", "category": "preference", "n": 3}
    )
    store.put(ns, "m2", {"content": "allergic to peanuts", "category": "health", "n": 9})
    store.put(ns, "m3", {"content": "likes dark chocolate", "category": "preference", "n": 5})
    store.put(("user", "u-12"), "x", {"content": "dark mode lover too", "category": "preference"})


def test_search_returns_json_list_of_items(any_store):
    _seed(any_store)
    tool = create_search_memory_tool(store=any_store)
    out = json.loads(tool.invoke({"query": "preference for dark mode", "limit": 10}, U123))
    assert out[0]["key"] == "m1"
    assert {m["key"] for m in out} == {"m1", "m2", "m3"}  # never u-12's item
    first = out[0]
    assert set(first) == {"namespace", "key", "value", "created_at", "updated_at", "score"}
    assert first["namespace"] == ["user", "u-123"] and first["value"]["category"] == "preference"


def test_search_is_hybrid_on_sqlite(store):
    _seed(store)
    tool = create_search_memory_tool(store=store, search_mode="keyword")
    out = json.loads(tool.invoke({"query": "peanuts"}, U123))
    assert [(m["key"], m["score"]) for m in out][:1] == [("m2", 1.0)]
    assert len(out) == 1  # keyword mode: matches only (the tool level)
    hybrid = json.loads(create_search_memory_tool(store=store).invoke({"query": "peanuts"}, U123))
    assert hybrid[0]["key"] == "m2" and all(m["score"] is not None for m in hybrid)


def test_search_filter_limit_offset(any_store):
    _seed(any_store)
    tool = create_search_memory_tool(store=any_store)
    out = json.loads(tool.invoke({"query": "dark", "filter": {"category": "preference"}}, U123))
    assert {m["key"] for m in out} == {"m1", "m3"}
    page1 = json.loads(tool.invoke({"query": "dark", "limit": 2}, U123))
    page2 = json.loads(tool.invoke({"query": "dark", "limit": 2, "offset": 2}, U123))
    assert len(page1) == 2 and len(page2) == 1
    assert {m["key"] for m in page1 + page2} == {"m1", "m2", "m3"}


def test_search_range_filter_on_sqlite(store):
    _seed(store)
    tool = create_search_memory_tool(store=store)
    out = json.loads(tool.invoke({"query": "x", "filter": {"n": {"$gt": 4}}}, U123))
    assert {m["key"] for m in out} == {"m2", "m3"}


def test_content_and_artifact(store):
    _seed(store)
    tool = create_search_memory_tool(store=store, response_format="content_and_artifact")
    msg = tool.invoke(
        {"type": "tool_call", "id": "c1", "name": "search_memory", "args": {"query": "peanuts"}},
        U123,
    )
    assert isinstance(msg, ToolMessage) and msg.status == "success"
    assert [m["key"] for m in json.loads(msg.content)] == [i.key for i in msg.artifact]
    assert msg.artifact[0].key == "m2" and msg.artifact[0].namespace == ("user", "u-123")


@pytest.mark.parametrize(
    "args, match",
    [
        (
            {"query": "x", "filter": {"n": {"$regex": "a"}}},
            "unknown filter operator '\\$regex'.*supported operators: \\$eq",
        ),
        ({"query": "x", "filter": {"n": {"$in": 3}}}, "needs a list"),
        ({"query": "x", "limit": 0}, "limit must be"),
        ({"query": "x", "offset": -1}, "offset must be"),
    ],
)
def test_bad_search_is_clear_error(store, args, match):
    _seed(store)
    before = snapshot(store)
    tool = create_search_memory_tool(store=store)
    with pytest.raises(MemoryToolError, match=match):
        tool.invoke(args, U123)
    msg = tool.invoke({"type": "tool_call", "id": "c", "name": "search_memory", "args": args}, U123)
    assert msg.status == "error"
    assert re.search(match, msg.content)
    assert snapshot(store) == before


# -- async --------------------------------------------------------------------------------


async def test_async_round_trip(any_store):
    manage = create_manage_memory_tool(store=any_store)
    search = create_search_memory_tool(store=any_store)
    key = created_id(await manage.ainvoke({"content": "plays the cello"}, U123))
    assert (
        await manage.ainvoke({"content": "plays the viola", "action": "update", "id": key}, U123)
        == f"updated memory {key}"
    )
    found = json.loads(await search.ainvoke({"query": "viola"}, U123))
    assert [m["value"]["content"] for m in found] == ["plays the viola"]
    with pytest.raises(MemoryToolNotFoundError):
        await manage.ainvoke({"content": "x", "action": "update", "id": str(uuid.uuid4())}, U123)
    msg = await manage.ainvoke(
        {"type": "tool_call", "id": "c", "name": "manage_memory", "args": {"action": "delete"}},
        U123,
    )
    assert msg.status == "error"
    assert await manage.ainvoke({"action": "delete", "id": key}, U123) == f"Deleted memory {key}"
    assert await any_store.aget(("user", "u-123"), key) is None


# -- OpenAI strict mode -----------------------------------------------------------------

_ALLOWED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "description",
    "title",
    "format",
    "$defs",
    "$ref",
    "pattern",
}
_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


def strict_violations(schema: dict, path: str = "$") -> list[str]:
    """OpenAI's strict-mode rules for function parameters: objects list every
    property as required and forbid additional ones, no free-form objects, no
    defaults, only supported keywords and formats."""
    out = []
    for key in schema:
        if key not in _ALLOWED:
            out.append(f"{path}: keyword {key!r} not supported")
    if schema.get("format") and schema["format"] not in _FORMATS:
        out.append(f"{path}: format {schema['format']!r}")
    if schema.get("type") == "object":
        props = schema.get("properties")
        if not props:
            out.append(f"{path}: free-form object")
        if schema.get("additionalProperties") is not False:
            out.append(f"{path}: additionalProperties must be false")
        if props and sorted(schema.get("required", [])) != sorted(props):
            out.append(f"{path}: not every property is required")
        for name, sub in (props or {}).items():
            out += strict_violations(sub, f"{path}.{name}")
    for i, sub in enumerate(schema.get("anyOf", [])):
        out += strict_violations(sub, f"{path}|{i}")
    if "items" in schema:
        out += strict_violations(schema["items"], f"{path}[]")
    for name, sub in schema.get("$defs", {}).items():
        out += strict_violations(sub, f"$defs.{name}")
    return out


@pytest.mark.parametrize("make", [create_manage_memory_tool, create_search_memory_tool])
def test_strict_schemas_follow_openai_rules(make):
    tool = make(strict=True)
    spec = convert_to_openai_tool(tool, strict=True)["function"]
    assert spec["strict"] is True
    params = spec["parameters"]
    assert params["type"] == "object"
    assert strict_violations(params) == []


def test_default_search_schema_is_not_strict_compatible():
    # the check above is not vacuous: LangMem's shape (free-form filter dict) fails it
    params = convert_to_openai_tool(create_search_memory_tool(), strict=True)["function"][
        "parameters"
    ]
    assert any("free-form" in v or "default" in v for v in strict_violations(params))


def test_strict_tools_accept_nulls_and_filter_conditions(store):
    _seed(store)
    manage = create_manage_memory_tool(store=store, strict=True)
    key = created_id(manage.invoke({"content": "x", "action": "create", "id": None}, U123))
    assert (
        manage.invoke({"content": None, "action": "delete", "id": key}, U123)
        == f"Deleted memory {key}"
    )
    search = create_search_memory_tool(store=store, strict=True)
    args = {
        "query": "dark",
        "limit": None,
        "offset": None,
        "filter": [
            {"field": "category", "op": "$eq", "value": "preference"},
            {"field": "n", "op": "$gte", "value": 4},
        ],
    }
    assert [m["key"] for m in json.loads(search.invoke(args, U123))] == ["m3"]
    with pytest.raises(ValueError):
        search.invoke({**args, "filter": [{"field": "n", "op": "$regex", "value": "a"}]}, U123)
