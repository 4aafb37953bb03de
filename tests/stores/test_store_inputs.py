"""Store hardening: poisoned vectors refused, wrong-type inputs are clear errors
(on SQLite and PostgreSQL alike).

The fuzz test runs a few hundred examples in the normal suite; set
``LMX_FUZZ_EXAMPLES`` (e.g. 20000) for a long run.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_ext import SQLiteStore
from langmem_ext.errors import InvalidEmbeddingError, LangmemError
from langmem_ext.stores.postgres import PostgresStore
from tests.embeddings import WordEmbeddings

EXAMPLES = int(os.environ.get("LMX_FUZZ_EXAMPLES", "150"))


class Poisoned(WordEmbeddings):
    """Returns NaN (or inf) vectors for texts containing 'poison' ('infinite')."""

    def _embed(self, text: str) -> list[float]:
        v = super()._embed(text)
        if "poison" in text:
            v[3] = math.nan
        if "infinite" in text:
            v[0] = math.inf
        return v


def _store(path, emb=None):
    return SQLiteStore(path, index={"dims": 16, "embed": emb or Poisoned(16), "fields": ["text"]})


@pytest.mark.parametrize("word", ["poison", "infinite"])
def test_non_finite_vector_is_refused_naming_the_text(tmp_path, word):
    with _store(tmp_path / "s.db") as store:
        store.put(("u",), "ok", {"text": "good apples"})
        with pytest.raises(InvalidEmbeddingError, match=f"a {word} apple") as info:
            store.put(("u",), "bad", {"text": f"a {word} apple"})
        assert isinstance(info.value, ValueError)
        assert store.get(("u",), "bad") is None
        n_cached = store._connect().execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        assert n_cached == 1  # only the good text
        for mode in ("hybrid", "vector"):
            got = store.search(("u",), query="apples", mode=mode)
            assert [r.key for r in got] == ["ok"]
            assert all(math.isfinite(r.score) for r in got)
        with pytest.raises(InvalidEmbeddingError):
            store.search(("u",), query=f"{word} query")


def test_bad_cached_vectors_are_ignored_and_replaced(tmp_path):
    path = tmp_path / "c.db"
    emb = WordEmbeddings(16)
    with _store(path, emb) as store:
        store.put(("u",), "a", {"text": "red fox"})
        store.put(("u",), "b", {"text": "blue jay"})
        conn = store._connect()
        # Rows a release without validation could have written.
        nan = np.full(16, np.nan, dtype="<f4").tobytes()
        conn.execute("UPDATE embedding_cache SET embedding = ? WHERE kind = 'doc'", [nan])
    emb2 = WordEmbeddings(16)
    with _store(path, emb2) as store:
        store.put(("u",), "a", {"text": "red fox"})
        store.put(("u",), "b", {"text": "blue jay"})
        assert emb2.calls == 2  # the NaN rows were not used: embedded again
        rows = store._connect().execute("SELECT embedding FROM embedding_cache").fetchall()
        assert all(np.isfinite(np.frombuffer(r[0], dtype="<f4")).all() for r in rows)
        got = store.search(("u",), query="red fox", mode="vector")
        assert got[0].key == "a" and math.isfinite(got[0].score)


def test_wrong_length_cached_vector_is_ignored(tmp_path):
    path = tmp_path / "w.db"
    with _store(path, WordEmbeddings(16)) as store:
        store.put(("u",), "a", {"text": "red fox"})
        store._connect().execute("UPDATE embedding_cache SET embedding = x'0000803f00'")
    emb = WordEmbeddings(16)
    with _store(path, emb) as store:
        store.put(("u",), "a", {"text": "red fox"})
        assert emb.calls == 1


# -- fuzz: wrong types at the public entry points ------------------------------

junk = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=6),
        st.binary(max_size=4),
        st.just(object()),
        st.just(""),
        st.just("a.b"),
        st.just("$gt"),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(
            st.one_of(st.text(max_size=4), st.just("$gt"), st.integers()), inner, max_size=3
        ),
    ),
    max_leaves=6,
)
namespaces = st.one_of(junk, st.tuples(st.text(max_size=3)), st.just(("ok",)))


def _calls(store):
    return {
        "put": lambda a, b, c, d: store.put(a, b, c),
        "put_index": lambda a, b, c, d: store.put(("ok",), "k", {"text": "x"}, index=c),
        "put_ttl": lambda a, b, c, d: store.put(("ok",), "k", {"text": "x"}, ttl=c),
        "put_value": lambda a, b, c, d: store.put(("ok",), "k", c),
        "get": lambda a, b, c, d: store.get(a, b),
        "delete": lambda a, b, c, d: store.delete(a, b),
        "search": lambda a, b, c, d: store.search(a, query=b, filter=c, limit=10),
        "search_filter": lambda a, b, c, d: store.search(("ok",), filter=c),
        "search_query": lambda a, b, c, d: store.search(("ok",), query=c),
        "search_page": lambda a, b, c, d: store.search(("ok",), limit=c, offset=d),
        "search_mode": lambda a, b, c, d: store.search(("ok",), query="x", mode=c),
        "list": lambda a, b, c, d: store.list_namespaces(prefix=a, limit=c),
        "list_depth": lambda a, b, c, d: store.list_namespaces(max_depth=c, offset=d),
        "batch": lambda a, b, c, d: store.batch(c),
        "batch_ops": lambda a, b, c, d: store.batch(
            [GetOp(a, b), SearchOp(("ok",), c, 5, 0, None), PutOp(("ok",), "z", d)]
        ),
    }


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fuzz_store(request, tmp_path_factory):
    if request.param == "sqlite":
        store = _store(tmp_path_factory.mktemp("fuzz") / "f.db", WordEmbeddings(16))
    else:
        dsn = request.getfixturevalue("pg_server").fresh_schema()
        index = {"dims": 16, "embed": WordEmbeddings(16), "fields": ["text"]}
        store = PostgresStore(dsn, index=index, pool_config={"max_size": 2})
    store.put(("ok",), "keep", {"text": "kept item", "n": 1})
    yield store
    store.close()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    call=st.sampled_from(sorted(_calls(None))),
    a=namespaces,
    b=junk,
    c=junk,
    d=junk,
)
def test_fuzz_wrong_types_are_clear_errors(fuzz_store, call, a, b, c, d):
    try:
        _calls(fuzz_store)[call](a, b, c, d)
    except LangmemError as e:
        assert isinstance(e, ValueError | TypeError), repr(e)
    # Whatever happened, the store still answers and the seeded item is intact.
    assert fuzz_store.get(("ok",), "keep").value == {"text": "kept item", "n": 1}


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.search(("u",), limit=2**63),
        lambda s: s.search(("u",), offset=-1),
        lambda s: s.search(("u",), limit="10"),
        lambda s: s.search("u"),
        lambda s: s.search(("u",), query=42),
        lambda s: s.search(("u",), query="tea\ud800"),
        lambda s: s.search(("u",), filter=[("a", 1)]),
        lambda s: s.search(("u",), filter={"a": "\udfff"}),
        lambda s: s.search(("u",), refresh_ttl="no"),
        lambda s: s.put(("u",), "k", "value"),
        lambda s: s.put(("u",), "k", {"v": 1}, ttl="soon"),
        lambda s: s.put(("u",), "k", {"v": 1}, ttl=10**400),
        lambda s: s.put(("u",), "k", {"v": 1}, ttl=2**70),
        lambda s: s.put(("u",), "k", {"v": "a\ud800"}),
        lambda s: s.put(("u", "\udc00"), "k", {"v": 1}),
        lambda s: s.put(("u",), None, {"v": 1}),
        lambda s: s.get("u", "k"),
        lambda s: s.get(("u",), 1),
        lambda s: s.get(("u",), "k\ud800"),
        lambda s: s.get(("u",), "k", refresh_ttl="yes"),
        lambda s: s.delete(("u",), "\ud800"),
        lambda s: s.batch(5),
        lambda s: s.list_namespaces(limit=-5),
        lambda s: s.list_namespaces(prefix=("\ud800",)),
    ],
)
def test_wrong_types_at_entry_points_are_clear_errors(fuzz_store, call):
    before = fuzz_store.search((), limit=100)
    with pytest.raises(LangmemError) as info:
        call(fuzz_store)
    assert isinstance(info.value, ValueError | TypeError) and str(info.value)
    assert fuzz_store.search((), limit=100) == before


def test_filter_numbers_beyond_floats_compare_as_infinities(fuzz_store):
    assert [r.key for r in fuzz_store.search(("ok",), filter={"n": {"$lt": 10**400}})] == ["keep"]
    assert fuzz_store.search(("ok",), filter={"n": {"$gt": 10**400}}) == []
    assert fuzz_store.search(("ok",), filter={"n": -(10**400)}) == []


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    key=st.sampled_from(
        ["dims", "embed", "fields", "vector_weight", "cache", "context_fields", "context_weight"]
    ),
    value=junk,
    ttl=st.one_of(
        st.none(),
        junk,
        st.dictionaries(
            st.sampled_from(["default_ttl", "refresh_on_read", "sweep_interval_minutes"]),
            junk,
            max_size=2,
        ),
    ),
    mode=st.one_of(st.none(), junk),
)
def test_fuzz_store_configuration_is_clear_errors(key, value, ttl, mode):
    index = {"dims": 16, "embed": WordEmbeddings(16), key: value}
    try:
        store = SQLiteStore(":memory:", index=index, ttl=ttl, search_mode=mode)
    except LangmemError as e:
        assert isinstance(e, ValueError | TypeError), repr(e)
        return
    store.put(("a",), "k", {"text": "hello"})
    store.search(("a",), query="hello")
    store.close()
