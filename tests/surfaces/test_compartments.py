"""Run / session / plan compartments (seed 002): tools, limits, prompt hooks, sharing."""

from __future__ import annotations

import json

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from langmem_ext import Compartments
from langmem_ext.errors import CompartmentFullError, ConfigurationError

from .conftest import snapshot
from .scripted import ScriptedChatModel, call, last_tool_result, say

#: Where compartments live for a caller without a user (only a thread id).
ANON = ("_meta", "_anonymous", "compartments")

T1 = {"configurable": {"thread_id": "t1"}}


def tools_of(c: Compartments):
    return {t.name: t for t in c.tools}


def saved_id(result: str) -> str:
    return result.split()[2]


def test_save_get_clear_with_entry_fields(any_store):
    c = Compartments(store=any_store)
    t = tools_of(c)
    out = t["save_memory"].invoke(
        {
            "compartment": "session",
            "content": "prefers metric units",
            "category": "preference",
            "tags": ["units"],
            "metadata": {"source": "chat"},
            "priority": 8,
        },
        T1,
    )
    assert out.startswith("saved memory ") and out.endswith(
        "in session (20/10,000 characters used)"
    )
    eid = saved_id(out)
    got = json.loads(t["get_memory"].invoke({"compartment": "session"}, T1))
    assert len(got) == 1
    e = got[0]
    assert (e["id"], e["content"], e["category"], e["tags"], e["metadata"], e["priority"]) == (
        eid,
        "prefers metric units",
        "preference",
        ["units"],
        {"source": "chat"},
        8,
    )
    assert e["created_at"] and e["created_at"] == e["updated_at"]
    assert e["access_count"] == 1  # this read counted
    again = json.loads(t["get_memory"].invoke({"compartment": "session", "id": eid}, T1))
    assert again[0]["access_count"] == 2
    # entries live in the BaseStore itself, under the compartment's namespace
    assert [i[:2] for i in snapshot(any_store)] == [((*ANON, "session", "t1"), eid)]
    assert (
        t["clear_memory"].invoke({"compartment": "session"}, T1) == "cleared 1 entries from session"
    )
    assert snapshot(any_store) == []


def test_select_by_id_category_tags_and_overwrite(store):
    t = tools_of(Compartments(store=store))
    a = saved_id(
        t["save_memory"].invoke(
            {
                "compartment": "plan",
                "content": "step 1: gather",
                "category": "step",
                "tags": ["todo"],
            },
            T1,
        )
    )
    b = saved_id(
        t["save_memory"].invoke(
            {
                "compartment": "plan",
                "content": "step 2: write",
                "category": "step",
                "tags": ["later"],
            },
            T1,
        )
    )
    saved_id(
        t["save_memory"].invoke(
            {"compartment": "plan", "content": "goal: report", "category": "goal"}, T1
        )
    )

    def ids(**sel):
        return [
            e["id"] for e in json.loads(t["get_memory"].invoke({"compartment": "plan", **sel}, T1))
        ]

    assert ids(category="step") == [a, b]
    assert ids(tags=["later", "nope"]) == [b]
    assert ids(id=a) == [a]
    assert ids(category="goal", tags=["todo"]) == []
    t["save_memory"].invoke(
        {"compartment": "plan", "content": "step 1: done", "id": a, "category": "step"}, T1
    )
    entry = json.loads(t["get_memory"].invoke({"compartment": "plan", "id": a}, T1))[0]
    assert entry["content"] == "step 1: done" and entry["updated_at"] > entry["created_at"]
    assert (
        t["clear_memory"].invoke({"compartment": "plan", "tags": ["later"]}, T1)
        == "cleared 1 entries from plan"
    )
    assert (
        t["clear_memory"].invoke({"compartment": "plan", "id": "nope"}, T1)
        == "cleared 0 entries from plan"
    )
    assert ids() == [a, ids(category="goal")[0]]


