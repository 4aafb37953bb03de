"""MemoryEngine: typed memories over any LangGraph ``BaseStore``, sync and async.

Each operation is written once (a generator in :mod:`.lifecycle` or
:mod:`.recall`); ``engine.op(...)`` runs it with ``store.batch`` and
``await engine.aop(...)`` with ``store.abatch``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Concatenate, ParamSpec, TypeVar

from langgraph.store.base import BaseStore, SearchOp

from ..errors import ConfigurationError
from ..stores import SEARCH_MODES, HybridSearchOp
from . import lifecycle as lc
from . import policy
from . import profile as pf
from . import provider as pv
from . import recall as rc
from ._core import EngineConfig, detect_caps
from .checks import check_int, check_number, check_text, shown
from .env import Env
from .layers import check_layer
from .metrics import EngineMetrics
from .models import Episode, Fact, MemoryEvent, Note, Rule
from .namespaces import NamespaceTemplate
from .profile import FactCandidate, Profile, ProfileUpdate
from .provider import HealthStatus
from .recall import Hit, Page
from .requests import Operation, run_async, run_sync
from .tenancy import MemoryContext, fill_space

__all__ = ["EnginesByStore", "MemoryEngine"]

P = ParamSpec("P")
T = TypeVar("T")
Ctx = MemoryContext | Mapping[str, Any]
# generate_embedding needs no caller: only the content limit is checked.
_NO_CALLER = MemoryContext("_")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _sync(
    build: Callable[Concatenate[MemoryEngine, P], Operation[T]],
) -> Callable[Concatenate[MemoryEngine, P], T]:
    @functools.wraps(build)
    def op(self: MemoryEngine, *args: P.args, **kwargs: P.kwargs) -> T:
        # Measured here, around building the step too: validation and tenancy
        # errors raised before the first store op are counted like store errors.
        with self.metrics.measure(name):
            return run_sync(build(self, *args, **kwargs), self.store, self.config)

    name = build.__name__.removesuffix("_op")
    op.__name__ = op.__qualname__ = name
    return op


def _async(
    build: Callable[Concatenate[MemoryEngine, P], Operation[T]],
) -> Callable[Concatenate[MemoryEngine, P], Coroutine[Any, Any, T]]:
    @functools.wraps(build)
    async def op(self: MemoryEngine, *args: P.args, **kwargs: P.kwargs) -> T:
        with self.metrics.measure(name):  # a plain context manager: same body as _sync
            return await run_async(build(self, *args, **kwargs), self.store, self.config)

    name = build.__name__.removesuffix("_op")
    op.__name__ = op.__qualname__ = "a" + name
    op.__doc__ = f"Async :meth:`{name}` (same arguments, runs on ``store.abatch``)."
    return op


class MemoryEngine:
    """Facts, episodes, rules and notes with lifecycles, over any ``BaseStore``.

    Every operation takes the caller first: a :class:`MemoryContext` or a
    LangGraph ``RunnableConfig`` holding the auth user (the tenant comes from
    there, never from arguments; ``tenant=`` is an admin's explicit selector).

    Args:
        store: any LangGraph ``BaseStore``; ours gets hybrid search and every
            filter operator, others degrade (see ``docs/engine.md``).
        config: :class:`EngineConfig`; keyword overrides are applied to it.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> from langmem_ext.engine import MemoryContext, MemoryEngine
        >>> engine = MemoryEngine(SQLiteStore())
        >>> ctx = MemoryContext("acme", user_id="ada")
        >>> old = engine.store_fact(ctx, "user", "favorite_color", "Favorite color: blue")
        >>> new = engine.store_fact(ctx, "user", "favorite_color", "Favorite color: green")
        >>> engine.get(ctx, old.id).validity, engine.get(ctx, old.id).superseded_by == new.id
        ('superseded', True)
        >>> [h.content for h in engine.recall(ctx, "favorite color")]
        ['Favorite color: green']
    """

    def __init__(
        self, store: BaseStore, config: EngineConfig | None = None, **overrides: Any
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a LangGraph BaseStore (SQLiteStore(), InMemoryStore(), ...), "
                f"got {type(store).__name__}"
            )
        self.store = store
        cfg = EngineConfig() if config is None else config
        if not isinstance(cfg, EngineConfig):
            raise ConfigurationError(f"config must be an EngineConfig, got {type(cfg).__name__}")
        if overrides:
            import dataclasses

            unknown = set(overrides) - {f.name for f in dataclasses.fields(EngineConfig)}
            if unknown:
                raise ConfigurationError(
                    f"unknown engine settings {sorted(unknown)}; see EngineConfig for the settings"
                )
            cfg = dataclasses.replace(cfg, **overrides)
        _check_settings(cfg)
        self.config = cfg
        self.caps = detect_caps(store, cfg)
        self.metrics = EngineMetrics(cfg.meter_provider)

    def context(
        self, ctx: Ctx, *, namespace: Any = None, default_tenant: str | None = None
    ) -> MemoryContext:
        """The caller: ``ctx`` itself, or the context of a ``RunnableConfig``,
        built with ``namespace`` and ``default_tenant`` (default: the engine's).

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> engine = MemoryEngine(SQLiteStore(), namespace=("memories", "{user_id}"))
            >>> engine.context({"configurable": {"user_id": "ada"}}).space
            ('memories', 'ada')
        """
        cfg = self.config
        namespace = cfg.namespace if namespace is None else namespace
        if isinstance(ctx, MemoryContext):
            return fill_space(ctx, namespace)
        return MemoryContext.from_config(
            ctx, namespace=namespace, default_tenant=default_tenant or cfg.default_tenant
        )

    def env(self, ctx: Ctx, tenant: str | None = None) -> Env:
        """The per-call environment (tenant checked here, before any store op)."""
        return Env.make(self.config, self.caps, self.context(ctx), tenant, self.metrics)

    def store_search_op(
        self,
        namespace: tuple[str, ...],
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        mode: str | None = None,
    ) -> Any:
        """A store search op for this store: with a ranking ``mode`` where the
        store supports it (``supports_hybrid``), LangGraph's ``SearchOp`` otherwise."""
        if self.caps.modes:
            return HybridSearchOp(namespace, filter, limit, offset, query, True, mode)  # type: ignore[arg-type]
        return SearchOp(namespace, filter, limit, offset, query, True)

    def run(self, step: Operation[T], operation: str = "custom") -> T:
        """Run an operation written as a generator of store requests (the engine's
        own operations are; so are the memory tools') with ``store.batch``,
        measured as ``operation``."""
        with self.metrics.measure(operation):
            return run_sync(step, self.store, self.config)

    async def arun(self, step: Operation[T], operation: str = "custom") -> T:
        """Async :meth:`run` (``store.abatch``)."""
        with self.metrics.measure(operation):
            return await run_async(step, self.store, self.config)

    # -- writes ------------------------------------------------------------------

    def add_op(
        self,
        ctx: Ctx,
        content: str,
        *,
        layer: str | None = None,
        scope: str = "global",
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        tenant: str | None = None,
    ) -> Operation[Note]:
        """Store a note (``add``) in ``layer`` (default: ``config.default_layer``).

        Raises MISSING_IDENTIFIER when the caller lacks the layer's identifier,
        INVALID_LAYER, CONTENT_TOO_LONG."""
        return lc.add_note(self.env(ctx, tenant), content, layer, scope, tags, metadata)

    def store_episode_op(
        self,
        ctx: Ctx,
        content: str,
        butler: str,
        session_id: str | None = None,
        importance: float | None = None,
        *,
        layer: str | None = None,
        scope: str = "global",
        tags: list[str] | None = None,
        tenant: str | None = None,
    ) -> Operation[Episode]:
        """Store an episode: importance 5.0 and ``expires_at`` now + 7 days by default."""
        e = self.env(ctx, tenant)
        return lc.store_episode(e, content, butler, session_id, importance, layer, scope, tags)

    def store_fact_op(
        self,
        ctx: Ctx,
        subject: str,
        predicate: str,
        content: str,
        *,
        importance: float | None = None,
        permanence: str | None = None,
        confidence: float | None = None,
        category: str | None = None,
        layer: str | None = None,
        scope: str = "global",
        tags: list[str] | None = None,
        provenance: dict[str, Any] | None = None,
        tenant: str | None = None,
    ) -> Operation[Fact]:
        """Store a fact; an active fact with the same (subject, predicate) in
        the same layer is superseded (kept, marked, linked to the new one)."""
        e = self.env(ctx, tenant)
        new = lc.new_fact(
            e,
            subject,
            predicate,
            content,
            importance=importance,
            permanence=permanence,
            confidence=confidence,
            category=category,
            layer=layer,
            scope=scope,
            tags=tags,
            provenance=provenance,
        )
        fact, _ = yield from lc.store_fact(e, new)
        return fact

    def store_rule_op(
        self,
        ctx: Ctx,
        content: str,
        scope: str = "global",
        tags: list[str] | None = None,
        *,
        layer: str | None = None,
        tenant: str | None = None,
    ) -> Operation[Rule]:
        """Store a rule: maturity ``candidate``, confidence 0.5."""
        return lc.store_rule(self.env(ctx, tenant), content, layer, scope, tags)

    def confirm_op(
        self, ctx: Ctx, type: str, id: str, *, tenant: str | None = None
    ) -> Operation[Any]:
        """Reset a fact's or rule's decay clock (INVALID_OPERATION for episodes)."""
        return lc.confirm(self.env(ctx, tenant), type, id)

    def mark_helpful_op(
        self, ctx: Ctx, rule_id: str, *, tenant: str | None = None
    ) -> Operation[Rule]:
        """Count a success: success and applied counts, effectiveness, maturity."""
        return lc.feedback(self.env(ctx, tenant), rule_id, True, None)

    def mark_harmful_op(
        self, ctx: Ctx, rule_id: str, reason: str | None = None, *, tenant: str | None = None
    ) -> Operation[Rule]:
        """Count a harm (weighs 4x in effectiveness); may demote or invert the rule."""
        return lc.feedback(self.env(ctx, tenant), rule_id, False, reason)

    def forget_op(
        self, ctx: Ctx, type: str, id: str, *, tenant: str | None = None
    ) -> Operation[Any]:
        """Soft delete: facts become ``retracted``, rules and episodes ``forgotten``."""
        return lc.forget(self.env(ctx, tenant), type, id)

    def update_op(
        self,
        ctx: Ctx,
        id: str,
        *,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: list[str] | None = None,
        tenant: str | None = None,
    ) -> Operation[Any]:
        """Update content (re-embedded) and/or merge metadata (MEMORY_NOT_FOUND if unknown)."""
        return lc.update(self.env(ctx, tenant), id, content, metadata, tags)

    def revise_op(
        self, ctx: Ctx, id: str, content: Any, *, tenant: str | None = None
    ) -> Operation[Any]:
        """Change what a memory says, keeping its history: a fact is superseded by
        a new fact (new id, linked from the old one, which is archived with an
        audit event); other memories are updated in place. Returns the current
        record. This is what ``manage_memory``'s update does.

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> from langmem_ext.engine import MemoryContext, MemoryEngine
            >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
            >>> old = engine.add_fact(ctx, "Lives in Berlin", "context", 0.9)
            >>> new = engine.revise(ctx, old.id, "Lives in Munich")
            >>> [f.content for f in engine.get_profile(ctx).facts]
            ['Lives in Munich']
            >>> engine.get(ctx, old.id).superseded_by == new.id
            True
        """
        return lc.revise(self.env(ctx, tenant), id, content)

    def delete_op(self, ctx: Ctx, id: str, *, tenant: str | None = None) -> Operation[bool]:
        """Remove a memory; idempotent (True for unknown ids)."""
        return lc.delete(self.env(ctx, tenant), id)

    def sweep_op(self, ctx: Ctx, *, tenant: str | None = None) -> Operation[dict[str, int]]:
        """Mark expired episodes and decayed facts ``expired``; returns counts."""
        return lc.sweep(self.env(ctx, tenant))

    # -- reads -------------------------------------------------------------------

    def get_op(
        self, ctx: Ctx, id: str, type: str | None = None, *, tenant: str | None = None
    ) -> Operation[Any]:
        """The memory with this id, or None (no error when missing)."""
        return rc.get(self.env(ctx, tenant), id, type)

    def get_memory_op(
        self, ctx: Ctx, type: str, id: str, *, tenant: str | None = None
    ) -> Operation[Any]:
        """The memory, reference count bumped; MEMORY_NOT_FOUND when missing."""
        return rc.get_memory(self.env(ctx, tenant), type, id)

    def history_op(
        self, ctx: Ctx, id: str, *, tenant: str | None = None
    ) -> Operation[list[MemoryEvent]]:
        """Audit events of a memory, oldest first."""
        return lc.history(self.env(ctx, tenant), id)

    def search_op(
        self,
        ctx: Ctx,
        query: str,
        types: Sequence[str] | None = None,
        scope: str | None = None,
        mode: str | None = "hybrid",
        limit: int = 20,
        min_confidence: float | None = None,
        *,
        layers: Sequence[str] | None = None,
        tags: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        tenant: str | None = None,
    ) -> Operation[list[Hit]]:
        """Search episodes, facts and rules, by relevance."""
        return rc.search(
            self.env(ctx, tenant),
            query,
            types=types,
            scope=scope,
            mode=mode,
            limit=limit,
            min_confidence=min_confidence,
            layers=layers,
            tags=tags,
            filter=filter,
        )

    def search_layers_op(
        self,
        ctx: Ctx,
        query: str,
        *,
        layers: Sequence[str] | None = None,
        threshold: float | None = None,
        limit: int = 10,
        types: Sequence[str] | None = None,
        tags: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        tenant: str | None = None,
    ) -> Operation[list[Hit]]:
        """Layered search: layers concurrently, precedence then
        score, threshold 0.7 by default, near-duplicates dropped."""
        return rc.search_layers(
            self.env(ctx, tenant),
            query,
            layers=layers,
            threshold=threshold,
            limit=limit,
            types=types,
            tags=tags,
            filter=filter,
        )

    def recall_op(
        self,
        ctx: Ctx,
        topic: str,
        scope: str | None = None,
        limit: int = 10,
        *,
        layers: Sequence[str] | None = None,
        tenant: str | None = None,
    ) -> Operation[list[Hit]]:
        """Facts and rules by composite score; bumps their reference counts."""
        return rc.recall(self.env(ctx, tenant), topic, scope=scope, limit=limit, layers=layers)

    def list_op(
        self,
        ctx: Ctx,
        *,
        layer: str | None = None,
        types: Sequence[str] | None = None,
        filter: dict[str, Any] | None = None,
        tags: list[str] | None = None,
        limit: int = 20,
        cursor: str | None = None,
        tenant: str | None = None,
    ) -> Operation[Page]:
        """A page of live memories, newest first, with ``next_cursor`` and ``total_count``."""
        return rc.list_memories(
            self.env(ctx, tenant),
            layer=layer,
            types=types,
            filter=filter,
            tags=tags,
            limit=limit,
            cursor=cursor,
        )

    def stats_op(
        self, ctx: Ctx, scope: str | None = None, *, tenant: str | None = None
    ) -> Operation[dict[str, Any]]:
        """Counts of facts, rules and episodes (``memory_stats``)."""
        return rc.stats(self.env(ctx, tenant), scope)

    # -- the user profile (:mod:`.profile`) ---------------------------------------------

    def get_profile_op(self, ctx: Ctx, *, tenant: str | None = None) -> Operation[Profile]:
        """The caller's profile: user context, history and active facts
        (confidence desc)."""
        return pf.get_profile(self.env(ctx, tenant))

    def update_profile_op(
        self,
        ctx: Ctx,
        *,
        user_context: Mapping[str, str] | None = None,
        history: Mapping[str, str] | None = None,
        tenant: str | None = None,
    ) -> Operation[Profile]:
        """Merge summary entries: ``user_context`` keys ``work``, ``personal``,
        ``top_of_mind``; ``history`` keys ``recent``, ``earlier``, ``background``
        (an empty string removes an entry)."""
        return pf.update_profile(self.env(ctx, tenant), user_context, history)

    def add_facts_op(
        self,
        ctx: Ctx,
        facts: Sequence[FactCandidate | Mapping[str, Any]],
        *,
        threshold: float = policy.EXTRACTION_THRESHOLD,
        max_facts: int = policy.MAX_PROFILE_FACTS,
        provenance: Mapping[str, Any] | None = None,
        tenant: str | None = None,
    ) -> Operation[ProfileUpdate]:
        """Add facts to the caller's profile: low-confidence and case-folded
        duplicates skipped (and logged), near-duplicates merged, ``replaces``
        superseded, the lowest-confidence facts removed over ``max_facts``.

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> from langmem_ext.engine import MemoryContext, MemoryEngine
            >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
            >>> done = engine.add_facts(ctx, [
            ...     {"content": "Lives in Berlin", "category": "context", "confidence": 0.9},
            ...     {"content": "lives in berlin", "category": "context", "confidence": 0.9},
            ...     {"content": "Maybe likes jazz", "category": "preference", "confidence": 0.2}])
            >>> len(done.added), [s.reason for s in done.skipped]
            (1, ['duplicate', 'low_confidence'])
        """
        e = self.env(ctx, tenant)
        return pf.add_facts(
            e, facts, threshold=threshold, max_facts=max_facts, provenance=provenance
        )

    def add_fact_op(
        self,
        ctx: Ctx,
        content: str,
        category: str,
        confidence: float,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        replaces: str | None = None,
        threshold: float = policy.EXTRACTION_THRESHOLD,
        max_facts: int = policy.MAX_PROFILE_FACTS,
        provenance: Mapping[str, Any] | None = None,
        tenant: str | None = None,
    ) -> Operation[Fact | None]:
        """Add one profile fact (id ``fact_xxxxxxxx``). Returns the new fact, the
        existing fact it was merged into, or None when it was skipped."""
        c = FactCandidate(content, category, confidence, subject, predicate, replaces)
        e = self.env(ctx, tenant)
        done = yield from pf.add_facts(
            e, [c], threshold=threshold, max_facts=max_facts, provenance=provenance
        )
        kept = done.added or done.merged
        return kept[0] if kept else None

    def update_fact_op(
        self,
        ctx: Ctx,
        id: str,
        *,
        content: str | None = None,
        category: str | None = None,
        confidence: float | None = None,
        tenant: str | None = None,
    ) -> Operation[Fact]:
        """Change only the given fields of a fact (``created_at`` stays);
        ``KeyError`` (:class:`~langmem_ext.errors.FactNotFoundError`) if unknown."""
        return pf.update_fact(self.env(ctx, tenant), id, content, category, confidence)

    def delete_fact_op(self, ctx: Ctx, id: str, *, tenant: str | None = None) -> Operation[None]:
        """Remove a profile fact; ``KeyError`` (:class:`~langmem_ext.errors.FactNotFoundError`)
        for an unknown id (unlike :meth:`delete`, which is idempotent)."""
        return pf.delete_fact(self.env(ctx, tenant), id)

    # -- provider contract ---------------------------------------------

    def bulk_add_op(
        self,
        ctx: Ctx,
        items: Sequence[str | Mapping[str, Any]],
        *,
        layer: str | None = None,
        tenant: str | None = None,
    ) -> Operation[list[Note]]:
        """Add many notes in one store batch (one transaction on our stores).

        Each item is a content string or a dict with ``content`` and optional
        ``layer``, ``scope``, ``tags``, ``metadata``. Every item is validated
        before anything is written, so one bad item writes nothing.

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> from langmem_ext.engine import MemoryContext, MemoryEngine
            >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
            >>> notes = engine.bulk_add(ctx, ["tea", {"content": "a cat", "tags": ["pet"]}])
            >>> engine.bulk_delete(ctx, [notes[0].id, "unknown"]) == [notes[0].id]
            True
        """
        return pv.bulk_add(self.env(ctx, tenant), items, layer)

    def bulk_delete_op(
        self, ctx: Ctx, ids: Sequence[str], *, tenant: str | None = None
    ) -> Operation[list[str]]:
        """Delete many memories (any type) with one batch of reads and one of
        writes; unknown ids are skipped. Returns the ids removed."""
        return pv.bulk_delete(self.env(ctx, tenant), ids)

    def generate_embedding_op(self, text: str) -> Operation[list[float] | None]:
        """The store's embedding of ``text`` (``generateEmbedding``);
        None when the store has no embedder."""
        return pv.generate_embedding(Env(self.config, self.caps, _NO_CALLER, "", _EPOCH), text)

    def storage_size_op(self, ctx: Ctx, *, tenant: str | None = None) -> Operation[dict[str, int]]:
        """Live memories per readable layer (O(n) read); refreshes the
        ``memory.storage.size`` gauge."""
        return pv.storage_size(self.env(ctx, tenant))

    def health_check_op(self) -> Operation[HealthStatus]:
        """``{"healthy", "latency_ms", "error"}``: whether the store answers a
        read. A failing store gives ``healthy: False`` instead of raising.

        Examples:
            >>> from langgraph.store.memory import InMemoryStore
            >>> from langmem_ext.engine import MemoryEngine
            >>> MemoryEngine(InMemoryStore()).health_check()["healthy"]
            True
        """
        return pv.health_check()

    def capabilities(self) -> dict[str, Any]:
        """What the store actually used offers (provider capabilities):
        ``vectorSearch``, ``embeddingDimensions``, ``distanceMetrics``,
        ``bulkOperations`` (True when one batch is one transaction), plus
        ``keywordSearch`` and ``filterOperators``.

        Examples:
            >>> from langgraph.store.memory import InMemoryStore
            >>> from langmem_ext.engine import MemoryEngine
            >>> MemoryEngine(InMemoryStore()).capabilities()["bulkOperations"]
            False
        """
        return pv.capabilities(self.store, self.caps)

    def setup(self) -> None:
        """``initialize``: the store's ``setup()`` (migrations), if it has one."""
        if hasattr(self.store, "setup"):
            self.store.setup()

    async def asetup(self) -> None:
        """Async :meth:`setup` (``store.asetup()``, else ``store.setup()``)."""
        if hasattr(self.store, "asetup"):
            await self.store.asetup()
        elif hasattr(self.store, "setup"):
            self.store.setup()

    def close(self) -> None:
        """``shutdown``: the store's ``close()``, if it has one."""
        if hasattr(self.store, "close"):
            self.store.close()

    async def aclose(self) -> None:
        """Async :meth:`close` (``store.aclose()``, else ``store.close()``)."""
        if hasattr(self.store, "aclose"):
            await self.store.aclose()
        elif hasattr(self.store, "close"):
            self.store.close()

    add = _sync(add_op)
    aadd = _async(add_op)
    store_episode = _sync(store_episode_op)
    astore_episode = _async(store_episode_op)
    store_fact = _sync(store_fact_op)
    astore_fact = _async(store_fact_op)
    store_rule = _sync(store_rule_op)
    astore_rule = _async(store_rule_op)
    confirm = _sync(confirm_op)
    aconfirm = _async(confirm_op)
    mark_helpful = _sync(mark_helpful_op)
    amark_helpful = _async(mark_helpful_op)
    mark_harmful = _sync(mark_harmful_op)
    amark_harmful = _async(mark_harmful_op)
    forget = _sync(forget_op)
    aforget = _async(forget_op)
    update = _sync(update_op)
    aupdate = _async(update_op)
    revise = _sync(revise_op)
    arevise = _async(revise_op)
    delete = _sync(delete_op)
    adelete = _async(delete_op)
    sweep = _sync(sweep_op)
    asweep = _async(sweep_op)
    get = _sync(get_op)
    aget = _async(get_op)
    get_memory = _sync(get_memory_op)
    aget_memory = _async(get_memory_op)
    history = _sync(history_op)
    ahistory = _async(history_op)
    search = _sync(search_op)
    asearch = _async(search_op)
    search_layers = _sync(search_layers_op)
    asearch_layers = _async(search_layers_op)
    recall = _sync(recall_op)
    arecall = _async(recall_op)
    list = _sync(list_op)
    alist = _async(list_op)
    stats = _sync(stats_op)
    astats = _async(stats_op)
    health_check = _sync(health_check_op)
    ahealth_check = _async(health_check_op)
    bulk_add = _sync(bulk_add_op)
    abulk_add = _async(bulk_add_op)
    bulk_delete = _sync(bulk_delete_op)
    abulk_delete = _async(bulk_delete_op)
    generate_embedding = _sync(generate_embedding_op)
    agenerate_embedding = _async(generate_embedding_op)
    storage_size = _sync(storage_size_op)
    astorage_size = _async(storage_size_op)
    get_profile = _sync(get_profile_op)
    aget_profile = _async(get_profile_op)
    update_profile = _sync(update_profile_op)
    aupdate_profile = _async(update_profile_op)
    add_facts = _sync(add_facts_op)
    aadd_facts = _async(add_facts_op)
    add_fact = _sync(add_fact_op)
    aadd_fact = _async(add_fact_op)
    update_fact = _sync(update_fact_op)
    aupdate_fact = _async(update_fact_op)
    delete_fact = _sync(delete_fact_op)
    adelete_fact = _async(delete_fact_op)


def _check_settings(cfg: EngineConfig) -> None:
    """Refuse settings that would only fail later, at some call."""
    NamespaceTemplate(cfg.namespace)
    check_text("default_tenant", cfg.default_tenant, optional=True, error=ConfigurationError)
    check_int("max_content_length", cfg.max_content_length, 1, 10**9, ConfigurationError)
    check_number("threshold", cfg.threshold, -1.0, 1.0, ConfigurationError)
    check_layer(cfg.default_layer)
    if not isinstance(cfg.episode_ttl, timedelta):
        raise ConfigurationError(f"episode_ttl must be a timedelta, got {shown(cfg.episode_ttl)}")
    if cfg.recall_mode is not None and cfg.recall_mode not in SEARCH_MODES:
        raise ConfigurationError(
            f"recall_mode must be None or one of {', '.join(SEARCH_MODES)}, "
            f"got {shown(cfg.recall_mode)}"
        )


class EnginesByStore:
    """One engine per store (by identity), built on first use; thread-safe. For
    faces that take the store from the running graph.

    Examples:
        >>> from langmem_ext import SQLiteStore
        >>> engines, store = EnginesByStore(), SQLiteStore()
        >>> engines.get(store) is engines.get(store)
        True
    """

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._engines: dict[int, MemoryEngine] = {}

    def get(self, store: BaseStore) -> MemoryEngine:
        with self._lock:
            engine = self._engines.get(id(store))
            # ids are reused after a store is collected: check it is the same one
            if engine is None or engine.store is not store:
                engine = self._engines[id(store)] = MemoryEngine(store, self.config)
            return engine
