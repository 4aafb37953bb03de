"""``reindex`` on SQLiteStore, PostgresStore and AsyncPostgresStore: items
stored before the store had an embedder are embedded (and opening such a
store says so); a switch to an embedder of another dimension count keeps ids
and timestamps, embeds writes made during the rebuild in the new space and
serves searches throughout; an embedder that fails mid-way leaves the old
space serving, and a rerun resumes."""

from __future__ import annotations

import threading

import pytest

from langmem_ext import SQLiteStore
from langmem_ext.stores import UnembeddedItemsWarning
from tests.embeddings import WordEmbeddings


def _index(dims: int, embed=None) -> dict:
    return {"dims": dims, "embed": embed or WordEmbeddings(dims), "fields": ["content"]}


def test_items_stored_without_an_embedder_are_embedded_and_found(tmp_path):
    path = tmp_path / "memories.db"
    with SQLiteStore(path) as store:
        store.put(("user", "ada"), "m1", {"content": "Allergic to peanuts"})
    with pytest.warns(UnembeddedItemsWarning, match="store.reindex"):
        store = SQLiteStore(path, index=_index(32))
        store.setup()
    assert store.reindex() == {"embedded": 1, "vectors": 1, "dims": 32}
    assert store.search(("user", "ada"), query="peanuts", mode="vector")[0].key == "m1"
    store.close()


def test_switch_to_another_dimension_count_online(tmp_path):
    store = SQLiteStore(tmp_path / "m.db", index=_index(32))
    for i in range(300):
        store.put(("user", "ada"), f"k{i}", {"content": f"note number{i} about topic{i % 7}"})
    before = {i.key: (i.created_at, i.updated_at) for i in store.search(("user",), limit=1000)}
    stop, errors, searches = threading.Event(), [], [0]

    def search_loop() -> None:
        while not stop.is_set():
            try:
                hits = store.search(("user", "ada"), query="number5 topic5", limit=5)
                assert hits and hits[0].key == "k5"
                searches[0] += 1
            except Exception as e:
                errors.append(e)

    reader = threading.Thread(target=search_loop)
    reader.start()
    wrote = []

    def progress(done: int, total: int) -> None:
        if not wrote:  # a write during the rebuild: embedded in both spaces
            store.put(("user", "ada"), "new", {"content": "written during the rebuild"})
            wrote.append(1)

    try:
        out = store.reindex(_index(48), batch_size=50, progress=progress)
    finally:
        stop.set()
        reader.join()
    assert not errors and searches[0] > 0
    assert out["dims"] == 48 and out["vectors"] == 301
    after = {i.key: (i.created_at, i.updated_at) for i in store.search(("user",), limit=1000)}
    assert {k: after[k] for k in before} == before
    assert store.search(("user", "ada"), query="rebuild", mode="vector")[0].key == "new"
    store.close()
    reopened = SQLiteStore(tmp_path / "m.db", index=_index(48))
    assert reopened.search(("user", "ada"), query="number7 topic0", limit=1)[0].key == "k7"
    reopened.close()


class _Words(WordEmbeddings):
    model_id = "words"  # one model, whichever object: a rerun resumes its rebuild


class _Failing(_Words):
    def __init__(self, dims: int, fail_after: int) -> None:
        super().__init__(dims)
        self.left = fail_after

    def embed_documents(self, texts):
        self.left -= 1
        if self.left < 0:
            raise ConnectionError("embedding service went away")
        return super().embed_documents(texts)


def test_a_failure_mid_way_keeps_the_old_space_and_a_rerun_resumes(tmp_path):
    store = SQLiteStore(tmp_path / "m.db", index=_index(32))
    for i in range(200):
        store.put(("user", "ada"), f"k{i}", {"content": f"note number{i}"})
    with pytest.raises(Exception, match="went away"):
        store.reindex(_index(48, _Failing(48, fail_after=2)), batch_size=50)
    assert store.search(("user", "ada"), query="number3", limit=1)[0].key == "k3"  # old space
    assert store._index.dims == 32
    out = store.reindex(_index(48, _Words(48)), batch_size=50)
    assert out["embedded"] == 100 and out["vectors"] == 200  # resumed: 2 of 4 batches were done
    assert store.search(("user", "ada"), query="number3", limit=1)[0].key == "k3"
    store.close()


# -- PostgreSQL ----------------------------------------------------------------


@pytest.fixture
def pg_dsn(pg_server):
    return pg_server.fresh_database()


def test_postgres_items_stored_without_an_embedder_are_embedded(pg_dsn):
    from langmem_ext import PostgresStore

    with PostgresStore(pg_dsn) as store:
        store.put(("user", "ada"), "m1", {"content": "Allergic to peanuts"})
    store = PostgresStore(pg_dsn, index=_index(32))
    with pytest.warns(UnembeddedItemsWarning, match="store.reindex"):
        store.setup()
    assert store.reindex() == {"embedded": 1, "vectors": 1, "dims": 32}
    assert store.search(("user", "ada"), query="peanuts", mode="vector")[0].key == "m1"
    store.close()


