"""What every model call costs: tokens by purpose, in the results and in the
``memory.llm.tokens`` metric; the server's own counts when it gives them, a
marked estimate when it does not; totals exact under threads."""

from __future__ import annotations

import asyncio
import threading

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pydantic import SecretStr

from langmem_ext import (
    MemoryEngine,
    SQLiteStore,
    create_memory_manager,
    create_memory_store_manager,
    create_prompt_optimizer,
    summarize_messages,
)
from langmem_ext.agents import FactExtractor, ReflectionExecutor, chat_reranker
from langmem_ext.agents.reflection.settings import ReflectionSettings
from langmem_ext.engine import MemoryContext, run_sync
from langmem_ext.engine.runtime.metrics import collected_points
from langmem_ext.model_calls.usage import (
    MESSAGE_OVERHEAD,
    TokenUsage,
    estimate_input,
    estimate_output,
    instrument_models,
)
from langmem_ext.testing.chat import ScriptedExtractionModel, facts_call
from tests.embeddings import WordEmbeddings
from tests.reflection.openai_server import LocalChatServer


@pytest.fixture
def reader():
    reader = InMemoryMetricReader()
    instrument_models(MeterProvider([reader]))
    yield reader
    instrument_models(None)


def tokens(reader) -> dict[tuple[str, str, bool], int]:
    """``{(purpose, direction, estimated): tokens}`` summed over models."""
    out: dict[tuple[str, str, bool], int] = {}
    for attrs, value in collected_points(reader).get("memory.llm.tokens", []):
        key = (attrs["purpose"], attrs["direction"], attrs["estimated"])
        out[key] = out.get(key, 0) + value
    return out


def _manage(text: str) -> AIMessage:
    args = {"memories": [{"kind": "Memory", "content": {"content": text}}]}
    return AIMessage("", tool_calls=[{"name": "manage_memories", "args": args, "id": "m"}])


def test_reflection_result_and_metric_carry_the_estimate_of_each_call(reader):
    reply = facts_call([("Lives in Berlin", "context", 0.9)])
    model = ScriptedExtractionModel([reply])
    engine = MemoryEngine(SQLiteStore())
    config = {"configurable": {"memory_context": MemoryContext(user_id="ada"), "thread_id": "t"}}
    settings = ReflectionSettings(backoff=0.0)
    with ReflectionExecutor(FactExtractor(model), engine=engine, delay=0, settings=settings) as ex:
        result = ex.reflect([HumanMessage("I live in Berlin", id="h1")], config)
    assert [f.content for f in result.added] == ["Lives in Berlin"]
    # The scripted model reports no usage: the estimate of what was sent and received.
    sent = model.seen[0]
    tools = model.bound[0]["tools"]
    assert result.tokens.input_tokens == estimate_input(sent, tools) > len(sent) * MESSAGE_OVERHEAD
    assert result.tokens.output_tokens == estimate_output(reply) > 0
    assert (result.tokens.calls, result.tokens.estimated_calls) == (1, 1)
    assert set(result.tokens.by_purpose) == {"reflection"}
    assert ex.usage.total_tokens == result.tokens.total_tokens
    assert tokens(reader) == {
        ("reflection", "input", True): result.tokens.input_tokens,
        ("reflection", "output", True): result.tokens.output_tokens,
    }


def test_a_failed_call_counts_no_tokens_and_the_retry_counts_its_own(reader):
    model = ScriptedExtractionModel(
        [RuntimeError("server down"), facts_call([("Has a cat", "context", 0.9)])]
    )
    engine = MemoryEngine(SQLiteStore())
    config = {"configurable": {"memory_context": MemoryContext(user_id="ada"), "thread_id": "t"}}
    settings = ReflectionSettings(backoff=0.0)
    with ReflectionExecutor(FactExtractor(model), engine=engine, delay=0, settings=settings) as ex:
        result = ex.reflect([HumanMessage("I have a cat", id="h1")], config)
    assert result.model_calls == 2
    assert result.tokens.calls == 1  # the failed call answered nothing
    assert tokens(reader)[("reflection", "output", True)] == result.tokens.output_tokens


