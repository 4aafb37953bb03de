from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from .backends import BACKENDS, Backend


class Api:
    """Calls a store's sync or async methods behind one awaitable interface, so
    every contract test runs in both modes."""

    def __init__(self, store: BaseStore, backend: Backend, is_async: bool) -> None:
        self.store = store
        self.backend = backend
        self.is_async = is_async

    def has(self, cap: str) -> bool:
        return cap in self.backend.caps

    def need(self, cap: str) -> None:
        if cap not in self.backend.caps:
            pytest.skip(f"{self.backend.name} lacks {cap}")

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return await getattr(self.store, "a" + name)(*args, **kwargs)
        result = getattr(self.store, name)(*args, **kwargs)
        assert not inspect.isawaitable(result)
        return result

    async def put(self, *args: Any, **kwargs: Any) -> None:
        return await self._call("put", *args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get", *args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        return await self._call("delete", *args, **kwargs)

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        if "mode" in kwargs and not self.has("modes"):
            kwargs.pop("mode")
        return await self._call("search", *args, **kwargs)

    async def list_namespaces(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("list_namespaces", *args, **kwargs)

    async def batch(self, ops: list[Any]) -> Any:
        return await self._call("batch", ops)


@pytest.fixture(params=[b.name for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> Backend:
    return next(b for b in BACKENDS if b.name == request.param)


@pytest.fixture(params=["sync", "async"])
def make_api(request: pytest.FixtureRequest, backend: Backend, tmp_path: Any) -> Iterator[Any]:
    """``make_api(index=None, ttl=None)`` → an :class:`Api` on a fresh store."""
    made: list[BaseStore] = []
    counter = iter(range(1000))

    def make(index: Any = None, ttl: Any = None) -> Api:
        sub = tmp_path / f"s{next(counter)}"
        sub.mkdir()
        is_async = request.param == "async"
        store = backend.make(request, sub, index=index, ttl=ttl, is_async=is_async)
        made.append(store)
        return Api(store, backend, is_async)

    yield make
    for store in made:
        close = getattr(store, "close", None)
        if close is not None:
            close()
