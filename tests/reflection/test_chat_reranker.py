"""A re-ranker from a chat model: one listwise call per search, through the
extraction's call strategy (named tool, JSON where a server cannot call
tools), plugged into a store; a useless answer leaves the store's order."""

from __future__ import annotations

import asyncio
import logging

from langchain_core.messages import AIMessage

from langmem_ext import SQLiteStore
from langmem_ext.agents import chat_reranker
from langmem_ext.testing.chat import ScriptedExtractionModel

NOTES = ["Ada lives in Paris", "Ada drinks green tea", "Ada's sister is Clara"]


def _rank(*order):
    return AIMessage("", tool_calls=[{"name": "rank", "args": {"order": list(order)}, "id": "r"}])


def _store(rerank):
    store = SQLiteStore(index={"fields": ["content"], "rerank": rerank, "rerank_candidates": 3})
    for i, text in enumerate(NOTES):
        store.put(("m",), f"n{i}", {"content": text})
    return store


def test_the_models_order_becomes_the_search_order():
    model = ScriptedExtractionModel([_rank(2, 3)])
    store = _store(chat_reranker(model))
    page = store.search(("m",), query="Ada", limit=3)
    assert [it.value["content"] for it in page] == [NOTES[1], NOTES[2], NOTES[0]]
    assert page[0].score > page[1].score > page[2].score
    [seen] = model.seen
    assert "Question: Ada" in seen[-1].content and "2. Ada drinks green tea" in seen[-1].content
    assert model.bound[0]["tool_choice"] == "rank"  # a named tool, as local servers accept


def test_a_server_without_tools_gets_a_json_request_and_async_works():
    model = ScriptedExtractionModel(['{"order": [3, 1, 2]}'], supports_tools=False)
    store = _store(chat_reranker(model, asynchronous=True))
    page = asyncio.run(store.asearch(("m",), query="Ada", limit=1))
    assert page[0].value["content"] == NOTES[2]
    assert "JSON object" in model.seen[-1][-1].content


def test_an_answer_without_candidate_numbers_keeps_the_stores_order(caplog):
    plain = _store(lambda q, texts: [0.0] * len(texts))
    own = [it.key for it in plain.search(("m",), query="Ada", limit=3)]
    store = _store(chat_reranker(ScriptedExtractionModel([_rank(7, 9)])))
    with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
        assert [it.key for it in store.search(("m",), query="Ada", limit=3)] == own
    assert "no candidate number" in caplog.text
