"""The seed 003 tool set over the engine, derived from the operation catalogue:
names, arguments, results, and errors a model can read (also through
LangGraph's ToolNode)."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from langmem_ext.agents.tools import MEMORY_TOOL_NAMES, create_memory_tools
from langmem_ext.engine import MemoryContext
from langmem_ext.errors import MemoryNotFoundError

CONFIG = {"configurable": {"memory_context": MemoryContext("acme", user_id="ada")}}


@pytest.fixture(params=["sync", "async"])
def call(request, engine):
    tools = {t.name: t for t in create_memory_tools(engine)}

    def invoke(name: str, **args):
        # As a ToolNode calls it: errors come back as error messages.
        call = {"type": "tool_call", "id": "c1", "name": name, "args": args}
        if request.param == "sync":
            msg = tools[name].invoke(call, CONFIG)
        else:
            msg = asyncio.run(tools[name].ainvoke(call, CONFIG))
        return msg.content

    return invoke


def test_tool_names_and_arguments(engine):
    tools = {t.name: t for t in create_memory_tools(engine)}
    assert tuple(tools) == MEMORY_TOOL_NAMES
    args = {n: list(t.tool_call_schema["properties"]) for n, t in tools.items()}
    assert args["memory_store_episode"][:3] == ["content", "session_id", "importance"]
    assert args["memory_store_fact"][:5] == [
        "subject",
        "predicate",
        "content",
        "importance",
        "permanence",
    ]
    assert args["memory_search"][:6] == [
        "query",
        "types",
        "scope",
        "mode",
        "limit",
        "min_confidence",
    ]
    assert args["memory_recall"][:3] == ["query", "scope", "limit"]
    assert args["memory_get"][:2] == ["type", "id"]
    assert args["memory_mark_harmful"][:2] == ["id", "reason"]
    assert args["memory_context"] == ["query", "scope", "token_budget", "as_of", "valid_during"]
    assert all("config" not in a and "tenant_id" not in a for a in args.values())
    admin = {t.name: t for t in create_memory_tools(engine, admin=True)}
    assert "tenant_id" in admin["memory_search"].tool_call_schema["properties"]


def test_store_tools_return_ids_and_search_get_recall(call, engine):
    ep = call("memory_store_episode", content="User asked about recipes")
    fact = call(
        "memory_store_fact",
        subject="user",
        predicate="name",
        content="John",
        permanence="permanent",
    )
    rule = call(
        "memory_store_rule", content="Always confirm before sending messages", scope="global"
    )
    got = json.loads(call("memory_get", type="fact", id=fact))
    assert (got["decay_rate"], got["reference_count"]) == (0.0, 1)
    assert json.loads(call("memory_get", type="episode", id=ep))["importance"] == 5.0
    r = json.loads(call("memory_get", type="rule", id=rule))
    assert (r["maturity"], r["confidence"]) == ("candidate", 0.5)
    hits = json.loads(call("memory_search", query="John", types=["fact"]))
    assert [h["id"] for h in hits] == [fact] and hits[0]["type"] == "fact"
    assert (
        json.loads(call("memory_recall", query="confirm sending messages", types=["rule"]))[0]["id"]
        == rule
    )


def test_lifecycle_tools(call):
    old = call("memory_store_fact", subject="user", predicate="favorite_color", content="blue")
    new = call("memory_store_fact", subject="user", predicate="favorite_color", content="green")
    assert json.loads(call("memory_get", type="fact", id=old))["superseded_by"] == new
    confirmed = json.loads(call("memory_confirm", type="fact", id=new))
    assert confirmed["effective_confidence"] == confirmed["confidence"]
    rule = call("memory_store_rule", content="Be brief")
    assert json.loads(call("memory_mark_helpful", id=rule))["success_count"] == 1
    harmed = json.loads(call("memory_mark_harmful", id=rule, reason="too terse"))
    assert harmed["harmful_count"] == 1 and harmed["applied_count"] == 2
    assert json.loads(call("memory_forget", type="fact", id=new))["validity"] == "retracted"
    recalled = json.loads(call("memory_recall", query="favorite color green"))
    assert {h["id"] for h in recalled}.isdisjoint({old, new})
    stats = json.loads(call("memory_stats"))
    assert stats["facts"]["retracted"] == 1 and stats["rules"]["total"] == 1


def test_errors_are_readable_by_the_model(call, engine):
    assert call("memory_get", type="fact", id="nope").startswith("MEMORY_NOT_FOUND: ")
    ep = call("memory_store_episode", content="hi")
    assert call("memory_confirm", type="episode", id=ep).startswith("INVALID_OPERATION: ")
    assert call("memory_store_rule", content="x", tenant_id="globex").startswith(
        "TENANT_FORBIDDEN: "
    )
    assert call("memory_store_episode", content="x" * 10_001).startswith("CONTENT_TOO_LONG: ")
    assert call("memory_store_fact", subject="u", predicate="p", content="x", importance=11) == (
        "INVALID_VALUE: importance must be a number from 0 to 10, got 11. Nothing was changed; "
        "fix the arguments and call memory_store_fact again."
    )
    assert call("memory_search", query="x", types=["memo"]).startswith(
        "INVALID_MEMORY_TYPE: unknown memory type 'memo'; use one of note, fact, episode, rule"
    )
    admin = {t.name: t for t in create_memory_tools(engine, admin=True)}
    out = admin["memory_stats"].invoke(
        {"type": "tool_call", "id": "c", "name": "memory_stats", "args": {"tenant_id": "globex"}},
        CONFIG,
    )
    assert out.status == "error" and out.content.startswith("TENANT_FORBIDDEN: ")


def test_tool_node_reports_errors_as_tool_messages(engine):
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(create_memory_tools(engine)))
    graph.add_edge(START, "tools")
    node = graph.compile()
    msg = AIMessage(
        "", tool_calls=[{"name": "memory_get", "args": {"type": "fact", "id": "nope"}, "id": "c1"}]
    )
    out = node.invoke({"messages": [msg]}, CONFIG)["messages"][-1]
    assert out.status == "error" and out.content.startswith("MEMORY_NOT_FOUND")


def test_tools_use_langgraph_auth_user(engine):
    tools = {t.name: t for t in create_memory_tools(engine)}
    cfg = {"configurable": {"langgraph_auth_user": {"identity": "bob", "tenant_id": "globex"}}}
    fid = tools["memory_store_fact"].invoke(
        {"subject": "user", "predicate": "name", "content": "Bob"}, cfg
    )
    assert engine.get(cfg, fid).tenant_id == "globex"
    with pytest.raises(MemoryNotFoundError):  # a direct call raises
        tools["memory_get"].invoke({"type": "fact", "id": fid}, CONFIG)
