"""Errors raised by langmem_ext.

Every error derives from :class:`LangmemError` (an ``Exception``, never a
``BaseException``), carries a stable ``code`` to branch on and a ``retryable``
flag. Where callers already catch a builtin (``ValueError`` for bad input), the
error subclasses it too, so ``except ValueError`` keeps working.

Example:
    >>> from langmem_ext.errors import LangmemError, InvalidValueError
    >>> try:
    ...     raise InvalidValueError("value must be a dict")
    ... except LangmemError as e:
    ...     (e.code, e.retryable)
    ('INVALID_VALUE', False)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ConfigurationError",
    "EmbeddingDimensionError",
    "InvalidValueError",
    "LangmemError",
    "StoreError",
]


class LangmemError(Exception):
    """Base class of every error langmem_ext raises.

    Attributes:
        code: A stable, machine-readable error code.
        retryable: Whether repeating the same call may succeed.
        details: Extra structured information (for example a maximum length).
    """

    code: ClassVar[str] = "LANGMEM_ERROR"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep errors picklable (they cross process boundaries in executors).
        return (_rebuild, (type(self), str(self), self.details))


def _rebuild(cls: type[LangmemError], message: str, details: dict[str, Any]) -> LangmemError:
    return cls(message, **details)


class ConfigurationError(LangmemError, ValueError):
    """The store, embedder or a tool was configured wrongly, or a required
    configuration key is missing."""

    code = "CONFIGURATION_ERROR"


class EmbeddingDimensionError(ConfigurationError):
    """The embedder returned vectors whose length differs from ``index["dims"]``."""

    code = "EMBEDDING_DIMENSION_MISMATCH"


class InvalidValueError(LangmemError, ValueError):
    """A value cannot be stored: not a dict, not JSON-serializable, a bad TTL."""

    code = "INVALID_VALUE"


class StoreError(LangmemError):
    """The database cannot be used: corrupt file, read-only file, locked too long."""

    code = "PROVIDER_ERROR"
