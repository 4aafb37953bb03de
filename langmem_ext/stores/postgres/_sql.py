"""Pure SQL builders for PostgresStore: each returns ``(sql, params)``. No I/O.

Shared by the sync and async stores. User data (namespace labels, keys,
values, filter field names and operands, query words) is always a bound
parameter, never spliced into SQL text.

Filters compile :func:`~langmem_ext.stores._filters.normalize_filter`
conditions into ``jsonb`` expressions with the semantics documented there:
``$eq`` uses ``jsonb`` equality (type-aware, ``1 = 1.0``, ``"1" <> 1``); range
operators look at ``jsonb_typeof`` inside a ``CASE`` before casting, so numbers
compare as numbers, strings as strings (``COLLATE "C"``, like SQLite's binary
order) and nothing else ever matches or raises a cast error.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from psycopg.types.json import Jsonb

from .._dialect import POSTGRES, keyword_words
from ._sql_filters import compile_filter, field_expr

__all__ = [
    "DISTANCE_OPS",
    "ITEM_COLS",
    "VECTOR_ROWS",
    "VectorQuery",
    "candidate_query",
    "compile_filter",
    "field_expr",
    "get_query",
    "hnsw_query",
    "listing_many",
    "live_clause",
    "param_kind",
    "plan_query",
    "range_scope",
    "rerank_cte",
    "scope_clause",
    "score_expr",
    "search_query",
    "tenant_clause",
    "tsquery_words",
]

#: pgvector distance operator and score (higher is better) of each distance
#: type, as LangGraph's PostgresStore scores them.
DISTANCE_OPS = {"cosine": "<=>", "inner_product": "<#>", "l2": "<->"}
_SCORES = {"cosine": "1 - ({d})", "inner_product": "-({d})", "l2": "-({d})"}


def score_expr(distance: str, embedding: str, query: str) -> str:
    """``1 - (e <=> q)`` for cosine, ``-(e <#> q)`` (the dot product) for
    inner product, ``-(e <-> q)`` for L2."""
    return _SCORES[distance].format(d=f"{embedding} {DISTANCE_OPS[distance]} {query}")


ITEM_COLS = "i.id, i.prefix, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes"
LIVE = POSTGRES.live("now()")


def live_clause(omit_expired: bool) -> str:
    return LIVE if omit_expired else "TRUE"


def scope_clause(
    prefix: str, col: str = "i.prefix", tenant: str | None = None
) -> tuple[str, list[Any]]:
    """Rows whose namespace is ``prefix`` or below it (:meth:`Dialect.scope`):
    the prefix columns use ``COLLATE "C"`` so this is a btree range scan.

    ``tenant``: the one tenant every row of the scope belongs to, in a store
    partitioned by tenant; named in the clause (:func:`tenant_clause`) so that
    the planner reads only that tenant's partition.

    Examples:
        >>> scope_clause("t.acme", "v.prefix", tenant="acme")[0]
        '(v.prefix = %s OR (v.prefix >= %s AND v.prefix < %s)) AND v.tenant = %s'
    """
    tsql, tp = tenant_clause(col, tenant)
    if not prefix:
        return (tsql, tp) if tenant is not None else ("TRUE", [])
    sql, params = POSTGRES.scope(prefix, col)
    if tenant is None:
        return sql, params
    return f"{sql} AND {tsql}", [*params, *tp]


def tenant_clause(col: str, tenant: str | None) -> tuple[str, list[Any]]:
    """``<alias>.tenant = %s`` for the table of the column ``col`` (``TRUE``
    without a tenant): a partition key in the WHERE clause is what lets the
    planner prune the other tenants' partitions.

    Examples:
        >>> tenant_clause("i.prefix", "acme"), tenant_clause("i.id", None)
        (('i.tenant = %s', ['acme']), ('TRUE', []))
    """
    if tenant is None:
        return "TRUE", []
    alias = col.rsplit(".", 1)[0] + "." if "." in col else ""
    return f"{alias}tenant = %s", [tenant]


def tsquery_words(text: str) -> list[str]:
    """Free text → its words, each a ``to_tsquery`` argument (stop words
    dropped unless nothing else is left; repeats dropped).

    Words are ``\\w+`` runs, so tsquery syntax in user text (``&|!():*'``) never
    reaches the parser; each is quoted as a tsquery lexeme anyway.

    Examples:
        >>> tsquery_words("Who's the painter? (painter & 'x')")
        ["'s'", "'painter'", "'x'"]
    """
    return [f"'{w}'" for w in keyword_words(text)]


# -- search -------------------------------------------------------------------


def search_query(
    *,
    mode: str,
    scope: tuple[str, list[Any]],
    vscope: tuple[str, list[Any]],
    flt: tuple[str, list[Any]],
    live: str,
    qvec: Any | None,
    words: list[str],
    ts_config: str,
    vector_weight: float,
    limit: int,
    offset: int,
    dims: int | None,
    context_weight: float = 0.5,
    distance: str = "cosine",
    only_matches: bool | None = None,
    tenant: str | None = None,
) -> tuple[str, list[Any]]:
    """One exact search, ranked entirely in SQL (see ``_hybrid`` for scores).

    ``tenant``: the scope's one tenant (see :func:`scope_clause`), named
    again where the page joins back to the items.

    ``words`` are the query's :func:`tsquery_words`. Ranked items come first
    by (score desc, id asc); in vector and hybrid mode, items no ranking covers
    (unindexed) follow with a NULL score, most recently updated first; in
    keyword mode only matches are returned (``only_matches``, by default in
    keyword mode; False lists the other items after them, as for a query on a
    store without an embedder when no mode was asked for). Because the page is
    cut by ``LIMIT/OFFSET`` after filtering, deep offsets and filtered
    pages are exact.
    """
    (ssql, sp), (vsql, vp), (fsql, fp) = scope, vscope, flt
    has_vec = qvec is not None and mode in ("vector", "hybrid")
    has_kw = bool(words) and mode in ("keyword", "hybrid")
    params: list[Any] = []
    sims = ""
    if has_vec:
        cast = f"::vector({dims})" if dims else "::vector"
        # Best vector per item: items with several embedded fields score as their best.
        sims = (
            f"sims AS (SELECT v.item_id, max({score_expr(distance, 'v.embedding', '%s' + cast)}) "
            "AS cos "
            f"FROM lmx_vectors v WHERE {vsql} GROUP BY v.item_id), "
        )
        params += [qvec, *vp]
    # One pass over the scope computes each item's raw relevance, and whether
    # it passes the filter, so normalisation sees the whole scope (before
    # filters) with no self-join: a join of the keyword matches back to the
    # items turned into a nested loop, quadratic in the scope, whenever the
    # planner underestimated the matches (fresh tables, OR-ed words).
    cos = "s.cos" if has_vec else "NULL::float8"
    cols = f"i.id, i.updated_at, ({live} AND {fsql}) AS keep, {cos} AS cos"
    join = " LEFT JOIN sims s ON s.item_id = i.id" if has_vec else ""
    src = f"lmx_items i{join} WHERE {ssql}"
    if has_kw:
        ranked = _keyword_ctes(live, cols, src)
        params += [[float(context_weight), 0.2, 0.4, 1.0], words, ts_config, *fp, *sp]
    else:
        ranked = f"ranked AS (SELECT {cols}, NULL::float8 AS rel FROM {src})"
        params += [*fp, *sp]
    # keyword = relevance / best relevance, in (0, 1]; all 1 when best <= 0
    kw = (
        "CASE WHEN rel IS NULL THEN NULL WHEN max(rel) OVER () > 0 "
        "THEN least(rel / max(rel) OVER (), 1.0) ELSE 1.0 END"
    )
    # cosine min-max normalised over the scope (before filters)
    vn = (
        "CASE WHEN cos IS NULL THEN NULL WHEN max(cos) OVER () > min(cos) OVER () "
        "THEN (cos - min(cos) OVER ()) / (max(cos) OVER () - min(cos) OVER ()) "
        "ELSE 1.0 END"
    )
    if has_vec and mode == "vector":
        score = "cos"
    elif has_vec and has_kw:
        score = (
            "CASE WHEN cos IS NULL AND rel IS NULL THEN NULL "
            f"ELSE %s * COALESCE({vn}, 0) + %s * COALESCE({kw}, 0) END"
        )
        params += [vector_weight, 1.0 - vector_weight]
    elif has_vec:  # hybrid without a keyword query: vector part only, normalised
        score = f"%s * {vn}"
        params += [vector_weight]
    elif has_kw:
        score = kw
    else:
        score = "NULL::float8"
    # In keyword mode a result is a match: items without the words are not
    # results (other modes list unindexed items after the ranked ones).
    if only_matches is None:
        only_matches = mode == "keyword"
    matches = " AND score IS NOT NULL" if only_matches else ""
    # The page is cut on narrow rows (id, score, updated_at); only its rows are
    # then joined back for their values, so no jsonb is carried through the sort.
    order = (
        "ORDER BY {s} DESC NULLS LAST, CASE WHEN {s} IS NOT NULL THEN {i} END ASC, "
        "{u} DESC, {i} DESC"
    )
    sql = (
        f"WITH {sims}{ranked}, scored AS (SELECT id, updated_at, keep, {score} AS score "
        f"FROM ranked), page AS (SELECT id, score, updated_at FROM scored WHERE keep{matches} "
        + order.format(s="score", i="id", u="updated_at")
        + f" LIMIT %s OFFSET %s) SELECT {ITEM_COLS}, p.score FROM page p "
        f"JOIN lmx_items i ON i.id = p.id AND {tenant_clause('i.id', tenant)[0]} "
        + order.format(s="p.score", i="p.id", u="p.updated_at")
    )
    params += [limit, offset, *tenant_clause("i.id", tenant)[1]]
    return sql, params


def _keyword_ctes(live: str, cols: str, src: str) -> str:
    """CTEs ``w`` … ``ranked``: the items of ``FROM {src}`` (columns ``cols``)
    with their keyword relevance ``rel`` (NULL without a match).
    Placeholders: rank weights, words, text search config, then those of
    ``cols`` and ``src``.

    ``rel`` sums, over the query words an item matches, BM25's IDF
    ``ln(1 + (N - df + 0.5) / (df + 0.5))`` × ``ts_rank(weights, tsv, word,
    1)``. ts_rank alone has no IDF, so a word in half the items (a speaker's
    name) weighed as much as a rare one: on LoCoMo turns hybrid R@10 went
    0.747 → 0.766, SQLite's FTS5 BM25 0.767 (docs/benchmarks.md). ``N`` and
    each ``df`` are counted in this statement over the live items of the
    scope that have keyword text (the documents FTS5 counts), so they stay
    exact under puts, deletes and TTL expiry. Words are the configuration's
    lexemes: stemmed repeats count once, stop words not at all.

    Weights {D, C, B, A}: the indexed text is A (1.0), context D. ts_rank, not
    ts_rank_cd: cover density rewards query words that sit close together,
    which a question's loose words rarely do; normalisation 1 (÷ 1 + log
    length) ranked best on LoCoMo.
    """
    # pairs: one row per (item, matched word), one with NULLs for an item that
    # matches nothing; the words are a function scan joined to each item, so
    # this is linear in scope × words, and the SQL does not grow with the query.
    # OFFSET 0 keeps base and pairs from being merged into the next level,
    # which would evaluate their columns once per reference (a long item's
    # tsvector fetched from TOAST again for each word) or carry the tsvector
    # through the sort by word. setweight with no lexemes is the cheapest
    # in-memory copy of the stored tsvector (a memcpy; tsv || '' rebuilds it).
    # ranked: Σ r·ln((N + 1) / (df + ½)) = ln(N + 1)·Σ r − Σ r·ln(df + ½), as
    # N counts items, after grouping, and df (word, item) rows, before.
    return (
        "w AS (SELECT array_agg(DISTINCT q) FILTER (WHERE numnode(q) > 0) AS qs, "
        "%s::float4[] AS wts FROM unnest(%s::text[]) AS u(s), to_tsquery(%s::regconfig, u.s) "
        f"AS q), base AS (SELECT {cols}, ({live} AND i.tsv IS NOT NULL) AS doc, "
        f"setweight(i.tsv, 'A', '{{}}'::text[]) AS tsv FROM {src} OFFSET 0), "
        "pairs AS (SELECT b.id, b.updated_at, b.keep, b.cos, b.doc, u.k, "
        "ts_rank(w.wts, b.tsv, u.q, 1)::float8 AS r FROM base b CROSS JOIN w "
        "LEFT JOIN LATERAL unnest(w.qs) WITH ORDINALITY AS u(q, k) ON b.tsv @@ u.q OFFSET 0), "
        "hits AS (SELECT *, count(r) FILTER (WHERE doc) OVER (PARTITION BY k) AS df FROM pairs), "
        "ranked AS (SELECT id, updated_at, keep, cos, "
        "ln(count(*) FILTER (WHERE doc) OVER () + 1::float8) * sum(r) "
        "- sum(r * ln(df + 0.5::float8)) AS rel FROM hits GROUP BY id, updated_at, keep, cos, doc)"
    )


def listing_query(
    scope: tuple[str, list[Any]], flt: tuple[str, list[Any]], live: str, limit: int, offset: int
) -> tuple[str, list[Any]]:
    """Search without a query: newest first."""
    (ssql, sp), (fsql, fp) = scope, flt
    sql = (
        f"SELECT {ITEM_COLS}, NULL::float8 FROM lmx_items i WHERE {ssql} AND {live} AND {fsql} "
        "ORDER BY i.updated_at DESC, i.id DESC LIMIT %s OFFSET %s"
    )
    return sql, [*sp, *fp, limit, offset]


def param_kind(v: Any) -> str:
    """The SQL type a filter parameter is passed as in :func:`listing_many`."""
    if isinstance(v, Jsonb):
        return "jsonb"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "numeric"
    return "text"


def _as_text(v: Any) -> str:
    if isinstance(v, Jsonb):
        return json.dumps(v.obj, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, int | float) else str(v)


def listing_many(
    entries: list[tuple[str, list[Any], int, int]], fsql: str, live: str
) -> tuple[str, list[Any]]:
    """Several searches without a query, each in its own namespace and with
    the same filter shape (``fsql``; parameters of the same kinds, see
    :func:`param_kind`), as one statement: rows are ``(entry number from 1,
    item columns…)``. Entries are ``(prefix, filter params, limit, offset)``
    with non-empty prefixes. Each column is one array parameter, so the
    statement text (and psycopg's parse of it) does not grow with the batch."""
    kinds = [param_kind(v) for v in entries[0][1]]
    cols = ["p", "lo", "hi", *(f"f{j}" for j in range(len(kinds))), "lim", "off"]
    arrays: list[Any] = [
        [e[0] for e in entries],
        [e[0] + "." for e in entries],
        [e[0] + "/" for e in entries],
        *([_as_text(e[1][j]) for e in entries] for j in range(len(kinds))),
        [e[2] for e in entries],
        [e[3] for e in entries],
    ]
    types = ["text[]"] * (3 + len(kinds)) + ["bigint[]", "bigint[]"]
    parts = fsql.split("%s")
    flt = parts[0] + "".join(f"(d.f{j}::{kinds[j]}){rest}" for j, rest in enumerate(parts[1:]))
    sql = (
        f"SELECT d.n, x.* FROM unnest({', '.join(f'%s::{t}' for t in types)}) "
        f"WITH ORDINALITY AS d({', '.join(cols)}, n) CROSS JOIN LATERAL ("
        f"SELECT {ITEM_COLS}, NULL::float8 FROM lmx_items i WHERE (i.prefix = d.p OR "
        f"(i.prefix >= d.lo AND i.prefix < d.hi)) AND {live} AND {flt} "
        "ORDER BY i.updated_at DESC, i.id DESC LIMIT d.lim OFFSET d.off) x"
    )
    return sql, arrays


def range_scope(prefix: str, col: str = "v.prefix") -> tuple[str, list[Any]]:
    """:func:`scope_clause` as one btree range plus a recheck, the shape that an
    index-only scan can serve (an ``OR`` of two ranges turns into a bitmap scan,
    which must visit the heap). ``[p, p + "/")`` holds ``p``, its descendants
    (``p.…``) and siblings such as ``p-x``; the recheck drops the siblings."""
    if not prefix:
        return "TRUE", []
    sql = f"({col} >= %s AND {col} < %s AND ({col} = %s OR {col} >= %s))"
    return sql, [prefix, prefix + "/", prefix, prefix + "."]


class VectorQuery(NamedTuple):
    """What a ``mode="vector"`` search needs besides the page."""

    prefix: str  # encoded namespace prefix ("" for the whole store)
    flt: tuple[str, list[Any]]  # compiled filter
    live: str  # TTL clause
    qvec: Any  # query vector
    dims: int
    distance: str = "cosine"
    tenant: str | None = None  # the scope's one tenant (partitioned stores), else None


def rerank_cte(q: VectorQuery, source: str = "c") -> tuple[str, list[Any]]:
    """CTE ``r``: the items of the candidates in ``source``, scored in full
    precision over all their vectors in the scope (an item scores as its best
    field, as in the exact query)."""
    vsql, vp = scope_clause(q.prefix, "v.prefix", q.tenant)
    score = score_expr(q.distance, "v.embedding", f"(SELECT %s::vector({int(q.dims)}))")
    sql = (
        f"r AS (SELECT v.item_id, max({score}) AS score FROM lmx_vectors v "
        f"WHERE v.item_id IN (SELECT item_id FROM {source}) AND {vsql} GROUP BY v.item_id) "
    )
    return sql, [q.qvec, *vp]


def candidate_query(q: VectorQuery, n_candidates: int, need: int) -> tuple[str, list[Any]]:
    """Vector mode, exact path (cosine), two stages in one statement.

    ``c``: the ``n_candidates`` vectors of the scope nearest to the query in
    half precision (an index-only scan of ``lmx_vectors_scan``, inside the
    ``lmx_scan_candidates`` functions whose SET clauses steer the planner).
    ``r``: their items re-ranked in full precision (:func:`rerank_cte`). Live and
    filter conditions apply to the re-ranked items. Each row carries ``n``
    (candidates found) and ``t`` (the largest half-precision distance among
    them) so the caller can prove that no item outside the candidates can
    belong on the page, else it falls back to the exact query.

    The query vector's casts sit in scalar sub-selects (init plans, run once):
    in a generic plan of a prepared statement (psycopg prepares after five
    runs) a bare ``%s::halfvec`` cast is re-evaluated for every row.
    """
    d, p = int(q.dims), q.prefix
    if p:
        scan = f"lmx_scan_candidates(%s, %s, %s, %s, (SELECT %s::halfvec({d})), %s)"
        sp: list[Any] = [p, p + "/", p, p + ".", q.qvec, n_candidates]
    else:
        scan = f"lmx_scan_candidates_all((SELECT %s::halfvec({d})), %s)"
        sp = [q.qvec, n_candidates]
    rsql, rp = rerank_cte(q)
    fsql, fp = q.flt
    tsql, tp = tenant_clause("i.id", q.tenant)
    sql = (
        f"WITH c AS MATERIALIZED (SELECT item_id, hd FROM {scan}), "
        f"cut AS (SELECT count(*) AS n, max(hd) AS t FROM c), {rsql}"
        f"SELECT {ITEM_COLS}, r.score, cut.n, cut.t FROM r JOIN lmx_items i ON i.id = r.item_id "
        f"CROSS JOIN cut WHERE {q.live} AND {fsql} AND {tsql} "
        "ORDER BY r.score DESC, i.id ASC LIMIT %s"
    )
    return sql, [*sp, *rp, *fp, *tp, need]


def hnsw_query(q: VectorQuery, n_candidates: int, need: int) -> tuple[str, list[Any]]:
    """Vector mode, HNSW path: the ``n_candidates`` nearest vectors by the
    HNSW index on ``embedding_half::halfvec(dims)`` (``ORDER BY distance
    LIMIT``, the shape pgvector serves from the index; namespace, TTL and
    filter are checked during the iterative scan), then their items re-ranked
    in full precision (:func:`rerank_cte`), page cut on the exact scores."""
    (vsql, vp), (fsql, fp) = scope_clause(q.prefix, "v.prefix", q.tenant), q.flt
    tsql, tp = tenant_clause("i.id", q.tenant)
    d = int(q.dims)
    rsql, rp = rerank_cte(q)
    sql = (
        "WITH c AS MATERIALIZED (SELECT v.item_id FROM lmx_vectors v "
        f"JOIN lmx_items i ON i.id = v.item_id WHERE {vsql} AND {tsql} AND {q.live} AND {fsql} "
        f"ORDER BY v.embedding_half::halfvec({d}) {DISTANCE_OPS[q.distance]} %s::halfvec({d}) "
        f"LIMIT %s), {rsql}"
        f"SELECT {ITEM_COLS}, r.score FROM r JOIN lmx_items i ON i.id = r.item_id "
        f"WHERE {tsql} ORDER BY r.score DESC, i.id ASC LIMIT %s"
    )
    return sql, [*vp, *tp, *fp, q.qvec, n_candidates, *rp, *tp, need]


#: The planner's estimate of all vectors, from ``pg_class c`` of ``lmx_vectors``:
#: the sum of its partitions' when partitioned by tenant (a partitioned table
#: has no estimate of its own: autovacuum analyzes only the partitions).
VECTOR_ROWS = (
    "greatest(CASE WHEN c.relkind = 'p' THEN (SELECT sum(greatest(p.reltuples, 0)) "
    "FROM pg_partition_tree(c.oid) t JOIN pg_class p ON p.oid = t.relid WHERE t.isleaf) "
    "ELSE c.reltuples END, 0)::float8"
)


def plan_query(prefix: str, ef_search: int, max_scan_tuples: int) -> tuple[str, list[Any]]:
    """``(N, n, v)``: the planner's estimates of all vectors and of the vectors in
    the scope, and the version of the trained cells (``None`` before training)
    (``lmx_scope_rows``: the row estimate of a scan of the scope, from
    the table's statistics, ~0.2 ms whatever the scope's size; ``N`` for the
    whole store). Also sets the HNSW scan settings for the transaction, which
    only HNSW index scans read."""
    knobs = (
        "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.ef_search', %s, true), set_config('hnsw.max_scan_tuples', %s, true)"
    )
    params: list[Any] = [str(int(ef_search)), str(int(max_scan_tuples))]
    total = VECTOR_ROWS
    scope = "lmx_scope_rows(%s, %s)" if prefix else total
    version = "(SELECT value FROM lmx_meta WHERE key = 'ivf_version')"
    sql = (
        f"SELECT {total}, {scope}, {version}, {knobs} FROM pg_class c "
        "WHERE c.oid = 'lmx_vectors'::regclass"
    )
    return sql, ([prefix, prefix + "/"] if prefix else []) + params


def get_query(prefixes: list[str], keys: list[str], live: str) -> tuple[str, list[Any]]:
    """Every get of a batch in one statement; rows carry the get's position (from 1)."""
    sql = (
        f"SELECT d.n, {ITEM_COLS} FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY "
        'AS d(prefix, key, n) JOIN lmx_items i ON i.prefix = d.prefix COLLATE "C" '
        f'AND i.key = d.key COLLATE "C" WHERE {live}'
    )
    return sql, [prefixes, keys]
