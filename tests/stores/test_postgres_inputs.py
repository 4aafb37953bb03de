"""PostgresStore hardening: bad input is a clear, non-retryable error raised
before any SQL (or classified by SQLSTATE when only the server can see it);
poisoned vectors are never stored; the test server says it is not durable."""

from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest

from langmem_ext.errors import (
    ConfigurationError,
    InvalidEmbeddingError,
    InvalidValueError,
    LangmemError,
    StoreError,
    StoreUnavailableError,
)
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from langmem_ext.stores.postgres._errors import translate
from tests.embeddings import WordEmbeddings


@pytest.fixture
def dsn(pg_server):
    return pg_server.fresh_schema()


class Poisoned(WordEmbeddings):
    """NaN for texts containing 'poison', inf for 'infinite'."""

    def _embed(self, text: str) -> list[float]:
        v = super()._embed(text)
        if "poison" in text:
            v[3] = math.nan
        if "infinite" in text:
            v[0] = math.inf
        return v


@pytest.mark.parametrize("word", ["poison", "infinite"])
def test_non_finite_vector_is_refused_naming_the_text(dsn, word):
    index = {"dims": 16, "embed": Poisoned(16), "fields": ["text"]}
    with PostgresStore.from_conn_string(dsn, index=index) as store:
        store.put(("u",), "ok", {"text": "good apples"})
        with pytest.raises(InvalidEmbeddingError, match=f"a {word} apple"):
            store.put(("u",), "bad", {"text": f"a {word} apple"})
        assert store.get(("u",), "bad") is None
        with psycopg.connect(dsn) as conn:
            cached = conn.execute("SELECT count(*) FROM lmx_embedding_cache").fetchone()[0]
        assert cached == 1  # only the good text
        for mode in ("hybrid", "vector"):
            got = store.search(("u",), query="apples", mode=mode)
            assert [r.key for r in got] == ["ok"] and all(math.isfinite(r.score) for r in got)
        with pytest.raises(InvalidEmbeddingError):
            store.search(("u",), query=f"{word} query")


def test_bad_cached_vectors_are_replaced(dsn):
    index = {"dims": 16, "embed": WordEmbeddings(16), "fields": ["text"]}
    with PostgresStore.from_conn_string(dsn, index=index) as store:
        store.put(("u",), "a", {"text": "red fox"})
    with psycopg.connect(dsn) as conn:  # a row a release without validation could write
        conn.execute("UPDATE lmx_embedding_cache SET embedding = array_fill('NaN'::real, '{16}')")
    emb = WordEmbeddings(16)
    with PostgresStore.from_conn_string(dsn, index={**index, "embed": emb}) as store:
        store.put(("u",), "a", {"text": "red fox"})
        assert emb.calls == 1  # the NaN row was not used: embedded again...
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT embedding FROM lmx_embedding_cache").fetchall()
        assert all(np.isfinite(np.asarray(r[0])).all() for r in rows)  # ...and replaced
        got = store.search(("u",), query="red fox", mode="vector")
        assert got[0].key == "a" and math.isfinite(got[0].score)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put(("u",), "k", {"text": "a\x00b"}),
        lambda s: s.put(("u",), "k", {"a\x00": 1}),
        lambda s: s.put(("u",), "k\x00", {"v": 1}),
        lambda s: s.put(("u\x00",), "k", {"v": 1}),
        lambda s: s.get(("u",), "k\x00"),
        lambda s: s.get(("u\x00",), "k"),
        lambda s: s.search(("u\x00",)),
        lambda s: s.search(("u",), filter={"v": "a\x00"}),
        lambda s: s.search(("u",), filter={"v\x00": 1}),
        lambda s: s.list_namespaces(prefix=("u\x00",)),
    ],
    ids=[
        "value",
        "value-key",
        "key",
        "label",
        "get-key",
        "get-label",
        "search-label",
        "filter-operand",
        "filter-field",
        "list-prefix",
    ],
)
def test_nul_is_a_clear_input_error_before_any_sql(dsn, call):
    with PostgresStore.from_conn_string(dsn, pool_config={"max_size": 1}) as store:
        store.put(("u",), "k", {"v": 1})
        with pytest.raises(InvalidValueError, match="NUL") as info:
            call(store)
        assert not info.value.retryable
        assert store.get(("u",), "k").value == {"v": 1}  # the connection is fine


