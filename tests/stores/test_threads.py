"""Thread discipline: the package's own compute (the offline embedder's
OpenMP, the vector scans) runs on one thread per query by default, so worker
processes on shared cores do not spin against each other; a setting overrides
it; bad settings are refused by name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from threadpoolctl import threadpool_info

from langmem_ext.errors import ConfigurationError
from langmem_ext.stores import LocalEmbeddings, set_threads, threads
from langmem_ext.stores.embeddings import local


@pytest.fixture(autouse=True)
def _defaults(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    set_threads(None)
    yield
    set_threads(None)


def _openmp_threads_seen(monkeypatch) -> list[int]:
    """The OpenMP thread counts in force while the embedder encodes."""
    seen: list[int] = []
    model = local._load("original")
    encode = model.encode

    def spy(texts, is_query=False):
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp")
        return encode(texts, is_query=is_query)

    monkeypatch.setattr(model, "encode", spy)
    return seen


def test_a_query_is_embedded_on_one_thread_and_documents_on_every_core(monkeypatch):
    seen = _openmp_threads_seen(monkeypatch)
    emb = LocalEmbeddings()
    emb.embed_query("where do I live?")
    assert seen and set(seen) == {1}
    seen.clear()
    emb.embed_documents([f"document {i}" for i in range(8)])
    assert set(seen) == {threads.available_cores()}


def test_the_setting_overrides_both_and_the_limit_is_undone_after(monkeypatch):
    before = {i["filepath"]: i["num_threads"] for i in threadpool_info()}
    seen = _openmp_threads_seen(monkeypatch)
    monkeypatch.setenv(threads.ENV, "2")
    LocalEmbeddings().embed_query("x")
    assert set(seen) == {2}
    set_threads(1)  # Python's setting wins over the environment
    seen.clear()
    LocalEmbeddings().embed_documents(["a", "b", "c", "d", "e"])
    assert set(seen) == {1}
    after = {i["filepath"]: i["num_threads"] for i in threadpool_info()}
    assert after == before  # the caller's own numpy/OpenMP keeps its threads


@pytest.mark.parametrize("bad", [0, -1, 1000, "two", 1.5, True])
def test_a_bad_thread_setting_is_refused_by_name(monkeypatch, bad):
    with pytest.raises(ConfigurationError, match="threads must be a whole number"):
        set_threads(bad)
    monkeypatch.setenv(threads.ENV, str(bad))
    with pytest.raises(ConfigurationError, match=f"{threads.ENV} must be a whole number"):
        threads.threads_for("query")


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_wait_passively_unless_the_user_says_otherwise(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = "import os, langmem_ext.stores; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == expected, out.stderr
