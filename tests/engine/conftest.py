"""Engine fixtures: each test body runs on {SQLiteStore, InMemoryStore} x {sync, async}."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore
from langmem_ext.engine import EngineConfig, MemoryContext, MemoryEngine, RetryPolicy
from tests.embeddings import WordEmbeddings

START = datetime(2025, 1, 1, tzinfo=timezone.utc)


class FakeClock:
    """Time that moves only when a test says so (1 µs per reading, so records
    created in one test are ordered)."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


def make_store(kind: str, tmp_path) -> Any:
    index = {"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "x.db", index=index)
    return InMemoryStore(index=index)


@pytest.fixture(params=["sqlite", "memory"])
def store(request, tmp_path):
    s = make_store(request.param, tmp_path)
    yield s
    if isinstance(s, SQLiteStore):
        s.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def engine(store, clock) -> MemoryEngine:
    return MemoryEngine(store, clock=clock, retry=RetryPolicy(base_delay=0.0))


@pytest.fixture
def ctx() -> MemoryContext:
    return MemoryContext("acme", user_id="ada")


class Runner:
    """Calls ``engine.op`` or ``engine.aop`` (under asyncio.run) with the same arguments."""

    def __init__(self, engine: MemoryEngine, mode: str) -> None:
        self.engine, self.mode = engine, mode

    def __getattr__(self, name: str) -> Any:
        if self.mode == "sync":
            return getattr(self.engine, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run(getattr(self.engine, "a" + name)(*args, **kwargs))

        return call


@pytest.fixture(params=["sync", "async"])
def eng(request, engine) -> Runner:
    return Runner(engine, request.param)


def snapshot(store: Any) -> list[tuple]:
    """Everything stored, to prove a failed call changed nothing."""
    items = store.search((), limit=100_000)
    return sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True)) for i in items)


def space(ctx: MemoryContext) -> tuple[str, ...]:
    """Where the caller's own memories live."""
    return MemoryEngine(InMemoryStore()).env(ctx).layer("user").ns


__all__ = ["START", "EngineConfig", "FakeClock", "Runner", "make_store", "snapshot", "space"]
