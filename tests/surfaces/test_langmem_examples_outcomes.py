"""What LangMem's documented examples *do*, checked: adapted versions of the
hot-path and background quickstarts, delayed processing, configured
namespaces, the memory tools guide and the ``create_memory_manager`` /
``create_memory_store_manager`` docstrings, with scripted models that answer
what the example expects and assertions on what is stored and answered.

These are not the examples as LangMem wrote them: models are scripted, some
add a store or calls the example does not make, to check an outcome. The
examples themselves, verbatim, run in ``test_langmem_examples.py``. Each
memory-manager case runs twice: against a model that accepts trustcall's
``tool_choice="any"`` (the trustcall path) and one that rejects it with HTTP
500, as llama.cpp's server does (the one-call fallback).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import MemorySaver
from langgraph.func import entrypoint
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from langmem_ext import (
    ReflectionExecutor,
    create_manage_memory_tool,
    create_memory_manager,
    create_memory_store_manager,
    create_search_memory_tool,
    create_thread_extractor,
)
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings
from tests.reflection.openai_server import LocalChatServer

from .scripted import ScriptedChatModel, call, say

SHAPES = ["trustcall", "fallback"]


def index() -> dict:
    return {"dims": 64, "embed": WordEmbeddings(64)}


class Replies:
    """What a model answers for one call shape.

    ``trustcall``: a hosted-like model that accepts any tool choice; it answers
    with trustcall's tool calls (one per new memory, ``PatchDoc`` for an update).
    ``fallback``: ``ChatOpenAI`` against a local OpenAI-compatible server that,
    like llama.cpp's, rejects ``tool_choice="any"`` with HTTP 500; it answers the
    one-call ``manage_memories`` shape.
    """

    def __init__(self, shape: str, servers: list) -> None:
        self.shape = shape
        self.servers = servers

    def model(self, *steps):
        if self.shape == "trustcall":
            return ScriptedExtractionModel(list(steps))
        from langchain_openai import ChatOpenAI

        server = LocalChatServer(list(steps)).__enter__()
        self.servers.append(server)
        return ChatOpenAI(base_url=server.base_url, api_key="local", model="local", max_retries=0)

    def new(self, *memories: BaseModel):
        if self.shape == "trustcall":
            calls = [
                {"name": type(m).__name__, "args": m.model_dump(), "id": f"n{i}"}
                for i, m in enumerate(memories)
            ]
            return AIMessage("", tool_calls=calls)
        return {
            "memories": [{"kind": type(m).__name__, "content": m.model_dump()} for m in memories]
        }

    def update(self, doc_id, field: str, value):
        def answer(messages):
            the_id = doc_id(messages) if callable(doc_id) else doc_id
            if self.shape == "trustcall":
                patch = {
                    "json_doc_id": the_id,
                    "planned_edits": f"set {field}",
                    "patches": [{"op": "replace", "path": f"/{field}", "value": value}],
                }
                return AIMessage("", tool_calls=[{"name": "PatchDoc", "args": patch, "id": "p"}])
            return _manage_update(messages, the_id, field, value)

        return answer


def _manage_update(body, doc_id, field, value) -> dict:
    # The fallback lists existing memories as JSON lines: update one field of one.
    text = str(body["messages"][-1]["content"])
    for line in text.splitlines():
        if line.startswith("{") and f'"id": "{doc_id}"' in line:
            known = json.loads(line)
            content = {**known["content"], field: value}
            return {"memories": [{"id": doc_id, "kind": known["kind"], "content": content}]}
    raise AssertionError(f"memory {doc_id} was not shown to the model")


@pytest.fixture(params=SHAPES)
def r(request):
    servers: list = []
    yield Replies(request.param, servers)
    for server in servers:
        server.__exit__(None, None, None)


class Memory(BaseModel):  # what create_memory_manager's default schema holds
    content: str


class PreferenceMemory(BaseModel):
    """Store the user's preference"""

    category: str
    preference: str
    context: str


DARK = PreferenceMemory(category="ui", preference="dark_mode", context="all apps")


# -- hot path quickstart -------------------------------------------------------------------


