"""Constructor arguments of the PostgreSQL stores, checked: the connection,
``pool_config`` (LangGraph's ``PoolConfig`` or any ``psycopg_pool`` option) and
``pipeline``. Pure functions, no I/O.

Examples:
    >>> pool_options({"max_size": None})["max_size"]
    10
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import psycopg_pool

from ...errors import ConfigurationError

__all__ = [
    "LSN_QUERY",
    "ON_PRIMARY",
    "check_conn",
    "check_pipeline",
    "check_replica_conn",
    "pool_options",
    "replica_pool_options",
]

#: The primary's WAL position after a write committed, its commit record included
#: (the insert position: with synchronous_commit off it may not be written yet).
LSN_QUERY = "SELECT pg_current_wal_insert_lsn()::text"

#: What a replica read returns when the primary must answer instead.
ON_PRIMARY: Any = object()

#: Seconds to wait for a replica connection before reading from the primary.
REPLICA_CONNECT_TIMEOUT = 2.0

_POOL_OPTIONS = frozenset(inspect.signature(psycopg_pool.ConnectionPool.__init__).parameters) - {
    "self",
    "conninfo",
    "open",
    "configure",
    "args",
}


def pool_options(pool_config: Any) -> dict[str, Any]:
    """``pool_config`` (LangGraph's ``PoolConfig`` or any ``psycopg_pool``
    option) checked, with this store's defaults: 1 to 10 connections, 30 s
    timeout, autocommit connections."""
    if pool_config is None:
        pool_config = {}
    if not isinstance(pool_config, Mapping):
        raise ConfigurationError(
            f"pool_config must be a dict such as {{'max_size': 10}}, got {pool_config!r}"
        )
    unknown = set(pool_config) - _POOL_OPTIONS
    if unknown:
        raise ConfigurationError(
            f"unknown pool_config keys {sorted(unknown)}; psycopg_pool accepts "
            f"{sorted(_POOL_OPTIONS)}"
        )
    pc = dict(pool_config)
    kwargs = pc.pop("kwargs", None) or {}
    if not isinstance(kwargs, Mapping):
        raise ConfigurationError(f"pool_config['kwargs'] must be a dict, got {kwargs!r}")
    # LangGraph's max_size=None ("no limit") would mean min_size in psycopg_pool.
    if pc.get("max_size") is None:
        pc["max_size"] = 10
    pc.setdefault("min_size", 1)
    pc.setdefault("timeout", 30.0)
    pc["max_size"] = max(pc["max_size"], pc["min_size"])
    return {**pc, "kwargs": {"autocommit": True, **kwargs}}


def check_conn(conn: Any, kinds: tuple[type, ...]) -> None:
    if not isinstance(conn, kinds):
        names = ", ".join(f"{k.__module__.split('.')[0]}.{k.__name__}" for k in kinds[1:])
        raise ConfigurationError(
            f"conn must be a connection string or a {names}, got {type(conn).__name__}"
        )


def check_pipeline(pipeline: Any) -> bool:
    if not isinstance(pipeline, bool):
        raise ConfigurationError(f"pipeline must be True or False, got {pipeline!r}")
    return pipeline


def check_replica_conn(replicas: Any, single_connection: bool) -> None:
    if replicas is not None and single_connection:
        raise ConfigurationError(
            "replicas need a connection string or a pool for the primary (the store "
            "then keeps a pool per replica), not a single connection"
        )


def replica_pool_options(store: Any) -> dict[str, Any]:
    """The primary's pool options for a replica's pool, with no connection
    opened up front and a short wait: a replica that is down must cost a read
    little before the primary answers."""
    pc = dict(store._pool_config)
    pc["min_size"] = 0
    pc["timeout"] = min(float(pc["timeout"]), REPLICA_CONNECT_TIMEOUT)
    kwargs = dict(pc["kwargs"])
    kwargs.setdefault("connect_timeout", int(REPLICA_CONNECT_TIMEOUT))
    pc["kwargs"] = kwargs
    return pc
