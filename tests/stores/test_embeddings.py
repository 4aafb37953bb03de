"""Index config resolution: every accepted form of `embed`, and its errors."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings

from langmem_ext import SQLiteStore
from langmem_ext.errors import ConfigurationError, EmbeddingDimensionError
from langmem_ext.stores.embeddings import CachedEmbeddings, LocalEmbeddings, resolve_index
from tests.embeddings import WordEmbeddings


def test_local_string_needs_no_dims():
    r = resolve_index({"embed": "local"})
    assert r.dims == 384
    assert isinstance(r.embeddings.inner, LocalEmbeddings)


def test_provider_string_resolves_like_init_embeddings(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    r = resolve_index({"dims": 1536, "embed": "openai:text-embedding-3-small"})
    from langchain_openai import OpenAIEmbeddings

    assert isinstance(r.embeddings.inner, OpenAIEmbeddings)
    assert r.embeddings.model_id.endswith("text-embedding-3-small#1536")


def test_unknown_provider_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="cannot build the embedder"):
        resolve_index({"dims": 8, "embed": "nosuchprovider:model"})


@pytest.mark.parametrize(
    ("index", "match"),
    [
        ({"embed": WordEmbeddings(8)}, "dims"),
        ({"dims": 0, "embed": WordEmbeddings(8)}, "dims"),
        ({"dims": 8, "embed": WordEmbeddings(8), "fields": "content"}, "fields"),
        ({"dims": 8, "embed": WordEmbeddings(8), "vector_weight": 2}, "vector_weight"),
        ({"dims": 8, "embed": WordEmbeddings(8), "bogus": 1}, "bogus"),
        ([("dims", 8)], "dict"),
    ],
)
def test_bad_index_configs(index, match):
    with pytest.raises(ConfigurationError, match=match):
        resolve_index(index)


def test_sync_function_embedder(tmp_path):
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return [[float(len(t)), 1.0] for t in texts]

    with SQLiteStore(tmp_path / "f.db", index={"dims": 2, "embed": embed}) as store:
        store.put(("a",), "k", {"t": "abc"})
        assert store.search(("a",), query="abc", mode="vector")[0].key == "k"
    assert calls[0] == ['{"t": "abc"}']


async def test_async_function_embedder(tmp_path):
    seen = []

    async def aembed(texts):
        seen.extend(texts)
        return [[1.0, float(len(t))] for t in texts]

    async with SQLiteStore(tmp_path / "f.db", index={"dims": 2, "embed": aembed}) as store:
        await store.aput(("a",), "k", {"t": "abc"})
        got = await store.asearch(("a",), query="abc", mode="vector")
        assert got[0].key == "k"
    assert '{"t": "abc"}' in seen and "abc" in seen


def test_any_langchain_embeddings_replaces_the_default(tmp_path):
    class Constant(Embeddings):
        def embed_documents(self, texts):
            return [[1.0, 0.0, 0.0] for _ in texts]

        def embed_query(self, text):
            return [1.0, 0.0, 0.0]

    with SQLiteStore(tmp_path / "c.db", index={"dims": 3, "embed": Constant()}) as store:
        store.put(("a",), "k", {"t": "x"})
        assert store.search(("a",), query="y", mode="vector")[0].score == pytest.approx(1.0)


def test_ragged_vectors_are_rejected():
    def ragged(texts):
        return [[1.0, 2.0], [1.0]][: len(texts)]

    emb = CachedEmbeddings(
        resolve_index({"dims": 2, "embed": ragged}).embeddings.inner, model_id=None, dims=2
    )
    with pytest.raises(EmbeddingDimensionError):
        emb.embed_documents(["a", "b"])


def test_local_embedder_batches_and_caches():
    r = resolve_index({"embed": "local"})
    texts = [f"sentence number {i} about tea" for i in range(40)]
    first = r.embeddings.embed_documents(texts)
    calls = r.embeddings.calls
    again = r.embeddings.embed_documents(list(reversed(texts)))
    assert r.embeddings.calls == calls == 40
    assert again[0] == first[-1]
    # query and document embeddings differ for e5 ("query: " vs "passage: ")
    assert r.embeddings.embed_query(texts[0]) != first[0]


def test_the_store_embeddings_equal_the_embedder_passed_in():
    # As on LangGraph's stores (whose ``embeddings`` is the embedder itself):
    # LangGraph's test_vector_store_initialization compares them.
    emb = WordEmbeddings(8)
    store = SQLiteStore(index={"dims": 8, "embed": emb, "fields": ["text"]})
    assert store.embeddings == emb
    assert emb == store.embeddings
    assert store.embeddings != WordEmbeddings(8)
    assert hash(store.embeddings) == hash(emb)
    assert store.embeddings == store.embeddings


def test_a_filter_key_full_of_sql_is_an_invalid_filter_key():
    store = SQLiteStore()
    store.put(("docs",), "public", {"access": "public"})
    evil = "access') = 'public' OR '1'='1' OR json_extract(value, '$."
    with pytest.raises(ValueError, match="Invalid filter key"):
        store.search(("docs",), filter={evil: "dummy"})
