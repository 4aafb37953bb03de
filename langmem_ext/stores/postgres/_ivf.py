"""The inverted-file ("ivf") vector index of PostgresStore: the default.

Why not pgvector's HNSW by default: every insert into an HNSW graph walks the
graph (measured here: 434 puts/s through ``batch()`` at 100k vectors, 1M
loaded in 54 min). Here the store trains ``lists`` centroids once (spherical
k-means in numpy over a sample, when the store first holds ``train_at``
vectors) and keeps them in memory; a write assigns each vector to its nearest
centroid's *cell* with one matrix product per batch, and the ``cell`` column
is one more btree entry. Vectors written before the cells exist (or by a
process that has not seen them yet) sit in cell ``-1``, which every search
reads, so nothing is ever missed, only read more slowly.

A search takes the ``probes`` cells nearest the query (more when the scope or
the filter keeps few of their vectors), reads their half-precision vectors
from the covering index ``lmx_vectors_cells (cell, prefix)`` (an index-only
scan that stays inside the namespace's range in each cell), and re-ranks the
nearest candidates with the full-precision vectors, as the other paths do.
When a filter passes under a quarter of the vectors read, or too few items
pass, it probes four times as many cells; past a quarter of the cells the
exact path answers instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._ops import HybridSearchOp
from ._schema import TRAIN_LOCK_KEY, cells_index_sql
from ._sql import ITEM_COLS, VECTOR_ROWS, VectorQuery, rerank_cte, tenant_clause
from ._steps import Exec, Steps

__all__ = [
    "CellIndex",
    "CellWriter",
    "assign_cells",
    "assign_waiting_steps",
    "cell_steps",
    "kmeans",
    "load_steps",
    "max_probes",
    "probe_order",
    "train_steps",
]

logger = logging.getLogger("langmem_ext.stores.postgres")

#: Rows of the k-means sample per centroid (and at most this many in all).
SAMPLE_PER_CELL = 16
MAX_SAMPLE = 65536
#: A table holding more than this many times MAX_SAMPLE vectors (by the
#: planner's estimate) is sampled by pages: about twice the sample is read.
SAMPLE_BY_PAGES = 4


@dataclass(frozen=True)
class CellIndex:
    """Trained centroids (unit rows, cell ``i`` is row ``i``), each cell's
    share of the vectors (from the training sample) and the version stored
    beside them in ``lmx_meta``."""

    centroids: np.ndarray
    shares: np.ndarray
    version: str

    @property
    def lists(self) -> int:
        return len(self.centroids)


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def assign_cells(cells: CellIndex | None, vecs: np.ndarray) -> list[int]:
    """Each vector's cell: the nearest centroid by cosine, ``-1`` untrained.

    Examples:
        >>> c = CellIndex(np.eye(2, dtype=np.float32), np.ones(2) / 2, "1")
        >>> assign_cells(c, np.array([[0.1, 2.0], [3.0, 0.0]]))
        [1, 0]
        >>> assign_cells(None, np.ones((2, 2)))
        [-1, -1]
    """
    if cells is None or len(vecs) == 0:
        return [-1] * len(vecs)
    return np.argmax(_unit(vecs) @ cells.centroids.T, axis=1).tolist()


def kmeans(
    sample: np.ndarray, k: int, iterations: int = 6, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """About ``k`` unit centroids of the unit-normalised sample, and each
    one's share of the sample: spherical k-means from k-means++ seeds, then
    every cell holding over three times the mean split by the same method.

    Why the split: on clustered sentence vectors k-means moves centroids into
    the dense regions, the very ones queries land in; at 1M vectors the two
    cells nearest a query held ~20,000 vectors and the largest 18,700 (mean
    976), so every search read twenty times what it should.

    Examples:
        >>> pts = np.array([[1, 0.1], [1, -0.1], [-0.1, 1], [0.1, 1]], dtype=np.float32)
        >>> c, shares = kmeans(pts, 2)
        >>> sorted(np.argmax(c, axis=1).tolist()), shares.tolist()
        ([0, 1], [0.5, 0.5])
    """
    x = _unit(sample)
    rng = np.random.default_rng(seed)
    cent = _lloyd(x, _seeds(x, min(k, len(x)), rng), iterations)
    best = _nearest(x, cent)
    counts = np.bincount(best, minlength=len(cent))
    mean = len(x) / len(cent)
    extra: list[np.ndarray] = []
    for c in np.flatnonzero(counts > 3 * mean):
        members = x[best == c]
        parts = _lloyd(members, _seeds(members, int(np.ceil(counts[c] / mean)), rng), iterations)
        cent[c] = parts[0]
        extra.append(parts[1:])
    if extra:
        cent = np.concatenate([cent, *extra])
    counts = np.bincount(_nearest(x, cent), minlength=len(cent))
    return cent, counts / len(x)


def _nearest(x: np.ndarray, cent: np.ndarray) -> np.ndarray:
    return np.concatenate(
        [np.argmax(x[a : a + 8192] @ cent.T, axis=1) for a in range(0, len(x), 8192)]
    )


def _lloyd(x: np.ndarray, cent: np.ndarray, iterations: int) -> np.ndarray:
    """Spherical k-means rounds; an emptied cell is re-seeded with the point
    farthest from its own centroid."""
    for _ in range(iterations):
        best = _nearest(x, cent)
        score = np.einsum("ij,ij->i", x, cent[best])
        counts = np.bincount(best, minlength=len(cent))
        # Per-cell sums by sorting the rows by cell (np.add.at is ~10x slower).
        by_cell = np.argsort(best, kind="stable")
        held = np.flatnonzero(counts)
        sums = np.zeros_like(cent)
        sums[held] = np.add.reduceat(x[by_cell], np.cumsum(counts)[held] - counts[held], axis=0)
        empty = np.flatnonzero(counts == 0)
        if len(empty):
            sums[empty] = x[np.argsort(score)[: len(empty)]]
        cent = _unit(sums)
    return cent


def _seeds(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding (each seed drawn with probability proportional to
    its distance from the seeds so far). Random seeds left giant cells where
    sentence vectors are dense, the very cells queries land in: at 1M
    clustered vectors the largest held 20,165 vectors against 7,135 here."""
    first = int(rng.integers(len(x)))
    picked = [first]
    dist = np.maximum(1.0 - x @ x[first], 0.0)
    for _ in range(1, k):
        total = float(dist.sum())
        i = int(rng.choice(len(x), p=dist / total)) if total > 0 else int(rng.integers(len(x)))
        picked.append(i)
        dist = np.minimum(dist, np.maximum(1.0 - x @ x[i], 0.0))
    return x[picked].copy()


