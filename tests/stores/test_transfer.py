"""Import and export through Python (``langmem_ext.stores.transfer``): one
transaction on the package's stores, the search index kept in step, exports in
namespace and key order, and LangGraph's own stores written through their API."""

from __future__ import annotations

import io
import json

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore
from langmem_ext.errors import InvalidValueError
from langmem_ext.stores.postgres import PostgresStore
from langmem_ext.stores.transfer import export_jsonl, import_jsonl
from tests.embeddings import WordEmbeddings


def _line(ns: str, key: str, content: str, **extra) -> str:
    return json.dumps(
        {"namespace": ["user", ns], "key": key, "value": {"content": content}, **extra}
    )


def test_imported_items_are_found_by_vector_search_of_a_loaded_index():
    store = SQLiteStore(index={"dims": 16, "embed": WordEmbeddings(16), "fields": ["content"]})
    store.put(("user", "ada"), "old", {"content": "likes green tea"})
    assert store.search(("user",), query="tea", mode="vector")  # the vector index is loaded
    lines = [_line("ada", f"k{i}", f"plays violin number {i}") for i in range(700)]
    assert import_jsonl(store, lines).created == 700
    hits = store.search(("user",), query="violin", mode="vector", limit=3)
    assert {h.key for h in hits} <= {f"k{i}" for i in range(700)} and len(hits) == 3


def test_a_later_line_for_the_same_item_wins():
    store = SQLiteStore()
    report = import_jsonl(store, [_line("ada", "k", "first"), _line("ada", "k", "second")])
    assert (report.imported, report.created) == (1, 1)
    assert store.get(("user", "ada"), "k").value == {"content": "second"}


def test_exports_list_items_by_namespace_and_key():
    store = SQLiteStore()
    for ns, key in [("bob", "b"), ("ada", "z"), ("ada", "a")]:
        store.put(("user", ns), key, {"content": key})
    store.put(("user", "ada", "x"), "k", {"content": "k"})
    out = io.StringIO()
    export_jsonl(store, out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["namespace"], r["key"]) for r in rows] == [
        (["user", "ada"], "a"),
        (["user", "ada"], "z"),
        (["user", "ada", "x"], "k"),
        (["user", "bob"], "b"),
    ]
    scoped = io.StringIO()
    assert export_jsonl(store, scoped, ("user", "ada")) == 3


def test_langgraph_stores_are_written_through_their_api():
    store = InMemoryStore()
    report = import_jsonl(store, [_line("ada", "k", "tea"), "{oops"], skip_bad=True)
    assert (report.imported, report.timestamps_restored) == (1, False)
    assert report.bad[0][0] == 2
    with pytest.raises(InvalidValueError, match="line 2"):
        import_jsonl(store, [_line("ada", "j", "tea"), "{oops"])
    assert store.get(("user", "ada"), "j") is None


LONG_TEXT = " ".join(f"w{i:07d}" for i in range(150_000))  # too long for a tsvector


def test_a_line_postgres_refuses_only_when_writing_is_named_and_rolls_back_all(pg_server):
    lines = [
        _line("ada", f"k{i}", f"fact {i}", created_at="2020-01-01T00:00:00+00:00")
        for i in range(600)
    ]
    lines.insert(549, _line("ada", "long", LONG_TEXT))
    with PostgresStore.from_conn_string(pg_server.fresh_schema()) as store:
        with pytest.raises(InvalidValueError, match=r"line 550: .*keyword index") as info:
            import_jsonl(store, lines)
        assert info.value.details["lines"] == [550]
        assert store.search(("user",), limit=1) == []  # the first batch is gone too
        report = import_jsonl(store, lines, skip_bad=True)
        assert report.imported == 600 and [n for n, _ in report.bad] == [550]
        item = store.get(("user", "ada"), "k0")
        assert item.created_at.year == 2020  # timestamps restored in the same transaction


def test_the_async_postgres_store_exports_and_imports_in_one_transaction(pg_server):
    from langmem_ext.stores.postgres import AsyncPostgresStore

    lines = [_line("ada", f"k{i}", f"fact {i}", ttl=60, indexed=False) for i in range(520)]
    lines.append(_line("ada", "bad", "a\x00b"))
    store = AsyncPostgresStore(pg_server.fresh_schema())
    try:
        with pytest.raises(InvalidValueError, match=r"line 521: .*NUL"):
            import_jsonl(store, lines)
        assert store.search(("user",), limit=1) == []
        assert import_jsonl(store, lines, skip_bad=True).imported == 520
        out = io.StringIO()
        assert export_jsonl(store, out) == 520
        first = json.loads(out.getvalue().split("\n")[0])
        assert (first["key"], first["ttl"], first["indexed"]) == ("k0", 60.0, False)
    finally:
        store.close()


def test_a_store_partitioned_by_tenant_imports_and_exports(pg_server):
    """Import into a store refusing unknown tenants: the line naming one
    fails the import whole; once the tenant is added, it all lands, with its
    timestamps, and exports in order."""
    lines = [
        _line("ada", f"k{i}", f"fact {i}", created_at="2020-01-01T00:00:00+00:00")
        for i in range(30)
    ]
    lines.append(json.dumps({"namespace": ["acme", "bob"], "key": "k", "value": {"content": "x"}}))
    dsn = pg_server.fresh_schema()
    with PostgresStore.from_conn_string(
        dsn, partition_by_tenant="refuse", tenant_key=("{tenant}",)
    ) as store:
        store.add_tenant("user")
        with pytest.raises(InvalidValueError, match="tenant 'acme'"):
            import_jsonl(store, lines)
        assert store.search(("user",), limit=1) == []
        store.add_tenant("acme")
        assert import_jsonl(store, lines).imported == 31
        assert store.get(("user", "ada"), "k0").created_at.year == 2020
        out = io.StringIO()
        assert export_jsonl(store, out) == 31
        assert json.loads(out.getvalue().split("\n")[0])["namespace"] == ["acme", "bob"]
