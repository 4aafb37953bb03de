"""A store as a LangChain retriever: documents with the item's text and its
namespace, key, score and value; sync, async and in an LCEL chain; on SQLite,
PostgreSQL and LangGraph's own store; bad arguments refused by name."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import BaseDocumentCompressor
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore
from langmem_ext.errors import ConfigurationError
from langmem_ext.stores.retriever import as_retriever
from tests.embeddings import WordEmbeddings

INDEX = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
NOTES = {
    "n1": {"content": "Ada prefers green tea in the morning", "tag": "drink"},
    "n2": {"content": "Ada's sister Clara lives in Porto", "tag": "family"},
    "n3": {"content": "Ada is learning Spanish", "tag": "hobby"},
}


@pytest.fixture(params=["sqlite", "postgres"])
def store(request):
    if request.param == "sqlite":
        s = SQLiteStore(index=INDEX)
    else:
        from langmem_ext.stores.postgres import PostgresStore

        dsn = request.getfixturevalue("pg_server").fresh_schema()
        s = PostgresStore(dsn, index=INDEX)
    for key, value in NOTES.items():
        s.put(("memories", "ada"), key, value)
    s.put(("memories", "bob"), "b1", {"content": "Bob prefers green tea too"})
    yield s
    s.close()


@pytest.mark.parametrize("mode", [None, "hybrid", "vector", "keyword"])
def test_documents_carry_the_text_and_where_it_came_from(store, mode):
    retriever = store.as_retriever(("memories", "ada"), k=2, mode=mode)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("green tea")
    assert 1 <= len(docs) <= 2
    top = docs[0]
    assert top.page_content == "Ada prefers green tea in the morning"
    assert top.metadata["namespace"] == ("memories", "ada")
    assert top.metadata["key"] == "n1"
    assert top.metadata["value"] == NOTES["n1"]
    assert isinstance(top.metadata["score"], float)
    assert all(d.metadata["namespace"] == ("memories", "ada") for d in docs)  # never bob's


def test_async_filter_and_a_chain(store):
    retriever = store.as_retriever(("memories",), k=5, filter={"tag": "family"})
    docs = asyncio.run(retriever.ainvoke("where does the sister live"))
    assert [d.metadata["key"] for d in docs] == ["n2"]
    chain = retriever | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    assert chain.invoke("sister") == "Ada's sister Clara lives in Porto"


class SharesAWord(BaseDocumentCompressor):
    """Keeps the documents that share a word with the query."""

    def compress_documents(self, documents, query, callbacks=None):
        words = set(query.lower().split())
        return [d for d in documents if words & set(d.page_content.lower().split())]


def test_contextual_compression_over_the_store(store):
    # LangChain's ContextualCompressionRetriever over the store's retriever.
    from langchain_classic.retrievers import ContextualCompressionRetriever

    compressor = SharesAWord()
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=store.as_retriever(("memories", "ada"), k=3)
    )
    docs = retriever.invoke("green tea")
    assert [d.metadata["key"] for d in docs] == ["n1"]  # the unrelated two are filtered out
    assert asyncio.run(retriever.ainvoke("green tea"))[0].metadata["namespace"] == (
        "memories",
        "ada",
    )


def test_a_prompt_and_model_chain_reads_the_memories(store):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    seen: list[str] = []
    model = GenericFakeChatModel(messages=iter([AIMessage("Porto.")]))
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Memories:\n{memories}"), ("user", "{question}")]
    )
    retriever = store.as_retriever(("memories", "ada"), k=1)

    def joined(docs):
        seen.append("\n".join(d.page_content for d in docs))
        return seen[-1]

    chain = {"memories": retriever | joined, "question": RunnablePassthrough()} | prompt | model
    assert chain.invoke("where does the sister live").content == "Porto."
    assert seen == ["Ada's sister Clara lives in Porto"]


def test_any_langgraph_store_works_without_modes():
    lg = InMemoryStore()
    lg.put(("docs",), "1", {"text": "the cat sat"})
    [doc] = as_retriever(lg, ("docs",)).invoke("cat")
    assert (doc.page_content, doc.metadata["key"]) == ("the cat sat", "1")
    with pytest.raises(ConfigurationError, match="has no search modes"):
        as_retriever(lg, ("docs",), mode="keyword")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be a whole number from 1"),
        ({"k": True}, "k must be a whole number from 1"),
        ({"mode": "semantic"}, "unknown mode 'semantic'"),
        ({"filter": "tag=x"}, "filter must be a dict"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        SQLiteStore().as_retriever(("memories",), **kwargs)
