"""PostgreSQL errors → this package's errors, by SQLSTATE class.

The class decides what a caller may do next:

========================= ============================ =====================
SQLSTATE                  meaning                      raised as
========================= ============================ =====================
08, 53, 57P01-57P03,      connection lost or refused,  StoreUnavailableError
40001, 40P01, none        server busy or restarting,   (retryable)
(client side), pool       deadlock, serialization,
timeout                   no free pooled connection
22, 23, 54                the data cannot be stored    InvalidValueError
                          (bad value, constraint,      (not retryable: the
                          "tsvector too long")         same input fails)
42501 in ``setup()``      missing privilege            StoreError + advice
anything else             server-side failure          StoreError
========================= ============================ =====================

A failed batch is one rolled-back transaction, so in every case nothing of it
was applied.

Examples:
    >>> import psycopg
    >>> e = psycopg.errors.ProgramLimitExceeded("string is too long for tsvector")
    >>> type(translate(e, "a batch")).__name__
    'InvalidValueError'
"""

from __future__ import annotations

from typing import Any

import psycopg

from ...errors import InvalidValueError, LangmemError, StoreError, StoreUnavailableError

__all__ = ["check_nul", "one_line", "translate"]

_RETRYABLE_CLASSES = ("08", "53")
_RETRYABLE_STATES = ("57P01", "57P02", "57P03", "40001", "40P01")
_INPUT_CLASSES = ("22", "23", "54")


def one_line(e: BaseException) -> str:
    """libpq messages span lines; error messages here read as one."""
    return " ".join(str(e).split())


def _sqlstate(e: psycopg.Error) -> str | None:
    state = getattr(e, "sqlstate", None)
    return state if isinstance(state, str) else None


def translate(e: psycopg.Error, where: str) -> LangmemError:
    """A psycopg error → a langmem_ext error whose message says what to do."""
    state = _sqlstate(e)
    msg = one_line(e)
    if isinstance(e, psycopg.errors.InsufficientPrivilege) and where == "setup":
        return StoreError(
            f"setup() lacks a privilege ({msg}). The 'vector' extension must be created once "
            "by a role allowed to: run `CREATE EXTENSION vector;` in this database as its "
            "owner or a superuser, and grant CREATE on the schema to this role",
            sqlstate=state,
        )
    if "no partition of relation" in msg:
        # Not the input: the tenant's partition went away under this process.
        return StoreUnavailableError(
            f"a tenant's partition was dropped or detached while this store was open, so "
            f"{where} found no table for its items ({msg}); nothing from it was applied. "
            "Retry: a store with partition_by_tenant=True creates the partition again, one "
            "with 'refuse' says which tenant to add_tenant",
            sqlstate=state,
        )
    if state is not None and state[:2] in _INPUT_CLASSES:
        advice = "fix the input; retrying the same call fails again"
        if "tsvector" in msg:
            advice = (
                "an item's indexed text is too long for PostgreSQL's keyword index (about "
                "1 MB of distinct words); shorten it or index fewer fields (put(..., "
                "index=[...]) or index=False)"
            )
        return InvalidValueError(
            f"PostgreSQL refused the data of {where} ({msg}); nothing from it was applied. "
            f"{advice[0].upper()}{advice[1:]}",
            sqlstate=state,
        )
    if (
        (state is None and isinstance(e, psycopg.OperationalError))
        or (state is not None and state[:2] in _RETRYABLE_CLASSES)
        or state in _RETRYABLE_STATES
    ):
        return StoreUnavailableError(
            f"PostgreSQL connection failed or the server was busy during {where} ({msg}); "
            "the transaction was rolled back, nothing from it was applied. Retry; if it "
            "keeps failing, check the server, the connection string and the pool size",
            sqlstate=state,
        )
    return StoreError(f"PostgreSQL error during {where}: {msg}", sqlstate=state)


def check_nul(what: str, value: Any) -> None:
    """PostgreSQL text and jsonb cannot hold the NUL character: refuse it before
    any SQL, naming where it was."""
    # namespaces, the common case: one scan
    if type(value) is tuple and all(type(v) is str for v in value) and "\x00" not in "".join(value):
        return
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidValueError(
                f"{what} contains the NUL character (\\x00), which PostgreSQL cannot "
                f"store; remove it (got {value[:60]!r})"
            )
    elif isinstance(value, dict):
        for k, v in value.items():
            check_nul(what, k)
            check_nul(what, v)
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            check_nul(what, v)
