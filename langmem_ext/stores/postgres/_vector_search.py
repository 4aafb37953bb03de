"""Vector-mode search: exact for small scopes, an approximate index for large
ones, chosen per query from the measured cost of each (``docs/postgres.md``
has the figures). The approximate index is the inverted file of :mod:`._ivf`
by default (cheap writes), or pgvector's HNSW when configured.

**Exact**, :func:`candidate_steps`: the scope's vectors are read in half
precision (``halfvec``) from a covering btree index ordered by namespace, so
one namespace's vectors are contiguous and the heap is never touched; the
nearest ``C`` candidates are re-ranked with the full-precision vectors. The
page is returned only when it is *provably* the exact page, else the exact
query runs:

* half-precision rounding moves a cosine by at most ``HALF_COSINE_ERROR``
  (relative error 2**-11 per component: ``|cos_h - cos| <= ~4 * 2**-11``,
  rounded up with margin for float32 accumulation);
* every vector outside the candidates has ``cos_h <= 1 - t`` (``t`` is the
  largest half-precision distance among the candidates), so its exact cosine
  is at most ``1 - t + HALF_COSINE_ERROR``;
* so if the page's last item scores above that bound (or the candidates are
  every vector of the scope), no outside item can be on the page.

Its cost grows with the scope (``a`` ≈ 0.6 µs per vector here).

**Approximate**, :func:`hnsw_steps`: pgvector's HNSW index over the
half-precision vectors, walked with an iterative scan (pgvector 0.8) that
applies the namespace, TTL and filters as it goes, so they never shorten the
page; its ``C`` candidates are re-ranked in full precision. Its cost grows
with ``C / s``, ``s`` the fraction of the store's vectors in the scope (and
passing the filter): about ``b·C·N/n`` (``b`` ≈ 28 µs here).

**The inverted file** (``{"kind": "ivf"}``, the default; :mod:`._ivf`):
scopes of more than ``exact_below`` vectors read the nearest cells' vectors
once the cells are trained, while that reads at most a quarter of the cells.

**The HNSW choice** (:func:`vector_steps`), per query: exact is cheaper while
``a·n < b·C·N/n``, that is ``n < sqrt(cost_ratio · C · N)`` with
``cost_ratio = b/a`` (45, measured: ``docs/postgres.md``); scopes of at most
``exact_below`` vectors are always exact. ``n`` and ``N`` are the planner's
row estimates from the table statistics (``lmx_scope_rows``), so choosing
costs one short statement whatever the scope's size. When a filter passes so
few rows that the iterative scan ends (``max_scan_tuples``) before filling
the page, the exact path answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol, TypedDict

from ...errors import ConfigurationError
from .._ops import HybridSearchOp
from . import _sql
from ._ivf import CellIndex, cell_steps, load_steps, max_probes, probe_order
from ._schema import MAX_SCAN_INDEX_DIMS
from ._sql import VectorQuery
from ._steps import Exec, Steps

__all__ = [
    "HALF_COSINE_ERROR",
    "CellHolder",
    "VectorIndexConfig",
    "candidate_steps",
    "hnsw_steps",
    "resolve_vector_index",
    "vector_steps",
]

HALF_COSINE_ERROR = 4e-3
"""Upper bound on |cosine in half precision − cosine in full precision|
(theory: ~2e-3 for components in the half-precision normal range)."""

MIN_CANDIDATES = 100
"""Exact path: candidates fetched for a page of ``need`` items: ``max(100, 4 * need)``."""

MAX_HNSW_DIMS = 4000
"""pgvector indexes halfvec up to 4,000 dimensions."""


class VectorIndexConfig(TypedDict, total=False):
    """How vector search runs (``vector_index=`` of the stores).

    ``{"kind": "ivf"}`` (the default for cosine distance up to 1,200
    dimensions): an inverted file, trained once the store holds ``train_at``
    vectors; writes stay at the speed of the table (no graph to walk), and
    each ``mode="vector"`` query over more than ``exact_below`` vectors reads
    the ``probes`` cells nearest the query, smaller scopes stay exact.
    ``{"kind": "hnsw"}`` (the default otherwise, up to 4,000 dimensions):
    pgvector's HNSW index, faster to query at many millions of vectors,
    about 15 times slower to write. ``{"kind": "exact"}``: no approximate
    index, every result exact.
    """

    kind: str
    """``"ivf"``, ``"hnsw"`` or ``"exact"``."""
    lists: int
    """Inverted file: number of cells (1024)."""
    probes: int
    """Inverted file: cells read per query at least (2)."""
    scan_rows: int
    """Inverted file: vectors of the scope read per query, about (4096): as
    many nearest cells as hold them (by their share of the training sample);
    four times as many when a filter passes under a quarter of what was read;
    when that is more than a quarter of the cells, the search is exact."""
    train_at: int
    """Inverted file: the cells are trained when the store first holds this
    many vectors (20000); until then every search is exact."""
    m: int
    """HNSW graph degree (16)."""
    ef_construction: int
    """HNSW build candidate list (64)."""
    ef_search: int
    """HNSW query candidate list, ``hnsw.ef_search`` (150)."""
    candidates: int
    """Candidates taken from the HNSW scan and re-ranked in full precision (40)."""
    filtered_candidates: int
    """Candidates when a filter applies (60): an iterative scan returns them in
    a looser order, so more are needed for the same recall."""
    max_scan_tuples: int
    """``hnsw.max_scan_tuples``: how far an iterative scan may go before the
    exact path answers instead (20000)."""
    cost_ratio: float
    """Measured cost of one HNSW candidate relative to the exact scan of one
    vector (``b/a`` in the module docs); larger keeps more scopes exact (45)."""
    exact_below: int
    """Scopes of at most this many vectors are always exact (2000)."""


_DEFAULTS: dict[str, Any] = {
    "m": 16,
    "ef_construction": 64,
    "ef_search": 150,
    "candidates": 40,
    "filtered_candidates": 60,
    "max_scan_tuples": 20000,
    "cost_ratio": 45.0,
    "exact_below": 2000,
    "lists": 1024,
    "probes": 2,
    "scan_rows": 4096,
    "train_at": 20000,
}


def resolve_vector_index(
    vector_index: Any,
    ann_index_config: Mapping[str, Any] | None,
    dims: int | None,
    distance: str = "cosine",
) -> dict[str, Any]:
    """Our ``vector_index`` (or LangGraph's ``index["ann_index_config"]``) with
    defaults filled in, plus ``scan_index`` (whether the covering index exists)."""
    if vector_index is not None and ann_index_config is not None:
        raise ConfigurationError(
            "pass either vector_index=... or index['ann_index_config'] (LangGraph's form), not both"
        )
    vi: dict[str, Any]
    if ann_index_config is not None:
        vi = _from_langgraph(ann_index_config)
    elif vector_index is None:
        vi = {}
    elif isinstance(vector_index, Mapping):
        vi = dict(vector_index)
    else:
        raise ConfigurationError(
            f"vector_index must be a dict such as {{'kind': 'hnsw'}}, got {vector_index!r}"
        )
    unknown = set(vi) - set(VectorIndexConfig.__annotations__)
    if unknown:
        raise ConfigurationError(
            f"unknown vector_index keys {sorted(unknown)}; known keys: "
            f"{sorted(VectorIndexConfig.__annotations__)}"
        )
    hnsw_ok = dims is not None and dims <= MAX_HNSW_DIMS
    ivf_ok = dims is not None and dims <= MAX_SCAN_INDEX_DIMS and distance == "cosine"
    kind = vi.get("kind", "ivf" if ivf_ok else "hnsw" if hnsw_ok else "exact")
    if kind not in ("exact", "hnsw", "ivf"):
        raise ConfigurationError(
            f"vector_index kind must be 'ivf', 'hnsw' or 'exact', got {kind!r}"
        )
    if kind == "ivf" and dims is not None and not ivf_ok:
        raise ConfigurationError(
            "the inverted-file index needs cosine distance and at most "
            f"{MAX_SCAN_INDEX_DIMS} dimensions (here {distance}, {dims}); use "
            "vector_index={'kind': 'hnsw'} or {'kind': 'exact'}"
        )
    if kind == "hnsw" and dims is not None and not hnsw_ok:
        raise ConfigurationError(
            f"an HNSW index holds at most {MAX_HNSW_DIMS} dimensions, the embedder has "
            f"{dims}; use vector_index={{'kind': 'exact'}}"
        )
    out = {**_DEFAULTS, **vi, "kind": kind if dims else "exact"}
    for key in (
        "m",
        "ef_construction",
        "ef_search",
        "candidates",
        "filtered_candidates",
        "max_scan_tuples",
        "exact_below",
        "lists",
        "probes",
        "scan_rows",
        "train_at",
    ):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ConfigurationError(f"vector_index[{key!r}] must be a positive int, got {v!r}")
    ratio = out["cost_ratio"]
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
        raise ConfigurationError(
            f"vector_index['cost_ratio'] must be a positive number, got {ratio!r}"
        )
    out["scan_index"] = dims is not None and 0 < dims <= MAX_SCAN_INDEX_DIMS
    return out


def _from_langgraph(ann: Mapping[str, Any]) -> dict[str, Any]:
    kind = ann.get("kind", "hnsw")
    if kind == "flat":
        return {"kind": "exact"}
    if kind != "hnsw":
        raise ConfigurationError(
            f"ann_index_config kind {kind!r} is not supported; use {{'kind': 'hnsw'}} (the "
            "default: exact for small namespaces, HNSW for large scopes) or {'kind': 'flat'} "
            "(always exact)"
        )
    if ann.get("vector_type", "vector") not in ("vector", "halfvec"):
        raise ConfigurationError(
            f"ann_index_config vector_type {ann['vector_type']!r} is not supported; vectors "
            "are stored in full precision and indexed in half precision ('vector' or "
            "'halfvec' both mean this)"
        )
    unknown = set(ann) - {"kind", "vector_type", "m", "ef_construction"}
    if unknown:
        raise ConfigurationError(f"unknown ann_index_config keys {sorted(unknown)}")
    return {k: v for k, v in ann.items() if k in ("m", "ef_construction")} | {"kind": "hnsw"}


class CellHolder(Protocol):
    """Where the store keeps the trained cells it last read."""

    cells: CellIndex | None


def vector_steps(
    q: VectorQuery, op: HybridSearchOp, vi: dict[str, Any], holder: CellHolder
) -> Steps:
    """The page for a ``mode="vector"`` query, or ``None``: then the caller
    runs the exact query (always correct, cost proportional to the scope).
    ``holder.cells`` is reloaded when the stored cells are newer."""
    need = op.offset + op.limit
    n_cand = candidates(vi, need, bool(q.flt[1]))
    # hnsw.ef_search stops at 1000; deeper pages continue by the iterative scan.
    ef = min(1000, max(n_cand, vi["ef_search"]))
    row = (yield Exec(*_sql.plan_query(q.prefix, ef, vi["max_scan_tuples"]), True))[0]
    total, n, version = row[0], row[1], row[2]
    if vi["kind"] == "ivf" and version is not None and n > vi["exact_below"]:
        cells = holder.cells
        if cells is None or cells.version != version:
            cells = holder.cells = yield from load_steps()
        if cells is not None:
            order, probes = probe_order(cells, q.qvec, vi, n, n_cand)
            if probes <= max_probes(cells.lists):
                page = yield from cell_steps(q, op, order, probes, n_cand)
                if page is not None:
                    return page
    bound = exact_bound(total, vi["cost_ratio"] * n_cand, vi["exact_below"])
    if vi["kind"] == "hnsw" and n >= bound:
        page = yield from hnsw_steps(q, op, n_cand)
        if page is not None:
            return page
    # The half-precision bound of the candidate path is a cosine bound; tiny
    # scopes are cheaper to rank outright.
    if vi["scan_index"] and q.distance == "cosine" and n > MIN_CANDIDATES:
        return (yield from candidate_steps(q, op))
    return None


def candidates(vi: dict[str, Any], need: int, filtered: bool) -> int:
    """HNSW candidates re-ranked for a page of ``need`` items: ``candidates``
    (``filtered_candidates`` when a filter thins the scan out: its order is
    looser), at least twice the page."""
    base = vi["filtered_candidates"] if filtered else vi["candidates"]
    return max(int(base), 2 * need)


def exact_bound(total: float, cost_ratio: float, exact_below: int) -> int:
    """Scopes below this many vectors are searched exactly (see module docs).

    Examples:
        >>> exact_bound(1_000_000, 45 * 40, 2000)
        42427
    """
    return max(exact_below, math.ceil(math.sqrt(cost_ratio * max(total, 0.0))))


def candidate_steps(q: VectorQuery, op: HybridSearchOp) -> Steps:
    """The exact page from half-precision candidates, or ``None`` when that
    cannot be proven (the caller then runs the exact query)."""
    need = op.offset + op.limit
    n_cand = max(MIN_CANDIDATES, 4 * need)
    for _ in range(2):
        sql, params = _sql.candidate_query(q, n_cand, need)
        rows = yield Exec(sql, params, fetch=True, prepare=False)
        if rows:
            n_found, t = rows[0][-2], rows[0][-1]
            exhausted = n_found < n_cand
            last_score = float(rows[min(need, len(rows)) - 1][7])
            if len(rows) >= need and (exhausted or last_score > 1.0 - float(t) + HALF_COSINE_ERROR):
                return [r[:-2] for r in rows[op.offset : need]]
            if exhausted:
                return None  # every vector was a candidate, yet too few items pass
        n_cand *= 10
    return None


def hnsw_steps(q: VectorQuery, op: HybridSearchOp, n_cand: int) -> Steps:
    """Walk the HNSW index with an iterative scan (namespace, TTL and filter
    applied during the scan; settings from :func:`vector_steps`' first
    statement), re-rank the candidates in full precision. ``None`` when fewer
    items than the page were found (a selective filter ended the scan at
    ``max_scan_tuples``): the exact path answers."""
    need = op.offset + op.limit
    rows = yield Exec(*_sql.hnsw_query(q, n_cand, need), fetch=True, prepare=False)
    if len(rows) < need:
        return None
    return rows[op.offset : need]
