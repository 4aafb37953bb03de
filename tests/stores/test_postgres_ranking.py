"""PostgresStore keyword ranking: each query word weighted by its inverse
document frequency over the searched scope (BM25's IDF), as FTS5 does for
SQLiteStore, so a word most items share counts less than a rare one."""

from __future__ import annotations

import psycopg
import pytest
from langgraph.store.base import PutOp

from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from tests.embeddings import WordEmbeddings

NS = ("people",)
# "caroline" is in 5 of the 7 items (twice in "twice"), "kayak" and "paint"
# in one each.
ITEMS = {
    "twice": "Caroline talked with Caroline about music",
    "kayak": "Melanie bought a kayak for summer",
    "paint": "Melanie paints sunsets near lakes",
    "hike": "Caroline went hiking last spring",
    "books": "Caroline reads old books",
    "guitar": "Caroline plays guitar at night",
    "dance": "Caroline loves dancing",
}
KEYWORD = {"fields": ["text"], "cache": False}


@pytest.fixture
def dsn(pg_server):
    return pg_server.fresh_schema()


def put_items(store, namespace=NS, items=ITEMS):
    store.batch([PutOp(namespace, k, {"text": t}) for k, t in items.items()])


def ranking(store, query, namespace=NS, mode="keyword"):
    return [(r.key, r.score) for r in store.search(namespace, query=query, mode=mode, limit=50)]


def assert_same(got, expected):
    """Same keys in the same order, same scores (up to float rounding)."""
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])


def test_a_rare_word_outweighs_a_common_one(dsn):
    # ts_rank alone puts "twice" first: it matches "caroline" twice.
    with PostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        put_items(store)
        got = ranking(store, "caroline kayak")
        assert got[0] == ("kayak", 1.0)
        assert got[1][0] == "twice"
        assert {k for k, s in got if s is not None} == set(ITEMS) - {"paint"}


def test_document_counts_come_from_the_searched_scope(dsn):
    with PostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        put_items(store)
        alone = ranking(store, "caroline kayak")
        # kayaks everywhere else: the whole store finds "kayak" common...
        put_items(store, ("other",), {f"k{i}": f"kayak trip {i}" for i in range(20)})
        put_items(store, ("people-archive",), {f"a{i}": f"kayak {i}" for i in range(5)})
        assert ranking(store, "caroline kayak", ())[0][0] == "twice"
        # ...the namespace, its own items only (a sibling prefix is not inside).
        assert_same(ranking(store, "caroline kayak"), alone)
        # Items below the namespace are part of its scope.
        put_items(store, (*NS, "sub"), {f"s{i}": f"kayak lesson {i}" for i in range(20)})
        assert ranking(store, "caroline kayak")[0][0] == "twice"


def test_deleted_expired_and_unindexed_items_do_not_count(dsn):
    extra = {f"x{i}": f"a long kayak story number {i} told at length" for i in range(8)}
    with PostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        put_items(store)
        expected = ranking(store, "caroline kayak")
        other = ("people2",)
        put_items(store, other)
        put_items(store, other, extra)
        # no keyword text: never a keyword result, never a document
        store.batch([PutOp(other, f"u{i}", {"text": "kayak"}, index=False) for i in range(9)])
        assert ranking(store, "caroline kayak", other)[0][0] == "twice"  # kayak is common
        store.batch([PutOp(other, k, None) for k in list(extra)[:4]])
        with psycopg.connect(dsn, autocommit=True) as conn:
            # expired, not yet swept: still in the table, never a result, not counted
            conn.execute(
                "UPDATE lmx_items SET expires_at = now() - interval '1 minute' WHERE key = ANY(%s)",
                [list(extra)[4:]],
            )
        got = ranking(store, "caroline kayak", other)
        assert [k for k, _ in got if k[0] == "u"] == []
        assert_same([r for r in got if r[0] in ITEMS], expected)


def test_stemmed_repeats_and_stop_words_count_once_or_not_at_all(dsn):
    with PostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        put_items(store)
        plain = ranking(store, "paint kayak")
        assert {k for k, s in plain if s is not None} == {"paint", "kayak"}
        # "painting" and "paints" stem to "paint": weighed once, not three times
        assert_same(ranking(store, "painting paints kayak"), plain)
        # "now" is a stop word of PostgreSQL's english configuration only
        assert_same(ranking(store, "now paint kayak"), plain)
        # only stop words: nothing to match, so no keyword result
        assert ranking(store, "the and of") == []
        # a word the parser splits is one phrase query
        store.put(NS, "snake", {"text": "variables in snake_case"})
        assert ranking(store, "snake_case")[0] == ("snake", 1.0)


def test_long_queries(dsn):
    """The statement does not grow with the query: thousands of words neither
    exhaust PostgreSQL's stack nor its planner."""
    with PostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        put_items(store)
        words = " ".join(f"w{i}" for i in range(3000))
        got = ranking(store, f"{words} kayak caroline")
        assert got[0][0] == "kayak"


def test_hybrid_fuses_the_idf_keyword_score(dsn):
    index = {"dims": 64, "embed": WordEmbeddings(), "fields": ["text"], "cache": False}
    with PostgresStore.from_conn_string(dsn, index=index) as store:
        put_items(store)
        query = "caroline kayak"
        kw = dict(ranking(store, query))
        cos = dict(ranking(store, query, mode="vector"))
        lo, hi = min(cos.values()), max(cos.values())
        for key, score in ranking(store, query, mode="hybrid"):
            vn = (cos[key] - lo) / (hi - lo)
            assert score == pytest.approx(0.5 * vn + 0.5 * kw.get(key, 0.0))


async def test_async_store_ranks_the_same(dsn):
    with PostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        put_items(store)
        expected = ranking(store, "caroline kayak")
    async with AsyncPostgresStore.from_conn_string(dsn, index=KEYWORD) as store:
        got = await store.asearch(NS, query="caroline kayak", mode="keyword", limit=50)
        assert_same([(r.key, r.score) for r in got], expected)
        assert got[0].key == "kayak"
