"""The servers ``bench_serve.py`` starts: an MCP worker over PostgresStore, and
the store and graph of a LangGraph API server (``langgraph dev``), with our
PostgresStore or LangGraph's.

Every server gets the same embedder, :func:`hash_embed`: 384 dimensions from
hashed words, computed in microseconds, so what is measured is the server
and the store, not a model (``BENCH_EMBED=local`` uses the offline model).

    python benchmarks/serve_app.py mcp --port 8101      # BENCH_DSN, BENCH_CALLERS
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from typing import Any, TypedDict

import numpy as np

DIMS = 384


def hash_embed(texts: list[str]) -> list[list[float]]:
    """Each word adds a fixed random-looking unit direction (seeded by its hash)."""
    out = np.zeros((len(texts), DIMS), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            out[i] += np.random.default_rng(seed).standard_normal(DIMS, dtype=np.float32)
        norm = np.linalg.norm(out[i])
        out[i] = out[i] / norm if norm else 1.0 / np.sqrt(DIMS)
    return out.tolist()


def _index() -> dict[str, Any]:
    embed: Any = "local" if os.environ.get("BENCH_EMBED") == "local" else hash_embed
    return {"dims": DIMS, "embed": embed, "fields": ["text", "content"]}


def make_store() -> Any:
    """The LangGraph server's store: ``BENCH_STORE`` ``ours`` or ``langgraph``."""
    dsn = os.environ["BENCH_DSN"]
    if os.environ.get("BENCH_STORE", "ours") == "ours":
        from langmem_ext import PostgresStore

        store = PostgresStore(dsn, index=_index())  # type: ignore[arg-type]
    else:
        from langgraph.store.postgres import PostgresStore as LangGraphPostgresStore
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool(dsn, min_size=1, max_size=10, kwargs={"autocommit": True})
        index = {**_index(), "fields": ["text"]}
        store = LangGraphPostgresStore(pool, index=index)  # type: ignore[arg-type]
    store.setup()
    return store


class _State(TypedDict):
    n: int


def _graph() -> Any:
    from langgraph.graph import StateGraph

    g = StateGraph(_State)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("step")
    g.set_finish_point("step")
    return g.compile()


graph = _graph() if __name__ != "__main__" else None


def _serve_mcp(port: int) -> None:
    from langmem_ext import PostgresStore
    from langmem_ext.servers.callers import Callers
    from langmem_ext.servers.mcp import create_mcp_server

    store = PostgresStore(os.environ["BENCH_DSN"], index=_index())  # type: ignore[arg-type]
    store.setup()
    server = create_mcp_server(store, callers=Callers.from_json(os.environ["BENCH_CALLERS"]))
    server.run_http("127.0.0.1", port)


def _seed(per_user: int, users: list[tuple[str, str]], words: list[str]) -> None:
    """``per_user`` memories in each ``(tenant, user, "memories")`` namespace."""
    import random

    from langgraph.store.base import PutOp

    store, rng = make_store(), random.Random(0)
    ops = [
        PutOp(
            (t, u, "memories"),
            f"s{i}",
            {"text": "The user likes " + " and ".join(rng.sample(words, 3))},
        )
        for t, u in users
        for i in range(per_user)
    ]
    for a in range(0, len(ops), 500):
        store.batch(ops[a : a + 500])


if __name__ == "__main__":
    if sys.argv[1:3] == ["mcp", "--port"]:
        _serve_mcp(int(sys.argv[3]))
    elif sys.argv[1:2] == ["seed"]:
        pairs = [tuple(x.split("/")) for x in sys.argv[3].split(",")]
        _seed(int(sys.argv[2]), pairs, sys.argv[4:])  # type: ignore[arg-type]
    else:
        sys.exit("usage: serve_app.py mcp --port PORT | seed N T/U,T/U WORD...")
