"""LangMem's ``create_memory_searcher``: the model writes search queries for a
conversation, the memory search tool runs them, the results come back best
first, each once.

The query call uses a *named* tool choice (``search_memory``), which local
model servers accept, and the search is the memory tool's: the user's own
memories (identity from the authentication), hybrid ranking on our stores.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langgraph.func import entrypoint
    >>> from langmem_ext import SQLiteStore, create_manage_memory_tool
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> store = SQLiteStore()
    >>> config = {"configurable": {"langgraph_user_id": "ada"}}
    >>> _ = create_manage_memory_tool(("memories", "{langgraph_user_id}"), store=store).invoke(
    ...     {"content": "I like sushi"}, config)
    >>> query = AIMessage("", tool_calls=[
    ...     {"name": "search_memory", "args": {"query": "favourite food"}, "id": "c1"}])
    >>> searcher = create_memory_searcher(ScriptedExtractionModel([query]), store=store)
    >>> [i.value["content"] for i in searcher.invoke(
    ...     {"messages": [("user", "What do I like to eat?")]}, config)]
    ['I like sushi']
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.messages.utils import merge_message_runs
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.store.base import BaseStore, SearchItem

from .tools import create_search_memory_tool

__all__ = ["create_memory_searcher"]


def create_memory_searcher(
    model: str | BaseChatModel,
    prompt: str = "Search for distinct memories relevant to different aspects of the provided "
    "context.",
    *,
    namespace: tuple[str, ...] = ("memories", "{langgraph_user_id}"),
    store: BaseStore | None = None,
) -> Runnable[dict[str, Any], list[SearchItem]]:
    """A runnable ``{"messages": [...]} -> list[SearchItem]``, best first.

    Args:
        model: chat model or ``"provider:model"`` string that writes the queries.
        prompt: the system prompt of the query call.
        namespace: the user's memory namespace template (as the other memory
            components; LangMem's default).
        store: the store; default: the running graph's.
    """
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)
    template = ChatPromptTemplate.from_messages(
        [
            ("system", prompt),
            ("placeholder", "{messages}"),
            ("user", "\n\nSearch for memories relevant to the above context."),
        ]
    )
    tool = create_search_memory_tool(namespace, store=store, response_format="content_and_artifact")
    ask = model.bind_tools([tool], tool_choice=tool.name)

    def calls(msg: AIMessage) -> list[Any]:
        return [{**tc, "type": "tool_call"} for tc in msg.tool_calls if tc["name"] == tool.name]

    def run(msg: AIMessage) -> list[Any]:
        return tool.batch(calls(msg))

    async def arun(msg: AIMessage) -> list[Any]:
        return await tool.abatch(calls(msg))

    def best_first(tool_messages: list[Any]) -> list[SearchItem]:
        found: dict[tuple[Any, ...], SearchItem] = {}
        for msg in tool_messages:
            for item in getattr(msg, "artifact", None) or []:
                key = (*item.namespace, item.key)
                found[key] = item
        return sorted(found.values(), key=lambda i: i.score or 0.0, reverse=True)

    chain = (
        template
        | RunnableLambda(lambda p: merge_message_runs(p.to_messages()))
        | ask
        | RunnableLambda(run, arun)
        | best_first
    )
    return chain.with_config({"run_name": "search_memory_pipeline"})