def probe_order(
    cells: CellIndex,
    qvec: Any,
    vi: dict[str, Any],
    scope_rows: float,
    n_cand: int,
) -> tuple[np.ndarray, int]:
    """The cells nearest the query first, and how many to probe: enough to
    read about ``scan_rows`` of the scope's vectors by the cells' shares
    (recall comes from reading a good share of the nearest cells; a vector
    costs ~1 µs to read from the covering index), at least ``probes``.

    Examples:
        >>> c = CellIndex(np.eye(4, dtype=np.float32), np.array([0.7, 0.1, 0.1, 0.1]), "1")
        >>> order, n = probe_order(c, [1, 0.5, 0, 0], {"probes": 1, "scan_rows": 50}, 1000, 10)
        >>> order.tolist()[:2], n
        ([0, 1], 1)
        >>> probe_order(c, [0, 1, 0.5, 0], {"probes": 1, "scan_rows": 150}, 1000, 10)[1]
        2
    """
    order = np.argsort(-(cells.centroids @ _unit(np.asarray(qvec))))
    want = max(vi["scan_rows"], 4 * n_cand) / max(scope_rows, 1.0)
    reach = np.cumsum(cells.shares[order])
    n = int(np.searchsorted(reach, want)) + 1
    return order, max(int(vi["probes"]), n)


