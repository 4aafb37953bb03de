"""Every state, default and threshold of the memory engine, in one place.

Facts
    ``validity`` is one of :data:`FACT_VALIDITY`: ``active`` (returned by recall
    and search), ``superseded`` (a newer fact took its (subject, predicate)
    slot; ``superseded_by`` links to it), ``retracted`` (forgotten; the legacy
    word ``forgotten`` is accepted as an alias), ``expired`` (its effective
    confidence decayed below :data:`EXPIRE_BELOW`; set by ``sweep``) and
    ``evicted`` (a reflection fact moved out of a profile over its
    ``max_facts`` cap). Only ``active`` facts are retrievable; all stay
    visible to ``history``.

    ``permanence`` maps to a decay rate per day (:data:`DECAY_RATES`), and
    effective confidence is ``confidence * exp(-decay_rate * days)`` where
    ``days`` counts from ``last_confirmed_at`` — so ``confirm`` restores the
    stored confidence. An active fact is *fading* once its effective confidence
    is below :data:`FADING_RATIO` of its stored confidence.

Episodes
    Importance :data:`EPISODE_IMPORTANCE` and ``expires_at = now +``
    :data:`EPISODE_TTL` by default. ``status`` is ``active``, ``forgotten`` or
    ``expired`` (marked by ``sweep``); past ``expires_at`` an episode is never
    returned, swept or not.

Rules
    Born a ``candidate`` with confidence :data:`RULE_CONFIDENCE`. Feedback
    updates ``effectiveness = success / (success + 4 * harmful + 0.01)`` and
    then :func:`next_maturity` moves the rule along
    ``candidate -> established -> proven`` (or back), or inverts it into an
    ``anti_pattern`` when it keeps doing harm. Confidence follows maturity
    (:data:`MATURITY_CONFIDENCE`); rules decay like facts at the rate of their
    maturity (:data:`RULE_DECAY_RATES`).

Examples:
    >>> round(effectiveness(4, 1), 4)
    0.4994
    >>> next_maturity("candidate", success=3, harmful=0)
    'established'
    >>> DECAY_RATES["permanent"]
    0.0
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Literal

__all__ = [
    "DECAY_RATES",
    "DEFAULT_PERMANENCE",
    "EPISODE_IMPORTANCE",
    "EPISODE_STATUS",
    "EPISODE_TTL",
    "EXPIRE_BELOW",
    "EXTRACTION_THRESHOLD",
    "FACT_CATEGORIES",
    "FACT_VALIDITY",
    "FADING_RATIO",
    "HARMFUL_WEIGHT",
    "IMPORTANCE_RANGE",
    "MATURITY",
    "MATURITY_CONFIDENCE",
    "MAX_PROFILE_FACTS",
    "MEMORY_TYPES",
    "MERGE_SIMILARITY",
    "RULE_CONFIDENCE",
    "RULE_DECAY_RATES",
    "decayed_confidence",
    "effectiveness",
    "next_maturity",
]

MemoryType = Literal["note", "fact", "episode", "rule"]
#: Memory types. Notes are free content (the engine's ``add``); the memory tools
#: use the other three.
MEMORY_TYPES: tuple[str, ...] = ("note", "fact", "episode", "rule")

#: Importance is a number in this closed range (the episode defaults are 5.0 and 9.0).
IMPORTANCE_RANGE = (0.0, 10.0)
#: Confidence is a number in this closed range.
CONFIDENCE_RANGE = (0.0, 1.0)

# -- facts -------------------------------------------------------------------
FACT_VALIDITY: tuple[str, ...] = ("active", "superseded", "retracted", "expired", "evicted")
#: Legacy validity words and the canonical word they mean.
VALIDITY_ALIASES = {"forgotten": "retracted"}
FACT_IMPORTANCE = 5.0
FACT_CONFIDENCE = 1.0
#: Decay rate (per day) for each permanence. Half-lives: stable ~1 year,
#: standard ~70 days, volatile ~2 weeks, ephemeral ~3.5 days.
DECAY_RATES: dict[str, float] = {
    "permanent": 0.0,
    "stable": 0.002,
    "standard": 0.01,
    "volatile": 0.05,
    "ephemeral": 0.2,
}
DEFAULT_PERMANENCE = "standard"
#: An active fact whose effective confidence is below this share of its stored
#: confidence is counted as *fading* by ``stats``.
FADING_RATIO = 0.5
#: ``sweep`` marks an active fact ``expired`` below this effective confidence.
EXPIRE_BELOW = 0.05

# -- the user profile ---------------------------------------------
#: Categories of profile facts (extracted or added through the profile API).
FACT_CATEGORIES: tuple[str, ...] = (
    "preference",
    "knowledge",
    "context",
    "behavior",
    "goal",
    "correction",
)
#: Facts below this confidence are not stored (skipped and logged).
EXTRACTION_THRESHOLD = 0.5
#: At most this many active reflection facts per profile: over it, the lowest
#: confidence is archived first. Facts stored on purpose never count.
MAX_PROFILE_FACTS = 500
#: A new fact at least this similar to an active one (cosine of embeddings, or
#: text similarity without an embedder) is merged into it instead of stored.
MERGE_SIMILARITY = 0.95

#: Importance of a note (what the memory tools save) unless given.
NOTE_IMPORTANCE = 5.0

# -- episodes ----------------------------------------------------------------
EPISODE_IMPORTANCE = 5.0
EPISODE_TTL = timedelta(days=7)
EPISODE_STATUS: tuple[str, ...] = ("active", "forgotten", "expired")

# -- rules -------------------------------------------------------------------
MATURITY: tuple[str, ...] = ("candidate", "established", "proven", "anti_pattern")
RULE_CONFIDENCE = 0.5
RULE_IMPORTANCE = 5.0
HARMFUL_WEIGHT = 4.0
#: Promotion needs both counts of successes and effectiveness.
PROMOTE = {"candidate": (3, 0.6), "established": (10, 0.8)}
#: Below this effectiveness a rule steps down one maturity level.
DEMOTE_BELOW = {"established": 0.5, "proven": 0.7}
#: At least this many harmful marks and effectiveness below the ratio: the rule
#: becomes an anti-pattern (recall shows it as something *not* to do).
ANTI_PATTERN = (3, 0.3)
MATURITY_CONFIDENCE = {
    "candidate": 0.5,
    "established": 0.75,
    "proven": 0.9,
    "anti_pattern": 0.5,
}
RULE_DECAY_RATES = {"candidate": 0.01, "established": 0.005, "proven": 0.0, "anti_pattern": 0.01}


def effectiveness(success: int, harmful: int) -> float:
    """``success / (success + 4 * harmful + 0.01)``: harm weighs four times.

    Examples:
        >>> round(effectiveness(5, 0), 3)
        0.998
    """
    return success / (success + HARMFUL_WEIGHT * harmful + 0.01)


def next_maturity(maturity: str, *, success: int, harmful: int) -> str:
    """The maturity after feedback (one step at a time).

    Examples:
        >>> next_maturity("established", success=2, harmful=2)
        'candidate'
        >>> next_maturity("candidate", success=0, harmful=3)
        'anti_pattern'
    """
    eff = effectiveness(success, harmful)
    if harmful >= ANTI_PATTERN[0] and eff < ANTI_PATTERN[1]:
        return "anti_pattern"
    if maturity == "anti_pattern":
        return maturity  # inverted rules stay inverted; store a new rule instead
    if maturity in DEMOTE_BELOW and eff < DEMOTE_BELOW[maturity]:
        return MATURITY[MATURITY.index(maturity) - 1]
    if maturity in PROMOTE:
        need, min_eff = PROMOTE[maturity]
        if success >= need and eff >= min_eff:
            return MATURITY[MATURITY.index(maturity) + 1]
    return maturity


def decayed_confidence(confidence: float, decay_rate: float, days: float) -> float:
    """Confidence after ``days`` without confirmation.

    Examples:
        >>> decayed_confidence(0.8, 0.0, 365)
        0.8
    """
    return confidence * math.exp(-decay_rate * max(days, 0.0))
