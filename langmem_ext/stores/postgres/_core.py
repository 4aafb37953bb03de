"""The one engine behind PostgresStore and AsyncPostgresStore.

Every database conversation is written once, as a generator that yields
:class:`Exec` / :class:`Copy` steps and receives their rows (psycopg's own
pattern for sync/async code). The sync store drives the generators with a
``Connection``, the async store with an ``AsyncConnection``; neither contains
SQL or decoding logic.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np
import psycopg
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Result,
    SearchItem,
    TTLConfig,
)

from ...errors import ConfigurationError, InvalidValueError, StoreError
from .._base import BatchPlan, HybridStore
from .._filters import normalize_filter
from .._ops import (
    HybridSearchOp,
    PreparedPut,
    SearchMode,
    decode_namespace,
    encode_namespace,
    namespace_matches,
)
from ..embeddings import IndexInput
from . import _sql
from ._schema import (
    BOOTSTRAP,
    LOCK_KEY,
    MAX_SCAN_INDEX_DIMS,
    MIGRATIONS,
    hnsw_index_sql,
    scan_index_sql,
)
from ._steps import Copy, Exec, Steps
from ._vector_search import candidate_steps, hnsw_steps

__all__ = ["Copy", "Exec", "PostgresCore", "VectorIndexConfig"]

logger = logging.getLogger("langmem_ext.stores.postgres")


class VectorIndexConfig(TypedDict, total=False):
    """How vector search runs (``vector_index=`` of the stores).

    ``{"kind": "exact"}`` (default): results are exact for any namespace or
    filter. ``mode="vector"`` pages come from half-precision candidates (a
    covering index, read index-only) re-ranked in full precision, returned only
    when provably exact, else (and for hybrid/keyword) every cosine in the scope
    is computed; see :mod:`._vector_search`.
    ``{"kind": "hnsw", "m": 16, "ef_construction": 64, "ef_search": 100}``
    additionally builds an HNSW index, used with pgvector 0.8 iterative scans
    (approximate) for ``mode="vector"`` queries whose scope holds more than
    ``exact_below`` vectors; smaller scopes take the default path.
    """

    kind: str
    """``"exact"`` or ``"hnsw"``."""
    m: int
    """HNSW graph degree (16)."""
    ef_construction: int
    """HNSW build candidate list (64)."""
    ef_search: int
    """HNSW query candidate list, ``hnsw.ef_search`` (100)."""
    max_scan_tuples: int
    """``hnsw.max_scan_tuples`` for iterative scans (20000)."""
    exact_below: int
    """Scopes with at most this many vectors are searched exactly (50000)."""


class PostgresCore(HybridStore):
    """Configuration and the conversation generators shared by both stores."""

    def _configure(
        self,
        index: IndexInput | None,
        ttl: TTLConfig | None,
        search_mode: SearchMode | None,
        vector_index: VectorIndexConfig | None,
        text_search_config: str,
        cache_backend: Any,
    ) -> None:
        self._configure_search(index, ttl, search_mode, cache_backend)
        vi = dict(vector_index or {"kind": "exact"})
        if vi.get("kind", "exact") not in ("exact", "hnsw"):
            raise ConfigurationError(
                f"vector_index kind must be 'exact' or 'hnsw', got {vi.get('kind')!r}"
            )
        unknown = set(vi) - set(VectorIndexConfig.__annotations__)
        if unknown:
            raise ConfigurationError(f"unknown vector_index keys {sorted(unknown)}")
        self.vector_index: dict[str, Any] = {
            "kind": "exact",
            "m": 16,
            "ef_construction": 64,
            "ef_search": 100,
            "max_scan_tuples": 20000,
            "exact_below": 50000,
            **vi,
        }
        if self.vector_index["kind"] == "hnsw" and not (self._index and self._index.dims):
            raise ConfigurationError("vector_index kind 'hnsw' needs index={'dims': ..., ...}")
        self.text_search_config = text_search_config

    @property
    def _scan_index(self) -> bool:
        """Whether the half-precision covering index (and its fast path) exists."""
        dims = self._dims
        return dims is not None and 0 < dims <= MAX_SCAN_INDEX_DIMS

    @property
    def _dims(self) -> int | None:
        return self._index.dims if self._index and self.embeddings else None

    # -- setup -------------------------------------------------------------------

    def _setup_steps(self) -> Steps:
        """Run inside one transaction: everything or nothing is applied."""
        yield Exec("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        have = yield Exec("SELECT 1 FROM pg_extension WHERE extname = 'vector'", fetch=True)
        if not have:
            avail = yield Exec(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'", fetch=True
            )
            if not avail:
                raise StoreError(
                    "the PostgreSQL server has no 'vector' extension (pgvector) installed; "
                    "install pgvector on the server (e.g. the postgresql-NN-pgvector package, "
                    "or an image such as pgvector/pgvector) or use a managed service that "
                    "offers it, then call setup() again"
                )
        for stmt in BOOTSTRAP:
            yield Exec(stmt)
        done = {r[0] for r in (yield Exec("SELECT v FROM lmx_migrations", fetch=True))}
        for version, statements in enumerate(MIGRATIONS):
            if version in done:
                continue
            for stmt in statements:
                yield Exec(stmt)
            yield Exec("INSERT INTO lmx_migrations (v) VALUES (%s)", [version])
        dims = self._dims
        if dims:
            rows = yield Exec("SELECT value FROM lmx_meta WHERE key = 'dims'", fetch=True)
            if rows and int(rows[0][0]) != dims:
                raise ConfigurationError(
                    f"this database holds {rows[0][0]}-dimensional vectors but index['dims'] "
                    f"is {dims}; use the embedder the store was built with, or another schema"
                )
            if not rows:
                yield Exec("INSERT INTO lmx_meta (key, value) VALUES ('dims', %s)", [str(dims)])
            if dims <= MAX_SCAN_INDEX_DIMS:
                yield Exec(scan_index_sql())
            if self.vector_index["kind"] == "hnsw":
                vi = self.vector_index
                yield Exec(hnsw_index_sql(dims, vi["m"], vi["ef_construction"]))
        return None

    # -- batch -------------------------------------------------------------------

    def _check_put(self, put: PreparedPut) -> None:
        if put.value_json is not None and "\\u0000" in put.value_json:
            raise InvalidValueError(
                f"value for {put.namespace}/{put.key!r} contains the NUL character (\\u0000), "
                "which PostgreSQL cannot store in JSON; remove it"
            )

    def _batch_steps(
        self, plan: BatchPlan, doc_vecs: np.ndarray | None, qvecs: dict[str, np.ndarray]
    ) -> Steps:
        """The whole batch, run in one transaction: reads, TTL refresh, writes."""
        results: list[Result] = [None] * plan.n
        live = _sql.live_clause(self._omit_expired())
        refresh: list[int] = []
        for i, op in plan.reads:
            if isinstance(op, GetOp):
                rows = yield Exec(
                    f"SELECT {_sql.ITEM_COLS} FROM lmx_items i "
                    f"WHERE i.prefix = %s AND i.key = %s AND {live}",
                    [encode_namespace(op.namespace), op.key],
                    fetch=True,
                )
                results[i] = _item(rows[0]) if rows else None
                if rows and op.refresh_ttl and rows[0][6] is not None:
                    refresh.append(rows[0][0])
            elif isinstance(op, ListNamespacesOp):
                rows = yield Exec(
                    f"SELECT DISTINCT i.prefix FROM lmx_items i WHERE {live}", [], True
                )
                results[i] = _list_namespaces(op, [r[0] for r in rows])
            else:
                assert isinstance(op, HybridSearchOp)
                rows = yield from self._search_steps(op, plan.modes[i], qvecs, live)
                results[i] = [_item(r, search=True) for r in rows]
                if op.refresh_ttl:
                    refresh.extend(r[0] for r in rows if r[6] is not None)
        if refresh:
            yield Exec(
                "UPDATE lmx_items SET expires_at = now() + ttl_minutes * interval '1 minute' "
                "WHERE id = ANY(%s::bigint[]) AND ttl_minutes IS NOT NULL",
                [refresh],
            )
        if plan.puts:
            yield from self._put_steps(plan.puts, doc_vecs)
        return results

    def _search_steps(
        self, op: HybridSearchOp, mode: str, qvecs: dict[str, np.ndarray], live: str
    ) -> Steps:
        if op.limit == 0:
            return []
        prefix = encode_namespace(op.namespace_prefix)
        scope = _sql.scope_clause(prefix)
        flt = _sql.compile_filter(normalize_filter(op.filter))
        if not op.query:
            sql, params = _sql.listing_query(scope, flt, live, op.limit, op.offset)
            return (yield Exec(sql, params, fetch=True))
        qvec = qvecs.get(op.query)
        vi = self.vector_index
        if mode == "vector" and vi["kind"] == "hnsw" and qvec is not None:
            vscope = _sql.scope_clause(prefix, "v.prefix")
            rows = yield Exec(
                f"SELECT count(*) > %s FROM lmx_vectors v WHERE {vscope[0]}",
                [vi["exact_below"], *vscope[1]],
                fetch=True,
            )
            if rows[0][0]:
                return (yield from hnsw_steps(op, vi, prefix, flt, live, qvec, self._dims or 0))
        elif mode == "vector" and qvec is not None and self._scan_index:
            page = yield from candidate_steps(op, prefix, flt, live, qvec, self._dims or 0)
            if page is not None:
                return page
        tsq = _sql.tsquery_text(op.query) if mode in ("keyword", "hybrid") else None
        weight = self._index.vector_weight if self._index else 0.5
        sql, params = _sql.search_query(
            mode=mode,
            scope=scope,
            vscope=_sql.scope_clause(prefix, "v.prefix"),
            flt=flt,
            live=live,
            qvec=qvec,
            tsq=tsq,
            ts_config=self.text_search_config,
            vector_weight=weight,
            context_weight=self._index.context_weight if self._index else 0.5,
            limit=op.limit,
            offset=op.offset,
            dims=self._dims,
        )
        return (yield Exec(sql, params, fetch=True))

    def _put_steps(self, puts: list[PreparedPut], doc_vecs: np.ndarray | None) -> Steps:
        # Sorted so concurrent batches lock rows in the same order (no deadlock).
        dels = sorted((encode_namespace(p.namespace), p.key) for p in puts if p.value_json is None)
        ups = sorted(
            ((encode_namespace(p.namespace), p.key), i, p)
            for i, p in enumerate(puts)
            if p.value_json is not None
        )
        if dels:
            yield Exec(
                "DELETE FROM lmx_items i USING unnest(%s::text[], %s::text[]) AS d(prefix, key) "
                "WHERE i.prefix = d.prefix AND i.key = d.key",
                [[d[0] for d in dels], [d[1] for d in dels]],
            )
        if not ups:
            return None
        rows = yield Exec(
            "INSERT INTO lmx_items (prefix, key, value, expires_at, ttl_minutes, tsv) "
            "SELECT d.prefix, d.key, d.value::jsonb, "
            "now() + d.ttl * interval '1 minute', d.ttl, "
            "CASE WHEN d.txt IS NULL AND d.ctx IS NULL THEN NULL ELSE "
            "setweight(to_tsvector(c.cfg, coalesce(d.txt, '')), 'A') || "
            "setweight(to_tsvector(c.cfg, coalesce(d.ctx, '')), 'D') END "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::float8[], %s::text[], "
            "%s::text[]) AS d(prefix, key, value, ttl, txt, ctx), "
            "(SELECT %s::regconfig AS cfg) AS c "
            # created_at is deliberately not updated: it survives re-puts.
            "ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, "
            "updated_at = now(), expires_at = excluded.expires_at, "
            "ttl_minutes = excluded.ttl_minutes, tsv = excluded.tsv "
            "RETURNING id, prefix, key, (xmax = 0) AS inserted",
            [
                [k[0] for k, _, _ in ups],
                [k[1] for k, _, _ in ups],
                [p.value_json for _, _, p in ups],
                [p.ttl for _, _, p in ups],
                [p.keyword_text for _, _, p in ups],
                [p.context_text for _, _, p in ups],
                self.text_search_config,
            ],
            fetch=True,
        )
        ids = {(r[1], r[2]): r[0] for r in rows}
        # A re-put replaces every vector of the item: none is left stale.
        updated = [r[0] for r in rows if not r[3]]
        if updated:
            yield Exec("DELETE FROM lmx_vectors WHERE item_id = ANY(%s::bigint[])", [updated])
        if doc_vecs is None:
            return None
        starts, pos = [], 0
        for p in puts:
            starts.append(pos)
            pos += len(p.fields)
        vec_rows: list[tuple[Any, ...]] = []
        for key, i, p in ups:
            for j, (label, _) in enumerate(p.fields):
                vec_rows.append((ids[key], label, key[0], doc_vecs[starts[i] + j]))
        if vec_rows:
            yield Copy(
                "COPY lmx_vectors (item_id, field, prefix, embedding) FROM STDIN (FORMAT BINARY)",
                ["int8", "text", "text", "vector"],
                vec_rows,
            )
        return None

    def _embed_sync(self, plan: BatchPlan) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        emb = self.embeddings
        if emb is None:
            return None, {}
        doc_vecs = emb.embed_documents_array(plan.doc_texts) if plan.doc_texts else None
        return doc_vecs, {q: emb.embed_query_array(q) for q in plan.queries}

    # -- TTL, cache --------------------------------------------------------------

    @staticmethod
    def _sweep_steps() -> Steps:
        rows = yield Exec(
            "WITH d AS (DELETE FROM lmx_items WHERE expires_at <= now() RETURNING 1) "
            "SELECT count(*) FROM d",
            fetch=True,
        )
        return int(rows[0][0])

    @staticmethod
    def _cache_get_steps(keys: Sequence[tuple[str, str, bytes]]) -> Steps:
        rows = yield Exec(
            "SELECT c.model, c.kind, c.hash, c.embedding FROM lmx_embedding_cache c "
            "JOIN unnest(%s::text[], %s::text[], %s::bytea[]) AS d(m, k, h) "
            "ON c.model = d.m AND c.kind = d.k AND c.hash = d.h",
            [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]],
            fetch=True,
        )
        return {(m, k, bytes(h)): np.asarray(e, dtype=np.float32) for m, k, h, e in rows}

    @staticmethod
    def _cache_put_steps(entries: dict[tuple[str, str, bytes], np.ndarray]) -> Steps:
        keys = list(entries)
        yield Exec(
            "INSERT INTO lmx_embedding_cache (model, kind, hash, embedding) "
            "SELECT d.m, d.k, d.h, string_to_array(d.e, ',')::real[] "
            "FROM unnest(%s::text[], %s::text[], %s::bytea[], %s::text[]) AS d(m, k, h, e) "
            "ON CONFLICT DO NOTHING",
            [
                [k[0] for k in keys],
                [k[1] for k in keys],
                [k[2] for k in keys],
                [",".join(map(repr, np.asarray(entries[k]).tolist())) for k in keys],
            ],
        )
        return None


def _item(row: Sequence[Any], search: bool = False) -> Item:
    _, prefix, key, value, created, updated, _ttl, *rest = row
    args = dict(
        namespace=decode_namespace(prefix),
        key=key,
        value=value if isinstance(value, dict) else json.loads(value),
        created_at=created,
        updated_at=updated,
    )
    if search:
        score = rest[0] if rest else None
        return SearchItem(**args, score=None if score is None else float(score))
    return Item(**args)


def _list_namespaces(op: ListNamespacesOp, prefixes: list[str]) -> list[tuple[str, ...]]:
    namespaces = [decode_namespace(p) for p in prefixes]
    for cond in op.match_conditions or ():
        namespaces = [ns for ns in namespaces if namespace_matches(cond.match_type, cond.path, ns)]
    if op.max_depth is not None:
        namespaces = list({ns[: op.max_depth] for ns in namespaces})
    namespaces.sort()
    return namespaces[op.offset : op.offset + op.limit]


def translate(e: psycopg.Error, where: str) -> Exception:
    """A psycopg error → a langmem_ext error whose message says what to do."""
    if isinstance(e, psycopg.errors.InsufficientPrivilege) and where == "setup":
        return StoreError(
            f"setup() lacks a privilege ({e}). The 'vector' extension must be created once "
            "by a role allowed to: run `CREATE EXTENSION vector;` in this database as its "
            "owner or a superuser, and grant CREATE on the schema to this role",
            sqlstate=e.sqlstate,
        )
    if isinstance(e, psycopg.errors.UntranslatableCharacter):
        return InvalidValueError(f"PostgreSQL cannot store a value in this batch: {e}")
    if isinstance(e, psycopg.OperationalError):
        return StoreError(
            f"PostgreSQL connection failed during {where} ({one_line(e)}); the "
            "transaction was rolled back, nothing from it was applied. Check the server and "
            "the connection string, then retry",
            sqlstate=e.sqlstate,
        )
    return StoreError(f"PostgreSQL error during {where}: {one_line(e)}", sqlstate=e.sqlstate)


def one_line(e: BaseException) -> str:
    """libpq messages span lines; error messages here read as one."""
    return " ".join(str(e).split())