def _vectors(sent: Any) -> np.ndarray:
    """Rows of pgvector's binary form (``vector_send``: two int16, then
    big-endian float32s) as a float32 matrix: parsing ``real[]`` text cost
    seconds per 10,000 vectors."""
    return np.stack([np.frombuffer(bytes(b), dtype=">f4", offset=4) for b in sent]).astype(
        np.float32
    )


def load_steps() -> Steps:
    """The trained cells, or ``None`` before training."""
    rows = yield Exec(
        "SELECT (SELECT value FROM lmx_meta WHERE key = 'ivf_version'), "
        "array_agg(vector_send(centroid) ORDER BY cid), array_agg(share ORDER BY cid) "
        "FROM lmx_cells",
        fetch=True,
    )
    version, cents, shares = rows[0]
    if version is None or not cents:
        return None
    return CellIndex(_unit(_vectors(cents)), np.asarray(shares, np.float64), str(version))


def train_steps(lists: int, dims: int) -> Steps:
    """Train the cells once (the first writer to take the lock) and return
    them; a writer that finds them trained by another process loads them.
    The vectors already written are assigned by :func:`assign_waiting_steps`."""
    yield Exec("SELECT pg_advisory_xact_lock(%s)", [TRAIN_LOCK_KEY])
    cells = yield from load_steps()
    if cells is None:
        # The vectors written so far (a random sample of them past
        # MAX_SAMPLE): trained on, then given their cells at once. A large
        # table (a store upgraded from another index) is sampled by pages:
        # ORDER BY random() alone read all of a million vectors (16 s).
        est = yield Exec(
            f"SELECT {VECTOR_ROWS} FROM pg_class c WHERE c.oid = 'lmx_vectors'::regclass",
            fetch=True,
        )
        rows_est = float(est[0][0]) if est else -1.0
        pages = ""
        if rows_est > SAMPLE_BY_PAGES * MAX_SAMPLE:
            pages = f"TABLESAMPLE SYSTEM ({min(100.0, 200.0 * MAX_SAMPLE / rows_est):.4f}) "
        rows = yield Exec(
            f"SELECT item_id, field, vector_send(embedding) FROM lmx_vectors {pages}"
            "ORDER BY random() LIMIT %s",
            [MAX_SAMPLE],
            fetch=True,
        )
        if not rows:
            return None
        rows.sort(key=lambda r: (r[0], r[1]))  # the same vectors train the same cells
        vecs = _vectors(r[2] for r in rows)
        size = min(len(vecs), SAMPLE_PER_CELL * lists)
        cent, shares = kmeans(vecs[:size], lists)
        yield Exec(
            "INSERT INTO lmx_cells (cid, centroid, share) "
            f"SELECT n - 1, c::vector({int(dims)}), s FROM unnest(%s::text[], %s::real[]) "
            "WITH ORDINALITY AS d(c, s, n)",
            [["[" + ",".join(map(repr, c.tolist())) + "]" for c in cent], shares.tolist()],
        )
        version = yield Exec(
            "INSERT INTO lmx_meta (key, value) VALUES ('ivf_version', txid_current()::text) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING value",
            fetch=True,
        )
        cells = CellIndex(cent, shares, str(version[0][0]))
        yield from _set_cells(rows, assign_cells(cells, vecs))
    return cells


#: Vectors of cell -1 assigned per write (a fraction of a second).
ASSIGN_CHUNK = 10_000


def assign_waiting_steps(cells: CellIndex) -> Steps:
    """Give up to ``ASSIGN_CHUNK`` vectors still in cell ``-1`` their cell;
    ``True`` when more are waiting. A store upgraded from another index holds
    all its vectors there: each write then moves one chunk, so no single
    write runs for minutes."""
    rows = yield Exec(
        "SELECT item_id, field, vector_send(embedding) FROM lmx_vectors WHERE cell = -1 LIMIT %s",
        [ASSIGN_CHUNK],
        fetch=True,
    )
    if rows:
        yield from _set_cells(rows, assign_cells(cells, _vectors(r[2] for r in rows)))
    return len(rows) == ASSIGN_CHUNK


