"""AsyncPostgresStore: concurrent calls merged into shared batches, LangGraph's
call shapes (from_conn_string, awaitable setup and TTL sweeper)."""

from __future__ import annotations

import asyncio
import math

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_ext.errors import InvalidEmbeddingError, InvalidValueError
from langmem_ext.stores.postgres import AsyncPostgresStore
from tests.embeddings import WordEmbeddings


@pytest.fixture
def dsn(pg_server):
    return pg_server.fresh_schema()


class Counting(AsyncPostgresStore):
    """Counts the merged batches that reach the database."""

    batches: list[int]

    async def _abatch_now(self, ops):  # type: ignore[override]
        self.batches.append(len(ops))
        return await super()._abatch_now(ops)


async def test_thousands_of_concurrent_calls_share_few_batches(dsn):
    store = Counting(dsn, pool_config={"max_size": 2})
    store.batches = []
    async with store:
        n = 3000
        puts = [store.aput(("user", f"u{i % 50}"), f"k{i}", {"i": i, "b": i % 3}) for i in range(n)]
        assert await asyncio.gather(*puts) == [None] * n
        assert len(store.batches) <= 4  # the pool has 2 connections, not one per call
        store.batches.clear()
        reads = []
        for i in range(n):
            ns = ("user", f"u{i % 50}")
            reads.append(store.aget(ns, f"k{i}"))
            reads.append(store.asearch(ns, filter={"b": i % 3}, limit=100))
        out = await asyncio.gather(*reads)
        assert len(store.batches) <= 4
        for i in range(n):
            item, page = out[2 * i], out[2 * i + 1]
            assert item.value == {"i": i, "b": i % 3}
            expected = {f"k{j}" for j in range(n) if j % 50 == i % 50 and j % 3 == i % 3}
            assert {r.key for r in page} == expected
            assert all(r.namespace == ("user", f"u{i % 50}") for r in page)
        # Repeated reads are answered once; each caller still gets its own list.
        first, second = await asyncio.gather(
            store.asearch(("user", "u1"), limit=5), store.asearch(("user", "u1"), limit=5)
        )
        assert first == second and first is not second


async def test_a_bad_call_fails_alone(dsn):
    """One caller's bad input (here a vector the embedder returns with NaN, a
    failure only the batch can see) fails that caller only; the others' writes
    in the same merged batch are applied."""

    class Poisoned(WordEmbeddings):
        def _embed(self, text: str) -> list[float]:
            v = super()._embed(text)
            if "poison" in text:
                v[0] = math.nan
            return v

    index = {"dims": 16, "embed": Poisoned(16), "fields": ["text"]}
    async with AsyncPostgresStore.from_conn_string(dsn, index=index) as store:
        calls = [store.aput(("u",), f"k{i}", {"text": f"apple {i}"}) for i in range(20)]
        calls.insert(7, store.aput(("u",), "bad", {"text": "poison apple"}))
        calls.insert(3, store.aput(("u",), "nul", {"text": "a\x00b"}))
        out = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(out[3], InvalidValueError) and "NUL" in str(out[3])
        assert isinstance(out[8], InvalidEmbeddingError) and "poison apple" in str(out[8])
        assert sum(r is None for r in out) == 20
        assert await store.aget(("u",), "bad") is None
        assert len(await store.asearch(("u",), limit=50)) == 20


async def test_listing_searches_of_one_shape_run_together(dsn):
    """Searches without a query, merged into one statement per filter shape,
    give each caller exactly its own page (namespace, filter, limit, offset)."""
    async with AsyncPostgresStore.from_conn_string(dsn) as store:
        ops = [
            PutOp(("t", f"n{i % 4}"), f"k{i}", {"i": i, "s": f"v{i % 5}", "big": 2**70 + i})
            for i in range(40)
        ]
        await store.abatch(ops)
        cases = [
            (("t", "n1"), {"i": {"$gte": 10}}, 3, 1),
            (("t", "n2"), {"i": {"$gte": 2.5}}, 10, 0),  # a float where the other has an int
            (("t", "n3"), {"s": "v3"}, 10, 0),
            (("t", "n0"), {"s": "v0"}, 10, 2),
            (("t", "n1"), {"i": {"$gt": 20}}, 10, 0),
            (("t", "n2"), None, 2, 0),
            (("t",), {"s": "v1"}, 10, 0),
        ]
        got = await store.abatch([SearchOp(ns, flt, lim, off) for ns, flt, lim, off in cases])
        for (ns, flt, lim, off), page in zip(cases, got, strict=True):
            alone = await store.asearch(ns, filter=flt, limit=lim, offset=off)
            assert [r.key for r in page] == [r.key for r in alone]
            assert all(r.namespace[: len(ns)] == ns for r in page)
        assert [r.key for r in got[4]] == ["k21", "k25", "k29", "k33", "k37"][::-1]


async def test_langgraph_call_shapes(dsn):
    async with AsyncPostgresStore.from_conn_string(
        dsn,
        pipeline=True,
        pool_config={"min_size": 1, "max_size": 3},
        ttl={"default_ttl": 0.002, "sweep_interval_minutes": 0.002},
    ) as store:
        await store.setup()  # awaitable, idempotent
        await store.aput(("a",), "k", {"v": 1})
        task = await store.start_ttl_sweeper()
        assert isinstance(task, asyncio.Task)
        for _ in range(100):  # expires in 0.12 s, swept every 0.12 s
            await asyncio.sleep(0.05)
            if await store.sweep_ttl() == 0 and not await store.asearch(("a",), refresh_ttl=False):
                break
        assert await store.aget(("a",), "k") is None
        assert await store.stop_ttl_sweeper(timeout=5)
        assert task.done()
    # Sync calls work from a worker thread (and share the database).
    store = AsyncPostgresStore(dsn)
    async with store:
        await asyncio.to_thread(store.put, ("b",), "k", {"v": 2})
        assert (await store.aget(("b",), "k")).value == {"v": 2}
        assert (await store.abatch([GetOp(("b",), "k")]))[0].value == {"v": 2}


async def test_wrong_inputs_are_clear_errors(dsn):
    with pytest.raises(ValueError, match="conn must be"):
        AsyncPostgresStore(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pool_config"):
        AsyncPostgresStore(dsn, pool_config={"max_sise": 3})
    with pytest.raises(ValueError, match="pipeline"):
        AsyncPostgresStore(dsn, pipeline="yes")  # type: ignore[arg-type]
    async with AsyncPostgresStore.from_conn_string(dsn) as store:
        with pytest.raises(InvalidValueError, match="list of operations"):
            await store.abatch(5)  # type: ignore[arg-type]
