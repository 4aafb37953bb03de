"""The product as deployed: servers with several workers over one PostgreSQL,
under many concurrent clients, for a fixed time.

Three servers, one after the other, on one throwaway PostgreSQL server, each
loaded by ``--clients`` concurrent clients for ``--seconds``:

``MCP``
    ``--workers`` MCP worker processes (streamable HTTP, bearer tokens of ten
    users of two tenants), the clients spread over them; each client is an
    MCP session of the official SDK calling ``search_memory`` (3 in 4 calls)
    and ``manage_memory`` (creating a memory).
``LangGraph API, langmem_ext PostgresStore`` / ``LangGraph API, LangGraph PostgresStore``
    ``langgraph dev`` (one process) with either store behind LangGraph's
    store API; each client calls ``search_items`` (3 in 4) and ``put_item``
    through ``langgraph_sdk``.

Every namespace starts with ``--seed`` memories per user. All servers embed
with the same hashing embedder (``serve_app.hash_embed``; ``--embed local``
for the offline model). Printed per server: calls, calls/s, p50/p99 latency
of each call kind, errors (any failed call, transport or tool), and the
resident memory of each worker at the end; the 1-minute load average before
and after.

    python benchmarks/bench_serve.py --workers 2 --clients 50 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "dev"))
HERE = Path(__file__).resolve().parent

USERS = [(f"t{i % 2}", f"u{i}") for i in range(10)]
WORDS = (
    "coffee tea berlin paris hiking chess piano jazz python rust garden dogs cats "
    "sushi pasta running cycling novels movies travel museum sister brother job"
).split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sentence(rng: random.Random) -> str:
    return "The user likes " + " and ".join(rng.sample(WORDS, 3))


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server not listening on {port} after {timeout} s")


def _rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (a worker's whole tree)."""
    total = 0.0
    pids = [pid]
    try:
        for line in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            pids.append(int(line))
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


class Stats:
    def __init__(self) -> None:
        self.lat: dict[str, list[float]] = {}
        self.errors: list[str] = []

    def add(self, kind: str, seconds: float) -> None:
        self.lat.setdefault(kind, []).append(seconds * 1000)

    def row(self, seconds: float) -> dict[str, Any]:
        calls = sum(len(v) for v in self.lat.values())
        out: dict[str, Any] = {
            "calls": calls,
            "calls_per_s": round(calls / seconds, 1),
            "errors": len(self.errors),
        }
        for kind, v in sorted(self.lat.items()):
            v = sorted(v)
            out[f"{kind}_p50_ms"] = round(statistics.median(v), 1)
            out[f"{kind}_p99_ms"] = round(v[min(len(v) - 1, int(len(v) * 0.99))], 1)
        if self.errors:
            out["first_errors"] = self.errors[:3]
        return out


# -- clients -----------------------------------------------------------------------


def _mcp_session(url: str, token: str) -> Any:
    """An MCP session of the official SDK over streamable HTTP, as ``token``."""
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


async def _mcp_client(url: str, token: str, seconds: float, stats: Stats, seed: int) -> None:
    rng = random.Random(seed)
    async with _mcp_session(url, token) as client:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            write = rng.random() < 0.25
            name, args = (
                ("manage_memory", {"content": _sentence(rng)})
                if write
                else ("search_memory", {"query": " ".join(rng.sample(WORDS, 2))})
            )
            t = time.perf_counter()
            try:
                result = await client.call_tool(name, args)
            except Exception as e:  # a transport failure is an error too
                stats.errors.append(f"{name}: {type(e).__name__}: {e}")
                continue
            if result.is_error:
                stats.errors.append(f"{name}: {result.content[0].text[:200]}")  # type: ignore[union-attr]
            else:
                stats.add(name, time.perf_counter() - t)


async def _mcp_seed(url: str, token: str, n: int, seed: int) -> None:
    rng = random.Random(-seed - 1)
    async with _mcp_session(url, token) as client:
        for _ in range(n):
            result = await client.call_tool("manage_memory", {"content": _sentence(rng)})
            if result.is_error:
                raise RuntimeError(f"seeding failed: {result.content}")


async def _store_client(url: str, who: tuple[str, str], seconds: float, stats: Stats, seed: int):
    from langgraph_sdk import get_client

    rng = random.Random(seed)
    client = get_client(url=url)
    ns = [who[0], who[1], "memories"]
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        write = rng.random() < 0.25
        t = time.perf_counter()
        try:
            if write:
                n += 1
                await client.store.put_item(ns, f"c{seed}-{n}", {"text": _sentence(rng)})
            else:
                await client.store.search_items(ns, query=" ".join(rng.sample(WORDS, 2)), limit=10)
        except Exception as e:
            stats.errors.append(f"{'put' if write else 'search'}: {type(e).__name__}: {e}")
            continue
        stats.add("put_item" if write else "search_items", time.perf_counter() - t)


# -- servers -----------------------------------------------------------------------


def _seed(dsn: str, store_kind: str, per_user: int) -> None:
    env = {**os.environ, "BENCH_DSN": dsn, "BENCH_STORE": store_kind}
    users = ",".join(f"{t}/{u}" for t, u in USERS)
    cmd = [sys.executable, str(HERE / "serve_app.py"), "seed", str(per_user), users, *WORDS]
    subprocess.run(cmd, env=env, check=True)


