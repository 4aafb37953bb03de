"""The memory engine: typed memories (notes, facts, episodes, rules) with
lifecycles, layered recall and tenancy, over any LangGraph ``BaseStore``.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine = MemoryEngine(SQLiteStore())
    >>> ctx = MemoryContext("acme", user_id="ada")
    >>> engine.store_rule(ctx, "Always confirm before sending messages").maturity
    'candidate'
"""

from ._core import EngineConfig
from .decode import Damaged
from .engine import EnginesByStore, MemoryEngine
from .layers import LAYERS, accessible_layers
from .layout import DEFAULT_TENANT
from .metrics import EngineMetrics
from .models import Episode, Fact, MemoryEvent, MemoryRecord, Note, Rule
from .namespaces import IDENTITY_KEYS, RESERVED_LABELS, NamespaceTemplate, resolve_identity
from .profile import FactCandidate, Profile, ProfileUpdate, SkippedFact
from .provider import HealthStatus
from .recall import Hit, Page
from .requests import RetryPolicy
from .scoring import ScoreWeights
from .tenancy import MemoryContext

__all__ = [
    "DEFAULT_TENANT",
    "IDENTITY_KEYS",
    "LAYERS",
    "RESERVED_LABELS",
    "Damaged",
    "EngineConfig",
    "EngineMetrics",
    "EnginesByStore",
    "Episode",
    "Fact",
    "FactCandidate",
    "HealthStatus",
    "Hit",
    "MemoryContext",
    "MemoryEngine",
    "MemoryEvent",
    "MemoryRecord",
    "NamespaceTemplate",
    "Note",
    "Page",
    "Profile",
    "ProfileUpdate",
    "RetryPolicy",
    "Rule",
    "ScoreWeights",
    "SkippedFact",
    "accessible_layers",
    "resolve_identity",
]
