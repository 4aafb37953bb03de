"""Search planning shared by the operations: one logical search as store ops
for this store's capabilities (native filters where the store has them, a
Python check on an over-fetched page where it does not), and paged reads.
No I/O: :func:`paged` is an operation (see :mod:`.requests`).

Examples:
    >>> matches({"n": 11, "tags": ["x"]}, {"n": {"$gt": 10}, "tags": {"$contains": "x"}})
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from langgraph.store.base import Op, SearchOp

from ...stores import HybridSearchOp, normalize_filter
from .config import StoreCaps
from .requests import Batch, Operation

__all__ = ["matches", "paged", "search_ops"]


def search_ops(
    caps: StoreCaps,
    namespace: tuple[str, ...],
    *,
    eq: Mapping[str, Any],
    any_of: Mapping[str, list[Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
    query: str | None,
    limit: int,
    mode: str | None = None,
) -> tuple[list[Op], Callable[[Mapping[str, Any]], bool]]:
    """Ops for one logical search and a predicate to apply to their results.

    On a store with ``$in`` the whole filter is one op. Otherwise each
    ``any_of`` field is split into one ``$eq`` op per value, and ``extra``
    conditions the store cannot evaluate are checked in Python on an
    over-fetched result (so the page may be shorter than on our stores).
    """
    any_of = {k: list(v) for k, v in (any_of or {}).items()}
    extra = dict(extra or {})
    conds = normalize_filter(extra)
    # LangGraph's stores read "metadata.n" as one top-level key (and InMemoryStore
    # then fails comparing None), so nested paths are checked here on theirs.
    native_extra = all(c.op in caps.operators and (caps.modes or len(c.path) == 1) for c in conds)
    base = dict(eq)
    if native_extra:
        base.update(extra)
    check = (lambda v: True) if native_extra else (lambda v: matches(v, extra))
    fetch = limit if native_extra else limit * 5 + 20
    filters: list[dict[str, Any]]
    if "$in" in caps.operators or not any_of:
        f = dict(base)
        f.update({k: {"$in": v} for k, v in any_of.items()})
        filters = [f]
    else:
        filters = [base]
        for k, values in any_of.items():
            filters = [{**f, k: v} for f in filters for v in values]
    ops: list[Any] = []
    for f in filters:
        if caps.modes:
            ops.append(HybridSearchOp(namespace, f, fetch, 0, query, False, mode))  # type: ignore[arg-type]
        else:
            ops.append(SearchOp(namespace, f, fetch, 0, query, False))
    return ops, check


def matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Evaluate our filter language (see :mod:`langmem_ext.stores._filters`) in
    Python, for stores that lack an operator."""
    for c in normalize_filter(filter):
        present, v = True, cast(Any, value)
        for part in c.path:
            if isinstance(v, Mapping) and part in v:
                v = v[part]
            else:
                present, v = False, None
                break
        if not _test(present, v, c.op, c.value):
            return False
    return True


def _test(present: bool, v: Any, op: str, x: Any) -> bool:
    if op == "$exists":
        return present == x
    if op == "$ne":
        return not present or v != x
    if op == "$nin":
        return not present or v not in x
    if not present:
        return op == "$eq" and x is None
    if op == "$eq":
        return v == x
    if op == "$in":
        return v in x
    if op == "$contains":
        want = x if isinstance(x, list | tuple) else [x]
        if isinstance(v, str):
            return all(isinstance(w, str) and w in v for w in want)
        return isinstance(v, list) and all(w in v for w in want)
    num = isinstance(x, int | float)
    if num != (isinstance(v, int | float) and not isinstance(v, bool)):
        return False
    if not num and not isinstance(v, str):
        return False
    return {"$gt": v > x, "$gte": v >= x, "$lt": v < x, "$lte": v <= x}[op]


def paged(
    caps: StoreCaps, namespace: tuple[str, ...], filter: dict[str, Any], page: int = 1000
) -> Operation[list[Any]]:
    """Every item under ``namespace`` matching an ``$eq`` filter (no query),
    fetched page by page. Used by stats, list totals and sweeps."""
    out: list[Any] = []
    offset = 0
    while True:
        op: Any
        if caps.modes:
            op = HybridSearchOp(namespace, filter, page, offset, None, False, None)
        else:
            op = SearchOp(namespace, filter, page, offset, None, False)
        [items] = yield Batch([op])
        out.extend(items)
        if len(items) < page:
            return out
        offset += page
