"""The memory engine: typed memories (notes, facts, episodes, rules) with
lifecycles, layered recall and tenancy, over any LangGraph ``BaseStore``.

Example:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine = MemoryEngine(SQLiteStore())
    >>> ctx = MemoryContext("acme", user_id="ada")
    >>> engine.store_rule(ctx, "Always confirm before sending messages").maturity
    'candidate'
"""

from ._core import EngineConfig, RetryPolicy
from .engine import MemoryEngine
from .layers import LAYERS, accessible_layers
from .metrics import EngineMetrics
from .models import Episode, Fact, MemoryEvent, MemoryRecord, Note, Rule
from .profile import FactCandidate, Profile, ProfileUpdate, SkippedFact
from .provider import HealthStatus
from .recall import Hit, Page
from .scoring import ScoreWeights
from .tenancy import MemoryContext

__all__ = [
    "LAYERS",
    "EngineConfig",
    "EngineMetrics",
    "Episode",
    "Fact",
    "FactCandidate",
    "HealthStatus",
    "Hit",
    "MemoryContext",
    "MemoryEngine",
    "MemoryEvent",
    "MemoryRecord",
    "Note",
    "Page",
    "Profile",
    "ProfileUpdate",
    "RetryPolicy",
    "Rule",
    "ScoreWeights",
    "SkippedFact",
    "accessible_layers",
]
