"""SQLiteStore inside a real LangGraph graph (sync and async)."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from langmem_ext import SQLiteStore
from tests.embeddings import WordEmbeddings


class State(TypedDict):
    text: str
    found: list[str]


class Ctx(TypedDict):
    user_id: str


def remember(state: State, runtime: Runtime[Ctx]) -> dict:
    ns = ("user", runtime.context["user_id"], "memories")
    n = len(runtime.store.search(ns, limit=100))
    runtime.store.put(ns, f"m{n}", {"text": state["text"]})
    return {}


def recall(state: State, runtime: Runtime[Ctx]) -> dict:
    ns = ("user", runtime.context["user_id"], "memories")
    hits = runtime.store.search(ns, query=state["text"], limit=5)
    return {"found": [h.value["text"] for h in hits]}


async def arecall(state: State, runtime: Runtime[Ctx]) -> dict:
    ns = ("user", runtime.context["user_id"], "memories")
    hits = await runtime.store.asearch(ns, query=state["text"], limit=5)
    return {"found": [h.value["text"] for h in hits]}


def _graph(store: SQLiteStore, recall_node):
    g = StateGraph(State, context_schema=Ctx)
    g.add_node("remember", remember)
    g.add_node("recall", recall_node)
    g.add_edge(START, "remember")
    g.add_edge("remember", "recall")
    g.add_edge("recall", END)
    return g.compile(store=store)


def test_graph_uses_the_store_per_user(tmp_path):
    store = SQLiteStore(tmp_path / "g.db", index={"dims": 32, "embed": WordEmbeddings(32)})
    graph = _graph(store, recall)
    graph.invoke({"text": "likes green tea", "found": []}, context={"user_id": "ada"})
    out = graph.invoke({"text": "tea", "found": []}, context={"user_id": "ada"})
    assert "likes green tea" in out["found"]
    other = graph.invoke({"text": "tea", "found": []}, context={"user_id": "bob"})
    assert other["found"] == ["tea"]  # bob only sees his own memory
    store.close()


async def test_graph_async(tmp_path):
    store = SQLiteStore(tmp_path / "g.db", index={"dims": 32, "embed": WordEmbeddings(32)})
    graph = _graph(store, arecall)
    await graph.ainvoke({"text": "plays the cello", "found": []}, context={"user_id": "ada"})
    out = await graph.ainvoke({"text": "cello", "found": []}, context={"user_id": "ada"})
    assert set(out["found"]) == {"cello", "plays the cello"}
    await store.aclose()
