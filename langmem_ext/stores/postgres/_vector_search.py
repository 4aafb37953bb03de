"""Vector-mode search paths that avoid scanning every full-precision vector.

Default (``vector_index={"kind": "exact"}``), :func:`candidate_steps`: the
scope's vectors are read in half precision (``halfvec``) from a covering btree
index ordered by namespace, so one namespace's vectors are contiguous and the
heap is never touched; the nearest ``C`` candidates are re-ranked with the
full-precision vectors. The page is returned only when it is *provably* the
exact page, else the exact query runs:

* half-precision rounding moves a cosine by at most ``HALF_COSINE_ERROR``
  (relative error 2**-11 per component: ``|cos_h - cos| <= ~4 * 2**-11``,
  rounded up with margin for float32 accumulation);
* every vector outside the candidates has ``cos_h <= 1 - t`` (``t`` is the
  largest half-precision distance among the candidates), so its exact cosine
  is at most ``1 - t + HALF_COSINE_ERROR``;
* so if the page's last item scores above that bound (or the candidates are
  every vector of the scope), no outside item can be on the page.

Filters and TTL apply to the re-ranked candidates; when too few pass (a
selective filter) a 10x larger candidate set is tried, then the exact query.
The bound assumes components within half precision's normal range relative
to the vector (embedders' unit vectors are); a vector with components beyond
±65504 cannot be stored in half precision at all (pgvector raises).

``{"kind": "hnsw"}``, :func:`hnsw_steps`: approximate, see ``docs/postgres.md``.
"""

from __future__ import annotations

from typing import Any

from .._ops import HybridSearchOp
from . import _sql
from ._steps import Exec, Steps

__all__ = ["HALF_COSINE_ERROR", "candidate_steps", "hnsw_steps"]

HALF_COSINE_ERROR = 4e-3
"""Upper bound on |cosine in half precision − cosine in full precision|
(theory: ~2e-3 for components in the half-precision normal range)."""

MIN_CANDIDATES = 100
"""Candidates fetched for a page of ``need`` items: ``max(100, 4 * need)``."""


def candidate_steps(
    op: HybridSearchOp, prefix: str, flt: tuple[str, list[Any]], live: str, qvec: Any, dims: int
) -> Steps:
    """The exact page from half-precision candidates, or ``None`` when that
    cannot be proven (the caller then runs the exact query)."""
    need = op.offset + op.limit
    n_cand = max(MIN_CANDIDATES, 4 * need)
    # The planner prefers a bitmap scan over the prefix index (it must visit
    # the heap) to the index-only scan of the covering index; steer it, and put
    # the old values back after. One round trip each way; is_local=true, so
    # nothing outlives the transaction. jit: compiling costs more than it saves.
    knobs = ("enable_bitmapscan", "enable_seqscan", "jit")
    old = yield Exec(
        "SELECT "
        + ", ".join(f"current_setting('{k}')" for k in knobs)
        + ", "
        + ", ".join(f"set_config('{k}', 'off', true)" for k in knobs),
        fetch=True,
    )
    page = None
    for _ in range(2):
        sql, params = _sql.candidate_query(prefix, flt, live, qvec, dims, n_cand, need)
        rows = yield Exec(sql, params, fetch=True)
        if rows:
            n_found, t = rows[0][-2], rows[0][-1]
            exhausted = n_found < n_cand
            last_score = float(rows[min(need, len(rows)) - 1][7])
            if len(rows) >= need and (exhausted or last_score > 1.0 - float(t) + HALF_COSINE_ERROR):
                page = [r[:-2] for r in rows[op.offset : need]]
                break
            if exhausted:
                break  # every vector was a candidate, yet too few items pass
        n_cand *= 10
    yield Exec(
        "SELECT " + ", ".join(f"set_config('{k}', %s, true)" for k in knobs),
        list(old[0][: len(knobs)]),
    )
    return page


def hnsw_steps(
    op: HybridSearchOp,
    vi: dict[str, Any],
    prefix: str,
    flt: tuple[str, list[Any]],
    live: str,
    qvec: Any,
    dims: int,
) -> Steps:
    """Large scope, vector mode: walk the HNSW index with an iterative scan
    in strict distance order, so filtered-out rows do not shorten the page.
    Unindexed items follow from a second, exact query."""
    yield Exec("SET LOCAL hnsw.iterative_scan = strict_order")
    yield Exec(f"SET LOCAL hnsw.ef_search = {int(vi['ef_search'])}")
    yield Exec(f"SET LOCAL hnsw.max_scan_tuples = {int(vi['max_scan_tuples'])}")
    sql, params = _sql.hnsw_query(_sql.scope_clause(prefix, "v.prefix"), flt, live, qvec, dims, op)
    ranked = yield Exec(sql, params, fetch=True)
    need = op.offset + op.limit
    if len(ranked) >= need:
        return ranked[op.offset : need]
    scope = _sql.scope_clause(prefix)
    sql, params = _sql.unindexed_query(scope, flt, live, need - len(ranked))
    tail = yield Exec(sql, params, fetch=True)
    return [*ranked, *tail][op.offset : need]
