"""Store contract: filter operands beyond what a database compares exactly, and
field names with JSON-path punctuation (LangGraph's in-memory store semantics)."""

from __future__ import annotations

import math

import pytest

from langmem_ext.errors import InvalidValueError, LangmemError

INF, NAN = math.inf, math.nan
DOCS = {
    "a": {"n": 5, "s": "x"},
    "b": {"n": -3.5, "s": "y"},
    "c": {"n": 3 * 2**64, "s": "z"},  # a JSON integer beyond 64 bits
    "d": {"s": "no number"},
}


async def _seed(api):
    for k, v in DOCS.items():
        await api.put(("o",), k, v)


async def _keys(api, flt):
    return sorted(r.key for r in await api.search(("o",), filter=flt, limit=100))


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"n": {"$gt": -INF}}, ["a", "b", "c"]),  # every number
        ({"n": {"$gte": -INF}}, ["a", "b", "c"]),
        ({"n": {"$lt": INF}}, ["a", "b", "c"]),
        ({"n": {"$gt": INF}}, []),
        ({"n": {"$lt": -INF}}, []),
        ({"n": {"$gt": NAN}}, []),  # NaN orders with nothing
        ({"n": {"$lte": NAN}}, []),
        ({"n": NAN}, []),
        ({"n": {"$ne": NAN}}, ["a", "b", "c", "d"]),
        ({"n": {"$eq": INF}}, []),
        ({"n": {"$ne": -INF}}, ["a", "b", "c", "d"]),
        ({"n": {"$in": [NAN, 5]}}, ["a"]),
        ({"n": {"$nin": [NAN, INF]}}, ["a", "b", "c", "d"]),
        ({"n": {"$gt": 2**63}}, ["c"]),  # compared as floats, no OverflowError
        ({"n": {"$lt": -(2**64)}}, []),
        ({"n": {"$gte": 2**70}}, []),
        ({"n": {"$lt": 2**64}}, ["a", "b"]),
        ({"n": 2**80}, []),
        ({"n": {"$in": [2**64, 5]}}, ["a"]),
    ],
    ids=repr,
)
async def test_nonfinite_and_huge_operands(make_api, flt, expected):
    api = make_api()
    api.need("extended_filters")
    await _seed(api)
    assert await _keys(api, flt) == expected


@pytest.mark.parametrize("kwargs", [{"limit": 2**63}, {"offset": 2**64}, {"limit": -1}])
async def test_out_of_range_limit_offset_is_a_clear_error(make_api, kwargs):
    api = make_api()
    api.need("validates_input")
    await _seed(api)
    with pytest.raises(InvalidValueError, match="between 0 and"):
        await api.search(("o",), **kwargs)


@pytest.mark.parametrize(
    "field",
    ["back\\slash", "new\nline", "tab\tx", "arr[0]", "mid$dollar", "star*", "ctl\x01", "ümlaut"],
    ids=repr,
)
async def test_field_names_with_path_punctuation_match(make_api, field):
    api = make_api()
    api.need("extended_filters")
    await api.put(("p",), "hit", {field: 1, "nested": {field: "v"}})
    await api.put(("p",), "miss", {field: 2})
    got = await api.search(("p",), filter={field: 1})
    assert [r.key for r in got] == ["hit"]
    got = await api.search(("p",), filter={"nested": {field: "v"}})
    assert [r.key for r in got] == ["hit"]
    got = await api.search(("p",), filter={field: {"$exists": True}}, limit=10)
    assert sorted(r.key for r in got) == ["hit", "miss"]


async def test_bad_filter_types_are_clear_errors(make_api):
    api = make_api()
    api.need("validates_input")
    for flt in ([1], {"n": {"$gt": [1]}}, {"n": object()}, {1: 2}, {"n": {"$in": 5}}):
        with pytest.raises(LangmemError) as info:
            await api.search(("o",), filter=flt)
        assert isinstance(info.value, ValueError)