def test_size_limit_default_and_error_lists_entries_to_delete(store):
    c = Compartments(store=store)
    assert c.limits == {"run": 10_000, "session": 10_000, "plan": 10_000}
    t = tools_of(c)
    low = saved_id(
        t["save_memory"].invoke(
            {"compartment": "session", "content": "a" * 6000, "priority": 2}, T1
        )
    )
    high = saved_id(
        t["save_memory"].invoke(
            {"compartment": "session", "content": "b" * 3000, "priority": 9}, T1
        )
    )
    before = snapshot(store)
    with pytest.raises(CompartmentFullError) as e:
        t["save_memory"].invoke({"compartment": "session", "content": "c" * 1500}, T1)
    msg = str(e.value)
    assert "holds 9,000 of 10,000 characters and this entry needs 1,500" in msg
    assert "clear_memory(compartment='session', id=...)" in msg
    assert msg.index(low) < msg.index(high)  # least important first
    assert snapshot(store) == before
    # through a tool call the model reads the same advice
    m = t["save_memory"].invoke(
        {
            "type": "tool_call",
            "id": "c",
            "name": "save_memory",
            "args": {"compartment": "session", "content": "c" * 1500},
        },
        T1,
    )
    assert m.status == "error" and f"id={low}" in m.content
    with pytest.raises(CompartmentFullError, match="more than the session compartment's limit"):
        t["save_memory"].invoke({"compartment": "session", "content": "d" * 10_001}, T1)
    # other compartments have their own budget; deleting makes room
    t["save_memory"].invoke({"compartment": "plan", "content": "c" * 1500}, T1)
    t["clear_memory"].invoke({"compartment": "session", "id": low}, T1)
    t["save_memory"].invoke({"compartment": "session", "content": "c" * 1500}, T1)


@pytest.mark.parametrize(
    "name, args, error, match",
    [
        (
            "save_memory",
            {"compartment": "global", "content": "x"},
            ValueError,
            "'run', 'session' or 'plan'",
        ),
        (
            "save_memory",
            {"compartment": "run", "content": "x", "priority": 11},
            ValueError,
            "less than or equal to 10",
        ),
        ("save_memory", {"compartment": "run", "content": "  "}, ValueError, "content is empty"),
        (
            "save_memory",
            {"compartment": "run", "content": "x", "id": "nope"},
            ValueError,
            "no entry 'nope'",
        ),
        ("get_memory", {"compartment": "run", "id": "nope"}, ValueError, "no entry 'nope'"),
        ("clear_memory", {"compartment": "run", "colour": "x"}, ValueError, "Extra inputs"),
    ],
)
def test_bad_input_is_clear_and_changes_nothing(store, name, args, error, match):
    t = tools_of(Compartments(store=store))
    t["save_memory"].invoke({"compartment": "run", "content": "keep"}, T1)
    before = snapshot(store)
    with pytest.raises(error, match=match):
        t[name].invoke(args, T1)
    assert snapshot(store) == before


def test_missing_thread_or_session_is_configuration_error(store):
    t = tools_of(Compartments(store=store))
    for comp in ("run", "session", "plan"):
        with pytest.raises(ConfigurationError, match="thread_id"):
            t["save_memory"].invoke({"compartment": comp, "content": "x"}, {"configurable": {}})


def test_session_shared_by_session_id_across_threads(store):
    t = tools_of(Compartments(store=store))
    s1 = {"configurable": {"thread_id": "a", "session_id": "s-1"}}
    t["save_memory"].invoke({"compartment": "session", "content": "budget is 500 EUR"}, s1)
    same = {"configurable": {"thread_id": "b", "session_id": "s-1"}}
    other = {"configurable": {"thread_id": "c", "session_id": "s-2"}}
    assert [
        e["content"] for e in json.loads(t["get_memory"].invoke({"compartment": "session"}, same))
    ] == ["budget is 500 EUR"]
    assert json.loads(t["get_memory"].invoke({"compartment": "session"}, other)) == []


def test_plan_scope_run_clears_with_the_run(store):
    c = Compartments(store=store, plan_scope="run")
    assert c.scope("plan", T1) == (*ANON, "plan", "t1")
    tools_of(c)["save_memory"].invoke({"compartment": "plan", "content": "1. a"}, T1)
    c.post_model_hook({"messages": [say("done")]}, T1)
    assert snapshot(store) == []


# -- run memory in real agents ----------------------------------------------------------


def _run_script():
    return [
        call("save_memory", compartment="run", content="intermediate total is 42", category="calc"),
        call("save_memory", compartment="session", content="user prefers EUR"),
        call("get_memory", compartment="session"),
        say("The total is 42 EUR."),
    ]


def _blocks(seen) -> list[str | None]:
    out = []
    for messages in seen:
        text = "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        out.append(text if "## Run memory" in text else None)
    return out