def run_mcp(dsn: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    tokens = {f"tok-{t}-{u}-0001": {"tenant_id": t, "user_id": u} for t, u in USERS}
    env = {
        **os.environ,
        "BENCH_DSN": dsn,
        "BENCH_CALLERS": json.dumps({"tokens": tokens}),
        "BENCH_EMBED": args.embed,
    }
    procs, ports = [], []
    for w in range(args.workers):
        port = _free_port()
        log = tmp / f"mcp{w}.log"
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "serve_app.py"), "mcp", "--port", str(port)],
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        procs.append((proc, log))
        ports.append(port)
    try:
        for (proc, log), port in zip(procs, ports, strict=True):
            _wait_port(port, proc, log)
        stats = Stats()
        toks = list(tokens)

        async def seed() -> None:
            # Through the MCP tools: the memories land where each caller's tools look.
            await asyncio.gather(
                *(
                    _mcp_seed(f"http://127.0.0.1:{ports[0]}/mcp", tok, args.seed, i)
                    for i, tok in enumerate(toks)
                )
            )

        asyncio.run(seed())

        async def main() -> None:
            await asyncio.gather(
                *(
                    _mcp_client(
                        f"http://127.0.0.1:{ports[c % len(ports)]}/mcp",
                        toks[c % len(toks)],
                        args.seconds,
                        stats,
                        c,
                    )
                    for c in range(args.clients)
                )
            )

        asyncio.run(main())
        row = stats.row(args.seconds)
        row["rss_mb_per_worker"] = [round(_rss_mb(p.pid)) for p, _ in procs]
        return row
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            proc.wait(timeout=30)


def run_langgraph(dsn: str, store_kind: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    app = tmp / f"lg-{store_kind}"
    app.mkdir()
    shutil.copy(HERE / "serve_app.py", app / "serve_app.py")
    (app / "langgraph.json").write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"step": "./serve_app.py:graph"},
                "store": {"path": "./serve_app.py:make_store"},
            }
        )
    )
    port = _free_port()
    log = tmp / f"lg-{store_kind}.log"
    env = {
        **os.environ,
        "BENCH_DSN": dsn,
        "BENCH_STORE": store_kind,
        "BENCH_EMBED": args.embed,
        "PYTHONPATH": str(ROOT),
    }
    from langmem_ext_dev.servers import langgraph_dev

    proc = subprocess.Popen(
        langgraph_dev(port),
        cwd=app,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_port(port, proc, log)
        stats = Stats()

        async def main() -> None:
            await asyncio.gather(
                *(
                    _store_client(
                        f"http://127.0.0.1:{port}", USERS[c % len(USERS)], args.seconds, stats, c
                    )
                    for c in range(args.clients)
                )
            )

        asyncio.run(main())
        row = stats.row(args.seconds)
        row["rss_mb_per_worker"] = [round(_rss_mb(proc.pid))]
        return row
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="MCP worker processes")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=100, help="memories per user at the start")
    parser.add_argument("--embed", choices=["hash", "local"], default="hash")
    parser.add_argument("--only", default="mcp,ours,langgraph")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.workers < 1 or args.clients < 1 or args.seconds <= 0:
        parser.error("--workers, --clients and --seconds must be positive")
    from langmem_ext_dev.postgres import start_embedded_postgres

    server = start_embedded_postgres({"shared_buffers": "1GB", "max_connections": "400"})
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    rows: dict[str, Any] = {}
    load0 = os.getloadavg()[0]
    try:
        only = set(args.only.split(","))
        plan = [
            ("MCP, langmem_ext PostgresStore", "mcp"),
            ("LangGraph API, langmem_ext PostgresStore", "ours"),
            ("LangGraph API, LangGraph PostgresStore", "langgraph"),
        ]
        for name, kind in plan:
            if kind not in only:
                continue
            dsn = server.fresh_database()
            if kind == "mcp":
                row = run_mcp(dsn, args, tmp)
            else:
                _seed(dsn, kind, args.seed)
                row = run_langgraph(dsn, kind, args, tmp)
            row["load_after"] = round(os.getloadavg()[0], 2)
            rows[name] = row
            print(name, json.dumps(row), flush=True)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\nclients {args.clients}, {args.seconds:.0f} s each, MCP workers {args.workers}, "
        f"embedder {args.embed}, load average before {load0:.2f}"
    )
    print(
        "| server | calls/s | errors | search p50 / p99 ms | write p50 / p99 ms "
        "| RSS per worker MB |"
    )
    print("|---|---:|---:|---|---|---|")
    for name, r in rows.items():
        s = "search_memory" if "search_memory_p50_ms" in r else "search_items"
        w = "manage_memory" if "manage_memory_p50_ms" in r else "put_item"
        print(
            f"| {name} | {r['calls_per_s']} | {r['errors']} | {r.get(s + '_p50_ms')} / "
            f"{r.get(s + '_p99_ms')} | {r.get(w + '_p50_ms')} / {r.get(w + '_p99_ms')} | "
            f"{', '.join(map(str, r['rss_mb_per_worker']))} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
