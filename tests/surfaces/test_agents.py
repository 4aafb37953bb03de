"""The tools inside real agents: LangGraph's create_react_agent and LangChain's
create_agent, with SQLiteStore and a checkpointer, driven by a scripted model."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from langmem_ext.errors import ConfigurationError
from langmem_ext.langmem.tools import create_manage_memory_tool, create_search_memory_tool

from .conftest import memories, plain, snapshot
from .scripted import ScriptedChatModel, call, last_tool_result, say

AGENTS = {
    "create_react_agent": lambda model, tools, store, **kw: create_react_agent(
        model, tools, store=store, checkpointer=InMemorySaver(), **kw
    ),
    "create_agent": lambda model, tools, store, **kw: create_agent(
        model, tools, store=store, checkpointer=InMemorySaver(), **kw
    ),
}


def run(agent, text: str, thread: str, user: str | None = None, **kw) -> list[BaseMessage]:
    configurable = {"thread_id": thread} | ({"user_id": user} if user else {})
    out = agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": configurable}, **kw)
    return out["messages"]


def transcript(label: str, messages: list[BaseMessage]) -> str:
    lines = [f"== {label}"]
    for m in messages:
        if isinstance(m, HumanMessage):
            lines.append(f"  user : {m.content}")
        elif isinstance(m, AIMessage) and m.tool_calls:
            for tc in m.tool_calls:
                lines.append(f"  model: -> {tc['name']}({json.dumps(tc['args'])})")
        elif isinstance(m, AIMessage):
            lines.append(f"  model: {m.content}")
        elif isinstance(m, ToolMessage):
            lines.append(f"  tool : {m.name} [{m.status}] {m.content}")
    return "\n".join(lines)


def answer_from_search(messages: list[BaseMessage]) -> AIMessage:
    found = json.loads(last_tool_result(messages).content)
    if not found:
        return say("I don't know your favourite colour yet.")
    return say(f"You told me: {found[0]['value']['content']}")


@pytest.mark.parametrize("kind", list(AGENTS))
def test_memories_follow_the_user_across_threads_never_to_other_users(kind, store, capsys):
    model = ScriptedChatModel(
        script=[
            call("manage_memory", content="My favourite colour is teal", action="create"),
            say("Noted, I'll remember that."),
            call("search_memory", query="favourite colour"),
            answer_from_search,
            call("search_memory", query="favourite colour"),
            answer_from_search,
        ]
    )
    tools = [create_manage_memory_tool(), create_search_memory_tool()]
    agent = AGENTS[kind](model, tools, store)

    t1 = run(agent, "Remember: my favourite colour is teal.", "thread-1", "user-A")
    t2 = run(agent, "What is my favourite colour?", "thread-2", "user-A")
    t3 = run(agent, "What is my favourite colour?", "thread-3", "user-B")

    assert t1[2].status == "success" and t1[2].content.startswith("created memory ")
    key = t1[2].content.removeprefix("created memory ")
    assert [i[:2] for i in memories(store)] == [(("user", "user-A"), key)]
    found = json.loads(t2[2].content)
    assert [(m["namespace"], m["key"]) for m in found] == [(["user", "user-A"], key)]
    assert t2[-1].content == "You told me: My favourite colour is teal"
    assert json.loads(t3[2].content) == []
    assert t3[-1].content == "I don't know your favourite colour yet."
    # thread 2 did not see thread 1's conversation, only the stored memory
    assert all("teal" not in str(m.content) for m in model.seen[2])
    with capsys.disabled():
        print(f"\n--- transcript ({kind}) ---")
        for label, msgs in [
            ("thread-1, user-A", t1),
            ("thread-2, user-A", t2),
            ("thread-3, user-B", t3),
        ]:
            print(transcript(label, msgs))


@pytest.mark.parametrize("kind", list(AGENTS))
def test_model_mistakes_come_back_as_error_tool_messages(kind, store):
    tools = [
        create_manage_memory_tool(actions_permitted=("create", "update")),
        create_search_memory_tool(),
    ]
    model = ScriptedChatModel(
        script=[
            call("manage_memory", content="likes jazz", action="create"),
            call("manage_memory", content="likes blues", action="update"),  # no id
            call("manage_memory", content="likes blues", action="update", id="jazz memory"),
            call(
                "manage_memory",
                content="likes blues",
                action="update",
                id="00000000-0000-4000-8000-000000000000",
            ),
            call("manage_memory", action="delete", id="00000000-0000-4000-8000-000000000000"),
            call("manage_memory", content="likes blues", mood="happy"),  # not in the schema
            call("search_memory", query="music", filter={"genre": {"$like": "j%"}}),
            lambda msgs: call(
                "manage_memory", content="likes blues", action="update", id=_created(msgs)
            ),
            say("Updated."),
        ]
    )
    agent = AGENTS[kind](model, tools, store)
    messages = run(agent, "I like blues now, not jazz.", "t", "u-1")
    results = [m for m in messages if isinstance(m, ToolMessage)]
    statuses = [m.status for m in results]
    assert statuses == ["success"] + ["error"] * 6 + ["success"]
    errors = [m.content for m in results[1:7]]
    assert "must provide a MEMORY ID" in errors[0]
    assert "not a valid id" in errors[1]
    assert "No MEMORY with id" in errors[2]
    assert "Invalid action 'delete'. Must be one of 'create', 'update'" in errors[3]
    assert "mood" in errors[4]
    assert "unknown filter operator '$like'" in errors[5] and "$contains" in errors[5]
    # every error was shown to the model, which then fixed its call
    assert isinstance(model.seen[-1][-1], ToolMessage) and model.seen[-1][-1].status == "success"
    assert [plain(i[2]) for i in memories(store)] == [{"content": "likes blues"}]


def _created(messages: list[BaseMessage]) -> str:
    first = next(
        m for m in messages if isinstance(m, ToolMessage) and m.content.startswith("created")
    )
    return first.content.removeprefix("created memory ")


@dataclasses.dataclass
class Ctx:
    user_id: str


def test_identity_from_runtime_context_in_create_agent(store):
    model = ScriptedChatModel(script=[call("manage_memory", content="vegan"), say("ok")])
    agent = create_agent(model, [create_manage_memory_tool()], store=store, context_schema=Ctx)
    agent.invoke({"messages": [HumanMessage("I'm vegan")]}, context=Ctx(user_id="u-123"))
    rows = [(i[0], plain(i[2])) for i in memories(store)]
    assert rows == [(("user", "u-123"), {"content": "vegan"})]


@pytest.mark.parametrize("kind", list(AGENTS))
def test_missing_config_key_is_a_model_readable_error(kind, store):
    model = ScriptedChatModel(script=[call("manage_memory", content="x"), say("ok")])
    tool = create_manage_memory_tool(("{user_id}", "memories"))
    agent = AGENTS[kind](model, [tool], store)
    messages = run(agent, "hi", "t")
    err = next(m for m in messages if isinstance(m, ToolMessage))
    assert err.status == "error"
    assert re.search(r"missing key 'user_id'.*available keys: \['thread_id'\]", err.content)
    assert "Memory is unavailable" in err.content
    assert snapshot(store) == []
    # a direct call (no tool call id) still raises the typed error
    direct = create_manage_memory_tool(("{user_id}", "memories"), store=store)
    with pytest.raises(ConfigurationError, match="missing key 'user_id'"):
        direct.invoke({"content": "x"}, {"configurable": {"thread_id": "t"}})


def test_graph_without_store_says_so():
    model = ScriptedChatModel(script=[call("search_memory", query="x"), say("ok")])
    agent = create_react_agent(model, [create_search_memory_tool()])
    out = agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"user_id": "u"}})
    err = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert err.status == "error" and "has no store" in err.content
    with pytest.raises(ConfigurationError, match="has no store"):
        create_search_memory_tool().invoke({"query": "x"})


@pytest.mark.parametrize("kind", list(AGENTS))
async def test_async_agent_round_trip(kind, store):
    model = ScriptedChatModel(
        script=[
            call("manage_memory", content="lives in Lyon"),
            say("ok"),
            call("search_memory", query="where does the user live"),
            answer_from_search,
        ]
    )
    agent = AGENTS[kind](model, [create_manage_memory_tool(), create_search_memory_tool()], store)
    await agent.ainvoke(
        {"messages": [HumanMessage("I live in Lyon")]},
        {"configurable": {"thread_id": "a", "user_id": "u"}},
    )
    out = await agent.ainvoke(
        {"messages": [HumanMessage("Where do I live?")]},
        {"configurable": {"thread_id": "b", "user_id": "u"}},
    )
    assert out["messages"][-1].content == "You told me: lives in Lyon"


def test_langmem_style_template_with_inmemory_store():
    from .conftest import memory_store

    store = memory_store()
    ns = ("memories", "{langgraph_user_id}")
    model = ScriptedChatModel(
        script=[
            call("manage_memory", content="tea"),
            say("ok"),
            call("search_memory", query="tea"),
            answer_from_search,
        ]
    )
    agent = create_react_agent(
        model,
        [create_manage_memory_tool(ns), create_search_memory_tool(ns)],
        store=store,
        checkpointer=InMemorySaver(),
    )
    cfg = {
        "configurable": {
            "thread_id": "1",
            "langgraph_user_id": "123e4567-e89b-12d3-a456-426614174000",
        }
    }
    agent.invoke({"messages": [HumanMessage("I like tea")]}, cfg)
    out = agent.invoke(
        {"messages": [HumanMessage("what do I like?")]},
        {"configurable": {**cfg["configurable"], "thread_id": "2"}},
    )
    assert out["messages"][-1].content == "You told me: tea"
    [item] = store.search(("memories", "123e4567-e89b-12d3-a456-426614174000"))
    assert plain(item.value) == {"content": "tea"}
