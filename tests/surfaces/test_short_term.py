"""LangMem's short-term memory (summarize_messages, SummarizationNode) with its
names and shapes, and the three things LangMem gets wrong: a tool call cut
from its results, messages counted instead of found after one is removed, and
a failed summary call."""

from __future__ import annotations

import asyncio
import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph

from langmem_ext import RunningSummary, SummarizationNode, asummarize_messages, summarize_messages
from langmem_ext.short_term import SummarizationResult
from langmem_ext.testing.chat import ScriptedExtractionModel


def words(n: int, w: str = "x") -> str:
    return " ".join([w] * n)


def per_message(messages) -> int:
    # One token per word: budgets in the tests are exact.
    return sum(len(str(m.content).split()) for m in messages)


def thread(n: int) -> list:
    out = []
    for i in range(n):
        out += [HumanMessage(words(10, f"q{i}"), id=f"h{i}"), AIMessage(words(10), id=f"a{i}")]
    return out


def summarizer(*texts: str) -> ScriptedExtractionModel:
    return ScriptedExtractionModel([AIMessage(t) for t in texts])


def test_below_the_budget_nothing_changes():
    msgs = [SystemMessage("be brief"), *thread(2)]
    out = summarize_messages(
        msgs,
        running_summary=None,
        model=summarizer(),
        max_tokens=100,
        max_summary_tokens=10,
        token_counter=per_message,
    )
    assert isinstance(out, SummarizationResult)
    assert out.running_summary is None and out.messages == msgs


def test_old_messages_fold_into_a_running_summary_which_grows():
    msgs = thread(4)  # 80 tokens
    model = summarizer("first summary", "second summary")
    out = summarize_messages(
        msgs,
        running_summary=None,
        model=model,
        max_tokens=50,
        max_summary_tokens=10,
        token_counter=per_message,
    )
    summary = out.running_summary
    assert summary.summary == "first summary"
    assert out.messages[0].type == "system" and "first summary" in out.messages[0].content
    kept = [m.id for m in out.messages[1:]]
    assert kept and kept[-1] == "a3" and summary.last_summarized_message_id not in kept
    assert summary.summarized_message_ids == {m.id for m in msgs} - set(kept)
    assert per_message(out.messages[1:]) <= 50
    # more turns: the next summary extends the first, covering only new messages
    more = msgs + thread(8)[8:]
    out2 = summarize_messages(
        more,
        running_summary=summary,
        model=model,
        max_tokens=50,
        max_summary_tokens=10,
        token_counter=per_message,
    )
    prompt = model.seen[-1][-1].content
    assert "first summary" in prompt and "Extend this summary" in prompt
    assert out2.running_summary.summary == "second summary"
    assert summary.summarized_message_ids < out2.running_summary.summarized_message_ids


def test_a_tool_call_is_never_cut_from_its_results():
    call = AIMessage(
        "",
        id="c",
        tool_calls=[
            {"name": "look", "args": {}, "id": "t1"},
            {"name": "look", "args": {}, "id": "t2"},
        ],
    )
    msgs = [
        HumanMessage(words(10), id="h0"),
        AIMessage(words(10), id="a0"),
        HumanMessage(words(5), id="h1"),
        call,
        ToolMessage(words(20), tool_call_id="t1", id="r1"),
        ToolMessage(words(20), tool_call_id="t2", id="r2"),
        AIMessage(words(5), id="a1"),
    ]
    out = summarize_messages(
        msgs,
        running_summary=None,
        model=summarizer("s"),
        # LangMem's cut lands between the two results here (45 of 50 tokens).
        max_tokens=50,
        max_summary_tokens=5,
        token_counter=per_message,
    )
    rest = out.messages[1:]
    assert rest[0].type != "tool"
    calls = {tc["id"] for m in rest if m.type == "ai" for tc in m.tool_calls}
    assert all(m.tool_call_id in calls for m in rest if m.type == "tool")


def test_a_removed_message_does_not_shift_what_is_new():
    msgs = thread(4)
    first = summarize_messages(
        msgs,
        running_summary=None,
        model=summarizer("s1"),
        max_tokens=50,
        max_summary_tokens=10,
        token_counter=per_message,
    )
    # the app removes a summarized message from its state (RemoveMessage)
    gone = sorted(first.running_summary.summarized_message_ids)[0]
    later = [m for m in msgs if m.id != gone] + [HumanMessage("and now?", id="h9")]
    out = summarize_messages(
        later,
        running_summary=first.running_summary,
        model=summarizer(),
        max_tokens=60,
        max_summary_tokens=10,
        token_counter=per_message,
    )
    unsummarized = [m.id for m in msgs if m.id not in first.running_summary.summarized_message_ids]
    assert [m.id for m in out.messages[1:]] == [*unsummarized, "h9"]


def test_a_failed_summary_call_changes_nothing():
    running = RunningSummary("so far", {"h0"}, "h0")
    before = (running.summary, set(running.summarized_message_ids))
    with pytest.raises(RuntimeError, match="model down"):
        summarize_messages(
            thread(4),
            running_summary=running,
            model=ScriptedExtractionModel([RuntimeError("model down")]),
            max_tokens=30,
            max_summary_tokens=5,
            token_counter=per_message,
        )
    assert (running.summary, running.summarized_message_ids) == before


