"""The one engine behind PostgresStore and AsyncPostgresStore.

Every database conversation is written once, as a generator that yields
:class:`Exec` / :class:`Copy` / :class:`Many` steps and receives their rows
(psycopg's own pattern for sync/async code). The sync store drives the
generators with a ``Connection``, the async store with an ``AsyncConnection``;
neither contains SQL or decoding logic.
"""

from __future__ import annotations

import json
import logging
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import psycopg
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    Result,
    SearchItem,
    TTLConfig,
)
from psycopg.types import TypeInfo

from ...errors import ConfigurationError, InvalidValueError, LangmemError, StoreError
from .._base import (
    BatchPlan,
    HybridStore,
    PurgeReport,
    UnembeddedItemsWarning,
    langgraph_index,
)
from .._filters import normalize_filter
from .._ops import (
    KEYWORD_THEN_REST,
    HybridSearchOp,
    PreparedPut,
    SearchMode,
    check_count,
    decode_namespace,
    encode_namespace,
    namespace_matches,
)
from ..embeddings import IndexInput, resolve_index
from ..rerankers import reranker_from
from . import _purge, _reindex, _sql
from ._errors import check_nul, translate
from ._ivf import CellWriter, load_steps
from ._replicas import IDENTITY_SQL, ReplicaReads
from ._schema import BOOTSTRAP, LOCK_KEY, MIGRATIONS, hnsw_index_sql, scan_index_sql
from ._steps import Copy, Exec, Many, Steps, gather
from ._tenants import TenantPartitions
from ._vector_search import VectorIndexConfig, resolve_vector_index, vector_steps

__all__ = [
    "Copy",
    "Exec",
    "Many",
    "PostgresCore",
    "Steps",
    "VectorIndexConfig",
]

logger = logging.getLogger("langmem_ext.stores.postgres")


