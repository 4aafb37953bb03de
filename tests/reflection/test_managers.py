"""LangMem's managers over the one memory, and their bad inputs: items written
by the tools, by reflection or by other programs; a template key missing; a
server that rejects every tool shape; updates of unknown ids; memories with
empty content, refused like every other writer refuses them."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from langmem_ext import (
    MemoryEngine,
    SQLiteStore,
    create_manage_memory_tool,
    create_memory_manager,
    create_memory_store_manager,
)
from langmem_ext.errors import ConfigurationError, InvalidValueError
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


class Pref(BaseModel):
    """A structured memory whose fields may all be left out."""

    topic: str | None = None
    note: str | None = None


@pytest.fixture(params=["sqlite", "postgres"])
def both_stores(request):
    if request.param == "sqlite":
        s = SQLiteStore(index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]})
    else:
        from langmem_ext.stores.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_server").fresh_schema())
    yield s
    s.close()


def _everything(store) -> list[tuple]:
    """Every item of every namespace (audit events included)."""
    out = []
    for ns in store.list_namespaces(limit=1000):
        for item in store.search(ns, limit=1000):
            if tuple(item.namespace) == tuple(ns):
                out.append((tuple(item.namespace), item.key, item.value))
    return sorted(out, key=repr)


# (schemas, the memory first stored, what the model then asks for)
EMPTY = {
    "text update to ''": (None, {"content": "Likes tea"}, {"content": ""}),
    "text update to blanks": (None, {"content": "Likes tea"}, {"content": " \n\t"}),
    "text insert of ''": (None, None, {"content": ""}),
    "structured update to {}": ([Pref], {"topic": "tea", "note": "likes it"}, {}),
    "structured update to blanks": (
        [Pref],
        {"topic": "tea", "note": "x"},
        {"topic": "", "note": " "},
    ),
    "structured insert of {}": ([Pref], None, {}),
}


@pytest.mark.parametrize("case", list(EMPTY))
def test_the_store_manager_refuses_empty_content_and_stores_nothing(both_stores, case):
    schemas, first, then = EMPTY[case]
    kind = "Pref" if schemas else "Memory"
    store = both_stores
    seed = ScriptedExtractionModel([_manage({"kind": kind, "content": first})] if first else [])
    made = []
    if first:
        manager = create_memory_store_manager(
            seed, namespace=NS, store=store, schemas=schemas, method="tool"
        )
        made = manager.invoke({"messages": [("user", "hello")]}, ADA)
    before = _everything(store)
    target = {"id": made[0]["key"]} if made else {}
    good = {"kind": kind, "content": {"topic": "chess"} if schemas else {"content": "Plays chess"}}
    model = ScriptedExtractionModel([_manage({**target, "kind": kind, "content": then}, good)])
    manager = create_memory_store_manager(
        model, namespace=NS, store=store, schemas=schemas, method="tool"
    )
    with pytest.raises(InvalidValueError, match="empty") as refused:
        manager.invoke({"messages": [("user", "forget it")]}, ADA)
    assert refused.value.code == "INVALID_VALUE"
    assert _everything(store) == before  # not even the good memory of the same run


def test_a_tool_notes_update_to_empty_text_is_refused_the_same_way(both_stores):
    tool = create_manage_memory_tool(NS, store=both_stores)
    note_id = tool.invoke({"content": "Prefers window seats"}, ADA).split()[-1]
    before = _everything(both_stores)
    model = ScriptedExtractionModel(
        [_manage({"id": note_id, "kind": "Memory", "content": {"content": "  "}})]
    )
    manager = create_memory_store_manager(model, namespace=NS, store=both_stores, method="tool")
    with pytest.raises(InvalidValueError) as refused:
        manager.invoke({"messages": [("user", "hi")]}, ADA)
    assert refused.value.code == "INVALID_VALUE"
    assert _everything(both_stores) == before


def test_the_memory_manager_refuses_empty_content_it_is_given_by_the_model():
    existing = [("m1", "Memory", {"content": "Likes coffee"})]
    for content in ({"content": ""}, {"content": "   "}):
        model = ScriptedExtractionModel(
            [_manage({"id": "m1", "kind": "Memory", "content": content})]
        )
        manager = create_memory_manager(model, method="tool")
        with pytest.raises(InvalidValueError, match="empty") as refused:
            manager.invoke({"messages": [("user", "x")], "existing": existing})
        assert refused.value.code == "INVALID_VALUE"
    model = ScriptedExtractionModel([_manage({"kind": "Pref", "content": {}})])
    with pytest.raises(InvalidValueError, match="empty"):
        create_memory_manager(model, schemas=[Pref], method="tool").invoke({"messages": []})


def test_an_empty_default_memory_is_refused_when_the_manager_is_made():
    with pytest.raises(ConfigurationError, match="is empty"):
        create_memory_store_manager(ScriptedExtractionModel([]), default="  ", namespace=NS)
