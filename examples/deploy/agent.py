"""An agent with long-term memory, served by LangGraph (``langgraph dev`` or
LangGraph Platform) on langmem_ext's SQLite store.

``langgraph.json`` points ``store.path`` at :func:`make_store`; the server
calls it once and gives the store to every graph and to its store API. The
graph is a ``create_agent`` agent with the memory tools, reflection and the
memory prompt. ``MEMORY_DB`` chooses the file; ``AGENT_MODEL`` the chat model
(``"openai:gpt-4o-mini"``, or a local server through ``ChatOpenAI``); without
it a scripted offline model answers, so the example runs anywhere.
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.messages import AIMessage

from langmem_ext import (
    MemoryPrompt,
    ReflectionExecutor,
    SQLiteStore,
    create_manage_memory_tool,
    create_search_memory_tool,
)
from langmem_ext.testing.chat import ScriptedExtractionModel


def make_store() -> SQLiteStore:
    """The server's store: one SQLite file with the offline embedder."""
    store = SQLiteStore(
        os.environ.get("MEMORY_DB", "memories.db"),
        index={"embed": "local", "fields": ["content"]},
    )
    store.setup()
    return store


def _offline_model() -> ScriptedExtractionModel:
    # Saves what the user says, then answers; stands in for a real chat model.
    def step(messages):
        last = messages[-1]
        if last.type == "tool":
            return AIMessage("Noted.")
        return AIMessage(
            "",
            tool_calls=[
                {"name": "manage_memory", "args": {"content": last.text}, "id": f"c{len(messages)}"}
            ],
        )

    return ScriptedExtractionModel([step] * 1000)


model = os.environ.get("AGENT_MODEL") or _offline_model()
reflection = ReflectionExecutor(
    os.environ.get("REFLECTION_MODEL") or ScriptedExtractionModel([[]] * 1000), delay=5
)
graph = create_agent(
    model,
    tools=[create_manage_memory_tool(), create_search_memory_tool()],
    middleware=[MemoryPrompt().middleware(), reflection.middleware()],
)