def _set_cells(rows: list[Any], assigned: list[int]) -> Steps:
    """Move the vectors of ``rows`` (``item_id, field, …``) from cell -1 to theirs."""
    yield Exec(
        "UPDATE lmx_vectors v SET cell = d.cell "
        "FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS d(item_id, field, cell) "
        "WHERE v.item_id = d.item_id AND v.field = d.field AND v.cell = -1",
        [[r[0] for r in rows], [r[1] for r in rows], assigned],
    )
    return None


def cell_query(
    q: VectorQuery, cells: list[int], n_candidates: int, need: int
) -> tuple[str, list[Any]]:
    """Vector mode, inverted-file path. ``c``: the vectors of the probed
    ``cells`` in the scope, nearest first in half precision. ``k``: the first
    ``n_candidates`` of them whose items are live and pass the filter. Then
    the re-rank of :func:`rerank_cte`.
    Each row ends with the share of the examined vectors that passed."""
    d, p = int(q.dims), q.prefix
    (fsql, fp) = q.flt
    # Without a filter nearly every candidate passes (only expired items do
    # not): the scan itself stops at twice the candidates.
    limit = None if fp else 2 * n_candidates
    if p:
        scan = f"lmx_cell_candidates(%s, %s, %s, %s, %s, (SELECT %s::halfvec({d})), %s)"
        sp: list[Any] = [cells, p, p + "/", p, p + ".", q.qvec, limit]
    else:
        scan = f"lmx_cell_candidates_all(%s, (SELECT %s::halfvec({d})), %s)"
        sp = [cells, q.qvec, limit]
    rsql, rp = rerank_cte(q, "k")
    tsql, tp = tenant_clause("i.id", q.tenant)
    # The item check is a subplan run row by row in distance order (the
    # window's own order), so the scan stops at the n-th passing item; as an
    # EXISTS it became a join that read every item first.
    sql = (
        f"WITH c AS MATERIALIZED (SELECT item_id, hd FROM {scan}), "
        "k AS MATERIALIZED (SELECT c.item_id, c.rn FROM (SELECT item_id, hd, "
        "row_number() OVER (ORDER BY hd) AS rn FROM c) c WHERE (SELECT true FROM "
        f"lmx_items i WHERE i.id = c.item_id AND {tsql} AND {q.live} AND {fsql}) "
        f"ORDER BY c.hd LIMIT %s), {rsql}"
        f"SELECT {ITEM_COLS}, r.score, (SELECT count(*)::float8 / greatest(max(rn), 1) FROM k) "
        f"FROM r JOIN lmx_items i ON i.id = r.item_id WHERE {tsql} "
        "ORDER BY r.score DESC, i.id ASC LIMIT %s"
    )
    return sql, [*sp, *tp, *fp, n_candidates, *rp, *tp, need]


