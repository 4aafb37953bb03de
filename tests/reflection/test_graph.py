"""Reflection inside real graphs: a StateGraph with an agent node and the
reflection node (checkpointer, our store), and LangChain's create_agent with
the middleware; scripted chat models, two users, several turns."""

from __future__ import annotations

import asyncio
import re

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langmem_ext.agents import MemoryPrompt
from langmem_ext.agents.reflection import ReflectionExecutor
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.surfaces.scripted import ScriptedChatModel

# What a model would extract from each user sentence (rule-based stand-in).
KNOWN = {
    "I live in Berlin": ("Lives in Berlin", "context", 0.9, "user", "home_city"),
    "I'm vegetarian": ("Is vegetarian", "preference", 0.95, None, None),
    "I love jazz": ("Loves jazz", "preference", 0.9, None, None),
    "maybe I like opera": ("Might like opera", "preference", 0.3, None, None),
}


def extract(messages: list[BaseMessage]) -> list[dict]:
    """The extraction model: facts for the user lines of the conversation; a
    move corrects the known home city through ``replaces``."""
    system, convo = messages[0].content, messages[1].content
    facts = []
    for line in convo.splitlines():
        if not line.startswith("user: "):
            continue
        said = line[len("user: ") :]
        for sentence, (content, cat, conf, subj, pred) in KNOWN.items():
            if sentence in said:
                fact = {"content": content, "category": cat, "confidence": conf}
                facts.append(fact | ({"subject": subj, "predicate": pred} if subj else {}))
        if "moved to Munich" in said:
            old = re.search(r"id=(fact_[0-9a-f]{8}) \[context \| [0-9.]+\] Lives in Berlin", system)
            facts.append(
                {
                    "content": "Lives in Munich",
                    "category": "correction",
                    "confidence": 0.95,
                    "replaces": old.group(1) if old else None,
                }
            )
    return facts


def build_graph(store, agent_model, executor, prompt):
    def agent(state: MessagesState, config) -> dict:
        block = prompt.render(config)
        system = [SystemMessage(block)] if block else []
        return {"messages": [agent_model.invoke(system + state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("reflect", executor.as_node())
    g.add_edge(START, "agent")
    g.add_edge("agent", "reflect")
    g.add_edge("reflect", END)
    return g.compile(checkpointer=InMemorySaver(), store=store)


def test_agent_and_reflection_node_over_turns_and_users(store, capsys):
    extractor = ScriptedExtractionModel([extract] * 6)
    agent_model = ScriptedChatModel(script=[AIMessage(f"reply {i}") for i in range(6)])
    executor = ReflectionExecutor(extractor, delay=0, default_tenant="local")
    prompt = MemoryPrompt(default_tenant="local")
    graph = build_graph(store, agent_model, executor, prompt)
    turns = [
        ("ada", "t1", "Hi! I live in Berlin and I'm vegetarian."),
        ("bob", "t2", "I love jazz, and maybe I like opera."),
        ("ada", "t1", "What's a good dinner?"),
        ("ada", "t3", "News: I moved to Munich last month."),
        ("ada", "t3", "Any restaurant tips?"),
        ("bob", "t2", "Thanks!"),
    ]
    log = ["--- transcript (StateGraph: agent -> reflect) ---"]
    for user, thread, text in turns:
        config = {"configurable": {"user_id": user, "thread_id": thread}}
        graph.invoke({"messages": [HumanMessage(text)]}, config)
        assert executor.flush(timeout=30)
        seen = agent_model.seen[-1]
        block = seen[0].content if isinstance(seen[0], SystemMessage) else "(no memory yet)"
        log += [f"== {user} / {thread}: {text}", "  context given to the agent:"]
        log += [f"    {line}" for line in block.splitlines()]
    executor.shutdown()

    engine = MemoryEngine(store)
    ada, bob = MemoryContext("local", user_id="ada"), MemoryContext("local", user_id="bob")
    ada_facts = {f.content: f for f in engine.get_profile(ada).facts}
    assert set(ada_facts) == {"Lives in Munich", "Is vegetarian"}
    assert [f.content for f in engine.get_profile(bob).facts] == ["Loves jazz"]
    # the move superseded Berlin, through the id the model was shown
    berlin = [r for r in executor.results if r.superseded]
    assert len(berlin) == 1
    old = engine.get(ada, berlin[0].superseded[0])
    assert old.content == "Lives in Berlin" and old.validity == "superseded"
    assert old.superseded_by == ada_facts["Lives in Munich"].id
    # the opera guess was under the threshold
    assert any(s.reason == "low_confidence" for r in executor.results for s in r.skipped)
    # provenance: thread and message ids from the checkpointed state
    munich = ada_facts["Lives in Munich"]
    assert munich.provenance["thread_id"] == "t3" and munich.provenance["message_ids"]
    # the context block of ada's last turn: current facts only, and none of bob's
    last_ada = agent_model.seen[4][0].content
    assert "Lives in Munich" in last_ada and "Is vegetarian" in last_ada
    assert "Berlin" not in last_ada and "jazz" not in last_ada
    assert "Berlin" not in agent_model.seen[5][0].content
    # model calls: one agent call and one extraction call per turn
    assert agent_model.seen and len(agent_model.seen) == 6
    assert extractor.calls == 6 and sum(r.model_calls for r in executor.results) == 6
    log += [
        "--- facts ---",
        *(
            f"  ada: [{f.category} | {f.confidence:.2f}] {f.content} ({f.id})"
            for f in ada_facts.values()
        ),
        f"  bob: {[f.content for f in engine.get_profile(bob).facts]}",
        f"  superseded: {old.content} ({old.id}) -> {old.superseded_by}",
        f"--- model calls: agent {len(agent_model.seen)}, extraction {extractor.calls} ---",
    ]
    with capsys.disabled():
        print("\n" + "\n".join(log))


def test_create_agent_with_reflection_and_memory_middleware_async(store):
    extractor = ScriptedExtractionModel([extract] * 3)
    agent_model = ScriptedChatModel(script=[AIMessage(f"reply {i}") for i in range(3)])
    executor = ReflectionExecutor(extractor, delay=0, default_tenant="local")
    agent = create_agent(
        agent_model,
        [],
        system_prompt="Be brief.",
        store=store,
        checkpointer=InMemorySaver(),
        middleware=[MemoryPrompt(default_tenant="local").middleware(), executor.middleware()],
    )

    async def main():
        for user, thread, text in [
            ("ada", "a1", "I live in Berlin"),
            ("bob", "b1", "I love jazz"),
            ("ada", "a2", "Where should I eat?"),
        ]:
            config = {"configurable": {"user_id": user, "thread_id": thread}}
            await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
            await executor.aflush()
        await executor.ashutdown()

    asyncio.run(main())
    # ada's new thread sees what her first thread taught, and nothing of bob's
    system = agent_model.seen[2][0].content
    assert system.startswith("Be brief.\n\nWhat you remember about the user:")
    assert "Lives in Berlin" in system and "jazz" not in system
    assert "Berlin" not in agent_model.seen[1][0].content
    assert extractor.calls == 3