def test_nul_in_a_query_separates_words_as_on_sqlite(dsn):
    # Only a query's words reach the server, so PostgreSQL answers it as SQLite does.
    with PostgresStore.from_conn_string(dsn) as store:
        store.put(("u",), "k", {"text": "green tea"})
        assert [r.key for r in store.search(("u",), query="green\x00tea")] == ["k"]


def test_tsvector_too_long_is_a_non_retryable_input_error(dsn):
    text = " ".join(f"w{i:07d}" for i in range(150_000))  # > 1 MB of distinct lexemes
    with PostgresStore.from_conn_string(dsn) as store:
        store.put(("u",), "ok", {"v": 1})
        with pytest.raises(InvalidValueError, match="keyword index") as info:
            store.put(("u",), "long", {"text": text})
        assert not info.value.retryable and info.value.details["sqlstate"] == "54000"
        assert store.get(("u",), "long") is None
        store.put(("u",), "long", {"text": text}, index=False)  # the advice works
        assert store.get(("u",), "long") is not None


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        (
            psycopg.errors.ProgramLimitExceeded("string is too long for tsvector"),
            InvalidValueError,
            False,
        ),
        (psycopg.errors.InvalidTextRepresentation("bad input"), InvalidValueError, False),
        (psycopg.errors.UniqueViolation("duplicate"), InvalidValueError, False),
        (psycopg.errors.AdminShutdown("terminating connection"), StoreUnavailableError, True),
        (psycopg.errors.TooManyConnections("too many clients"), StoreUnavailableError, True),
        (psycopg.errors.DeadlockDetected("deadlock"), StoreUnavailableError, True),
        (psycopg.errors.SerializationFailure("could not serialize"), StoreUnavailableError, True),
        (psycopg.OperationalError("server closed the connection"), StoreUnavailableError, True),
        (psycopg.errors.UndefinedTable("no such table"), StoreError, False),
    ],
    ids=repr,
)
def test_errors_are_classified_by_sqlstate_class(error, kind, retryable):
    out = translate(error, "a batch")
    assert type(out) is kind and out.retryable is retryable


def test_dropped_connection_is_retryable(pg_server, dsn):
    with PostgresStore.from_conn_string(dsn, pool_config={"max_size": 1}) as store:
        store.put(("a",), "k", {"v": 0})
        with psycopg.connect(pg_server.dsn, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = 'langmem_test' AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' AND application_name = ''"
            )
        with pytest.raises(StoreUnavailableError) as info:
            store.get(("a",), "k")
        assert info.value.retryable
        assert store.get(("a",), "k").value == {"v": 0}  # the pool replaced the connection


@pytest.mark.parametrize(
    "kwargs",
    [
        {"conn": 42},
        {"index": "local"},
        {"index": {"embed": "local", "distance_type": "hamming"}},
        {"index": {"embed": "local", "ann_index_config": {"kind": "ivfflat"}}},
        {"index": {"embed": "local", "ann_index_config": "hnsw"}},
        {"vector_index": "hnsw"},
        {"vector_index": {"kind": "hnsw", "m": "16"}},
        {"vector_index": {"kind": "lsh"}},
        {"pool_config": [1, 10]},
        {"pool_config": {"max_sise": 10}},
        {"text_search_config": 5},
        {"ttl": "1 hour"},
        {"ttl": {"default_ttl": -1}},
        {"search_mode": "semantic"},
        {"pipeline": "yes"},
    ],
    ids=repr,
)
@pytest.mark.parametrize("cls", [PostgresStore, AsyncPostgresStore])
def test_wrong_configuration_is_a_clear_error(dsn, cls, kwargs):
    args = {"conn": dsn, **kwargs}
    with pytest.raises(LangmemError) as info:
        cls(args.pop("conn"), **args)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ConfigurationError | InvalidValueError)


def test_unknown_text_search_configuration_is_caught_at_setup(dsn):
    with pytest.raises(ConfigurationError, match="pg_ts_config"):
        PostgresStore(dsn, text_search_config="klingon").setup()


def test_the_test_server_says_it_is_not_durable(pg_server):
    with psycopg.connect(pg_server.dsn) as conn:
        name = conn.execute("SHOW cluster_name").fetchone()[0]
        fsync = conn.execute("SHOW fsync").fetchone()[0]
    assert name == "lmx-throwaway-not-durable" and fsync == "off"
    assert pg_server.durable is False
