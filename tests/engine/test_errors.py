"""Bad input: a clear typed error and nothing stored changes. Provider errors
are retried 3 times with exponential backoff; rate limits are honoured."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_ext.engine import MemoryContext, MemoryEngine, RetryPolicy
from langmem_ext.errors import (
    ContentTooLongError,
    InvalidLayerError,
    InvalidMemoryTypeError,
    InvalidOperationError,
    InvalidValueError,
    LangmemError,
    MemoryNotFoundError,
    MissingIdentifierError,
    ProviderError,
    RateLimitedError,
    StoreError,
    TenantAccessError,
)

from .conftest import snapshot

BAD = {
    "unknown type": (
        lambda e, c, ids: e.get_memory(c, "thought", ids["fact"]),
        InvalidMemoryTypeError,
    ),
    "unknown type in search": (
        lambda e, c, ids: e.search(c, "x", types=["thought"]),
        InvalidMemoryTypeError,
    ),
    "unknown id": (lambda e, c, ids: e.forget(c, "fact", "no-such-id"), MemoryNotFoundError),
    "update unknown id": (
        lambda e, c, ids: e.update(c, "no-such-id", content="x"),
        MemoryNotFoundError,
    ),
    "wrong type for id": (lambda e, c, ids: e.confirm(c, "rule", ids["fact"]), MemoryNotFoundError),
    "confirm episode": (
        lambda e, c, ids: e.confirm(c, "episode", ids["episode"]),
        InvalidOperationError,
    ),
    "invalid layer": (lambda e, c, ids: e.add(c, "x", layer="galaxy"), InvalidLayerError),
    "invalid layer in search": (
        lambda e, c, ids: e.search_layers(c, "x", layers=["galaxy"]),
        InvalidLayerError,
    ),
    "missing identifier": (lambda e, c, ids: e.add(c, "x", layer="agent"), MissingIdentifierError),
    "content too long": (
        lambda e, c, ids: e.store_fact(c, "u", "p", "x" * 10_001),
        ContentTooLongError,
    ),
    "importance too high": (
        lambda e, c, ids: e.store_episode(c, "x", importance=11),
        InvalidValueError,
    ),
    "importance negative": (
        lambda e, c, ids: e.store_fact(c, "u", "p", "x", importance=-1),
        InvalidValueError,
    ),
    "confidence out of range": (
        lambda e, c, ids: e.store_fact(c, "u", "p", "x", confidence=1.5),
        InvalidValueError,
    ),
    "min_confidence out of range": (
        lambda e, c, ids: e.search(c, "x", min_confidence=2),
        InvalidValueError,
    ),
    "unknown permanence": (
        lambda e, c, ids: e.store_fact(c, "u", "p", "x", permanence="eternal"),
        InvalidValueError,
    ),
    "empty content": (lambda e, c, ids: e.store_rule(c, "  "), InvalidValueError),
    "tenant selector from non-admin": (
        lambda e, c, ids: e.store_fact(c, "u", "p", "x", tenant="globex"),
        TenantAccessError,
    ),
    "own tenant named by non-admin": (
        lambda e, c, ids: e.stats(c, tenant="acme"),
        TenantAccessError,
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_a_typed_error_and_changes_nothing(eng, ctx, store, case):
    ids = {
        "fact": eng.store_fact(ctx, "user", "name", "John").id,
        "episode": eng.store_episode(ctx, "hello").id,
    }
    before = snapshot(store)
    call, error = BAD[case]
    with pytest.raises(error) as info:
        call(eng, ctx, ids)
    assert isinstance(info.value, LangmemError) and info.value.code and not info.value.retryable
    assert snapshot(store) == before


def test_content_too_long_carries_the_maximum(eng, ctx, store):
    from langmem_ext.engine import EngineConfig  # noqa: F401  (documented knob)

    with pytest.raises(ContentTooLongError) as e:
        eng.add(ctx, "x" * 10_001)
    assert e.value.details["max_length"] == 10_000 and "10000" in str(e.value)
    small = MemoryEngine(store, max_content_length=5)
    with pytest.raises(ContentTooLongError) as e:
        small.add(ctx, "123456")
    assert e.value.details == {"max_length": 5, "length": 6}


def test_error_codes_and_retryable_flags():
    assert (InvalidLayerError.code, InvalidLayerError.retryable) == ("INVALID_LAYER", False)
    assert (ProviderError.code, ProviderError.retryable) == ("PROVIDER_ERROR", True)
    assert (RateLimitedError.code, RateLimitedError.retryable) == ("RATE_LIMITED", True)
    assert MissingIdentifierError.code == "MISSING_IDENTIFIER"
    assert MemoryNotFoundError.code == "MEMORY_NOT_FOUND"
    assert ContentTooLongError.code == "CONTENT_TOO_LONG"
    assert issubclass(StoreError, ProviderError) and StoreError.code == "PROVIDER_ERROR"
    assert not StoreError.retryable  # a corrupt file does not heal by retrying
    assert issubclass(RateLimitedError, ProviderError)


class Flaky(InMemoryStore):
    """Fails the first ``n`` store calls with ``error``."""

    def __init__(self, n: int, error: Exception) -> None:
        super().__init__()
        self.n, self.error, self.calls = n, error, 0

    def _fail(self) -> None:
        self.calls += 1
        if self.calls <= self.n:
            raise self.error

    def batch(self, ops):
        self._fail()
        return super().batch(ops)

    async def abatch(self, ops):
        self._fail()
        return await super().abatch(ops)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_provider_errors_retried_three_times_with_backoff(mode):
    delays: list[float] = []
    store = Flaky(3, ConnectionError("reset"))
    engine = MemoryEngine(store, retry=RetryPolicy(base_delay=0.01), sleep=delays.append)
    ctx = MemoryContext("acme", user_id="ada")
    if mode == "sync":
        note = engine.add(ctx, "survives")
        assert delays == [0.01, 0.02, 0.04]
    else:
        note = asyncio.run(engine.aadd(ctx, "survives"))
    assert engine.get(ctx, note.id).content == "survives"
    failing = Flaky(4, ConnectionError("down"))
    engine = MemoryEngine(failing, retry=RetryPolicy(base_delay=0.0), sleep=lambda s: None)
    with pytest.raises(ProviderError) as e:
        if mode == "sync":
            engine.add(ctx, "lost")
        else:
            asyncio.run(engine.aadd(ctx, "lost"))
    assert e.value.retryable and e.value.details["attempts"] == 4 and failing.calls == 4


def test_rate_limit_delay_is_honoured():
    delays: list[float] = []
    store = Flaky(2, RateLimitedError("slow down", retry_after=1.5))
    engine = MemoryEngine(store, retry=RetryPolicy(base_delay=0.01), sleep=delays.append)
    engine.add(MemoryContext("acme", user_id="ada"), "ok")
    assert delays == [1.5, 1.5]
    forever = Flaky(10, RateLimitedError("slow down"))
    engine = MemoryEngine(forever, retry=RetryPolicy(base_delay=0.0), sleep=lambda s: None)
    with pytest.raises(RateLimitedError) as e:
        engine.add(MemoryContext("acme", user_id="ada"), "no")
    assert e.value.code == "RATE_LIMITED" and e.value.retryable


def test_non_transient_errors_are_not_retried():
    store = Flaky(1, ValueError("bad op"))
    engine = MemoryEngine(store, sleep=lambda s: pytest.fail("must not wait"))
    with pytest.raises(ValueError, match="bad op"):
        engine.add(MemoryContext("acme", user_id="ada"), "x")
    assert store.calls == 1
