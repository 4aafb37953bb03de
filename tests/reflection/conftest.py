"""Reflection fixtures: a SQLite store with deterministic embeddings, an engine
whose waits are recorded instead of slept, and a caller."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from langmem_ext import SQLiteStore
from langmem_ext.agents.reflection import ReflectionExecutor, ReflectionSettings
from langmem_ext.engine import MemoryContext, MemoryEngine, RetryPolicy
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.embeddings import WordEmbeddings


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(
        tmp_path / "mem.db", index={"dims": 64, "embed": WordEmbeddings(64), "fields": ["content"]}
    )
    yield s
    s.close()


@pytest.fixture(params=["sync", "async"])
def reflect(request):
    """Reflect now, with ``executor.reflect`` or ``executor.areflect``."""

    def run(executor, messages, config):
        if request.param == "sync":
            return executor.reflect(messages, config)
        return asyncio.run(executor.areflect(messages, config))

    return run


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def engine(store, sleeps) -> MemoryEngine:
    return MemoryEngine(store, retry=RetryPolicy(base_delay=0.0), sleep=sleeps.append)


@pytest.fixture
def ctx() -> MemoryContext:
    return MemoryContext("acme", user_id="ada")


def config_for(ctx: MemoryContext, thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"memory_context": ctx, "thread_id": thread}}


def make_executor(script: Any, engine: MemoryEngine, **kw: Any) -> ReflectionExecutor:
    settings = kw.pop("settings", ReflectionSettings(backoff=0.01))
    model = script if not isinstance(script, list) else ScriptedExtractionModel(script)
    return ReflectionExecutor(
        model, engine=engine, delay=kw.pop("delay", 0), settings=settings, **kw
    )
