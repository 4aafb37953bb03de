"""Fixtures for LangGraph's store tests run against langmem_ext's stores.

Copied by ``scripts/langgraph-suites`` as ``tests/conftest.py`` next to the
unchanged LangGraph test module. It replaces LangGraph's own conftest (which
reaches a Docker PostgreSQL on port 5441): same names, pointing at the
throwaway server the script started (``LMX_SUITE_PG_URI``).
"""

from __future__ import annotations

import os

import pytest
import shim

shim.stub_missing()
if os.environ.get("LMX_SUITE_STORES", "ours") == "ours":
    shim.install()

from tests.embed_test_utils import CharacterEmbeddings  # noqa: E402

DEFAULT_URI = os.environ.get("LMX_SUITE_PG_URI", "postgresql://postgres@localhost/postgres")
DEFAULT_POSTGRES_URI = DEFAULT_URI.rsplit("/", 1)[0] + "/"
VECTOR_TYPES = ["vector", "halfvec"]

__all__ = ["DEFAULT_URI", "VECTOR_TYPES", "CharacterEmbeddings"]


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)
