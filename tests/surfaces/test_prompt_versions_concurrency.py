"""Prompt versions under concurrent writers: every save and every optimization
gets a number of its own and stays stored under it (none acknowledged, then
overwritten), with threads, with processes and with coroutines, on SQLite and
on PostgreSQL; and on LangGraph's own stores, which have no conditional write
either."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from langmem_ext import PromptVersions
from tests.surfaces.prompt_workers import (
    ADA,
    NAMESPACE,
    in_process,
    open_store,
    optimize_many,
    save_many,
)


@pytest.fixture(params=["sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Any) -> tuple[str, str]:
    """Where the writers meet: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        spec = ("sqlite", str(tmp_path / "prompts.db"))
    else:
        spec = ("postgres", request.getfixturevalue("pg_server").fresh_schema())
    store = open_store(spec)
    store.setup()
    store.close()
    return spec


def assert_complete(spec: tuple[str, str], acknowledged: list[tuple[Any, str]], total: int) -> None:
    """Every acknowledged version is in the history under its own number."""
    store = open_store(spec)
    try:
        history = PromptVersions(store, namespace=NAMESPACE).history("main", ADA)
    finally:
        store.close()
    numbers = [v["version"] for v in history]
    assert sorted(numbers) == list(range(1, total + 1))  # exact: no gap, no repeat
    texts = {v["prompt"] for v in history}
    lost = [text for _, text in acknowledged if text not in texts]
    assert lost == [], f"{len(lost)} of {len(acknowledged)} acknowledged versions lost"
    by_number = {v["version"]: v["prompt"] for v in history}
    for n, text in acknowledged:
        if isinstance(n, int):  # a save's number; an optimization returns its text
            assert by_number[n] == text


def in_threads(work: Any, writers: int) -> list[Any]:
    start = threading.Barrier(writers)

    def one(w: int) -> list[Any]:
        start.wait(timeout=30)
        return work(w)

    with ThreadPoolExecutor(writers) as pool:
        return [r for f in [pool.submit(one, w) for w in range(writers)] for r in f.result()]


def in_processes(job: str, spec: tuple[str, str], writers: int, n: int) -> list[Any]:
    # Forked from one server that imported the workers once (not a fork of
    # this threaded test process, nor one slow import per process; the model
    # calls import the OpenAI client and tokenizer on first use).
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.surfaces.prompt_workers", "langchain_openai", "tiktoken"])
    start, results = ctx.Barrier(writers), ctx.Queue()
    procs = [
        ctx.Process(target=in_process, args=(start, results, job, spec, f"p{w}", n))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    outs = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    errors = [o for o in outs if isinstance(o, str)]
    assert errors == []
    return [r for o in outs for r in o]


def test_concurrent_saves_in_threads_each_keep_their_version(spec):
    store = open_store(spec)
    try:
        acknowledged = in_threads(lambda w: save_many(store, f"t{w}", 10), 8)
    finally:
        store.close()
    assert len({n for n, _ in acknowledged}) == 80  # no number given twice
    assert_complete(spec, acknowledged, 80)


@pytest.mark.slow
def test_concurrent_saves_in_processes_each_keep_their_version(spec):
    acknowledged = in_processes("save", spec, 4, 20)
    assert len({n for n, _ in acknowledged}) == 80
    assert_complete(spec, acknowledged, 80)


def test_concurrent_async_saves_each_keep_their_version(spec):
    store = open_store(spec)
    prompts = PromptVersions(store, namespace=NAMESPACE)

    async def run() -> list[tuple[int, str]]:
        texts = [f"async save {i}" for i in range(20)]
        numbers = await asyncio.gather(*(prompts.asave("main", t, ADA) for t in texts))
        return list(zip(numbers, texts, strict=True))

    try:
        acknowledged = asyncio.run(run())
    finally:
        store.close()
    assert_complete(spec, acknowledged, 20)


def test_concurrent_saves_on_the_async_postgres_store_each_keep_their_version(pg_server):
    """AsyncPostgresStore merges concurrent calls into shared transactions
    (reads before writes): the numbering holds there too."""
    from langmem_ext.stores.postgres import AsyncPostgresStore

    async def run() -> tuple[list[tuple[int, str]], list[dict[str, Any]]]:
        store = AsyncPostgresStore(pg_server.fresh_schema())
        await store.setup()
        try:
            prompts = PromptVersions(store, namespace=NAMESPACE)
            texts = [f"async save {i}" for i in range(20)]
            numbers = await asyncio.gather(*(prompts.asave("main", t, ADA) for t in texts))
            return list(zip(numbers, texts, strict=True)), await prompts.ahistory("main", ADA)
        finally:
            await store.aclose()

    acknowledged, history = asyncio.run(run())
    by_number = {v["version"]: v["prompt"] for v in history}
    assert sorted(by_number) == list(range(1, 21))
    assert all(by_number[n] == text for n, text in acknowledged)


def test_concurrent_optimizations_in_threads_each_keep_their_version(spec):
    store = open_store(spec)
    try:
        PromptVersions(store, namespace=NAMESPACE).save("main", "You are helpful.", ADA)
        acknowledged = in_threads(lambda w: optimize_many(store, f"t{w}", 4), 6)
    finally:
        store.close()
    assert_complete(spec, [*acknowledged, (1, "You are helpful.")], 25)


@pytest.mark.slow
def test_concurrent_optimizations_in_processes_each_keep_their_version(spec):
    store = open_store(spec)
    try:
        PromptVersions(store, namespace=NAMESPACE).save("main", "You are helpful.", ADA)
    finally:
        store.close()
    acknowledged = in_processes("optimize", spec, 4, 6)
    assert_complete(spec, [*acknowledged, (1, "You are helpful.")], 25)


@pytest.fixture(params=["inmemory", "sqlite", "postgres"])
def langgraph_store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """LangGraph's InMemoryStore, SqliteStore and PostgresStore, shared by threads."""
    if request.param == "inmemory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore()
    elif request.param == "sqlite":
        import sqlite3

        from langgraph.store.sqlite import SqliteStore

        conn = sqlite3.connect(tmp_path / "lg.db", check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA synchronous=OFF")  # a test: no fsync per write
        store = SqliteStore(conn)
        store.setup()
        yield store
        conn.close()
    else:
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        dsn = request.getfixturevalue("pg_server").fresh_schema()
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        with ConnectionPool(dsn, kwargs=kwargs, max_size=8) as pool:
            store = PostgresStore(pool)
            store.setup()
            yield store


def test_concurrent_saves_on_langgraphs_stores_each_keep_their_version(langgraph_store):
    prompts = PromptVersions(langgraph_store, namespace=NAMESPACE)

    def work(w: int) -> list[tuple[int, str]]:
        out = []
        for i in range(10):
            text = f"prompt by t{w}, save {i}"
            try:
                out.append((prompts.save("main", text, ADA), text))
            except RuntimeError:
                # InMemoryStore's search iterates a dict another thread may be
                # growing ("dictionary changed size"): that save failed, and
                # was not acknowledged.
                continue
        return out

    acknowledged = in_threads(work, 8)
    assert len(acknowledged) >= 60
    assert len({n for n, _ in acknowledged}) == len(acknowledged)
    by_number = {v["version"]: v["prompt"] for v in prompts.history("main", ADA)}
    assert all(by_number.get(n) == text for n, text in acknowledged)