def test_hot_path_agent_recalls_saved_preference_in_new_thread():
    from langgraph.utils.config import get_store

    seen_prompts: list[str] = []

    def prompt(state):
        """Prepare the messages for the LLM."""
        store = get_store()
        memories = store.search(("memories",), query=state["messages"][-1].content)
        system_msg = f"""You are a helpful assistant.

## Memories
<memories>
{memories}
</memories>
"""
        seen_prompts.append(system_msg)
        return [{"role": "system", "content": system_msg}, *state["messages"]]

    store = InMemoryStore(index=index())
    checkpointer = MemorySaver()
    model = ScriptedChatModel(
        script=[
            say("I don't have any stored memories about your display mode preferences."),
            call("manage_memory", content="User prefers dark display mode", action="create"),
            say("Got it."),
            say("You prefer dark display mode."),
        ]
    )
    agent = create_react_agent(
        model,
        prompt=prompt,
        tools=[create_manage_memory_tool(namespace=("memories",))],
        store=store,
        checkpointer=checkpointer,
    )
    config = {"configurable": {"thread_id": "thread-a"}}
    agent.invoke(
        {"messages": [{"role": "user", "content": "Know which display mode I prefer?"}]},
        config=config,
    )
    agent.invoke({"messages": [{"role": "user", "content": "dark. Remember that."}]}, config)
    new_config = {"configurable": {"thread_id": "thread-b"}}
    response = agent.invoke(
        {"messages": [{"role": "user", "content": "Hey there. Do you remember me?"}]},
        config=new_config,
    )
    assert response["messages"][-1].content == "You prefer dark display mode."
    assert "User prefers dark display mode" in seen_prompts[-1]


# -- background quickstart ---------------------------------------------------------------


def test_background_manager_stores_each_extracted_memory(r):
    store = InMemoryStore(index=index())
    llm = ScriptedChatModel(script=[say("That's nice! What kind of dog is Fido?")])
    memory_manager = create_memory_store_manager(
        r.model(r.new(Memory(content="User likes dogs as pets"), Memory(content="Dog: Fido"))),
        namespace=("memories",),
    )

    @entrypoint(store=store)
    async def chat(message: str):
        response = llm.invoke(message)
        to_process = {"messages": [{"role": "user", "content": message}, response]}
        await memory_manager.ainvoke(to_process)
        return response.content

    response = asyncio.run(chat.ainvoke("I like dogs. My dog's name is Fido."))
    assert response.startswith("That's nice!")
    found = store.search(("memories",))
    assert sorted(i.value["content"]["content"] for i in found) == [
        "Dog: Fido",
        "User likes dogs as pets",
    ]
    assert {i.value["kind"] for i in found} == {"Memory"}


# -- delayed processing --------------------------------------------------------------------


def test_delayed_executor_stores_after_the_delay(r):
    memory_manager = create_memory_store_manager(
        r.model(r.new(Memory(content="User is planning a trip to Japan"))),
        namespace=("memories",),
    )
    executor = ReflectionExecutor(memory_manager)
    store = InMemoryStore(index=index())
    llm = ScriptedChatModel(script=[say("Japan is great in spring."), say("Sure.")])

    @entrypoint(store=store)
    def chat(message: str):
        response = llm.invoke(message)
        to_process = {"messages": [{"role": "user", "content": message}, response]}
        delay = 0.5
        executor.submit(to_process, after_seconds=delay)
        return response.content

    chat.invoke("I'm planning a trip to Japan", {"configurable": {"thread_id": "t"}})
    chat.invoke("In April", {"configurable": {"thread_id": "t"}})  # debounced into one run
    assert executor.shutdown(timeout=30)
    assert [i.value["content"]["content"] for i in store.search(("memories",))] == [
        "User is planning a trip to Japan"
    ]
    assert not executor.failures


# -- dynamically configured namespaces ----------------------------------------------------


def test_configured_namespace_isolates_users():
    store = InMemoryStore(index=index())
    tool = create_manage_memory_tool(namespace=("memories", "{user_id}"))
    model = ScriptedChatModel(script=[call("manage_memory", content="Likes dolphins"), say("ok")])
    app = create_react_agent(model, tools=[tool], store=store)
    app.invoke(
        {"messages": [{"role": "user", "content": "I like dolphins"}]},
        config={"configurable": {"user_id": "user-123"}},
    )
    [item] = store.search(("memories", "user-123"))
    assert item.value["content"] == "Likes dolphins"
    assert store.search(("memories", "user-456")) == []


# -- memory tools guide --------------------------------------------------------------------


def test_team_namespace_search_finds_the_teams_memory():
    store = InMemoryStore(index=index())
    agent_a_tools = [
        create_manage_memory_tool(namespace=("memories", "team_a", "agent_a")),
        create_search_memory_tool(namespace=("memories", "team_a")),
    ]
    agent_b_tools = [
        create_manage_memory_tool(namespace=("memories", "team_a", "agent_b")),
        create_search_memory_tool(namespace=("memories", "team_a")),
    ]
    a = ScriptedChatModel(script=[call("manage_memory", content="Q3 report due Friday"), say("ok")])
    b = ScriptedChatModel(script=[call("search_memory", query="report"), say("done")])
    agent_a = create_react_agent(a, tools=agent_a_tools, store=store, prompt="research")
    agent_b = create_react_agent(b, tools=agent_b_tools, store=store, prompt="writer")
    agent_a.invoke({"messages": [{"role": "user", "content": "Remember the Q3 deadline"}]})
    out = agent_b.invoke({"messages": [{"role": "user", "content": "Hi"}]})
    found = json.loads(out["messages"][2].content)
    assert [f["value"]["content"] for f in found] == ["Q3 report due Friday"]
    assert found[0]["namespace"] == ["memories", "team_a", "agent_a"]