def test_async_twin_gives_the_same_result():
    args = {"max_tokens": 50, "max_summary_tokens": 10, "token_counter": per_message}
    sync = summarize_messages(thread(4), running_summary=None, model=summarizer("s"), **args)
    asyn = asyncio.run(
        asummarize_messages(thread(4), running_summary=None, model=summarizer("s"), **args)
    )
    assert [m.id for m in sync.messages[1:]] == [m.id for m in asyn.messages[1:]]
    assert sync.running_summary == asyn.running_summary


class State(MessagesState):
    summarized_messages: list
    context: dict


def run_node(messages: list, **keys: str) -> dict:
    """One summarization node in a graph, run once over ``messages``."""
    node = SummarizationNode(
        model=summarizer("what was said"),
        max_tokens=50,
        max_summary_tokens=10,
        token_counter=per_message,
        **keys,
    )
    graph = StateGraph(State)
    graph.add_node("summarize", node)
    graph.add_edge(START, "summarize")
    return graph.compile().invoke({"messages": messages, "context": {}})


def test_summarization_node_in_a_graph():
    out = run_node(thread(4))
    assert "what was said" in out["summarized_messages"][0].content
    assert out["context"]["running_summary"].summary == "what was said"
    assert len(out["messages"]) == 8  # the thread itself is not rewritten


def test_summarization_node_rewrites_the_thread_when_keys_match():
    before = thread(4)
    out = run_node(before, output_messages_key="messages")
    assert "what was said" in out["messages"][0].content
    kept = [m.id for m in out["messages"][1:]]
    assert kept and kept == [m.id for m in before[-len(kept) :]]
    assert len(out["messages"]) < len(before)


def test_summarization_node_names_a_missing_messages_key():
    node = SummarizationNode(model=summarizer(), max_tokens=10, input_messages_key="history")
    with pytest.raises(ValueError, match="history"):
        node.invoke({"messages": thread(1)})


def _worker(store, model):
    # One worker's graph: no checkpointer, so nothing carries the context over.
    node = SummarizationNode(
        model=model,
        max_tokens=50,
        max_summary_tokens=10,
        token_counter=per_message,
        summaries_namespace=("summaries", "{user_id}"),
    )
    graph = StateGraph(State)
    graph.add_node("summarize", node)
    graph.add_edge(START, "summarize")
    return graph.compile(store=store)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_thread_resumed_on_another_worker_keeps_its_summary(asynchronous):
    from langmem_ext import SQLiteStore

    store = SQLiteStore()
    cfg = {"configurable": {"thread_id": "t-1", "user_id": "ada"}}
    msgs = thread(4)
    first = _worker(store, summarizer("they said hello"))
    second_model = summarizer("they said hello, then more")
    second = _worker(store, second_model)

    def run(graph, messages):
        state = {"messages": messages, "context": {}}
        return asyncio.run(graph.ainvoke(state, cfg)) if asynchronous else graph.invoke(state, cfg)

    out = run(first, msgs)
    stored = store.get(("summaries", "ada"), "t-1").value
    assert stored["summary"] == "they said hello"
    assert (
        out["context"]["running_summary"].last_summarized_message_id
        == (stored["last_summarized_message_id"])
    )
    # Worker B sees the same thread with no summary in its state, plus a few
    # new messages: it resumes after the stored summary instead of starting over.
    more = thread(6)[len(msgs) :]
    out = run(second, msgs + more)
    assert out["summarized_messages"][0].content.endswith("they said hello, then more")
    assert "This is summary of the conversation so far: they said hello" in str(
        second_model.seen[0][-1].content
    )
    assert store.get(("summaries", "ada"), "t-1").value["summary"] == "they said hello, then more"
    assert store.get(("summaries", "bob"), "t-1") is None


@pytest.mark.parametrize(
    "damaged",
    [
        {"kind": "running_summary", "summary": "OLD-SUMMARY", "summarized_message_ids": 5},
        {"kind": "running_summary", "summary": "OLD-SUMMARY", "summarized_message_ids": [["h0"]]},
        {"kind": "running_summary", "summary": ["not", "text"], "summarized_message_ids": []},
        {"summary": "OLD-SUMMARY", "summarized_message_ids": "h0", "last_summarized_message_id": 7},
    ],
)
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_damaged_stored_summary_is_skipped_then_replaced(backend, damaged, caplog, request):
    """Written by another program (or an older one): the thread's summarization
    goes on as if there were no stored summary, logs it once, and the next
    summary replaces it."""
    from langmem_ext import SQLiteStore

    caplog.set_level(logging.WARNING, logger="langmem_ext.engine")
    if backend == "sqlite":
        store = SQLiteStore()
    else:
        from langmem_ext.stores.postgres import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_server").fresh_schema())
    request.addfinalizer(store.close)
    store.put(("summaries", "ada"), "t-1", damaged)
    cfg = {"configurable": {"thread_id": "t-1", "user_id": "ada"}}
    model = summarizer("they said hello")
    out = _worker(store, model).invoke({"messages": thread(4), "context": {}}, cfg)
    assert out["context"]["running_summary"].summary == "they said hello"
    assert "OLD-SUMMARY" not in str(model.seen[0])  # started over: nothing damaged was used
    assert store.get(("summaries", "ada"), "t-1").value["summary"] == "they said hello"
    logged = [r for r in caplog.records if "damaged running summary" in r.getMessage()]
    assert len(logged) == 1