def test_server_reported_usage_is_used_not_estimated(reader):
    # The local server reports 1 prompt and 1 completion token for every call.
    facts = {"facts": [{"content": "Likes tea", "category": "preference", "confidence": 0.9}]}
    with LocalChatServer([facts]) as server:
        chat = ChatOpenAI(
            model="local", base_url=server.base_url, api_key=SecretStr("x"), max_retries=0
        )
        extractor = FactExtractor(chat, method="tool")
        usage = TokenUsage()
        run_sync(extractor.request([HumanMessage("I like tea")], usage), None)
    assert (usage.input_tokens, usage.output_tokens, usage.estimated_calls) == (1, 1, 0)
    assert tokens(reader) == {("reflection", "input", False): 1, ("reflection", "output", False): 1}
    [(attrs, _)] = [
        p for p in collected_points(reader)["memory.llm.tokens"] if p[0]["direction"] == "input"
    ]
    assert attrs["model"] == "local"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_manager_results_carry_their_usage(reader, mode):
    model = ScriptedExtractionModel([_manage("Likes tea")])
    manager = create_memory_manager(model, method="tool")
    payload = {"messages": [("user", "I like tea")]}
    got = manager.invoke(payload) if mode == "sync" else asyncio.run(manager.ainvoke(payload))
    assert [m.content.content for m in got] == ["Likes tea"]
    assert isinstance(got, list) and got.usage.calls == 1 and got.usage.input_tokens > 0
    assert manager.usage.total_tokens == got.usage.total_tokens
    assert {k[0] for k in tokens(reader)} == {"memory_manager"}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_store_manager_result_counts_the_query_model_and_the_manager(reader, mode):
    store = SQLiteStore(index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]})
    query = AIMessage(
        "", tool_calls=[{"name": "search_memory", "args": {"query": "tea"}, "id": "q"}]
    )
    manager = create_memory_store_manager(
        ScriptedExtractionModel([_manage("Likes green tea")]),
        query_model=ScriptedExtractionModel([query]),
        namespace=("memories", "{user_id}"),
        store=store,
        method="tool",
    )
    config = {"configurable": {"user_id": "ada"}}
    payload = {"messages": [("user", "I like green tea")]}
    if mode == "sync":
        puts = manager.invoke(payload, config)
    else:
        puts = asyncio.run(manager.ainvoke(payload, config))
    assert [p["value"]["content"] for p in puts] == [{"content": "Likes green tea"}]
    assert set(puts.usage.by_purpose) == {"store_manager_query", "memory_manager"}
    assert puts.usage.calls == 2
    assert {k[0] for k in tokens(reader)} == {"store_manager_query", "memory_manager"}
    store.close()


def test_trustcall_counts_every_nested_call(reader):
    # trustcall asks once, then once more to repair an invalid answer: both count.
    bad = AIMessage("", tool_calls=[{"name": "Memory", "args": {"nope": 1}, "id": "a"}])
    good = AIMessage(
        "", tool_calls=[{"name": "Memory", "args": {"content": "Likes tea"}, "id": "b"}]
    )
    model = ScriptedExtractionModel([bad, good, good, good])
    manager = create_memory_manager(model, method="trustcall")
    got = manager.invoke({"messages": [("user", "I like tea")]})
    assert got.usage.calls == model.calls >= 2


def test_summarization_counts_its_call_and_keeps_the_callers_callbacks(reader):
    seen: list[str] = []

    class Watch(BaseCallbackHandler):
        def on_chat_model_start(self, serialized, messages, **kw):
            seen.append("start")

    model = ScriptedExtractionModel([AIMessage("They talked about x.")])
    msgs = [
        HumanMessage("x " * 40, id="1"),
        AIMessage("y " * 40, id="2"),
        HumanMessage("?", id="3"),
    ]

    def node(_):
        return summarize_messages(
            msgs, running_summary=None, model=model, max_tokens=60, max_summary_tokens=20
        )

    out = RunnableLambda(node).invoke(None, {"callbacks": [Watch()]})
    assert out.running_summary.summary == "They talked about x."
    assert seen == ["start"]  # the caller still sees the call
    assert out.usage.calls == 1 and out.usage.output_tokens == estimate_output(
        AIMessage("They talked about x.")
    )
    assert {k[0] for k in tokens(reader)} == {"summarization"}


def test_optimizer_and_reranker_count_under_their_purposes(reader):
    call = {"name": "update_prompt", "args": {"new_prompt": "Answer in French."}, "id": "p"}
    think = {"name": "critique", "args": {"analysis": "Reply in French."}, "id": "t"}
    opt = create_prompt_optimizer(
        ScriptedExtractionModel(
            [AIMessage("", tool_calls=[think]), AIMessage("", tool_calls=[call])]
        )
    )
    opt.invoke({"trajectories": "user: bonjour -> feedback: reply in French", "prompt": "Be nice."})
    rank = {"name": "rank", "args": {"order": [2, 1]}, "id": "r"}
    reranker = chat_reranker(ScriptedExtractionModel([AIMessage("", tool_calls=[rank])]))
    assert reranker("tea?", ["Lives in Paris", "Drinks tea"]) == [0.5, 1.0]
    assert opt.usage.calls == 2 and opt.usage.total_tokens > 0
    assert {k[0] for k in tokens(reader)} == {"optimizer", "rerank"}


def test_totals_are_exact_when_threads_share_one_model():
    n_threads, per_thread = 8, 10
    rank = {"name": "rank", "args": {"order": [1]}, "id": "r"}
    model = ScriptedExtractionModel([AIMessage("", tool_calls=[rank])] * (n_threads * per_thread))
    reranker = chat_reranker(model)
    one = estimate_output(AIMessage("", tool_calls=[rank]))

    def work() -> None:
        for _ in range(per_thread):
            reranker("q", ["a"])

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage = reranker.usage  # type: ignore[attr-defined]
    assert usage.calls == n_threads * per_thread
    assert usage.output_tokens == one * n_threads * per_thread