# -- create_memory_manager's docstring ----------------------------------------------------


def test_memory_manager_updates_existing_memory_by_id(r):
    manager = create_memory_manager(
        r.model(
            r.new(Memory(content="User prefers dark mode for all applications")),
            r.update(lambda msgs: first_id[0], "content", "User prefers light mode"),
        )
    )
    conversation = [
        {"role": "user", "content": "I prefer dark mode in all my apps"},
        {"role": "assistant", "content": "I'll remember that preference"},
    ]
    memories = asyncio.run(manager(conversation))
    assert memories[0][1].content == "User prefers dark mode for all applications"
    first_id = [memories[0][0]]
    conversation = [
        {"role": "user", "content": "Actually I changed my mind, dark mode hurts my eyes"},
        {"role": "assistant", "content": "I'll update your preference"},
    ]
    updated = asyncio.run(manager.ainvoke({"messages": conversation, "existing": memories}))
    assert [(m.id, m.content.content) for m in updated] == [
        (first_id[0], "User prefers light mode")
    ]
    assert manager.shape == ("trustcall" if r.shape == "trustcall" else "tool")


def test_memory_manager_returns_schema_instances(r):
    manager = create_memory_manager(r.model(r.new(DARK)), schemas=[PreferenceMemory])
    conversation = [
        {"role": "user", "content": "I prefer dark mode in all my apps"},
        {"role": "assistant", "content": "I'll remember that preference"},
    ]
    memories = asyncio.run(manager(conversation))
    assert memories[0][1] == DARK


def test_memory_manager_insertion_only_keeps_existing(r):
    best = PreferenceMemory(category="ui", preference="dark_mode", context="best mode")
    manager = create_memory_manager(
        r.model(r.new(best)),
        schemas=[PreferenceMemory],
        enable_updates=False,
        enable_deletes=False,
    )
    existing = [("m-1", DARK)]
    conversation = [
        {"role": "user", "content": "Actually I changed my mind, dark mode is the best mode"},
        {"role": "assistant", "content": "I'll update your preference"},
    ]
    updated = asyncio.run(manager.ainvoke({"messages": conversation, "existing": existing}))
    assert ("m-1", DARK) in [(m.id, m.content) for m in updated]
    assert best in [m.content for m in updated]


def test_memory_manager_max_steps_result(r):
    manager = create_memory_manager(r.model(r.new(DARK), r.new()), schemas=[PreferenceMemory])
    conversation = [
        {"role": "user", "content": "I prefer dark mode in all my apps"},
        {"role": "assistant", "content": "I'll remember that preference"},
    ]
    memories = asyncio.run(manager.ainvoke({"messages": conversation, "max_steps": 3}))
    assert [m.content for m in memories] == [DARK]


# -- create_memory_store_manager's docstring ----------------------------------------------


def test_store_manager_memory_reaches_next_prompt(r):
    store = InMemoryStore(index=index())
    manager = create_memory_store_manager(
        r.model(r.new(Memory(content="User prefers dark mode")), r.new()),
        namespace=("memories", "{langgraph_user_id}"),
    )
    client = ScriptedChatModel(script=[say("Noted."), say("You prefer dark mode.")])
    prompts: list[str] = []

    @entrypoint(store=store)
    async def my_agent(message: str, config):
        memories = await manager.asearch(query=message, config=config)
        prompts.append(f"## Memories from the user:\n<memories>\n{memories}\n</memories>")
        llm_response = client.invoke(message)
        response = {"role": "assistant", "content": llm_response.content}
        await manager.ainvoke({"messages": [{"role": "user", "content": message}, response]})
        return response["content"]

    config = {"configurable": {"langgraph_user_id": "user123"}}
    asyncio.run(my_agent.ainvoke("I prefer dark mode in all my apps", config=config))
    response_2 = asyncio.run(my_agent.ainvoke("What theme do I prefer?", config=config))
    assert response_2 == "You prefer dark mode."
    assert "User prefers dark mode" in prompts[-1]
    found = manager.search(query="app preferences", config=config)
    assert [i.value["content"]["content"] for i in found] == ["User prefers dark mode"]
    assert found[0].namespace == ("memories", "user123")


