"""Store contract: TTL, bad input, embedder errors."""

from __future__ import annotations

import asyncio
import inspect
import math

import pytest

from langmem_ext.errors import EmbeddingDimensionError
from tests.embeddings import WordEmbeddings


async def _maybe(result):
    """TTL methods are awaitable on async stores that follow LangGraph's
    AsyncPostgresStore (``await store.sweep_ttl()``), plain elsewhere."""
    return await result if inspect.isawaitable(result) else result


async def test_fractional_ttl_expires(make_api):
    api = make_api(ttl={"refresh_on_read": True})
    api.need("ttl")
    await api.put(("t",), "short", {"v": 1}, ttl=0.01)  # 0.6 s
    await api.put(("t",), "long", {"v": 2}, ttl=10)
    await api.put(("t",), "forever", {"v": 3})
    assert (await api.get(("t",), "short")) is not None
    await asyncio.sleep(0.9)
    assert await api.get(("t",), "short") is None
    assert sorted(r.key for r in await api.search(("t",))) == ["forever", "long"]
    assert await api.list_namespaces() == [("t",)]
    assert await _maybe(api.store.sweep_ttl()) == 1


async def test_refresh_ttl_on_read(make_api):
    api = make_api(ttl={"refresh_on_read": True})
    api.need("ttl")
    # Margins are wide so a loaded machine cannot make this flaky: each read
    # comes 0.4 s after the last one, well within the 1.2 s TTL it renews.
    await api.put(("t",), "k", {"v": 1}, ttl=0.02)  # 1.2 s
    for _ in range(4):
        await asyncio.sleep(0.4)
        assert await api.get(("t",), "k") is not None  # each read pushes expiry
    await asyncio.sleep(0.4)
    assert await api.get(("t",), "k", refresh_ttl=False) is not None
    await asyncio.sleep(1.3)
    assert await api.get(("t",), "k", refresh_ttl=False) is None


async def test_default_ttl_and_sweeper_thread(make_api):
    api = make_api(ttl={"default_ttl": 0.002, "sweep_interval_minutes": 0.003})
    api.need("ttl")
    await api.put(("t",), "k", {"v": 1})
    done = await _maybe(api.store.start_ttl_sweeper())
    try:
        for _ in range(50):
            await asyncio.sleep(0.1)
            left = await api.search(("t",), refresh_ttl=False)
            if not left and await _maybe(api.store.sweep_ttl()) == 0:
                break
        assert await api.search(("t",)) == []
    finally:
        assert await _maybe(api.store.stop_ttl_sweeper(timeout=5))
    assert done.done()


@pytest.mark.parametrize(
    "value",
    ["a string", ["a", "list"], {"x": {1, 2}}, {"x": object()}, {"x": math.nan}, {1: "int key"}],
    ids=["str", "list", "set", "object", "nan", "int-key"],
)
async def test_bad_values_rejected_nothing_changes(make_api, value):
    api = make_api()
    api.need("validates_input")
    await api.put(("a",), "k", {"v": 1})
    with pytest.raises((ValueError, TypeError)) as e:
        await api.put(("a",), "k", value)
    assert "k" in str(e.value)
    assert (await api.get(("a",), "k")).value == {"v": 1}


async def test_wrong_dimension_embedder_rejected_nothing_changes(make_api):
    api = make_api(index={"dims": 32, "embed": WordEmbeddings(48), "fields": ["text"]})
    api.need("validates_input")
    with pytest.raises(EmbeddingDimensionError, match="48"):
        await api.put(("a",), "k", {"text": "hello"})
    assert await api.get(("a",), "k") is None
    assert await api.list_namespaces() == []


async def test_bad_ttl_rejected(make_api):
    api = make_api(ttl={})
    api.need("ttl")
    with pytest.raises(ValueError, match="ttl"):
        await api.put(("a",), "k", {"v": 1}, ttl=-1)
    assert await api.get(("a",), "k") is None


async def test_ttl_at_a_date_expires_then_sweeps(make_api):
    """``ttl`` may be an aware datetime: the item lives until that moment (a
    read does not push it back) and is swept like any expired item."""
    from datetime import datetime, timedelta, timezone

    api = make_api(ttl={"refresh_on_read": True})
    api.need("ttl_at")
    soon = datetime.now(timezone.utc) + timedelta(seconds=0.8)
    later = datetime.now(timezone(timedelta(hours=-5))) + timedelta(days=365)
    await api.put(("t",), "soon", {"v": 1}, ttl=soon)
    await api.put(("t",), "later", {"v": 2}, ttl=later)
    assert (await api.get(("t",), "soon")).value == {"v": 1}  # read: refresh is a no-op
    deadline = asyncio.get_running_loop().time() + 10
    while await api.get(("t",), "soon", refresh_ttl=False) is not None:
        assert asyncio.get_running_loop().time() < deadline, "never expired"
        await asyncio.sleep(0.1)
    assert [r.key for r in await api.search(("t",))] == ["later"]
    assert await _maybe(api.store.sweep_ttl()) == 1
    assert (await api.get(("t",), "later")).value == {"v": 2}


@pytest.mark.parametrize("when", ["naive", "past"])
async def test_ttl_at_a_bad_date_refused_nothing_changes(make_api, when):
    from datetime import datetime, timedelta, timezone

    from langmem_ext.errors import InvalidValueError

    api = make_api()
    api.need("ttl_at")
    await api.put(("t",), "k", {"v": 1})
    bad = (
        datetime.now() + timedelta(days=1)
        if when == "naive"
        else datetime.now(timezone.utc) - timedelta(minutes=1)
    )
    with pytest.raises(InvalidValueError) as e:
        await api.put(("t",), "k", {"v": 2}, ttl=bad)
    assert e.value.code == "INVALID_VALUE"
    assert ("timezone" if when == "naive" else "past") in str(e.value)
    assert (await api.get(("t",), "k")).value == {"v": 1}
