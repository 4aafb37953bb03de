"""What a reflection run is given (:class:`ReflectionSettings`) and what it
reports (:class:`ReflectionResult`), apart from the steps that run it
(:mod:`.reflect`, :mod:`.ask`), which both use them.

Examples:
    >>> ReflectionSettings().window, ReflectionResult("t1").model_calls
    (20, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...engine import Fact, ProfileUpdate, SkippedFact, policy, shown
from ...errors import ConfigurationError
from ...model_calls.tokens import TokenCounter
from ...model_calls.usage import TokenUsage
from .screen import DroppedFact

__all__ = [
    "CONTEXT_MARGIN",
    "MIN_CONTEXT",
    "MIN_TURN_TOKENS",
    "TURNS_SHARE",
    "ReflectionResult",
    "ReflectionSettings",
]


@dataclass(frozen=True)
class ReflectionSettings:
    """How reflections run.

    Args:
        threshold: facts under this confidence are skipped (default 0.5).
        max_facts: active facts kept per profile (default 500).
        attempts: model calls per turn before giving up (the turn stays pending).
        backoff: seconds before the second attempt after a model error; doubles.
        related: how many of the user's facts related to the turn the model sees.
        window: at most this many messages per model call; a longer backlog is
            reflected window by window, oldest first.
        context_tokens: the model's context window in tokens (a local
            server's ``n_ctx``); every prompt plus the extractor's output cap
            fits in it, with a :data:`CONTEXT_MARGIN` share to spare.
        tokenizer: how tokens are counted: an encoding name or a callable
            ``str -> int`` (see :func:`~langmem_ext.agents.reflection.token_counter`);
            default ``cl100k_base``.
        embeddings: how screening compares meanings (whose words a fact is,
            small talk, which known fact a correction replaces; see
            :mod:`~langmem_ext.agents.reflection.meaning`): ``"local"`` (the
            offline multilingual embedder, default), a LangChain
            ``Embeddings``, or None to compare words only.

    Examples:
        >>> ReflectionSettings(context_tokens=4096).context_tokens
        4096
        >>> ReflectionSettings(context_tokens=100)
        Traceback (most recent call last):
        ...
        langmem_ext.errors.ConfigurationError: context_tokens must be an integer >= 512, got 100
    """

    threshold: float = policy.EXTRACTION_THRESHOLD
    max_facts: int = policy.MAX_PROFILE_FACTS
    attempts: int = 3
    backoff: float = 1.0
    related: int = 10
    window: int = 20
    context_tokens: int = 8192
    tokenizer: str | TokenCounter | None = field(default=None, compare=False)
    embeddings: Any = field(default="local", compare=False)

    def __post_init__(self) -> None:
        def bad(name: str, want: str) -> ConfigurationError:
            return ConfigurationError(f"{name} must be {want}, got {shown(getattr(self, name))}")

        def number(v: Any) -> bool:
            return isinstance(v, int | float) and not isinstance(v, bool)

        if not number(self.threshold) or not 0.0 <= self.threshold <= 1.0:
            raise bad("threshold", "a number from 0 to 1")
        for name, low in (
            ("max_facts", 1),
            ("attempts", 1),
            ("related", 0),
            ("window", 1),
            ("context_tokens", MIN_CONTEXT),
        ):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise bad(name, f"an integer >= {low}")
        if not number(self.backoff) or self.backoff < 0:
            raise bad("backoff", "a number of seconds >= 0")
        if not (
            self.embeddings is None
            or self.embeddings == "local"
            or hasattr(self.embeddings, "embed_documents")
        ):
            raise bad("embeddings", "'local', None or a LangChain Embeddings")


#: The smallest ``context_tokens`` accepted.
MIN_CONTEXT = 512
#: Share of the context left unused: our token count is an estimate of the
#: server's (another tokenizer, a chat template around each message).
CONTEXT_MARGIN = 0.15
#: Share of the prompt's room (what the instructions and output cap leave)
#: given to the turns; the known facts get the rest.
TURNS_SHARE = 0.75
#: The smallest window of turns, in tokens, before giving up on overflows.
MIN_TURN_TOKENS = 64


@dataclass
class ReflectionResult:
    """What one reflection of a thread did (``dropped``: facts screened out;
    ``unknown_replaces``: ``replaces`` values that named no fact shown;
    ``tokens``: what its model calls cost, see :mod:`.usage`)."""

    thread_id: str
    messages: int = 0
    model_calls: int = 0
    added: list[Fact] = field(default_factory=list)
    merged: list[Fact] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    skipped: list[SkippedFact] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    dropped: list[DroppedFact] = field(default_factory=list)
    unknown_replaces: list[str] = field(default_factory=list)
    tokens: TokenUsage = field(default_factory=TokenUsage)

    def absorb(self, update: ProfileUpdate) -> None:
        self.added += update.added
        self.merged += update.merged
        self.superseded += update.superseded
        self.skipped += update.skipped
        self.removed += update.removed