@pytest.mark.parametrize("kind", ["exact", "hnsw", "ivf"])
def test_postgres_switch_online_with_searches_and_a_write_during(pg_dsn, kind):
    from langmem_ext import PostgresStore

    vi = {"exact": None, "hnsw": {"kind": "hnsw"}, "ivf": {"kind": "ivf", "lists": 4,
                                                           "train_at": 50}}[kind]  # fmt: skip
    store = PostgresStore(pg_dsn, index=_index(32), **({"vector_index": vi} if vi else {}))
    store.batch(
        [_put(("user", "ada"), f"k{i}", f"note number{i} about topic{i % 7}") for i in range(300)]
    )
    before = {i.key: (i.created_at, i.updated_at) for i in store.search(("user",), limit=1000)}
    stop, errors, searches = threading.Event(), [], [0]

    def search_loop() -> None:
        while not stop.is_set():
            try:
                hits = store.search(("user", "ada"), query="number5 topic5", limit=5)
                assert hits and hits[0].key == "k5"
                searches[0] += 1
            except Exception as e:
                errors.append(e)

    reader = threading.Thread(target=search_loop)
    reader.start()
    wrote: list[int] = []

    def progress(done: int, total: int) -> None:
        if not wrote:
            store.put(("user", "ada"), "new", {"content": "written during the rebuild"})
            wrote.append(1)

    try:
        out = store.reindex(_index(48), batch_size=64, progress=progress)
    finally:
        stop.set()
        reader.join()
    assert not errors and searches[0] > 0
    assert out["dims"] == 48 and out["vectors"] == 301
    after = {i.key: (i.created_at, i.updated_at) for i in store.search(("user",), limit=1000)}
    assert {k: after[k] for k in before} == before
    assert store.search(("user", "ada"), query="rebuild", mode="vector")[0].key == "new"
    store.put(("user", "ada"), "later", {"content": "stored after the switch"})
    assert store.search(("user", "ada"), query="after the switch", limit=1)[0].key == "later"
    store.close()


def test_postgres_a_failure_mid_way_keeps_the_old_space_and_a_rerun_resumes(pg_dsn):
    from langmem_ext import PostgresStore

    store = PostgresStore(pg_dsn, index=_index(32))
    store.batch([_put(("user", "ada"), f"k{i}", f"note number{i}") for i in range(200)])
    with pytest.raises(Exception, match="went away"):
        store.reindex(_index(48, _Failing(48, fail_after=2)), batch_size=50)
    assert store.search(("user", "ada"), query="number3", limit=1)[0].key == "k3"
    out = store.reindex(_index(48, _Words(48)), batch_size=50)
    assert out["embedded"] == 100 and out["vectors"] == 200
    assert store.search(("user", "ada"), query="number3", limit=1)[0].key == "k3"
    store.close()


# -- AsyncPostgresStore: the same rebuild, awaited ---------------------------------


@pytest.mark.parametrize("kind", ["exact", "hnsw", "ivf"])
async def test_async_postgres_switch_online_with_searches_and_a_write_during(pg_dsn, kind):
    """The sync test above, on AsyncPostgresStore: searches from another task
    never fail, a write made during the rebuild lands in the new space, ids
    and timestamps are kept, and writes after the switch use the new embedder."""
    import asyncio

    from langmem_ext import AsyncPostgresStore

    vi = {"exact": None, "hnsw": {"kind": "hnsw"}, "ivf": {"kind": "ivf", "lists": 4,
                                                           "train_at": 50}}[kind]  # fmt: skip
    store = AsyncPostgresStore(pg_dsn, index=_index(32), **({"vector_index": vi} if vi else {}))
    async with store:
        await store.abatch(
            [_put(("user", "ada"), f"k{i}", f"note number{i} about topic{i % 7}")
             for i in range(300)]
        )  # fmt: skip
        before = {
            i.key: (i.created_at, i.updated_at) for i in await store.asearch(("user",), limit=1000)
        }
        stop, errors, searches = asyncio.Event(), [], [0]

        async def search_loop() -> None:
            while not stop.is_set():
                try:
                    hits = await store.asearch(("user", "ada"), query="number5 topic5", limit=5)
                    assert hits and hits[0].key == "k5"
                    searches[0] += 1
                except Exception as e:
                    errors.append(e)
                await asyncio.sleep(0)

        reader = asyncio.create_task(search_loop())
        progressed: list[tuple[int, int]] = []

        def progress(done: int, total: int) -> None:
            progressed.append((done, total))

        async def write_during() -> None:
            # Once the first batch is in the new space, a write from another task.
            while not progressed:
                await asyncio.sleep(0.001)
            await store.aput(("user", "ada"), "new", {"content": "written during the rebuild"})

        writer = asyncio.create_task(write_during())
        try:
            out = await store.reindex(_index(48), batch_size=64, progress=progress)
        finally:
            stop.set()
            await reader
        await writer
        assert not errors and searches[0] > 0
        assert progressed[-1] == (300, 300) and len(progressed) > 2
        assert out["dims"] == 48 and out["vectors"] == 301
        assert store._index.dims == 48 and store._next is None
        after = {
            i.key: (i.created_at, i.updated_at) for i in await store.asearch(("user",), limit=1000)
        }
        assert {k: after[k] for k in before} == before
        hits = await store.asearch(("user", "ada"), query="rebuild", mode="vector")
        assert hits[0].key == "new"
        await store.aput(("user", "ada"), "later", {"content": "stored after the switch"})
        hits = await store.asearch(("user", "ada"), query="after the switch", limit=1)
        assert hits[0].key == "later"
    # Another process opening the store with the new embedder finds the new space.
    async with AsyncPostgresStore(pg_dsn, index=_index(48)) as reopened:
        hits = await reopened.asearch(("user", "ada"), query="number7 topic0", limit=1)
        assert hits[0].key == "k7"


