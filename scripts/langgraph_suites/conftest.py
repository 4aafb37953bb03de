"""Fixtures for LangGraph's store tests run against langmem_ext's stores.

Copied by ``scripts/langgraph-suites`` as ``tests/conftest.py`` next to the
unchanged LangGraph test module. It replaces LangGraph's own conftest (which
reaches a Docker PostgreSQL on port 5441): same names, pointing at the
throwaway server the script started (``LMX_SUITE_PG_URI``).

With ``LMX_SUITE_STORES=langgraph`` the same modules run on LangGraph's own
stores, with the ``sqlite-vec`` extension loadable (see
:func:`shim.loadable_sqlite`), as in LangGraph's CI. With ``ours`` (default),
every test of a module that still holds a LangGraph store class the shim did
not replace fails, naming it: a comparison that silently ran LangGraph's
store would flatter either side.
"""

from __future__ import annotations

import os

import pytest
from _pytest.runner import runtestprotocol

OURS = os.environ.get("LMX_SUITE_STORES", "ours") == "ours"
if not OURS:
    # Before anything imports sqlite3 (LangGraph's stores, aiosqlite).
    import sqlite_loader

    sqlite_loader.loadable_sqlite()

import shim  # noqa: E402

shim.stub_missing()
if OURS:
    shim.install()

from tests.embed_test_utils import CharacterEmbeddings  # noqa: E402

DEFAULT_URI = os.environ.get("LMX_SUITE_PG_URI", "postgresql://postgres@localhost/postgres")
DEFAULT_POSTGRES_URI = DEFAULT_URI.rsplit("/", 1)[0] + "/"
VECTOR_TYPES = ["vector", "halfvec"]

__all__ = ["DEFAULT_URI", "VECTOR_TYPES", "CharacterEmbeddings"]


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lmx_unreplaced: LangGraph store classes left in place")
    config.addinivalue_line("markers", "flaky(retries): rerun a failing timing test")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """LangGraph marks its timing-sensitive TTL tests ``flaky(retries=3)`` and
    its CI reruns them (pytest-retry); so do we, for both sides alike."""
    marker = item.get_closest_marker("flaky")
    if marker is None:
        return None
    retries = int(marker.kwargs.get("retries", 1))
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(retries + 1):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if attempt == retries or not any(r.failed for r in reports):
            break
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In ``ours`` mode, fail each test of a module that kept a LangGraph store."""
    if not OURS:
        return
    for item in items:
        module = getattr(item, "module", None)
        left = shim.unreplaced(module) if module is not None else []
        if left:
            item.add_marker(pytest.mark.lmx_unreplaced(left))


@pytest.fixture(autouse=True)
def _only_our_stores(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("lmx_unreplaced")
    if marker is not None:
        pytest.fail(
            "this module runs LangGraph's own store, not ours: "
            + "; ".join(marker.args[0])
            + " (add the import path to scripts/langgraph_suites/shim.py)",
            pytrace=False,
        )
