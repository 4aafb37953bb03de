"""The memory engine: typed memories (notes, facts, episodes, rules) with
lifecycles, layered recall and tenancy, over any LangGraph ``BaseStore``.

This module is the engine's front door: everything the layers above it (agents,
LangMem's faces, servers, the CLI) and applications use is named here, and
nothing above the engine imports its rooms directly (an import contract checks
it). The rooms:

* ``identity`` — who calls: tenants, users, layers, namespaces;
* ``records`` — what is stored: record types, their policy and scores, value checks;
* ``runtime`` — how operations run: the sans-IO requests and runners, the
  caller's environment, the catalogue's declarations, settings, metrics;
* ``operations`` — the catalogue: each operation declared once, its
  declaration its body;
* ``engine`` — :class:`MemoryEngine`, one sync and one async method per operation.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine = MemoryEngine(SQLiteStore())
    >>> ctx = MemoryContext("acme", user_id="ada")
    >>> engine.store_rule(ctx, "Always confirm before sending messages").maturity
    'candidate'
"""

from .engine import EnginesByStore, MemoryEngine
from .identity import layout
from .identity.layers import LAYERS, accessible_layers
from .identity.layout import DEFAULT_TENANT
from .identity.namespaces import (
    IDENTITY_KEYS,
    RESERVED_LABELS,
    NamespaceTemplate,
    check_label,
    resolve_identity,
)
from .identity.tenancy import ADMIN_PERMISSION, ELEVATE_PERMISSION, MemoryContext, read_only
from .operations import OPERATIONS
from .operations.erasure import ErasureReceipt
from .operations.fields import add_fields, check_filter
from .operations.knowledge import About
from .operations.lifecycle import delete_ops, plan_revision, records_of, resolve_slot
from .operations.loading import load_many, not_found
from .operations.params import AsOf, ScopeFilter, Tenant, ValidDuring
from .operations.profile import CONTEXT_KEYS, HISTORY_KEYS, Profile
from .operations.profile_facts import (
    PROFILE_LAYER,
    REFLECTION_SOURCE,
    FactCandidate,
    ProfileUpdate,
    SkippedFact,
)
from .operations.provider import HealthStatus
from .operations.retrieval import Hit, Page, bump
from .records import policy
from .records.checks import (
    check_int,
    check_mapping,
    check_number,
    check_text,
    run_config,
    shown,
)
from .records.decode import Damaged, warn_once
from .records.entities import Entity
from .records.models import (
    Episode,
    Fact,
    MemoryEvent,
    MemoryRecord,
    Note,
    Rule,
    content_text,
    ts,
)
from .records.scoring import ScoreWeights, best_first, composite, recency_factor, relevance
from .runtime.catalogue import (
    Caller,
    Param,
    Spec,
    error_text,
    invalid,
    operation,
    strip_titles,
    to_json,
)
from .runtime.config import EngineConfig
from .runtime.env import Env, Layer
from .runtime.metrics import EngineMetrics
from .runtime.requests import Batch, Call, Embed, Operation, RetryPolicy, run_async, run_sync

__all__ = [  # noqa: RUF022 -- grouped by what they are for, as the docs list them
    # -- the engine and its settings --------------------------------------------------
    "EngineConfig",
    "EngineMetrics",
    "EnginesByStore",
    "HealthStatus",
    "MemoryEngine",
    "RetryPolicy",
    "ScoreWeights",
    # -- who calls ---------------------------------------------------------------------
    "ADMIN_PERMISSION",
    "DEFAULT_TENANT",
    "ELEVATE_PERMISSION",
    "IDENTITY_KEYS",
    "LAYERS",
    "RESERVED_LABELS",
    "MemoryContext",
    "NamespaceTemplate",
    "accessible_layers",
    "check_label",
    "layout",
    "read_only",
    "resolve_identity",
    # -- records -----------------------------------------------------------------------
    "About",
    "CONTEXT_KEYS",
    "HISTORY_KEYS",
    "PROFILE_LAYER",
    "REFLECTION_SOURCE",
    "Damaged",
    "Entity",
    "Episode",
    "Fact",
    "FactCandidate",
    "Hit",
    "MemoryEvent",
    "MemoryRecord",
    "Note",
    "Page",
    "Profile",
    "ProfileUpdate",
    "Rule",
    "SkippedFact",
    "content_text",
    "policy",
    "ts",
    # -- operations: the catalogue, declaring one, running one --------------------------
    "OPERATIONS",
    "Batch",
    "ErasureReceipt",
    "Call",
    "Caller",
    "Embed",
    "Env",
    "Layer",
    "Operation",
    "Param",
    "AsOf",
    "ScopeFilter",
    "ValidDuring",
    "Spec",
    "Tenant",
    "error_text",
    "invalid",
    "operation",
    "run_async",
    "run_sync",
    "strip_titles",
    "to_json",
    "warn_once",
    # -- steps shared with the layers above (memory block, store manager, middleware) ----
    "add_fields",
    "best_first",
    "bump",
    "check_filter",
    "check_int",
    "check_mapping",
    "check_number",
    "check_text",
    "composite",
    "delete_ops",
    "load_many",
    "not_found",
    "plan_revision",
    "recency_factor",
    "records_of",
    "relevance",
    "resolve_slot",
    "run_config",
    "shown",
]