def test_store_manager_default_profile_key_and_kind(r):
    store = InMemoryStore(index=index())
    manager = create_memory_store_manager(
        r.model(r.update("default", "content", "Concise tone. The user prefers dark mode")),
        namespace=("memories", "{langgraph_user_id}"),
        default="Use a concise and professional tone in all responses. The user likes light mode.",
    )

    @entrypoint(store=store)
    async def my_agent(message: str):
        response = {"role": "assistant", "content": "I'll remember that preference"}
        await manager.ainvoke({"messages": [{"role": "user", "content": message}, response]})
        return response

    config = {"configurable": {"langgraph_user_id": "user124"}}
    asyncio.run(my_agent.ainvoke("I prefer dark mode in all my apps", config=config))
    [item] = store.search(("memories", "user124"))
    assert item.key == "default"
    assert item.value["kind"] == "Memory"
    assert item.value["content"] == {"content": "Concise tone. The user prefers dark mode"}


def test_store_manager_default_factory_on_empty_store():
    store = InMemoryStore(index=index())

    def get_configurable_default(config):
        return config["configurable"].get(
            "preference", "Use a concise and professional tone in all responses."
        )

    manager = create_memory_store_manager(
        ScriptedExtractionModel([]),
        namespace=("memories", "{langgraph_user_id}"),
        default_factory=get_configurable_default,
        store=store,
    )
    config = {
        "configurable": {
            "langgraph_user_id": "user125",
            "preference": "Respond in pirate speak. User likes light mode",
        }
    }
    [item] = manager.search(query="app preferences", config=config)
    assert item.key == "default"
    assert item.value["content"] == {"content": "Respond in pirate speak. User likes light mode"}


def test_store_manager_with_query_model_stores_contents(r):
    store = InMemoryStore(index=index())
    store.put(("memories", "user123"), "m1", {"kind": "Memory", "content": {"content": "x"}})
    query = AIMessage(
        "", tool_calls=[{"name": "search_memory", "args": {"query": "theme"}, "id": "q"}]
    )
    manager = create_memory_store_manager(
        r.model(r.new(Memory(content="User prefers dark mode"))),
        query_model=ScriptedExtractionModel([query], rejects=("any", "required")),
        query_limit=10,
        namespace=("memories", "{langgraph_user_id}"),
    )

    @entrypoint(store=store)
    async def my_agent(message: str):
        response = {"role": "assistant", "content": "I'll remember that preference"}
        await manager.ainvoke({"messages": [{"role": "user", "content": message}, response]})
        return response

    config = {"configurable": {"langgraph_user_id": "user123"}}
    asyncio.run(my_agent.ainvoke("I prefer dark mode in all my apps", config=config))
    contents = sorted(i.value["content"]["content"] for i in manager.search(config=config))
    assert contents == ["User prefers dark mode", "x"]


def test_store_manager_background_puts_and_search(r):
    store = InMemoryStore(index=index())
    manager = create_memory_store_manager(
        r.model(r.new(Memory(content="User prefers dark mode in apps"))),
        namespace=("memories", "{user_id}"),
    )
    reflection = ReflectionExecutor(manager, store=store)
    agent = create_react_agent(
        ScriptedChatModel(script=[say("Dark mode it is.")]), tools=[], store=store
    )

    @entrypoint(store=store)
    async def chat(messages: list):
        response = await agent.ainvoke({"messages": messages})
        fut = reflection.submit({"messages": response["messages"]}, after_seconds=0)
        return fut

    config = {"configurable": {"user_id": "user-123"}}
    fut = asyncio.run(
        chat.ainvoke([{"role": "user", "content": "I prefer dark mode in my apps"}], config=config)
    )
    puts = fut.result(timeout=30)
    assert [p["value"]["content"] for p in puts] == [{"content": "User prefers dark mode in apps"}]
    found = manager.search(query="app preferences", config=config)
    assert [i.value["content"]["content"] for i in found] == ["User prefers dark mode in apps"]
    reflection.shutdown()


def test_thread_extractor_returns_schema():
    summary = AIMessage(
        "",
        tool_calls=[
            {
                "name": "SummarizeThread",
                "args": {"title": "Password Reset Assistance", "summary": "User reported..."},
                "id": "s",
            }
        ],
    )
    summarizer = create_thread_extractor(ScriptedExtractionModel([summary]))
    messages = [
        {"role": "user", "content": "Hi, I'm having trouble with my account"},
        {"role": "assistant", "content": "I'd be happy to help. What seems to be the issue?"},
        {"role": "user", "content": "I can't reset my password"},
    ]
    out = asyncio.run(summarizer.ainvoke({"messages": messages}))
    assert out.title == "Password Reset Assistance"
