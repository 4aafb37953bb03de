"""The re-ranking stage in the stores: index={'rerank': R, 'rerank_candidates': N}.
A function or a LangChain document compressor reorders the best N candidates
of every query search (sync and async, SQLite and PostgreSQL, and through the
engine); vector-mode and query-less searches are untouched; a failing or slow
re-ranker gives the store's own order with one warning; bad settings are
refused by name."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import pytest
from langchain_core.documents import BaseDocumentCompressor, Document

from langmem_ext import MemoryEngine, SQLiteStore
from langmem_ext.engine import MemoryContext
from langmem_ext.errors import ConfigurationError
from tests.embeddings import WordEmbeddings

TEXTS = [f"note {i} about tea" + " long" * i for i in range(12)]


def shortest_first(query, texts):
    shortest_first.seen.append(len(texts))
    return [-float(len(t)) for t in texts]


shortest_first.seen = []


async def alongest_first(query, texts):
    return [float(len(t)) for t in texts]


class Reverse(BaseDocumentCompressor):
    """A stand-in compressor: the candidates reversed, top 3, with scores."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks=None
    ) -> Sequence[Document]:
        out = list(reversed(documents))[:3]
        return [
            Document(d.page_content, metadata={**d.metadata, "relevance_score": 1.0 / (r + 1)})
            for r, d in enumerate(out)
        ]


def _make(kind, request, **rerank):
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["text"], **rerank}
    if kind == "sqlite":
        store = SQLiteStore(index=index)
    else:
        from langmem_ext.stores.postgres import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_server").fresh_schema(), index=index)
    for i, t in enumerate(TEXTS):
        store.put(("docs",), f"k{i:02d}", {"text": t})
    return store


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request):
    return request.param


def test_a_function_reorders_the_best_candidates_with_its_scores(kind, request):
    store = _make(kind, request, rerank=shortest_first, rerank_candidates=8)
    shortest_first.seen.clear()
    page = store.search(("docs",), query="tea", limit=3)
    assert shortest_first.seen == [8]  # N candidates, one call
    scores = [it.score for it in page]
    assert scores == sorted(scores, reverse=True)
    assert [-s for s in scores] == sorted(len(it.value["text"]) for it in page)
    second = store.search(("docs",), query="tea", limit=3, offset=3)
    assert not {it.key for it in page} & {it.key for it in second}
    assert max(it.score for it in second) <= min(scores)
    store.close()


def test_async_functions_and_compressors(kind, request):
    store = _make(kind, request, rerank=alongest_first)
    page = asyncio.run(store.asearch(("docs",), query="tea", limit=2))
    assert [it.score for it in page] == [float(len(it.value["text"])) for it in page]
    assert page[0].score > page[1].score
    store.close()
    store = _make(kind, request, rerank=Reverse(), rerank_candidates=5)
    plain = [it.key for it in store.search(("docs",), query="tea", limit=5, mode="hybrid")]
    store2 = _make(kind, request)
    own = [it.key for it in store2.search(("docs",), query="tea", limit=5)]
    assert plain == list(reversed(own))[:3]  # the compressor's order and its cut
    assert [it.score for it in store.search(("docs",), query="tea", limit=2)] == [1.0, 0.5]
    store.close()
    store2.close()


def test_vector_mode_and_searches_without_a_query_are_untouched(kind, request):
    store = _make(kind, request, rerank=shortest_first)
    plain = _make(kind, request)
    for kwargs in ({"query": "tea", "mode": "vector"}, {}):
        ours = [(it.key, it.score) for it in store.search(("docs",), limit=4, **kwargs)]
        theirs = [(it.key, it.score) for it in plain.search(("docs",), limit=4, **kwargs)]
        assert ours == theirs
    store.close()
    plain.close()


def test_a_failing_or_slow_reranker_gives_the_stores_order(kind, request, caplog):
    def broken(query, texts):
        raise RuntimeError("rerank service down")

    def slow(query, texts):
        time.sleep(2)
        return [0.0] * len(texts)

    def gives_up(query, texts):  # e.g. a model client's own time-out
        raise TimeoutError("model call timed out after 30 s")

    plain = _make(kind, request)
    own = [it.key for it in plain.search(("docs",), query="tea", limit=4)]
    cases = (
        (broken, "failed (RuntimeError: rerank service down)"),
        (slow, "took longer than rerank_timeout (0.2 s)"),
        (gives_up, "failed (TimeoutError: model call timed out after 30 s)"),
    )
    for rerank, why in cases:
        store = _make(kind, request, rerank=rerank, rerank_timeout=0.2)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
            assert [it.key for it in store.search(("docs",), query="tea", limit=4)] == own
        assert len(caplog.records) == 1 and why in caplog.text
        store.close()
    plain.close()


NOTE = "Ada drinks green tea every single morning before work"


def test_the_engine_searches_through_the_stage():
    store = SQLiteStore(index={"fields": ["content"], "rerank": shortest_first})
    engine, ctx = MemoryEngine(store), MemoryContext("acme", user_id="ada")
    engine.add(ctx, NOTE)
    engine.add(ctx, "Ada likes tea")
    hits = engine.search(ctx, "tea")
    assert [h.content for h in hits] == ["Ada likes tea", NOTE]


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"rerank": "cohere"}, "must be a LangChain BaseDocumentCompressor"),
        ({"rerank": shortest_first, "rerank_candidates": 0}, "rerank_candidates'\\] must be"),
        ({"rerank": shortest_first, "rerank_timeout": -1}, "rerank_timeout'\\] must be"),
        ({"rerank_candidates": 5}, "need index\\['rerank'\\]"),
    ],
)
def test_bad_settings_are_refused_by_name(index, message):
    with pytest.raises(ConfigurationError, match=message):
        SQLiteStore(index={"fields": ["text"], **index})


FEEDBACK_NOTES = {
    "bake": "Mia baked a lemon cake for the party",
    "cake": "the lemon cake was gone by nine",
    "bus": "Mia went home by bus",
    "tea": "Mia drinks tea at nine",
}


def _notes(kind, request, ns, **rerank):
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["text"], **rerank}
    if kind == "sqlite":
        store = SQLiteStore(index=index)
    else:
        from langmem_ext.stores.postgres import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_server").fresh_schema(), index=index)
    for key, text in FEEDBACK_NOTES.items():
        store.put(ns, key, {"text": text})
    store.put(("other-user",), "secret", {"text": "lemon cake recipe from the other user"})
    return store


def test_query_feedback_finds_an_answer_worded_like_the_best_result(kind, request):
    from langmem_ext.stores import query_feedback

    ns = ("ada",)
    plain = _notes(kind, request, ns)
    fed = _notes(kind, request, ns, rerank=query_feedback(top=1, weight=2.0), rerank_candidates=10)
    query = "what did Mia bake"
    own = [it.key for it in plain.search(ns, query=query, limit=4)]
    got = [it.key for it in fed.search(ns, query=query, limit=4)]
    agot = [it.key for it in asyncio.run(fed.asearch(ns, query=query, limit=4))]
    assert got[0] == own[0] == "bake"
    # "the lemon cake was gone" shares no word with the question, but the
    # best result's words: it rises above what only shares "Mia".
    assert got.index("cake") < own.index("cake") and got.index("cake") == 1
    assert agot == got
    assert "secret" not in got  # candidates come from the namespace searched only
    plain.close()
    fed.close()


def test_query_feedback_settings_are_checked():
    from langmem_ext.stores import query_feedback

    with pytest.raises(ValueError, match="at least 1"):
        query_feedback(top=0)
    with pytest.raises(ValueError, match="0 or more"):
        query_feedback(weight=-1)
