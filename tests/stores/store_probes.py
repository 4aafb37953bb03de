# ruff: noqa: E501 - one probe per line reads better as a table
"""Wrong-type and out-of-range inputs at every public store method, for every
face of the package's stores: SQLite and PostgreSQL, sync and async
(``SQLiteStore``, ``PostgresStore``, ``AsyncPostgresStore``).

Each probe is refused with one of the package's errors (a ``ValueError`` or
``TypeError`` with a message) and changes nothing stored, or is accepted, the
same way on every face. ``NUL`` probes are the one difference: SQLite stores
the NUL character, PostgreSQL cannot and refuses it before any SQL.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langmem_ext import SQLiteStore
from langmem_ext.errors import LangmemError
from langmem_ext.stores.postgres import AsyncPostgresStore, PostgresStore
from tests.embeddings import WordEmbeddings

REFUSED, ACCEPTED, NUL = "refused", "accepted", "refused on PostgreSQL"


def deep(n: int) -> list:
    out: list = []
    for _ in range(n):
        out = [out]
    return out


DEEP = deep(100_000)
NS = ("u",)
V = {"text": "x"}

Call = Callable[..., Awaitable[Any]]
PROBES: dict[str, tuple[str, Callable[[Call], Awaitable[Any]]]] = {
    # keys
    "put key int": (REFUSED, lambda c: c("put", NS, 1, V)),
    "put key None": (REFUSED, lambda c: c("put", NS, None, V)),
    "put key bytes": (REFUSED, lambda c: c("put", NS, b"k", V)),
    "put key tuple": (REFUSED, lambda c: c("put", NS, ("k",), V)),
    "put key empty": (REFUSED, lambda c: c("put", NS, "", V)),
    "put key NUL": (REFUSED, lambda c: c("put", NS, "k\x00", V)),
    "put key lone surrogate": (REFUSED, lambda c: c("put", NS, "k\ud800", V)),
    "put key nested 100k deep": (REFUSED, lambda c: c("put", NS, DEEP, V)),
    "get key int": (REFUSED, lambda c: c("get", NS, 1)),
    "get key NUL": (REFUSED, lambda c: c("get", NS, "k\x00")),
    "get key lone surrogate": (REFUSED, lambda c: c("get", NS, "k\ud800")),
    "delete key int": (REFUSED, lambda c: c("delete", NS, 1)),
    "delete key lone surrogate": (REFUSED, lambda c: c("delete", NS, "\udfff")),
    # namespaces
    "put namespace int label": (REFUSED, lambda c: c("put", ("a", 1), "k", V)),
    "put namespace empty": (REFUSED, lambda c: c("put", (), "k", V)),
    "put namespace empty label": (REFUSED, lambda c: c("put", ("",), "k", V)),
    "put namespace dotted label": (REFUSED, lambda c: c("put", ("a.b",), "k", V)),
    "put namespace str": (REFUSED, lambda c: c("put", "user", "k", V)),
    "put namespace None": (REFUSED, lambda c: c("put", None, "k", V)),
    "put namespace NUL": (REFUSED, lambda c: c("put", ("a\x00",), "k", V)),
    "put namespace lone surrogate": (REFUSED, lambda c: c("put", ("\udc00",), "k", V)),
    "put namespace nested 100k deep": (REFUSED, lambda c: c("put", DEEP, "k", V)),
    "get namespace lone surrogate": (REFUSED, lambda c: c("get", ("\ud800",), "k")),
    "get namespace int": (REFUSED, lambda c: c("get", (1,), "k")),
    "delete namespace dotted": (REFUSED, lambda c: c("delete", ("a.b",), "k")),
    "search namespace str": (REFUSED, lambda c: c("search", "u")),
    "search namespace int": (REFUSED, lambda c: c("search", (1,))),
    "search namespace lone surrogate": (REFUSED, lambda c: c("search", ("\ud800",))),
    # values
    "put value str": (REFUSED, lambda c: c("put", NS, "k", "x")),
    "put value list": (REFUSED, lambda c: c("put", NS, "k", [1])),
    "put value object()": (REFUSED, lambda c: c("put", NS, "k", {"a": object()})),
    "put value NaN": (REFUSED, lambda c: c("put", NS, "k", {"a": math.nan})),
    "put value inf": (REFUSED, lambda c: c("put", NS, "k", {"a": math.inf})),
    "put value int key": (REFUSED, lambda c: c("put", NS, "k", {1: "x"})),
    "put value bytes": (REFUSED, lambda c: c("put", NS, "k", {"a": b"x"})),
    "put value set": (REFUSED, lambda c: c("put", NS, "k", {"a": {1}})),
    "put value lone surrogate": (REFUSED, lambda c: c("put", NS, "k", {"text": "a\ud800b"})),
    "put value lone surrogate key": (REFUSED, lambda c: c("put", NS, "k", {"\ud800": 1})),
    "put value nested 100k deep": (REFUSED, lambda c: c("put", NS, "k", {"a": DEEP})),
    "put value nested 2000 deep": (REFUSED, lambda c: c("put", NS, "k", {"a": deep(2000)})),
    "put value nested 500 deep": (ACCEPTED, lambda c: c("put", NS, "k", {"a": deep(500)})),
    "put value NUL": (NUL, lambda c: c("put", NS, "k", {"text": "a\x00b"})),
    "put value NUL key": (NUL, lambda c: c("put", NS, "k", {"a\x00": 1})),
    # ttl
    "put ttl NaN": (REFUSED, lambda c: c("put", NS, "k", V, ttl=math.nan)),
    "put ttl inf": (REFUSED, lambda c: c("put", NS, "k", V, ttl=math.inf)),
    "put ttl negative": (REFUSED, lambda c: c("put", NS, "k", V, ttl=-1)),
    "put ttl zero": (REFUSED, lambda c: c("put", NS, "k", V, ttl=0)),
    "put ttl str": (REFUSED, lambda c: c("put", NS, "k", V, ttl="10")),
    "put ttl bool": (REFUSED, lambda c: c("put", NS, "k", V, ttl=True)),
    "put ttl 10**400": (REFUSED, lambda c: c("put", NS, "k", V, ttl=10**400)),
    "put ttl 2**70": (REFUSED, lambda c: c("put", NS, "k", V, ttl=2**70)),
    "put ttl 1e300": (REFUSED, lambda c: c("put", NS, "k", V, ttl=1e300)),
    "put ttl 1e9 (the longest)": (ACCEPTED, lambda c: c("put", NS, "k", V, ttl=1e9)),
    # index
    "put index str": (REFUSED, lambda c: c("put", NS, "k", V, index="text")),
    "put index int": (REFUSED, lambda c: c("put", NS, "k", V, index=5)),
    "put index True": (REFUSED, lambda c: c("put", NS, "k", V, index=True)),
    "put index [1]": (REFUSED, lambda c: c("put", NS, "k", V, index=[1])),
    # refresh_ttl
    "get refresh_ttl str": (REFUSED, lambda c: c("get", NS, "keep", refresh_ttl="yes")),
    "get refresh_ttl int": (REFUSED, lambda c: c("get", NS, "keep", refresh_ttl=1)),
    "search refresh_ttl str": (REFUSED, lambda c: c("search", NS, refresh_ttl="no")),
    # limit, offset
    "search limit -1": (REFUSED, lambda c: c("search", NS, limit=-1)),
    "search limit True": (REFUSED, lambda c: c("search", NS, limit=True)),
    "search limit 2**70": (REFUSED, lambda c: c("search", NS, limit=2**70)),
    "search limit 1.5": (REFUSED, lambda c: c("search", NS, limit=1.5)),
    "search limit None": (REFUSED, lambda c: c("search", NS, limit=None)),
    "search limit '10'": (REFUSED, lambda c: c("search", NS, limit="10")),
    "search offset -1": (REFUSED, lambda c: c("search", NS, offset=-1)),
    "search offset False": (REFUSED, lambda c: c("search", NS, offset=False)),
    "search offset 2**70": (REFUSED, lambda c: c("search", NS, offset=2**70)),
    # filters
    "filter unknown operator": (REFUSED, lambda c: c("search", NS, filter={"a": {"$bad": 1}})),
    "filter int field": (REFUSED, lambda c: c("search", NS, filter={1: "x"})),
    "filter str": (REFUSED, lambda c: c("search", NS, filter="x")),
    "filter list of pairs": (REFUSED, lambda c: c("search", NS, filter=[("a", 1)])),
    "filter $in of an int": (REFUSED, lambda c: c("search", NS, filter={"a": {"$in": 5}})),
    "filter $gt of a list": (REFUSED, lambda c: c("search", NS, filter={"a": {"$gt": [1]}})),
    "filter empty field": (REFUSED, lambda c: c("search", NS, filter={"": 1})),
    "filter object()": (REFUSED, lambda c: c("search", NS, filter={"a": object()})),
    "filter bytes": (REFUSED, lambda c: c("search", NS, filter={"a": b"x"})),
    "filter $exists 'yes'": (REFUSED, lambda c: c("search", NS, filter={"a": {"$exists": "yes"}})),
    "filter lone surrogate": (REFUSED, lambda c: c("search", NS, filter={"a": "\ud800"})),
    "filter lone surrogate field": (REFUSED, lambda c: c("search", NS, filter={"\ud800": 1})),
    "filter nested 100k deep": (REFUSED, lambda c: c("search", NS, filter={"a": DEEP})),
    "filter 10**400": (ACCEPTED, lambda c: c("search", NS, filter={"a": {"$lt": 10**400}})),
    "filter NUL": (NUL, lambda c: c("search", NS, filter={"a": "x\x00"})),
    # query, mode
    "query int": (REFUSED, lambda c: c("search", NS, query=5)),
    "query bytes": (REFUSED, lambda c: c("search", NS, query=b"x")),
    "query list": (REFUSED, lambda c: c("search", NS, query=["x"])),
    "query lone surrogate": (REFUSED, lambda c: c("search", NS, query="\ud800 tea")),
    "query NUL": (ACCEPTED, lambda c: c("search", NS, query="x\x00y")),
    "mode unknown": (REFUSED, lambda c: c("search", NS, query="x", mode="fast")),
    "mode int": (REFUSED, lambda c: c("search", NS, query="x", mode=1)),
    # list_namespaces
    "list prefix int label": (REFUSED, lambda c: c("list_namespaces", prefix=("a", 1))),
    "list prefix str": (REFUSED, lambda c: c("list_namespaces", prefix="a")),
    "list suffix int": (REFUSED, lambda c: c("list_namespaces", suffix=5)),
    "list prefix lone surrogate": (REFUSED, lambda c: c("list_namespaces", prefix=("\ud800",))),
    "list prefix NUL": (REFUSED, lambda c: c("list_namespaces", prefix=("\x00",))),
    "list max_depth -1": (REFUSED, lambda c: c("list_namespaces", max_depth=-1)),
    "list max_depth True": (REFUSED, lambda c: c("list_namespaces", max_depth=True)),
    "list max_depth 1.5": (REFUSED, lambda c: c("list_namespaces", max_depth=1.5)),
    "list limit 2**70": (REFUSED, lambda c: c("list_namespaces", limit=2**70)),
    "list limit -1": (REFUSED, lambda c: c("list_namespaces", limit=-1)),
    "list offset -1": (REFUSED, lambda c: c("list_namespaces", offset=-1)),
    "list offset True": (REFUSED, lambda c: c("list_namespaces", offset=True)),
    # batch
    "batch int": (REFUSED, lambda c: c("batch", 5)),
    "batch str": (REFUSED, lambda c: c("batch", "x")),
    "batch [1]": (REFUSED, lambda c: c("batch", [1])),
    "batch [None]": (REFUSED, lambda c: c("batch", [None])),
    "batch GetOp int key": (REFUSED, lambda c: c("batch", [GetOp(NS, 1)])),
    "batch GetOp refresh_ttl str": (REFUSED, lambda c: c("batch", [GetOp(NS, "k", "x")])),
    "batch PutOp str value": (REFUSED, lambda c: c("batch", [PutOp(NS, "k", "x")])),
    "batch PutOp ttl NaN": (REFUSED, lambda c: c("batch", [PutOp(NS, "k", V, None, math.nan)])),
    "batch SearchOp limit -1": (REFUSED, lambda c: c("batch", [SearchOp(NS, None, -1)])),
    "batch SearchOp refresh_ttl str": (REFUSED, lambda c: c("batch", [SearchOp(NS, None, 10, 0, None, "x")])),
    "batch ListNamespacesOp limit -1": (REFUSED, lambda c: c("batch", [ListNamespacesOp(None, None, -1, 0)])),
    "batch MatchCondition 'middle'": (REFUSED, lambda c: c("batch", [ListNamespacesOp((MatchCondition("middle", ("a",)),))])),  # type: ignore[arg-type]
    "batch a good put after a bad one": (REFUSED, lambda c: c("batch", [PutOp(NS, "new", V), PutOp(NS, "k", "x")])),
}  # fmt: skip

FACES = (
    "SQLiteStore",
    "SQLiteStore async",
    "PostgresStore",
    "PostgresStore async",
    "AsyncPostgresStore async",
    "AsyncPostgresStore sync",
)


def expected(name: str, face: str) -> str:
    kind = PROBES[name][0]
    if kind == NUL:
        return ACCEPTED if face.startswith("SQLite") else REFUSED
    return kind


def _index() -> dict[str, Any]:
    return {"dims": 16, "embed": WordEmbeddings(16), "fields": ["text"]}


def snapshot(store: Any) -> list[tuple]:
    return sorted(
        (i.namespace, i.key, json.dumps(i.value, sort_keys=True))
        for i in store.search((), limit=10_000)
    )


class Faces:
    """The three store classes, each seeded with one item, called through all
    six faces. Use inside one event loop (the async store is bound to it)."""

    def __init__(self, dsn: Callable[[], str]) -> None:
        self.sqlite = SQLiteStore(":memory:", index=_index())
        self.pg = PostgresStore(dsn(), index=_index(), pool_config={"max_size": 2})
        self.apg = AsyncPostgresStore(dsn(), index=_index(), pool_config={"max_size": 2})

    async def __aenter__(self) -> Faces:
        self.pg.setup()
        await self.apg.setup()
        for store in (self.sqlite, self.pg):
            store.put(NS, "keep", {"text": "kept item", "n": 1})
        await self.apg.aput(NS, "keep", {"text": "kept item", "n": 1})
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.sqlite.close()
        self.pg.close()
        await self.apg.aclose()

    def store(self, face: str) -> Any:
        name = face.split()[0]
        return {
            "SQLiteStore": self.sqlite,
            "PostgresStore": self.pg,
            "AsyncPostgresStore": self.apg,
        }[name]

    async def outcome(self, face: str, call: Callable[[Call], Awaitable[Any]]) -> str:
        """ACCEPTED, REFUSED, or what went wrong."""
        store = self.store(face)
        is_async = face.endswith("async")

        async def through(method: str, *args: Any, **kwargs: Any) -> Any:
            if is_async:
                return await getattr(store, "a" + method)(*args, **kwargs)
            return await asyncio.to_thread(getattr(store, method), *args, **kwargs)

        before = await asyncio.to_thread(snapshot, store)
        try:
            await call(through)
        except LangmemError as e:
            if not isinstance(e, ValueError | TypeError) or not str(e):
                return f"unclear {type(e).__name__}: {e!s:.120}"
            if await asyncio.to_thread(snapshot, store) != before:
                return f"refused ({type(e).__name__}) but changed the store"
            return REFUSED
        except Exception as e:
            return f"raised {type(e).__name__}: {e!s:.120}"
        return ACCEPTED
