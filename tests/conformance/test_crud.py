"""Store contract: put / get / delete / list_namespaces / batch semantics."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp


async def test_put_get_roundtrip(make_api):
    api = make_api()
    value = {"content": "likes tea", "n": 3, "nested": {"a": [1, 2, {"b": None}]}, "ok": True}
    await api.put(("user", "u1"), "k1", value)
    item = await api.get(("user", "u1"), "k1")
    assert item.value == value
    assert item.namespace == ("user", "u1")
    assert item.key == "k1"
    assert await api.get(("user", "u1"), "missing") is None
    assert await api.get(("user", "u2"), "k1") is None


async def test_timestamps_are_aware_and_precise(make_api):
    api = make_api()
    await api.put(("a",), "k", {"v": 1})
    item = await api.get(("a",), "k")
    assert isinstance(item.created_at, datetime)
    assert item.created_at.tzinfo is not None
    assert item.updated_at.utcoffset().total_seconds() == 0


async def test_update_keeps_created_at(make_api):
    api = make_api()
    api.need("created_at_preserved")
    await api.put(("a",), "k", {"v": 1})
    first = await api.get(("a",), "k")
    await asyncio.sleep(0.01)
    await api.put(("a",), "k", {"v": 2})
    second = await api.get(("a",), "k")
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    # sub-second precision: two writes 10 ms apart differ
    assert (second.updated_at - first.updated_at).total_seconds() < 5


async def test_delete_and_idempotent_delete(make_api):
    api = make_api()
    await api.put(("a",), "k", {"v": 1})
    await api.delete(("a",), "k")
    assert await api.get(("a",), "k") is None
    await api.delete(("a",), "k")  # unknown key: no error
    assert await api.search(("a",)) == []


async def test_search_scopes_by_namespace_prefix(make_api):
    api = make_api()
    for ns in [("a",), ("a", "b"), ("a", "b", "c"), ("ab",), ("a", "bc"), ("b", "a")]:
        await api.put(ns, "k", {"ns": list(ns)})
    found = {tuple(r.namespace) for r in await api.search(("a",), limit=50)}
    assert found == {("a",), ("a", "b"), ("a", "b", "c"), ("a", "bc")}
    found = {tuple(r.namespace) for r in await api.search(("a", "b"), limit=50)}
    assert found == {("a", "b"), ("a", "b", "c")}
    assert len(await api.search((), limit=50)) == 6


@pytest.mark.parametrize("label", ["us%r", "us_r", "us'r", 'us"r', "us\\r", "u*", "u[1]"])
async def test_special_characters_never_leak(make_api, label):
    api = make_api()
    await api.put((label, "m"), "k", {"who": "special"})
    await api.put(("user", "m"), "k", {"who": "plain"})
    await api.put(("usXr", "m"), "k", {"who": "lookalike"})
    got = await api.search((label,), limit=50)
    assert [r.value["who"] for r in got] == ["special"]
    assert (await api.get((label, "m"), "k")).value == {"who": "special"}
    listed = await api.list_namespaces(prefix=(label,))
    assert listed == [(label, "m")]


async def test_list_namespaces(make_api):
    api = make_api()
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]:
        await api.put(ns, "k", {"v": 1})
    assert await api.list_namespaces() == sorted(
        [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]
    )
    assert await api.list_namespaces(prefix=("a",)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "x"),
    ]
    assert await api.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("z", "b", "c")]
    assert await api.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("z", "b", "c"),
    ]
    assert await api.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z", "b")]
    assert await api.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x")]


async def test_batch_reads_before_writes_and_last_put_wins(make_api):
    api = make_api()
    await api.put(("a",), "k", {"v": 0})
    results = await api.batch(
        [
            PutOp(("a",), "k", {"v": 1}),
            GetOp(("a",), "k"),
            PutOp(("a",), "k", {"v": 2}),
            SearchOp(("a",), None, 10, 0, None),
            ListNamespacesOp(None, None, 10, 0),
        ]
    )
    assert results[0] is None and results[2] is None
    assert results[1].value == {"v": 0}
    assert [r.value for r in results[3]] == [{"v": 0}]
    assert results[4] == [("a",)]
    assert (await api.get(("a",), "k")).value == {"v": 2}


async def test_search_without_query_pages(make_api):
    api = make_api()
    for i in range(25):
        await api.put(("p",), f"k{i:02d}", {"i": i})
    pages = [await api.search(("p",), limit=10, offset=o) for o in (0, 10, 20)]
    assert [len(p) for p in pages] == [10, 10, 5]
    keys = [r.key for p in pages for r in p]
    assert sorted(keys) == [f"k{i:02d}" for i in range(25)]


@pytest.mark.parametrize("namespace", [(), ("",), ("a", ""), ("a.b",), ("a", "b.c")], ids=repr)
async def test_invalid_namespace_is_rejected_and_nothing_changes(make_api, namespace):
    api = make_api()
    await api.put(("a",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await api.put(namespace, "k", {"v": 2})
    assert (await api.get(("a",), "k")).value == {"v": 1}
    assert await api.list_namespaces() == [("a",)]


async def test_invalid_namespace_in_batch_is_rejected(make_api):
    api = make_api()
    api.need("validates_input")
    with pytest.raises(InvalidNamespaceError):
        await api.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("a.b",), "k", {"v": 1})])
    assert await api.get(("ok",), "k") is None
