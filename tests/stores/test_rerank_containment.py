"""The re-ranking stage keeps every store's search working whatever its
re-ranker does: each store re-ranks on workers of its own (a hung re-ranker of
one store never delays another's), every exception a re-ranker raises gives the
store's order with one warning (cancellation of the search itself still
cancels), the re-ranker gets copies of the candidates, duplicates and
non-finite scores are refused, and a hung model call holds a bounded number of
threads, however many searches run."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import multiprocessing
import signal
import sys
import threading
import time
from collections.abc import Sequence

import pytest
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import AIMessage

from langmem_ext import SQLiteStore
from langmem_ext.agents import chat_reranker
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings

TEXTS = [f"note {i} about tea" + " long" * i for i in range(8)]


def longest_first(query, texts):  # the store's own order ranks short texts first
    return [float(len(t)) for t in texts]


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


def _keys(page):
    return [it.key for it in page]


def _warnings(caplog):
    return [r for r in caplog.records if r.name == "langmem_ext.stores"]


def _wait_until(check, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.005)


# -- isolation --------------------------------------------------------------------------


def test_a_hung_reranker_of_one_store_never_delays_another(kind, request, caplog):
    gate = threading.Event()
    entered = []

    def hung(query, texts):
        entered.append(1)
        gate.wait(30)
        return [0.0] * len(texts)

    a = _make(kind, request, rerank=hung, rerank_timeout=20)
    b = _make(kind, request, rerank=longest_first, rerank_timeout=2)
    expected = sorted(TEXTS, key=len, reverse=True)[:3]
    search = functools.partial(a.search, ("docs",), query="tea")
    callers = [threading.Thread(target=search) for _ in range(12)]
    try:
        for t in callers:
            t.start()
        _wait_until(lambda: len(entered) >= 4)  # every worker A has is held
        with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
            started = time.monotonic()
            page = b.search(("docs",), query="tea", limit=3)
            apage = asyncio.run(b.asearch(("docs",), query="tea", limit=3))
            took = time.monotonic() - started
        assert [it.value["text"] for it in page] == expected  # re-ranked, not the fallback
        assert [it.value["text"] for it in apage] == expected
        assert took < 1.5 and not _warnings(caplog)
    finally:
        gate.set()
        for t in callers:
            t.join(10)
        a.close()
        b.close()


def test_while_every_worker_holds_a_hung_call_searches_skip_the_reranker_at_once(caplog):
    gate = threading.Event()

    def hung(query, texts):
        gate.wait(30)
        return [0.0] * len(texts)

    store = SQLiteStore(index={"fields": ["text"], "rerank": hung, "rerank_timeout": 0.2})
    for i, t in enumerate(TEXTS):
        store.put(("docs",), f"k{i:02d}", {"text": t})
    try:
        for _ in range(4):  # each waits its time, and leaves a worker held
            store.search(("docs",), query="tea")
        caplog.clear()
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
            for _ in range(10):
                store.search(("docs",), query="tea")
            asyncio.run(store.asearch(("docs",), query="tea"))
        assert time.monotonic() - started < 1.0  # not 11 x 0.2 s
        assert len(_warnings(caplog)) == 11 and "is still busy" in caplog.text
    finally:
        gate.set()
        store.close()


def _ours():
    return {t.ident for t in threading.enumerate() if t.name.startswith("langmem-ext")}


def test_a_hung_model_call_holds_a_bounded_number_of_threads(caplog):
    gate = threading.Event()
    before = _ours()
    model = ScriptedExtractionModel([lambda messages: gate.wait(30) and AIMessage("")] * 40)
    rerank = chat_reranker(model, timeout=0.05)
    store = SQLiteStore(index={"fields": ["text"], "rerank": rerank, "rerank_timeout": 0.3})
    plain = SQLiteStore(index={"fields": ["text"]})
    for s in (store, plain):
        for i, t in enumerate(TEXTS):
            s.put(("docs",), f"k{i:02d}", {"text": t})
    own = _keys(plain.search(("docs",), query="tea", limit=3))
    try:
        with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
            for _ in range(16):
                assert _keys(store.search(("docs",), query="tea", limit=3)) == own
        # The store's workers and the re-ranker's own: 4 + 4 at most, however
        # many searches met the hung call.
        assert len(_ours() - before) <= 8
        assert len(_warnings(caplog)) == 16
    finally:
        gate.set()
        store.close()
        plain.close()


# -- every exception contained ----------------------------------------------------------

RAISED = [asyncio.CancelledError, SystemExit, KeyboardInterrupt, GeneratorExit, RuntimeError]


def _raising(exc, style):
    def sync(query, texts):
        raise exc("from inside the re-ranker")

    async def asynchronous(query, texts):
        await asyncio.sleep(0)
        raise exc("from inside the re-ranker")

    class Compressor(BaseDocumentCompressor):
        def compress_documents(self, documents, query, callbacks=None):
            raise exc("from inside the re-ranker")

    class AsyncCompressor(Compressor):
        async def acompress_documents(self, documents, query, callbacks=None):
            await asyncio.sleep(0)
            raise exc("from inside the re-ranker")

    return {
        "function": sync,
        "async function": asynchronous,
        "compressor": Compressor(),
        "async compressor": AsyncCompressor(),
    }[style]


@pytest.mark.parametrize("style", ["function", "async function", "compressor", "async compressor"])
@pytest.mark.parametrize("exc", RAISED, ids=lambda e: e.__name__)
def test_whatever_a_reranker_raises_the_search_gives_the_stores_order(exc, style, caplog):
    if exc is KeyboardInterrupt and "async" in style and sys.version_info < (3, 11):
        pytest.skip("asyncio.run turns Ctrl-C into cancellation from Python 3.11 on")
    plain = SQLiteStore(index={"fields": ["text"]})
    store = SQLiteStore(index={"fields": ["text"], "rerank": _raising(exc, style)})
    for s in (plain, store):
        for i, t in enumerate(TEXTS):
            s.put(("docs",), f"k{i:02d}", {"text": t})
    own = _keys(plain.search(("docs",), query="tea", limit=4))
    for run in ("sync", "async"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
            if run == "sync":
                got = store.search(("docs",), query="tea", limit=4)
            else:
                got = asyncio.run(store.asearch(("docs",), query="tea", limit=4))
        assert _keys(got) == own, run
        assert len(_warnings(caplog)) == 1 and exc.__name__ in caplog.text, run
    plain.close()
    store.close()


def test_a_keyboard_interrupt_that_may_be_ctrl_c_is_not_swallowed():
    # An async re-ranker runs on the caller's event loop. On the main thread
    # with Python's own SIGINT handler (a loop not run by asyncio.run), Ctrl-C
    # raises KeyboardInterrupt wherever the thread is: one raised inside the
    # re-ranker may be the user's, so it stops the program as Ctrl-C would.
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    rerank = _raising(KeyboardInterrupt, "async function")
    store = SQLiteStore(index={"fields": ["text"], "rerank": rerank})
    store.put(("docs",), "k", {"text": "tea"})
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(store.asearch(("docs",), query="tea"))
    finally:
        loop.close()
        store.close()


@pytest.mark.parametrize("style", ["async function", "function"])
def test_cancelling_the_search_still_cancels_it(style):
    gate = threading.Event()
    entered = threading.Event()

    async def waits(query, texts):
        entered.set()
        await asyncio.sleep(30)
        return [0.0] * len(texts)

    def blocks(query, texts):
        entered.set()
        gate.wait(30)
        return [0.0] * len(texts)

    rerank = waits if style == "async function" else blocks
    store = SQLiteStore(index={"fields": ["text"], "rerank": rerank, "rerank_timeout": 20})
    store.put(("docs",), "k", {"text": "tea"})

    async def main():
        task = asyncio.ensure_future(store.asearch(("docs",), query="tea"))
        while not entered.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    try:
        assert asyncio.run(main()) < 1.0
    finally:
        gate.set()
        store.close()


# -- what comes back --------------------------------------------------------------------


def test_a_reranker_that_changes_its_input_changes_nothing_of_the_search(caplog):
    def grows(query, texts):
        texts.append("an extra text")
        return [-float(len(t)) for t in texts]  # one score too many: refused

    def tidies(query, texts):
        scores = [-float(len(t)) for t in texts]
        texts.clear()  # then longest first
        return [-s for s in scores]

    plain = SQLiteStore(index={"fields": ["text"]})
    for i, t in enumerate(TEXTS):
        plain.put(("docs",), f"k{i:02d}", {"text": t})
    own = _keys(plain.search(("docs",), query="tea", limit=4))
    store = SQLiteStore(index={"fields": ["text"], "rerank": grows})
    tidy = SQLiteStore(index={"fields": ["text"], "rerank": tidies})
    for s in (store, tidy):
        for i, t in enumerate(TEXTS):
            s.put(("docs",), f"k{i:02d}", {"text": t})
    with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
        assert _keys(store.search(("docs",), query="tea", limit=4)) == own
        assert _keys(asyncio.run(store.asearch(("docs",), query="tea", limit=4))) == own
    assert len(_warnings(caplog)) == 2 and f"expected {len(TEXTS)} finite scores" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
        page = tidy.search(("docs",), query="tea", limit=3)
    assert [it.value["text"] for it in page] == sorted(TEXTS, key=len, reverse=True)[:3]
    assert not _warnings(caplog)
    for s in (plain, store, tidy):
        s.close()


class _Scripted(BaseDocumentCompressor):
    """Returns the documents at ``positions`` with ``scores``."""

    positions: list[int]
    scores: list[float]

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks=None
    ) -> Sequence[Document]:
        out = []
        for i, score in zip(self.positions, self.scores, strict=True):
            metadata = {**documents[i].metadata, "relevance_score": score}
            out.append(Document(documents[i].page_content, metadata=metadata))
        return out


@pytest.mark.parametrize(
    ("positions", "scores", "why"),
    [
        ([2, 2, 0], [0.9, 0.8, 0.1], "returned candidate 2 twice"),
        ([1, 0], [math.nan, 0.5], "score nan"),
        ([1, 0], [math.inf, 0.5], "score inf"),
    ],
)
def test_duplicates_and_scores_that_are_not_numbers_are_refused(positions, scores, why, caplog):
    plain = SQLiteStore(index={"fields": ["text"]})
    rerank = _Scripted(positions=positions, scores=scores)
    store = SQLiteStore(index={"fields": ["text"], "rerank": rerank})
    for s in (plain, store):
        for i, t in enumerate(TEXTS):
            s.put(("docs",), f"k{i:02d}", {"text": t})
    own = _keys(plain.search(("docs",), query="tea", limit=4))
    with caplog.at_level(logging.WARNING, logger="langmem_ext.stores"):
        assert _keys(store.search(("docs",), query="tea", limit=4)) == own
        assert _keys(asyncio.run(store.asearch(("docs",), query="tea", limit=4))) == own
    assert len(_warnings(caplog)) == 2 and why in caplog.text
    plain.close()
    store.close()


# -- processes --------------------------------------------------------------------------


def _search_in_child(store, out):
    out.put([it.value["text"] for it in store.search(("docs",), query="tea", limit=3)])


def test_a_forked_process_re_ranks_with_workers_of_its_own():
    # The parent's workers are threads, which a fork does not copy: the child
    # must start its own rather than wait for them.
    store = SQLiteStore(index={"fields": ["text"], "rerank": longest_first, "rerank_timeout": 3})
    for i, t in enumerate(TEXTS):
        store.put(("docs",), f"k{i:02d}", {"text": t})
    expected = sorted(TEXTS, key=len, reverse=True)[:3]
    assert [it.value["text"] for it in store.search(("docs",), query="tea", limit=3)] == expected
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_search_in_child, args=(store, out))
    child.start()
    try:
        assert out.get(timeout=20) == expected
    finally:
        child.join(20)
        store.close()
    assert child.exitcode == 0


def test_workers_are_bounded_skip_cancelled_calls_and_exit_when_idle():
    from langmem_ext._workers import Workers

    gate = threading.Event()
    workers = Workers(2, "langmem-ext-test-workers", idle=0.05)
    held = [workers.submit(gate.wait, 30) for _ in range(2)]
    queued = workers.submit(lambda: "ran")
    given_up = workers.submit(lambda: pytest.fail("a cancelled call ran"))
    _wait_until(lambda: workers.stuck(0.01))
    assert given_up.cancel()
    names = [t.name for t in threading.enumerate()]
    assert names.count("langmem-ext-test-workers") == 2
    gate.set()
    assert [f.result(5) for f in held] == [True, True] and queued.result(5) == "ran"
    assert workers.submit(lambda: 1 / 0).exception(5).__class__ is ZeroDivisionError
    _wait_until(lambda: "langmem-ext-test-workers" not in [t.name for t in threading.enumerate()])
