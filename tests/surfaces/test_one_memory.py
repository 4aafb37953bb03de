"""One memory for the agent: the tools, reflection, the engine and the memory
prompt share each user's memories (scripted models, create_agent, a
checkpointer, one SQLiteStore, two users, several threads)."""

from __future__ import annotations

import json

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langmem_ext import (
    MemoryEngine,
    MemoryPrompt,
    ReflectionExecutor,
    SQLiteStore,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings

from .scripted import ScriptedChatModel, call, last_tool_result, say
from .test_agents import transcript


def _fact_id(messages: list[BaseMessage]) -> str:
    return json.loads(last_tool_result(messages).content)[0]["key"]


def _prompt_of(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages if isinstance(m, SystemMessage))


@pytest.fixture
def one_store(tmp_path):
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    s = SQLiteStore(tmp_path / "memories.db", index=index)
    yield s
    s.close()


def test_tools_reflection_engine_and_prompt_share_each_users_memory(one_store, capsys):
    chat = ScriptedChatModel(
        script=[
            # thread 1 (ada): small talk; reflection extracts the fact afterwards
            say("Berlin is lovely."),
            # thread 2 (ada): finds the reflected fact and corrects it
            call("search_memory", query="where does the user live"),
            lambda msgs: call(
                "manage_memory", action="update", id=_fact_id(msgs), content="Lives in Munich"
            ),
            say("Noted: Munich."),
            # thread 3 (ada): the prompt shows the correction
            say("You live in Munich."),
            # thread 4 (bob): nothing of ada's anywhere
            call("search_memory", query="where does the user live"),
            say("I don't know yet."),
        ]
    )
    extraction = ScriptedExtractionModel(
        [[("Lives in Berlin", "context", 0.95)], [], [], []]  # one reply per reflected run
    )
    reflection = ReflectionExecutor(extraction, delay=0)
    agent = create_agent(
        chat,
        [create_manage_memory_tool(), create_search_memory_tool()],
        middleware=[MemoryPrompt().middleware(), reflection.middleware()],
        store=one_store,
        checkpointer=InMemorySaver(),
    )

    def turn(text: str, thread: str, user: str) -> list[BaseMessage]:
        config = {"configurable": {"thread_id": thread, "user_id": user}}
        out = agent.invoke({"messages": [HumanMessage(text)]}, config)["messages"]
        assert reflection.flush(timeout=30)
        return out

    t1 = turn("I live in Berlin.", "thread-1", "ada")
    t2 = turn("I moved to Munich last week.", "thread-2", "ada")
    t3 = turn("Where do I live?", "thread-3", "ada")
    t4 = turn("Where do I live?", "thread-4", "bob")
    reflection.shutdown()

    # thread 2: the tool found what reflection extracted, and corrected it
    found = json.loads(t2[2].content)
    assert [f["value"]["content"] for f in found] == ["Lives in Berlin"]
    old_id = found[0]["key"]
    assert t2[4].content.startswith("updated memory ") and t2[4].status == "success"
    new_id = t2[4].content.removeprefix("updated memory ")
    assert new_id != old_id  # a correction supersedes; the id moves on
    # thread 3: the memory prompt shows the corrected fact, not the old one
    prompt = _prompt_of(chat.seen[4])
    assert "Lives in Munich" in prompt and "Berlin" not in prompt
    # the old fact is superseded (kept with its history), the new one is current
    engine, ada = MemoryEngine(one_store), {"configurable": {"user_id": "ada"}}
    old = engine.get(ada, old_id)
    assert (old.validity, old.superseded_by, old.live) == ("superseded", new_id, False)
    assert [e.action for e in engine.history(ada, old_id)] == ["created", "superseded"]
    assert [f.content for f in engine.get_profile(ada).facts] == ["Lives in Munich"]
    assert [i.key for i in one_store.search(("user", "ada"))] == [new_id]
    # bob: his search, his prompt and the engine see none of it
    assert json.loads(t4[2].content) == []
    assert "Munich" not in _prompt_of(chat.seen[5]) and "Berlin" not in _prompt_of(chat.seen[5])
    bob = {"configurable": {"user_id": "bob"}}
    assert engine.get(bob, new_id) is None and engine.search(bob, "Munich") == []
    assert extraction.calls == 4  # one extraction call per reflected run
    with capsys.disabled():
        print("\n--- one memory: transcript ---")
        for label, msgs in [
            ("thread-1, ada", t1),
            ("thread-2, ada", t2),
            ("thread-3, ada", t3),
            ("thread-4, bob", t4),
        ]:
            print(transcript(label, msgs))
        print("== memory prompt of thread-3\n" + prompt)
        print("== history of " + old_id)
        for e in engine.history(ada, old_id):
            print(f"  {e.action}: {e.changes}")


def test_the_prompt_shows_what_the_agent_saved_with_the_tools(one_store):
    manage = create_manage_memory_tool(store=one_store)
    config = {"configurable": {"user_id": "ada"}}
    manage.invoke({"content": "Prefers window seats"}, config)
    block = MemoryPrompt(MemoryEngine(one_store)).render(config)
    assert "- [note | 1.00] Prefers window seats" in block
    assert (
        MemoryPrompt(MemoryEngine(one_store)).render({"configurable": {"user_id": "bob"}}) is None
    )


def test_a_template_is_shared_by_every_component(one_store):
    ns = ("memories", "{user_id}")
    config = {"configurable": {"user_id": "ada", "thread_id": "t1"}}
    extraction = ScriptedExtractionModel([[("Has a dog named Fido", "context", 0.9)]])
    with ReflectionExecutor(extraction, store=one_store, memory_namespace=ns, delay=0) as ex:
        ex.submit([HumanMessage("My dog Fido is great", id="h1"), AIMessage("!", id="a1")], config)
    search = create_search_memory_tool(ns, store=one_store)
    assert [m["value"]["content"] for m in json.loads(search.invoke({"query": "dog"}, config))] == [
        "Has a dog named Fido"
    ]
    assert one_store.search(("memories", "ada"))[0].value["kind"] == "fact"
    block = MemoryPrompt(MemoryEngine(one_store), namespace=ns).render(config)
    assert "Has a dog named Fido" in block


def test_authenticated_tenants_get_their_own_prefix(one_store):
    def auth(user: str, tenant: str) -> dict:
        who = {"identity": user, "tenant_id": tenant}
        return {"configurable": {"langgraph_auth_user": who, "thread_id": "t"}}

    manage = create_manage_memory_tool(store=one_store)
    search = create_search_memory_tool(store=one_store)
    manage.invoke({"content": "acme secret"}, auth("ada", "acme"))
    stored = [i.namespace for i in one_store.search(("tenant",)) if "_meta" not in i.namespace]
    assert stored == [("tenant", "acme", "user", "ada")]
    assert json.loads(search.invoke({"query": "secret"}, auth("ada", "globex"))) == []
    assert json.loads(search.invoke({"query": "secret"}, auth("bob", "acme"))) == []
    spoof = auth("bob", "acme")
    spoof["configurable"]["user_id"] = "ada"
    msg = search.invoke(
        {"type": "tool_call", "id": "c1", "name": "search_memory", "args": {"query": "secret"}},
        spoof,
    )
    assert isinstance(msg, ToolMessage) and msg.status == "error"
    assert "authenticated user is 'bob'" in msg.content and "acme secret" not in msg.content