def _check_run(model, store, messages):
    blocks = _blocks(model.seen)
    assert blocks[0] is None  # nothing saved yet
    assert all(b and "intermediate total is 42" in b and "[calc]" in b for b in blocks[1:])
    assert len(blocks) == 4
    assert isinstance(messages[-2], ToolMessage) and "user prefers EUR" in messages[-2].content
    # the run ended: run memory cleared, session memory kept
    assert [i[0][len(ANON)] for i in snapshot(store)] == ["session"]


def test_react_agent_shows_run_memory_every_call_and_clears_it(store):
    c = Compartments()
    model = ScriptedChatModel(script=_run_script())
    agent = create_react_agent(
        model,
        c.tools,
        store=store,
        checkpointer=InMemorySaver(),
        prompt="You are helpful.",
        pre_model_hook=c.pre_model_hook,
        post_model_hook=c.post_model_hook,
    )
    out = agent.invoke({"messages": [HumanMessage("add it up")]}, T1)
    _check_run(model, store, out["messages"])
    assert model.seen[1][0].content == "You are helpful."  # the prompt still leads


def test_create_agent_middleware_in_one_line(store):
    model = ScriptedChatModel(script=_run_script())
    agent = create_agent(
        model,
        system_prompt="You are helpful.",
        store=store,
        checkpointer=InMemorySaver(),
        middleware=[Compartments().middleware()],
    )
    out = agent.invoke({"messages": [HumanMessage("add it up")]}, T1)
    _check_run(model, store, out["messages"])
    assert model.seen[1][0].content.startswith("You are helpful.\n\n## Run memory")


async def test_create_agent_middleware_async(store):
    model = ScriptedChatModel(script=_run_script())
    agent = create_agent(
        model, store=store, checkpointer=InMemorySaver(), middleware=[Compartments().middleware()]
    )
    out = await agent.ainvoke({"messages": [HumanMessage("add it up")]}, T1)
    _check_run(model, store, out["messages"])


def test_stale_run_memory_cleared_when_next_run_starts(store):
    c = Compartments(store=store)
    tools_of(c)["save_memory"].invoke({"compartment": "run", "content": "left over"}, T1)
    model = ScriptedChatModel(script=[say("hi")])
    agent = create_react_agent(
        model,
        c.tools,
        store=store,
        pre_model_hook=c.pre_model_hook,
        post_model_hook=c.post_model_hook,
    )
    agent.invoke({"messages": [HumanMessage("hello")]}, T1)
    assert _blocks(model.seen) == [None] and snapshot(store) == []


def test_sub_agent_shares_session_not_run_memory(store):
    c = Compartments()
    child_model = ScriptedChatModel(
        script=[
            call("get_memory", compartment="session"),
            call("get_memory", compartment="run"),
            call("save_memory", compartment="run", content="child scratch"),
            lambda msgs: say(f"session={last_tool_result(msgs[:-2]).content}"),
        ]
    )
    child = create_react_agent(
        child_model,
        c.tools,
        pre_model_hook=c.pre_model_hook,
        post_model_hook=c.post_model_hook,
        name="child",
    )

    @tool
    def ask_child(question: str) -> str:
        """Ask the sub-agent."""
        return child.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content

    parent_model = ScriptedChatModel(
        script=[
            call("save_memory", compartment="session", content="the user is Ada"),
            call("save_memory", compartment="run", content="parent scratch"),
            call("ask_child", question="who is the user?"),
            say("done"),
        ]
    )
    parent = create_react_agent(
        parent_model,
        [*c.tools, ask_child],
        store=store,
        checkpointer=InMemorySaver(),
        pre_model_hook=c.pre_model_hook,
        post_model_hook=c.post_model_hook,
    )
    parent.invoke({"messages": [HumanMessage("go")]}, T1)
    child_results = [m for m in child_model.seen[-1] if isinstance(m, ToolMessage)]
    session_seen = json.loads(child_results[0].content)
    assert [e["content"] for e in session_seen] == ["the user is Ada"]
    assert json.loads(child_results[1].content) == []  # the parent's run memory is not the child's
    # the child's run ended (its memory cleared) but the parent's run memory survived it
    assert "parent scratch" in _blocks(parent_model.seen)[3]
    assert "child scratch" not in _blocks(parent_model.seen)[3]
    assert [i[2]["content"] for i in snapshot(store)] == ["the user is Ada"]
