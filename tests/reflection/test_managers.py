"""LangMem's managers over the one memory, and their bad inputs: items written
by the tools, by reflection or by other programs; a template key missing; a
server that rejects every tool shape; updates of unknown ids."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from langmem_ext import (
    ConfigurationError,
    MemoryEngine,
    SQLiteStore,
    create_manage_memory_tool,
    create_memory_manager,
    create_memory_store_manager,
)
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings
from tests.reflection.openai_server import LocalChatServer

ADA = {"configurable": {"user_id": "ada"}}
NS = ("memories", "{user_id}")


@pytest.fixture
def store():
    s = SQLiteStore(index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]})
    yield s
    s.close()


def _manage(*items, delete=()):
    args = {"memories": list(items), "delete": list(delete)}
    return AIMessage("", tool_calls=[{"name": "manage_memories", "args": args, "id": "m"}])


def _shown(model) -> str:
    return str(model.seen[-1][-1].content)


def test_store_manager_reads_and_updates_items_of_every_writer(store):
    engine = MemoryEngine(store, namespace=NS)
    fact = engine.add_fact(ADA, "Lives in Berlin", "context", 0.9)
    tool = create_manage_memory_tool(NS, store=store)
    note_id = tool.invoke({"content": "Prefers window seats"}, ADA).split()[-1]
    store.put(("memories", "ada"), "legacy", {"content": "Has a cat", "source": "import"})
    store.put(("memories", "ada"), "bare", {"text": "no content key at all"})
    model = ScriptedExtractionModel(
        [
            lambda msgs: _manage(
                {"id": fact.id, "kind": "Memory", "content": {"content": "Lives in Munich"}},
                {"id": "legacy", "kind": "Memory", "content": {"content": "Has two cats"}},
            )
        ]
    )
    manager = create_memory_store_manager(
        model, namespace=NS, store=store, query_limit=10, method="tool"
    )
    manager.invoke({"messages": [("user", "I moved to Munich and got a second cat")]}, ADA)
    shown = _shown(model)
    for text in ("Lives in Berlin", "Prefers window seats", "Has a cat", "no content key"):
        assert text in shown  # every item, whoever wrote it, was shown
    current = {i.key: i.value for i in store.search(("memories", "ada"), limit=50)}
    # the fact was superseded (a new fact, text content), the old one kept in history
    assert fact.id not in current
    [new] = [v for v in current.values() if v.get("content") == "Lives in Munich"]
    assert new["kind"] == "fact" and new["category"] == "context"
    assert engine.get(ADA, fact.id).validity == "superseded"
    # the legacy item was updated in place, its other keys kept
    assert current["legacy"]["content"] == "Has two cats"
    assert current["legacy"]["source"] == "import"
    # untouched items are unchanged
    assert current[note_id]["content"] == "Prefers window seats"
    assert current["bare"] == {"text": "no content key at all"}
    assert [e.action for e in engine.history(ADA, "legacy")] == ["updated"]


def test_missing_template_key_fails_before_any_model_call(store):
    model = ScriptedExtractionModel([])
    manager = create_memory_store_manager(model, namespace=NS, store=store)
    with pytest.raises(ConfigurationError, match="missing key 'user_id'"):
        manager.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t"}})
    assert model.calls == 0
    assert store.search(()) == []


def test_a_server_without_tools_gets_json_requests(caplog):
    caplog.set_level(logging.WARNING, logger="langmem_ext.agents.reflection")
    reply = {"memories": [{"kind": "Memory", "content": {"content": "Likes tea"}}]}
    with LocalChatServer([reply], tools=False) as server:
        model = ChatOpenAI(base_url=server.base_url, api_key="x", model="local", max_retries=0)
        manager = create_memory_manager(model)
        [memory] = manager.invoke({"messages": [("user", "I like tea")]})
        assert memory.content.content == "Likes tea"
        assert manager.shape == "json"
        assert server.requests[-1]["response_format"] == {"type": "json_object"}
        assert "tools" not in server.requests[-1]
    assert "extracting with JSON output from now on" in caplog.text  # the switch is logged


def test_update_of_an_unknown_id_is_logged_and_kept_as_new(caplog):
    caplog.set_level(logging.INFO, logger="langmem_ext.agents.reflection")
    model = ScriptedExtractionModel(
        [_manage({"id": "nope", "kind": "Memory", "content": {"content": "Likes tea"}})]
    )
    manager = create_memory_manager(model, method="tool")
    existing = [("m1", "Memory", {"content": "Likes coffee"})]
    out = manager.invoke({"messages": [("user", "I like tea")], "existing": existing})
    by_id = {m.id: m.content for m in out}
    assert by_id["m1"] == {"content": "Likes coffee"}  # the existing memory is untouched
    assert [c.content for i, c in by_id.items() if i != "m1"] == ["Likes tea"]
    assert "'nope' is not an existing memory" in caplog.text


def test_deletes_of_unknown_ids_change_nothing(store, caplog):
    caplog.set_level(logging.WARNING, logger="langmem_ext.agents.reflection")
    engine = MemoryEngine(store, namespace=NS)
    fact = engine.add_fact(ADA, "Lives in Berlin", "context", 0.9)
    model = ScriptedExtractionModel([_manage(delete=["not-there"])])
    manager = create_memory_store_manager(
        model, namespace=NS, store=store, enable_deletes=True, method="tool"
    )
    assert manager.invoke({"messages": [("user", "hello")]}, ADA) == []
    assert [i.key for i in store.search(("memories", "ada"))] == [fact.id]
    assert "unknown memory 'not-there'" in caplog.text


def test_invalid_output_is_asked_again_once_then_nothing_changes(store):
    bad = AIMessage("", tool_calls=[{"name": "manage_memories", "args": {"x": 1}, "id": "b"}])
    model = ScriptedExtractionModel([bad, bad])
    manager = create_memory_store_manager(model, namespace=NS, store=store, method="tool")
    with pytest.raises(Exception, match="invalid twice"):
        manager.invoke({"messages": [("user", "I like tea")]}, ADA)
    assert model.calls == 2
    assert "previous answer was invalid" in _shown(model)
    assert store.search(("memories", "ada")) == []


def test_a_cut_off_reply_is_asked_again_for_fewer_memories():
    """The managers read replies as reflection does: a call cut off at the cap,
    which the server reports as a normal tool call, is recognised."""
    args = '{"memories": [{"kind": "Memory", "content": {"content": "Likes te'
    bad = {"name": "manage_memories", "args": args, "id": "b", "error": "bad JSON"}
    cut_off = AIMessage(
        "", invalid_tool_calls=[bad], response_metadata={"finish_reason": "tool_calls"}
    )
    model = ScriptedExtractionModel(
        [cut_off, _manage({"kind": "Memory", "content": {"content": "Likes tea"}})]
    )
    manager = create_memory_manager(model, method="tool", max_tokens=256)
    [memory] = manager.invoke({"messages": [("user", "I like tea")]})
    assert memory.content.content == "Likes tea"
    assert "cut off at the output limit" in _shown(model)


def test_a_memory_with_unfilled_placeholder_text_is_not_kept(caplog):
    caplog.set_level(logging.WARNING, logger="langmem_ext.agents.reflection")
    reply = _manage(
        {"kind": "Memory", "content": {"content": "Lives in <city>"}},
        {"kind": "Memory", "content": {"content": "Likes tea"}},
    )
    manager = create_memory_manager(ScriptedExtractionModel([reply]), method="tool")
    out = manager.invoke({"messages": [("user", "I like tea")]})
    assert [m.content.content for m in out] == ["Likes tea"]
    assert "example text" in caplog.text