def max_probes(lists: int) -> int:
    """Past a quarter of the cells, the exact path (which proves its page) is
    as cheap: measured, reading half the cells of a 10 % namespace at 100k
    vectors took 15.8 ms against 12.4 ms exact."""
    return max(1, lists // 4)


#: Under a filter passing less than this share of the vectors read, the
#: nearest items that pass lie farther out: the search reads 4x the cells.
SELECTIVE = 0.25


def cell_steps(
    q: VectorQuery, op: HybridSearchOp, order: np.ndarray, probes: int, n_cand: int
) -> Steps:
    """The page from the first ``probes`` cells of ``order`` (four times as
    many while too few items pass, or once when a filter is selective), or
    ``None`` when even :func:`max_probes` cells hold too few: the exact path
    answers then."""
    need, cap, widened = op.offset + op.limit, max_probes(len(order)), False
    while True:
        probed = [-1, *order[:probes].tolist()]
        rows = yield Exec(*cell_query(q, probed, n_cand, need), fetch=True, prepare=False)
        selective = bool(q.flt[1]) and bool(rows) and rows[0][-1] < SELECTIVE
        if len(rows) >= need and (widened or not selective or probes >= cap):
            return [r[:-1] for r in rows[op.offset : need]]
        if probes >= cap:
            return None
        probes, widened = min(probes * 4, cap), True


class CellWriter:
    """The stores' side of the inverted file: the cells they hold, set up,
    assigned to each write, trained when the store first holds ``train_at``
    vectors, and the waiting vectors placed a chunk per write."""

    vector_index: dict[str, Any]
    #: The trained cells last read (``None``: untrained or unread).
    cells: CellIndex | None = None
    #: The item id from which a writer next counts the vectors to see whether
    #: the cells should be trained (ids only grow, and count the items ever put).
    _train_check_at: int = 0
    #: Vectors may wait in cell -1 (this process trained or loaded the cells).
    _waiting: bool = False
    #: The cells were trained inside a write whose commit is not yet confirmed.
    _unconfirmed: bool = False

    @property
    def _dims(self) -> int | None:  # the store's embedding dimension (PostgresCore)
        raise NotImplementedError

    def _cells_setup_steps(self) -> Steps:
        yield Exec(cells_index_sql())
        self.cells = yield from load_steps()
        self._waiting = self.cells is not None
        self._train_check_at = self.vector_index["train_at"]
        old = yield Exec(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'lmx_vectors' AND indexname LIKE 'lmx_vectors_hnsw%'",
            fetch=True,
        )
        for (name,) in old:
            logger.warning(
                "an HNSW index %s remains from an earlier vector_index setting; every "
                "write still pays for it. If no process uses vector_index={'kind': "
                "'hnsw'} any more, drop it: DROP INDEX CONCURRENTLY %s",
                name,
                name,
            )
        return None

    def _cells_confirm_steps(self) -> Steps:
        """Before the first write after training: check that the training's
        write committed. If it failed, its centroids exist only in this
        process, and vectors written with them would sit in cells no search
        reads; so they are dropped, and the write waits in cell -1 until the
        cells are trained (or loaded) again."""
        if not self._unconfirmed:
            return None
        self._unconfirmed = False
        row = yield Exec("SELECT value FROM lmx_meta WHERE key = 'ivf_version'", fetch=True)
        if self.cells is not None and (not row or row[0][0] != self.cells.version):
            logger.warning(
                "the vector index's cells trained by an earlier write of this process were "
                "not stored (that write failed); they are trained again at a later write"
            )
            self.cells, self._waiting, self._train_check_at = None, False, 0
        return None

    def _cells_of(self, vecs: list[np.ndarray]) -> list[int]:
        """The cells of a write's vectors (``-1`` without trained cells)."""
        if self.vector_index["kind"] != "ivf" or self.cells is None:
            return [-1] * len(vecs)
        return assign_cells(self.cells, np.stack(vecs))

    def _cells_after_put_steps(self, last_id: int) -> Steps:
        """Train the cells once the store holds ``train_at`` vectors (inside the
        put's transaction: if the put fails, so does the training), then place
        a chunk of the vectors waiting in cell -1."""
        vi = self.vector_index
        if vi["kind"] != "ivf":
            return None
        if self.cells is None and last_id >= self._train_check_at:
            n = (yield Exec("SELECT count(*) FROM lmx_vectors", fetch=True))[0][0]
            if n < vi["train_at"]:
                # Deleted items: count again after another tenth of train_at puts.
                self._train_check_at += max(1, vi["train_at"] // 10)
                return None
            logger.info("training the vector index's %d cells on %d vectors", vi["lists"], n)
            self.cells = yield from train_steps(vi["lists"], self._dims or 0)
            self._waiting = True
            self._unconfirmed = self.cells is not None
        if self.cells is not None and self._waiting:
            self._waiting = yield from assign_waiting_steps(self.cells)
        return None
