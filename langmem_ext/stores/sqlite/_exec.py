"""Executes store operations on one SQLite connection (caller holds the lock
and the transaction). Shared by the sync and async faces of SQLiteStore."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from langgraph.store.base import GetOp, Item, ListNamespacesOp, SearchItem

from .._dialect import SQLITE, keyword_words
from .._filters import normalize_filter
from .._hybrid import Ranking
from .._ops import (
    KEYWORD_THEN_REST,
    HybridSearchOp,
    PreparedPut,
    decode_namespace,
    encode_namespace,
    namespace_matches,
    parse_ts,
)
from .._vector_index import VectorIndex
from ._sql import compile_filter, scope_clause
from .schema import ns_token, ns_tokens

_COLS = "i.id, i.prefix, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes"
# Keyword matches considered per hybrid query; every item is still scored by
# its vector, so this only bounds the keyword half of the fusion.
HYBRID_KEYWORD_CANDIDATES = 1000


def fts_query(text: str) -> str | None:
    """Free text → an FTS5 query: its words (stop words dropped), OR-ed, each
    quoted so FTS5 syntax in user text is never interpreted."""
    words = keyword_words(text)
    return " OR ".join(f'"{w}"' for w in words) if words else None


def live_clause(now: float | None) -> tuple[str, list[Any]]:
    if now is None:
        return "1", []
    return SQLITE.live("?"), [now]


def to_item(row: Sequence[Any], score: float | None = None, search: bool = False) -> Item:
    _, prefix, key, value, created, updated, _ = row
    args = dict(
        namespace=decode_namespace(prefix),
        key=key,
        value=json.loads(value),
        created_at=parse_ts(created),
        updated_at=parse_ts(updated),
    )
    return SearchItem(**args, score=score) if search else Item(**args)


def get(conn: sqlite3.Connection, op: GetOp, now: float | None) -> tuple[Item | None, list[int]]:
    live, lp = live_clause(now)
    row = conn.execute(
        f"SELECT {_COLS} FROM items i WHERE i.prefix = ? AND i.key = ? AND {live}",
        [encode_namespace(op.namespace), op.key, *lp],
    ).fetchone()
    if row is None:
        return None, []
    return to_item(row), ([row[0]] if op.refresh_ttl and row[6] is not None else [])


def list_namespaces(
    conn: sqlite3.Connection, op: ListNamespacesOp, now: float | None
) -> list[tuple[str, ...]]:
    live, lp = live_clause(now)
    rows = conn.execute(f"SELECT DISTINCT i.prefix FROM items i WHERE {live}", lp).fetchall()
    namespaces = [decode_namespace(r[0]) for r in rows]
    for cond in op.match_conditions or ():
        namespaces = [ns for ns in namespaces if namespace_matches(cond.match_type, cond.path, ns)]
    if op.max_depth is not None:
        namespaces = list({ns[: op.max_depth] for ns in namespaces})
    namespaces.sort()
    return namespaces[op.offset : op.offset + op.limit]


def scoped_fts(ftsq: str, prefix: str) -> str:
    """Restrict an FTS5 query to a namespace and what is below it through the
    namespace tokens column: FTS5 then reads the small namespace's entries, not
    every match in the file."""
    if not prefix:
        return ftsq
    return f'ns : "{ns_token(prefix)}" AND ({ftsq})'


def search(
    conn: sqlite3.Connection,
    op: HybridSearchOp,
    mode: str,
    qvec: np.ndarray | None,
    vindex: VectorIndex | None,
    vector_weight: float,
    now: float | None,
    context_weight: float = 0.5,
) -> tuple[list[SearchItem], list[int]]:
    """One search op. ``mode`` is already resolved; ``qvec`` is set for the
    modes that use vectors. Returns the page and the ids whose TTL to refresh."""
    rest = mode == KEYWORD_THEN_REST
    mode = "keyword" if rest else mode
    prefix = encode_namespace(op.namespace_prefix)
    scope, sp = scope_clause(prefix)
    fsql, fp = compile_filter(normalize_filter(op.filter))
    live, lp = live_clause(now)
    need = op.offset + op.limit
    if need == 0:
        return [], []
    ftsq = fts_query(op.query) if op.query and mode in ("keyword", "hybrid") else None
    if not op.query:
        rows = conn.execute(
            f"SELECT {_COLS} FROM items i WHERE {scope} AND {live} AND {fsql} "
            "ORDER BY i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?",
            [*sp, *lp, *fp, op.limit, op.offset],
        ).fetchall()
        return _page(rows, [None] * len(rows), op)

    vec = None
    if mode in ("vector", "hybrid") and qvec is not None and vindex is not None:
        vec = vindex.search(prefix, qvec)
    kw_ids = kw_raw = None
    if ftsq is not None:
        limit = -1 if mode == "keyword" else max(HYBRID_KEYWORD_CANDIDATES, 2 * need)
        # bm25 column weights: the indexed fields count 1, their context less,
        # the namespace tokens nothing.
        rank = f"bm25(items_fts, 1.0, {float(context_weight)!r}, 0.0)"
        kw = conn.execute(
            f"SELECT f.rowid, -{rank} FROM items_fts f JOIN items i ON i.id = f.rowid "
            f"WHERE items_fts MATCH ? AND {scope} ORDER BY {rank} LIMIT ?",
            [scoped_fts(ftsq, prefix), *sp, limit],
        ).fetchall()
        if kw:
            kw_ids = np.fromiter((r[0] for r in kw), dtype=np.int64, count=len(kw))
            kw_raw = np.fromiter((r[1] for r in kw), dtype=np.float64, count=len(kw))
    ranking = Ranking(mode, vec, kw_ids, kw_raw, vector_weight)
    rows, row_scores = _walk(conn, ranking, need, live, lp, fsql, fp)
    if len(rows) < need and (mode != "keyword" or rest):
        # Items the vector ranking cannot cover (stored with index=False)
        # follow the ranked ones, newest first, as on LangGraph's stores; so do
        # the items without the words of a query on a store without an
        # embedder (KEYWORD_THEN_REST). In keyword mode asked for, a result is
        # a match: items without the words are not results at all.
        if rest:
            tail_sql, tail_params = "1", []
            if ftsq is not None:
                tail_sql = "i.id NOT IN (SELECT rowid FROM items_fts WHERE items_fts MATCH ?)"
                tail_params = [scoped_fts(ftsq, prefix)]
        else:
            tail_sql = "NOT EXISTS (SELECT 1 FROM vectors v WHERE v.item_id = i.id)"
            tail_params = []
        tail = conn.execute(
            f"SELECT {_COLS} FROM items i WHERE {scope} AND {live} AND {fsql} AND {tail_sql} "
            "ORDER BY i.updated_at DESC, i.id DESC LIMIT ?",
            [*sp, *lp, *fp, *tail_params, need - len(rows)],
        ).fetchall()
        rows.extend(tail)
        row_scores.extend([None] * len(tail))
    return _page(rows[op.offset : need], row_scores[op.offset : need], op)


def _walk(
    conn: sqlite3.Connection,
    ranking: Ranking,
    need: int,
    live: str,
    lp: list[Any],
    fsql: str,
    fp: list[Any],
) -> tuple[list[Sequence[Any]], list[float | None]]:
    """The best ``need`` ranked items that pass the filter, best first, exact.

    Items are scored exactly in chunks, by their score's upper bound. A scored
    item is checked by SQL (filter, expiry, still there) only once its score
    is above every unscored item's bound, best first, and only until ``need``
    items passed: no unscored or unchecked item can then enter the page. So
    deep offsets and selective filters stay exact, a page reads about
    ``need`` rows from the table, and after the first chunk the next one
    holds the items whose bound reaches the best scores seen.

    A large scope is walked in two tiers (:func:`_tiers`): the few thousand
    items with the highest bounds first, the rest only if the page is not
    settled by then, so a search over a million items sorts thousands.
    """
    ids, upper = ranking.ids, ranking.upper
    accepted: list[tuple[float, int, Sequence[Any]]] = []
    # Scored, not yet checked: (score, item id), best first once sorted.
    waiting_s = np.empty(0, dtype=np.float64)
    waiting_i = np.empty(0, dtype=np.int64)
    for tier, beyond in _tiers(upper, need):
        up = upper if tier is None else upper[tier]
        n = len(up)
        open_ = np.ones(n, dtype=bool)
        left = n
        chunk = max(4 * need, 64)
        while True:
            if left:
                if chunk >= left:
                    order = np.flatnonzero(open_)
                else:
                    bounds = np.where(open_, up, -np.inf) if left < n else up
                    order = np.argpartition(bounds, n - chunk)[n - chunk :]
                open_[order] = False
                left -= len(order)
                pos = order if tier is None else tier[order]
                waiting_s = np.concatenate([waiting_s, ranking.exact(pos)])
                waiting_i = np.concatenate([waiting_i, ids[pos]])
            bound = max(float(up[open_].max()) if left else -np.inf, beyond)
            # Check, best first, the scored items no unscored one can pass.
            rank = np.lexsort((waiting_i, -waiting_s))
            ready = rank[waiting_s[rank] > bound]
            done = 0
            while done < len(ready) and len(accepted) < need:
                batch = ready[done : done + 2 * (need - len(accepted)) + 8]
                done += len(batch)
                accepted += _passing(conn, waiting_s[batch], waiting_i[batch], live, lp, fsql, fp)
            if done:
                keep = np.ones(len(waiting_s), dtype=bool)
                keep[ready[:done]] = False
                waiting_s, waiting_i = waiting_s[keep], waiting_i[keep]
            if len(accepted) >= need or not left:
                break
            # Next: the unscored items whose bound reaches the best scores
            # still waiting (4x what is missing, as a filter may reject some),
            # and at least twice the last chunk, so a selective filter that
            # rejects what the guess points at still makes progress.
            missing = need - len(accepted)
            reach = 0
            if len(waiting_s) >= 4 * missing:
                guess = float(np.partition(waiting_s, len(waiting_s) - 4 * missing)[-4 * missing])
                reach = int(np.count_nonzero(up[open_] >= guess))
            chunk = max(reach, 2 * chunk)
        if len(accepted) >= need:
            break
    accepted.sort(key=lambda a: (-a[0], a[1]))
    best = accepted[:need]
    return [row for _, _, row in best], [sc for sc, _, _ in best]


def _passing(
    conn: sqlite3.Connection,
    scores: np.ndarray,
    item_ids: np.ndarray,
    live: str,
    lp: list[Any],
    fsql: str,
    fp: list[Any],
) -> list[tuple[float, int, Sequence[Any]]]:
    """The items of ``item_ids`` that pass the filter and are live, with their scores."""
    rows = {
        r[0]: r
        for r in conn.execute(
            f"SELECT {_COLS} FROM items i WHERE i.id IN (SELECT value FROM json_each(?)) "
            f"AND {live} AND {fsql}",
            [json.dumps(item_ids.tolist()), *lp, *fp],
        )
    }
    return [
        (float(sc), i, rows[i])
        for sc, i in zip(scores.tolist(), item_ids.tolist(), strict=True)
        if i in rows
    ]


#: Scopes with more ranked items than this are walked in two tiers.
TIER_ROWS = 32_768
#: The first tier holds at least this many items (and 16 per item asked for).
TIER_FIRST = 4_096


def _tiers(upper: np.ndarray, need: int) -> Iterator[tuple[np.ndarray | None, float]]:
    """The positions to walk in turn, each with a bound on every later one's
    ``upper`` (``None``: all positions, in one tier).

    The first tier holds about ``max(16 * need, TIER_FIRST)`` items: those
    at or above a bound estimated from a strided sample of ``upper``. A page
    of ten at a million items visits a few hundred of them.
    """
    n = len(upper)
    target = max(16 * need, TIER_FIRST)
    if n <= max(TIER_ROWS, 4 * target):
        yield None, -np.inf
        return
    sample = upper[:: max(1, n // 16_384)]
    k = max(0, len(sample) - 1 - int(len(sample) * target / n))
    t = float(np.partition(sample, k)[k])
    first = np.flatnonzero(upper >= t)
    if len(first) == n:
        yield None, -np.inf
        return
    yield first, t
    yield np.flatnonzero(upper < t), -np.inf


def _page(
    rows: list[Sequence[Any]], scores: list[float | None], op: HybridSearchOp
) -> tuple[list[SearchItem], list[int]]:
    items = [to_item(r, s, search=True) for r, s in zip(rows, scores, strict=True)]
    refresh = [r[0] for r in rows if op.refresh_ttl and r[6] is not None]
    return items, refresh  # type: ignore[return-value]


def refresh_ttl(conn: sqlite3.Connection, ids: list[int], now: float) -> None:
    conn.execute(
        "UPDATE items SET expires_at = ? + ttl_minutes * 60.0 "
        "WHERE id IN (SELECT value FROM json_each(?)) AND ttl_minutes IS NOT NULL",
        [now, json.dumps(ids)],
    )


def generation(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def bump_generation(conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    return generation(conn)


def apply_puts(
    conn: sqlite3.Connection,
    puts: list[PreparedPut],
    vectors: dict[int, np.ndarray],
    now_iso: str,
    now: float,
) -> tuple[dict[int, tuple[str, np.ndarray]], list[int]]:
    """Write a batch of puts. ``vectors[i]`` holds the vectors of ``puts[i]``.

    Returns the vectors to cache per item id and the ids whose vectors were
    dropped (deleted or re-put without vectors).
    """
    keys = [[encode_namespace(p.namespace), p.key] for p in puts]
    existing = {
        (r[1], r[2]): r[0]
        for r in conn.execute(
            "SELECT i.id, i.prefix, i.key FROM items i JOIN json_each(?) j "
            "ON i.prefix = json_extract(j.value, '$[0]') AND i.key = json_extract(j.value, '$[1]')",
            [json.dumps(keys)],
        )
    }
    seq_row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'items'").fetchone()
    next_id = (seq_row[0] if seq_row else 0) + 1
    deleted: list[int] = []
    updates, inserts, vec_rows, fts_rows = [], [], [], []
    cache: dict[int, tuple[str, np.ndarray]] = {}
    for i, (p, (prefix, key)) in enumerate(zip(puts, keys, strict=True)):
        old = existing.get((prefix, key))
        if p.value_json is None:
            if old is not None:
                deleted.append(old)
            continue
        expires = now + p.ttl * 60.0 if p.ttl is not None else p.expires_at
        if old is None:
            item_id, next_id = next_id, next_id + 1
            inserts.append((item_id, prefix, key, p.value_json, now_iso, now_iso, expires, p.ttl))
        else:
            item_id = old
            updates.append((p.value_json, now_iso, expires, p.ttl, item_id))
        vecs = vectors.get(i)
        if vecs is not None and len(vecs):
            for (label, _), row in zip(p.fields, vecs, strict=True):
                vec_rows.append((item_id, label, row.astype("<f4").tobytes()))
            cache[item_id] = (prefix, vecs)
        if p.keyword_text or p.context_text:
            fts_rows.append(
                (item_id, p.keyword_text or "", p.context_text or "", ns_tokens(prefix))
            )
    # A re-put replaces every index entry of the item: no stale vector or words.
    stale = [(x,) for x in deleted] + [(u[-1],) for u in updates]
    dropped: list[int] = []
    if stale:
        dropped = _with_vectors(conn, [x for (x,) in stale if x not in cache])
        conn.executemany("DELETE FROM vectors WHERE item_id = ?", stale)
        conn.executemany("DELETE FROM items_fts WHERE rowid = ?", stale)
    if deleted:
        conn.executemany("DELETE FROM items WHERE id = ?", [(x,) for x in deleted])
    if updates:
        # created_at is deliberately not touched: it survives updates.
        conn.executemany(
            "UPDATE items SET value = ?, updated_at = ?, expires_at = ?, ttl_minutes = ? "
            "WHERE id = ?",
            updates,
        )
    if inserts:
        conn.executemany(
            "INSERT INTO items (id, prefix, key, value, created_at, updated_at, expires_at, "
            "ttl_minutes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            inserts,
        )
    if vec_rows:
        conn.executemany(
            "INSERT INTO vectors (item_id, field, embedding) VALUES (?, ?, ?)", vec_rows
        )
    if fts_rows:
        conn.executemany(
            "INSERT INTO items_fts (rowid, text, context, ns) VALUES (?, ?, ?, ?)", fts_rows
        )
    return cache, dropped


def _with_vectors(conn: sqlite3.Connection, ids: list[int]) -> list[int]:
    """Which of ``ids`` have vectors (only those concern the vector index)."""
    if not ids:
        return []
    return [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT item_id FROM vectors WHERE item_id IN "
            "(SELECT value FROM json_each(?))",
            [json.dumps(ids)],
        )
    ]


def sweep_expired(conn: sqlite3.Connection, now: float) -> tuple[int, list[int]]:
    """Delete expired items with their index entries; returns how many, and
    the ids of those that had vectors."""
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?", [now]
        )
    ]
    with_vectors = _with_vectors(conn, ids)
    if ids:
        rows = [(x,) for x in ids]
        conn.executemany("DELETE FROM vectors WHERE item_id = ?", rows)
        conn.executemany("DELETE FROM items_fts WHERE rowid = ?", rows)
        conn.executemany("DELETE FROM items WHERE id = ?", rows)
    return len(ids), with_vectors