def test_a_stored_summary_needs_a_thread_id_and_a_store():
    from langmem_ext import SQLiteStore
    from langmem_ext.errors import ConfigurationError

    graph = _worker(SQLiteStore(), summarizer("x"))
    with pytest.raises(ConfigurationError, match="thread_id"):
        graph.invoke({"messages": thread(4), "context": {}}, {"configurable": {"user_id": "ada"}})
    graph = _worker(None, summarizer("x"))
    with pytest.raises(ConfigurationError, match="needs a store"):
        graph.invoke(
            {"messages": thread(4), "context": {}},
            {"configurable": {"thread_id": "t", "user_id": "ada"}},
        )


def test_every_turn_of_a_long_thread_stays_within_max_tokens():
    # LangMem lets the new messages alone reach max_tokens once a summary
    # exists, so it sends the summary on top of a full budget.
    model = ScriptedExtractionModel([AIMessage(words(8, "s"))] * 50)
    msgs, running, sizes = [], None, []
    for m in thread(30):
        msgs.append(m)
        out = summarize_messages(
            msgs,
            running_summary=running,
            model=model,
            max_tokens=60,
            max_summary_tokens=12,
            token_counter=per_message,
        )
        running = out.running_summary
        sizes.append(per_message(out.messages))
    assert running is not None and max(sizes) <= 60


def test_the_newest_question_is_never_folded_into_the_summary():
    # Only the whole thread reaches the threshold: LangMem summarizes all of
    # it and sends a summary with no question left to answer.
    msgs = [*thread(2), HumanMessage(words(30, "ask"), id="last")]
    out = summarize_messages(
        msgs,
        running_summary=None,
        model=summarizer("what was said"),
        max_tokens=70,
        max_summary_tokens=10,
        token_counter=per_message,
    )
    assert out.running_summary is not None
    assert "last" not in out.running_summary.summarized_message_ids
    assert out.messages[-1].id == "last"


_CHECKPOINTED = """
import logging, sys, warnings
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
warnings.simplefilter("always")
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langmem_ext import RunningSummary, SummarizationNode
from langmem_ext.testing.chat import ScriptedExtractionModel

class State(MessagesState):
    summarized_messages: list
    context: dict

def words(n, w="x"):
    return " ".join([w] * n)

turn = int(sys.argv[2])
msgs = []
for i in range(2 + 2 * turn):
    msgs += [HumanMessage(words(10, f"q{i}"), id=f"h{i}"), AIMessage(words(10), id=f"a{i}")]
node = SummarizationNode(
    model=ScriptedExtractionModel([AIMessage(f"summary {turn}")]),
    max_tokens=50, max_summary_tokens=10,
    token_counter=lambda ms: sum(len(str(m.content).split()) for m in ms),
)
graph = StateGraph(State)
graph.add_node("summarize", node)
graph.add_edge(START, "summarize")
cfg = {"configurable": {"thread_id": "t-1"}}
with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    app = graph.compile(checkpointer=saver)
    if turn > 1:  # the checkpoint of the first process, read back
        before = app.get_state(cfg).values["context"]["running_summary"]
        assert isinstance(before, RunningSummary), type(before)
        assert before.summary == f"summary {turn - 1}", before
    out = app.invoke({"messages": msgs[len(app.get_state(cfg).values.get("messages", [])):]}, cfg)
    summary = out["context"]["running_summary"]
    assert isinstance(summary, RunningSummary) and summary.summary == f"summary {turn}", summary
    print("resumed" if turn > 1 else "saved", summary.summary)
"""


def test_a_checkpointed_thread_resumes_in_another_process_without_a_warning(tmp_path):
    # SummarizationNode keeps a RunningSummary in the state: LangGraph's
    # serializer warned on reading it back ("will be blocked in a future
    # version"), and its strict mode (the future default) blocked it.
    import os
    import subprocess
    import sys

    script = tmp_path / "thread.py"
    script.write_text(_CHECKPOINTED)
    db = str(tmp_path / "checkpoints.db")
    outs = []
    for turn, strict in ((1, "false"), (2, "false"), (3, "true")):
        out = subprocess.run(
            [sys.executable, str(script), db, str(turn)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "LANGGRAPH_STRICT_MSGPACK": strict},
        )
        assert out.returncode == 0, out.stderr
        assert "unregistered type" not in out.stderr, out.stderr
        assert "Blocked deserialization" not in out.stderr, out.stderr
        outs.append(out.stdout.strip())
    assert outs == ["saved summary 1", "resumed summary 2", "resumed summary 3"]
