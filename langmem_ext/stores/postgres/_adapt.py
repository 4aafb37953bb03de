"""Per-connection adaptation: numpy arrays dumped as pgvector ``vector``.

The ``vector`` type's OID is looked up once per store (at setup); registering
the dumper on a connection afterwards costs no query, so it is done on every
checkout from a pool the store does not own.
"""

from __future__ import annotations

from typing import Any

from pgvector.psycopg.vector import VectorBinaryDumper
from psycopg.types import TypeInfo

__all__ = ["adapt", "dumper_for"]


def dumper_for(info: TypeInfo) -> type:
    return type("LmxVectorDumper", (VectorBinaryDumper,), {"oid": info.oid})


def adapt(conn: Any, info: TypeInfo, dumper: type) -> None:
    if getattr(conn, "_lmx_adapted", None) is info:
        return
    info.register(conn)
    conn.adapters.register_dumper("numpy.ndarray", dumper)
    conn._lmx_adapted = info
