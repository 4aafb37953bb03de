"""What each writer of the concurrent entity test does, importable by the
processes ``multiprocessing`` starts (they run these functions by name)."""

from __future__ import annotations

from typing import Any

from langmem_ext.engine import MemoryContext, MemoryEngine

ADA = MemoryContext("acme", user_id="ada")


def open_store(spec: tuple[str, str]) -> Any:
    kind, where = spec
    if kind == "sqlite":
        from langmem_ext import SQLiteStore

        return SQLiteStore(where)
    from langmem_ext.stores.postgres import PostgresStore

    return PostgresStore(where)


def name_them(store: Any, writer: int, n: int) -> list[str]:
    """``n`` facts about one person, each writer naming her its own way first:
    the ids of the facts acknowledged."""
    engine = MemoryEngine(store)
    names = ["my sister Clara", "Clara", "Clara, my sister", "my sister"]
    out = []
    for i in range(n):
        subject = names[(writer + i) % len(names)]
        fact = engine.store_fact(ADA, subject, f"trait{writer}_{i}", f"Clara trait {writer}.{i}")
        out.append(fact.id)
    return out


def in_process(start: Any, results: Any, spec: tuple[str, str], writer: int, n: int) -> None:
    store = open_store(spec)
    start.wait(60)
    try:
        results.put((writer, name_them(store, writer, n)))
    finally:
        store.close()