class PostgresCore(CellWriter, ReplicaReads, TenantPartitions, HybridStore):
    """Configuration and the conversation generators shared by both stores."""

    distance_types = ("cosine", "inner_product", "l2")
    #: The index being built by ``reindex``, while it runs.
    _next: Any = None
    #: Set once reindex's switch is done (searches racing it run again).
    _switch: Any = None
    #: The server's ``vector`` type and its dumper, learnt at setup.
    _info: TypeInfo | None
    _dumper: type | None

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
        self._cache_backend = cache_backend
        self.vector_index = resolve_vector_index(
            vector_index, self._ann_index_config, self._dims, self.distance_type
        )
        if not isinstance(text_search_config, str) or not text_search_config:
            raise ConfigurationError(
                "text_search_config must be the name of a PostgreSQL text search "
                f"configuration such as 'english' or 'simple', got {text_search_config!r}"
            )
        self.text_search_config = text_search_config

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
        cfg = yield Exec(
            "SELECT 1 FROM pg_ts_config WHERE cfgname = %s", [self.text_search_config], True
        )
        if not cfg:
            raise ConfigurationError(
                f"text_search_config={self.text_search_config!r} is not a text search "
                "configuration of this server (see `SELECT cfgname FROM pg_ts_config`); "
                "use e.g. 'english' or 'simple'"
            )
        for stmt in BOOTSTRAP:
            yield Exec(stmt)
        yield from self._partitions_setup_steps()
        done = {r[0] for r in (yield Exec("SELECT v FROM lmx_migrations", fetch=True))}
        for version, statements in enumerate(MIGRATIONS):
            if version in done:
                continue
            for stmt in statements:
                yield Exec(stmt)
            yield Exec("INSERT INTO lmx_migrations (v) VALUES (%s)", [version])
        yield from self._tenant_key_setup_steps()
        # Who this store is (a replica must hold the same), see _replicas.
        ident = yield Exec(IDENTITY_SQL, fetch=True)
        if self._replicas is not None:
            self._replicas.expect(system_id=ident[0][0], store_id=ident[0][1])
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
            bare = yield Exec(
                "SELECT EXISTS (SELECT 1 FROM lmx_items WHERE tsv IS NOT NULL) "
                "AND NOT EXISTS (SELECT 1 FROM lmx_vectors)",
                fetch=True,
            )
            if bare[0][0]:
                warnings.warn(
                    "this PostgreSQL store holds items stored without an embedder: vector and "
                    "hybrid search do not find them until they are embedded. Run "
                    "store.reindex() once to embed them (from a shell: langmem-ext store "
                    "reindex --db <url> --to <embedder>)",
                    UnembeddedItemsWarning,
                    stacklevel=2,
                )
            vi = self.vector_index
            if vi["scan_index"]:
                yield Exec(scan_index_sql())
            if vi["kind"] == "hnsw":
                yield Exec(hnsw_index_sql(dims, vi["m"], vi["ef_construction"], self.distance_type))
            elif vi["kind"] == "ivf":
                yield from self._cells_setup_steps()
        return None

    def _failed(self, error: psycopg.Error, where: str) -> LangmemError:
        """The error a driver raises for a failed conversation."""
        self._forget_tenants(error)
        return translate(error, where)

    # -- batch -------------------------------------------------------------------

    def _write_prefixes(self, plan: BatchPlan) -> list[str]:
        """The namespaces a batch writes items into (whose tenants need a
        partition before it runs)."""
        return [encode_namespace(p.namespace) for p in plan.puts if p.value_json is not None]

    def _plan(self, ops: Iterable[Op]) -> BatchPlan:
        plan = super()._plan(ops)
        # PostgreSQL text cannot hold NUL: refuse it here, before any SQL, so it
        # is a clear input error and never a failed (or retried) transaction.
        for _, op in plan.reads:
            if isinstance(op, GetOp):
                check_nul("a namespace label", op.namespace)
                check_nul("a key", op.key)
            elif isinstance(op, HybridSearchOp):
                # The query is not: only its words reach the server (NUL is no word).
                check_nul("a namespace label", op.namespace_prefix)
                check_nul("the filter", op.filter)
            elif isinstance(op, ListNamespacesOp):
                for cond in op.match_conditions or ():
                    check_nul("a namespace label", cond.path)
        return plan

    def _check_put(self, put: PreparedPut) -> None:
        check_nul("a namespace label", put.namespace)
        check_nul("a key", put.key)
        if put.value_json is not None and "\\u0000" in put.value_json:
            raise InvalidValueError(
                f"value for {put.namespace}/{put.key!r} contains the NUL character (\\u0000), "
                "which PostgreSQL cannot store in JSON; remove it"
            )

    def _batch_steps(
        self, plan: BatchPlan, doc_vecs: np.ndarray | None, qvecs: dict[str, np.ndarray]
    ) -> Steps:
        """The whole batch, run in one transaction: reads, TTL refresh, writes.

        All gets are one statement; searches and namespace listings run side by
        side (:func:`gather`: one round trip per step in pipeline mode), so a
        batch merged from many concurrent calls costs a few round trips."""
        results: list[Result] = [None] * plan.n
        live = _sql.live_clause(self._omit_expired())
        refresh: list[int] = []
        reads: list[tuple[int, Any]] = plan.reads
        gets = [(i, op) for i, op in reads if isinstance(op, GetOp)]
        if gets:
            sql, params = _sql.get_query(
                [encode_namespace(op.namespace) for _, op in gets], [op.key for _, op in gets], live
            )
            found = {r[0]: r[1:] for r in (yield Exec(sql, params, fetch=True))}
            for n, (i, op) in enumerate(gets, 1):
                row = found.get(n)
                results[i] = _item(row) if row else None
                if row and op.refresh_ttl and row[6] is not None:
                    refresh.append(row[0])
        # Every filter compiled once. Namespace listings (no query) of one
        # filter shape run as one statement; every other search or namespace
        # listing is a conversation of its own; all of them side by side.
        ops = dict(reads)
        flts = {
            i: _sql.compile_filter(normalize_filter(op.filter))
            for i, op in reads
            if isinstance(op, HybridSearchOp)
        }
        listings: dict[str, list[int]] = {}
        others: list[int] = []
        for i, op in reads:
            if isinstance(op, HybridSearchOp) and not op.query and op.namespace_prefix and op.limit:
                fsql, fp = flts[i]
                listings.setdefault(fsql + "".join(map(_sql.param_kind, fp)), []).append(i)
            elif not isinstance(op, GetOp):
                others.append(i)
        groups = [g for g in listings.values() if len(g) > 1]
        others += [g[0] for g in listings.values() if len(g) == 1]
        convs = [
            self._search_steps(ops[i], plan.modes[i], qvecs, live, flts[i])
            if i in flts
            else self._list_steps(ops[i], live)
            for i in others
        ]
        convs += [_listing_group_steps([(ops[i], flts[i]) for i in g], live) for g in groups]
        outs = yield from gather(convs)
        done = dict(zip(others, outs, strict=False))
        for g, out in zip(groups, outs[len(others) :], strict=True):
            done.update(zip(g, out, strict=True))
        for i, out in done.items():
            op = ops[i]
            if not isinstance(op, HybridSearchOp):
                results[i] = out
                continue
            results[i] = [_item(r, search=True) for r in out]
            if op.refresh_ttl:
                refresh.extend(r[0] for r in out if r[6] is not None)
        if refresh:
            yield Exec(
                "UPDATE lmx_items SET expires_at = now() + ttl_minutes * interval '1 minute' "
                "WHERE id = ANY(%s::bigint[]) AND ttl_minutes IS NOT NULL",
                [refresh],
            )
        if plan.puts:
            yield from self._put_steps(plan.puts, doc_vecs)
            nxt = self._next
            if nxt is not None:  # a rebuild is running: the new space gets this write too
                batch = yield from _reindex.put_batch_steps(plan.puts, nxt.fields)
                texts = [t for *_, fs in batch for _, t in fs]
                if texts:
                    vecs = nxt.embeddings.embed_documents_array(texts)
                    yield from _reindex.save_steps(batch, vecs)
        return results

    @staticmethod
    def _list_steps(op: ListNamespacesOp, live: str) -> Steps:
        # A leading prefix condition without wildcards narrows the scan to a range.
        fixed: tuple[str, ...] = ()
        for cond in op.match_conditions or ():
            if cond.match_type == "prefix":
                labels = tuple(cond.path)
                fixed = labels[: labels.index("*")] if "*" in labels else labels
                break
        scope, params = _sql.scope_clause(encode_namespace(fixed))
        rows = yield Exec(
            f"SELECT DISTINCT i.prefix FROM lmx_items i WHERE {scope} AND {live}", params, True
        )
        return _list_namespaces(op, [r[0] for r in rows])

    def _search_steps(
        self,
        op: HybridSearchOp,
        mode: str,
        qvecs: dict[str, np.ndarray],
        live: str,
        flt: tuple[str, list[Any]],
    ) -> Steps:
        if op.limit == 0:
            return []
        rest = mode == KEYWORD_THEN_REST
        mode = "keyword" if rest else mode
        prefix = encode_namespace(op.namespace_prefix)
        tenant = self._scope_tenant(prefix)
        scope = _sql.scope_clause(prefix, tenant=tenant)
        if not op.query:
            sql, params = _sql.listing_query(scope, flt, live, op.limit, op.offset)
            return (yield Exec(sql, params, fetch=True, prepare=False))
        qvec = qvecs.get(op.query)
        if qvec is not None and self._dims and len(qvec) != self._dims and self.embeddings:
            # reindex() switched embedders since the query was embedded.
            qvec = self.embeddings.embed_query_array(op.query)
        if mode == "vector" and qvec is not None and self._dims:
            q = _sql.VectorQuery(prefix, flt, live, qvec, self._dims, self.distance_type, tenant)
            page = yield from vector_steps(q, op, self.vector_index, self)
            if page is not None:
                return page
        words = _sql.tsquery_words(op.query) if mode in ("keyword", "hybrid") else []
        weight = self._index.vector_weight if self._index else 0.5
        sql, params = _sql.search_query(
            mode=mode,
            scope=scope,
            vscope=_sql.scope_clause(prefix, "v.prefix", tenant),
            flt=flt,
            live=live,
            qvec=qvec,
            words=words,
            ts_config=self.text_search_config,
            vector_weight=weight,
            context_weight=self._index.context_weight if self._index else 0.5,
            limit=op.limit,
            offset=op.offset,
            dims=self._dims,
            distance=self.distance_type,
            only_matches=mode == "keyword" and not rest,
            tenant=tenant,
        )
        return (yield Exec(sql, params, fetch=True, prepare=False))

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
                'WHERE i.prefix = d.prefix COLLATE "C" AND i.key = d.key COLLATE "C"',
                [[d[0] for d in dels], [d[1] for d in dels]],
            )
        if not ups:
            return None
        tenant_col, conflict, inserted = self._items_upsert_shape()
        tenants = self._tenant_column([k[0] for k, _, _ in ups])
        rows = yield Exec(
            f"INSERT INTO lmx_items ({tenant_col}prefix, key, value, expires_at, ttl_minutes, tsv) "
            f"SELECT {'d.tenant, ' if tenants else ''}d.prefix, d.key, d.value::jsonb, "
            "coalesce(now() + d.ttl * interval '1 minute', to_timestamp(d.exp)), d.ttl, "
            "CASE WHEN d.txt IS NULL AND d.ctx IS NULL THEN NULL ELSE "
            "setweight(to_tsvector(c.cfg, coalesce(d.txt, '')), 'A') || "
            "setweight(to_tsvector(c.cfg, coalesce(d.ctx, '')), 'D') END "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::float8[], %s::text[], "
            f"%s::text[], %s::float8[]{', %s::text[]' if tenants else ''}) "
            f"AS d(prefix, key, value, ttl, txt, ctx, exp{', tenant' if tenants else ''}), "
            "(SELECT %s::regconfig AS cfg) AS c "
            # created_at is deliberately not updated: it survives re-puts.
            f"ON CONFLICT ({conflict}) DO UPDATE SET value = excluded.value, "
            "updated_at = now(), expires_at = excluded.expires_at, "
            "ttl_minutes = excluded.ttl_minutes, tsv = excluded.tsv "
            f"RETURNING id, prefix, key, {inserted} AS inserted",
            [
                [k[0] for k, _, _ in ups],
                [k[1] for k, _, _ in ups],
                [p.value_json for _, _, p in ups],
                [p.ttl for _, _, p in ups],
                [p.keyword_text for _, _, p in ups],
                [p.context_text for _, _, p in ups],
                [p.expires_at for _, _, p in ups],
                *([tenants] if tenants else []),
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
        if not vec_rows:
            return None
        yield from self._cells_confirm_steps()
        cells = self._cells_of([r[3] for r in vec_rows])
        vec_tenants = self._tenant_column([r[2] for r in vec_rows])
        if vec_tenants is None:
            yield Copy(
                "COPY lmx_vectors (item_id, field, prefix, embedding, cell) "
                "FROM STDIN (FORMAT BINARY)",
                ["int8", "text", "text", "vector", "int4"],
                [(*r, c) for r, c in zip(vec_rows, cells, strict=True)],
            )
        else:
            yield Copy(
                "COPY lmx_vectors (item_id, field, prefix, embedding, cell, tenant) "
                "FROM STDIN (FORMAT BINARY)",
                ["int8", "text", "text", "vector", "int4", "text"],
                [(*r, c, t) for r, c, t in zip(vec_rows, cells, vec_tenants, strict=True)],
            )
        yield from self._cells_after_put_steps(max(ids.values()))
        return None

    def _embed_sync(self, plan: BatchPlan) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        emb = self.embeddings
        if emb is None:
            return None, {}
        doc_vecs = emb.embed_documents_array(plan.doc_texts) if plan.doc_texts else None
        return doc_vecs, {q: emb.embed_query_array(q) for q in plan.queries}

    async def _embed_async(
        self, plan: BatchPlan
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        import asyncio

        emb = self.embeddings
        if emb is None:
            return None, {}
        doc_vecs = await emb.aembed_documents_array(plan.doc_texts) if plan.doc_texts else None
        qs = list(plan.queries)
        vecs = await asyncio.gather(*(emb.aembed_query_array(q) for q in qs)) if qs else []
        return doc_vecs, dict(zip(qs, vecs, strict=True))

    # -- changing the embedder ----------------------------------------------------

    def _reindex_target(self, index: Any, batch_size: int) -> tuple[Any, dict[str, Any], Any]:
        """The resolved index a reindex builds, its identity, and its config."""
        cfg = self.index_config if index is None else index
        if cfg is None:
            raise ConfigurationError(
                "reindex needs an index with an embedder, e.g. {'embed': 'local'}: this "
                "store has none"
            )
        check_count(batch_size, "batch_size")
        resolved, _, _ = langgraph_index(reranker_from(cfg)[0])
        new = resolve_index(resolved, backend=self._cache_backend)
        if new is None or new.embeddings is None or new.dims is None:
            raise ConfigurationError(
                f"reindex needs an index with an embedder and its dims, got {cfg!r}"
            )
        model = new.embeddings.model_id if new.embeddings.persistent else None
        return new, {"dims": new.dims, "model": model}, cfg

    def _reindex_job(
        self,
        index: Any,
        batch_size: int,
        progress: Callable[[int, int], None] | None,
    ) -> _reindex.Job:
        """The whole of ``reindex`` for both stores (see :mod:`._reindex`):
        yields the transactions to run and the texts to embed, receives their
        results; returns ``{"embedded", "vectors", "dims"}``."""
        new, target, cfg = self._reindex_target(index, batch_size)
        R = _reindex.Run
        yield R(_reindex.prepare_steps(target), "a reindex")
        total = int((yield R(_reindex.missing_steps(), "a reindex", write=False)))
        self._next = new
        done = embedded = 0
        n_vec: int | None = None
        try:
            for _ in range(100):
                after = 0
                while True:
                    rows = yield R(_reindex.todo_steps(after, batch_size), "a reindex", False)
                    if not rows:
                        break
                    after = int(rows[-1][0])
                    batch = _reindex.texts(rows, new.fields)
                    texts = [t for *_, fs in batch for _, t in fs]
                    vecs = (yield _reindex.Embed(new.embeddings, texts)) if texts else None
                    n = int((yield R(_reindex.save_steps(batch, vecs), "a reindex")))
                    embedded += n
                    done = min(done + n, total)
                    if progress is not None:
                        progress(done, total)
                if self.vector_index["kind"] == "ivf":
                    lists = self.vector_index["lists"]
                    yield R(_reindex.train_steps(lists, new.dims), "a reindex's cells")
                # Writes that fail on the old embedder's vectors while the
                # switch commits wait for this, then run again (see batch).
                self._switch = threading.Event()
                try:
                    n_vec = yield R(_reindex.switch_steps(new.dims), "a reindex's switch")
                    if n_vec is not None:
                        self._adopt(cfg, new)
                finally:
                    self._switch.set()
                if n_vec is not None:
                    break
            else:  # pragma: no cover - writers outpacing the rebuild 100 times
                raise StoreError("reindex could not catch up with the writes; run it again")
        finally:
            self._next = None
        # The planner's statistics still describe the old vectors (the vector
        # search sizes its probes by them): refreshed now, not at autovacuum's pace.
        yield R(_reindex.index_steps("ANALYZE lmx_vectors"), "a reindex", autocommit=True)
        vi = self.vector_index
        if vi["kind"] == "ivf":
            cells = yield R(load_steps(), "loading the vector index's cells", write=False)
            self.cells, self._waiting = cells, cells is not None
        if vi["kind"] == "hnsw":
            sql = hnsw_index_sql(new.dims, vi["m"], vi["ef_construction"], self.distance_type)
            yield R(_reindex.index_steps(sql), "building the vector index", autocommit=True)
        if progress is not None:
            progress(total, total)
        return {"embedded": embedded, "vectors": int(n_vec or 0), "dims": int(new.dims)}

    def _adopt(self, cfg: Any, new: Any) -> None:
        """Use the new embedder from the switch on; the cells of the old space
        are gone (trained again on the new one)."""
        self.index_config = dict(cfg) if isinstance(cfg, dict) else cfg
        if isinstance(self.index_config, dict):
            self.index_config.setdefault("dims", new.dims)
        self._index = new
        self.embeddings = new.embeddings
        # The new space's cells are loaded right after the switch (reindex).
        self.cells, self._waiting, self._train_check_at = None, False, 0
        if self.search_mode == "keyword":
            self.search_mode = "hybrid"

    # -- erasure -----------------------------------------------------------------

    def _purge_steps(
        self,
        prefixes: Sequence[tuple[str, ...]],
        keys: Sequence[tuple[tuple[str, ...], str]],
        puts: list[PreparedPut],
        doc_vecs: np.ndarray | None,
        dry_run: bool,
    ) -> Steps:
        fields = self._index.fields if self._index else None
        ids, per_ns, n_vec, digests, n_cache = yield from _purge.collect_steps(
            prefixes, keys, fields, lock=not dry_run
        )
        if not dry_run:
            yield from _purge.delete_steps(ids, digests)
            if puts:
                yield from self._put_steps(puts, doc_vecs)
            forget = getattr(self.embeddings, "forget", None)
            if forget is not None:
                forget(digests)
        return PurgeReport(per_ns, n_vec, n_cache, False)

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
        keys = sorted(entries)  # one lock order for concurrent writers
        # DO UPDATE: a row the embedder cache refused (NaN, wrong length, from
        # before vectors were validated) is replaced by the new vector.
        yield Exec(
            "INSERT INTO lmx_embedding_cache (model, kind, hash, embedding) "
            "SELECT d.m, d.k, d.h, string_to_array(d.e, ',')::real[] "
            "FROM unnest(%s::text[], %s::text[], %s::bytea[], %s::text[]) AS d(m, k, h, e) "
            "ON CONFLICT (model, kind, hash) DO UPDATE SET embedding = excluded.embedding",
            [
                [k[0] for k in keys],
                [k[1] for k in keys],
                [k[2] for k in keys],
                [",".join(map(repr, np.asarray(entries[k]).tolist())) for k in keys],
            ],
        )
        return None


def _listing_group_steps(group: list[tuple[Any, tuple[str, list[Any]]]], live: str) -> Steps:
    entries = [
        (encode_namespace(op.namespace_prefix), fp, op.limit, op.offset) for op, (_, fp) in group
    ]
    sql, params = _sql.listing_many(entries, group[0][1][0], live)
    pages: list[list[Any]] = [[] for _ in group]
    for row in (yield Exec(sql, params, fetch=True, prepare=False)):
        pages[row[0] - 1].append(row[1:])
    return pages


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