async def test_async_postgres_a_failure_mid_way_keeps_the_old_space_and_a_rerun_resumes(pg_dsn):
    from langmem_ext import AsyncPostgresStore

    async with AsyncPostgresStore(pg_dsn, index=_index(32)) as store:
        await store.abatch([_put(("user", "ada"), f"k{i}", f"note number{i}") for i in range(200)])
        with pytest.raises(Exception, match="went away"):
            await store.areindex(_index(48, _Failing(48, fail_after=2)), batch_size=50)
        assert store._next is None  # the failed job cleaned up: writes embed once again
        assert store._index.dims == 32
        hits = await store.asearch(("user", "ada"), query="number3", limit=1)
        assert hits[0].key == "k3"  # the old space still serves
        out = await store.areindex(_index(48, _Words(48)), batch_size=50)
        assert out == {"embedded": 100, "vectors": 200, "dims": 48}  # resumed: 2 of 4 batches
        hits = await store.asearch(("user", "ada"), query="number3", limit=1)
        assert hits[0].key == "k3"


async def test_async_postgres_items_stored_without_an_embedder_are_embedded(pg_dsn):
    from langmem_ext import AsyncPostgresStore

    async with AsyncPostgresStore(pg_dsn) as store:
        await store.aput(("user", "ada"), "m1", {"content": "Allergic to peanuts"})
    store = AsyncPostgresStore(pg_dsn, index=_index(32))
    with pytest.warns(UnembeddedItemsWarning, match="store.reindex"):
        await store.setup()
    assert await store.reindex() == {"embedded": 1, "vectors": 1, "dims": 32}
    hits = await store.asearch(("user", "ada"), query="peanuts", mode="vector")
    assert hits[0].key == "m1"
    await store.aclose()


def _put(ns, key, text):
    from langgraph.store.base import PutOp

    return PutOp(ns, key, {"content": text})


def test_an_erase_during_a_rebuild_removes_the_new_space_vectors_too(tmp_path, pg_dsn):
    """Items erased while a reindex is half done: their new-space vectors
    (beside the old ones) go with them, and the resumed rebuild finishes."""
    from langmem_ext import PostgresStore

    sqlite = SQLiteStore(tmp_path / "m.db", index=_index(32))
    pg = PostgresStore(pg_dsn, index=_index(32))
    for store in (sqlite, pg):
        store.batch(
            [_put(("user", who), f"{who}{i}", f"{who} note {i}") for who in ("ada", "bob")
             for i in range(100)]
        )  # fmt: skip
        with pytest.raises(Exception, match="went away"):
            store.reindex(_index(48, _Failing(48, fail_after=2)), batch_size=50)
        store.purge([("user", "ada")])
        assert _orphans(store, pg_dsn) == 0  # no new-space vector of an erased item left
        out = store.reindex(_index(48, _Words(48)), batch_size=50)
        assert out["vectors"] == 100  # Bob's only
        assert store.search(("user", "ada"), limit=10) == []
        assert store.search(("user", "bob"), query="bob note 7", limit=1)[0].key == "bob7"
        store.close()


def _orphans(store, dsn) -> int:
    sql = "SELECT count(*) FROM {} n WHERE NOT EXISTS (SELECT 1 FROM {} i WHERE i.id = n.item_id)"
    if isinstance(store, SQLiteStore):
        return store._connect().execute(sql.format("vectors_next", "items")).fetchone()[0]
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(sql.format("lmx_vectors_next", "lmx_items")).fetchone()[0]
