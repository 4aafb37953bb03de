"""The SQL the two stores share is written once (``stores._dialect``): one
keyword tokenizer and stop-word list, one filter compiler over each store's
leaves, one namespace scope."""

from __future__ import annotations

import pathlib

import pytest

from langmem_ext.stores import normalize_filter
from langmem_ext.stores._dialect import POSTGRES, SQLITE, STOPWORDS, keyword_words
from langmem_ext.stores.sqlite import _exec
from langmem_ext.stores.sqlite import _sql as sqlite_sql

QUERIES = ["Who's the painter? (painter & 'x')", "the of", "", "Tea TEA and coffee", "ça va"]


@pytest.mark.parametrize("text", QUERIES)
def test_both_stores_look_for_the_same_words(text):
    pg_sql = pytest.importorskip("langmem_ext.stores.postgres._sql")
    words = keyword_words(text)
    fts = _exec.fts_query(text)
    assert (fts.split(" OR ") if fts else []) == [f'"{w}"' for w in words]
    assert pg_sql.tsquery_words(text) == [f"'{w}'" for w in words]


def test_the_stop_words_are_listed_once():
    stores = pathlib.Path(_exec.__file__).parents[1]
    holders = [p.name for p in stores.rglob("*.py") if "yourselves" in p.read_text("utf-8")]
    assert holders == ["_dialect.py"] and "yourselves" in STOPWORDS


def test_one_compiler_two_dialects():
    pg_filters = pytest.importorskip("langmem_ext.stores.postgres._sql_filters")
    conditions = normalize_filter({"k": {"$in": []}, "n": {"$nin": []}})
    assert sqlite_sql.compile_filter(conditions) == ("0 AND 1", [])
    assert pg_filters.compile_filter(conditions) == ("FALSE AND TRUE", [])
    assert sqlite_sql.compile_filter([]) == (SQLITE.true, [])
    assert pg_filters.compile_filter([]) == (POSTGRES.true, [])
    assert sqlite_sql.scope_clause("a") == SQLITE.scope("a")
