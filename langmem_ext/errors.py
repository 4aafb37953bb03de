"""Errors raised by langmem_ext.

Every error derives from :class:`LangmemError` (an ``Exception``, never a
``BaseException``), carries a stable ``code`` to branch on and a ``retryable``
flag. Where callers already catch a builtin (``ValueError`` for bad input), the
error subclasses it too, so ``except ValueError`` keeps working.

Examples:
    >>> from langmem_ext.errors import LangmemError, InvalidValueError
    >>> try:
    ...     raise InvalidValueError("value must be a dict")
    ... except LangmemError as e:
    ...     (e.code, e.retryable)
    ('INVALID_VALUE', False)
"""

from __future__ import annotations

from typing import Any, ClassVar

from langgraph.store.base import InvalidNamespaceError as _LangGraphNamespaceError

__all__ = [
    "AuthenticationError",
    "CompartmentFullError",
    "ConfigurationError",
    "ContentTooLongError",
    "DamagedMemoryError",
    "EmbeddingDimensionError",
    "ExtractionError",
    "FactNotFoundError",
    "IdentityError",
    "InvalidEmbeddingError",
    "InvalidLayerError",
    "InvalidMemoryTypeError",
    "InvalidNamespaceError",
    "InvalidOperationError",
    "InvalidStateError",
    "InvalidValueError",
    "LangmemError",
    "MemoryNotFoundError",
    "MemoryToolError",
    "MemoryToolNotFoundError",
    "MissingIdentifierError",
    "PermissionDeniedError",
    "ProviderError",
    "RateLimitedError",
    "StoreError",
    "StoreUnavailableError",
    "TenantAccessError",
    "lookup",
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


class InvalidEmbeddingError(LangmemError, ValueError):
    """The embedder returned a vector that cannot be searched (NaN or infinite
    numbers); ``details["text"]`` holds (the start of) the text it embedded.
    Nothing is stored or cached."""

    code = "INVALID_EMBEDDING"


class InvalidValueError(LangmemError, ValueError):
    """A value cannot be stored: not a dict, not JSON-serializable, a bad TTL."""

    code = "INVALID_VALUE"


class InvalidNamespaceError(InvalidValueError, _LangGraphNamespaceError):
    """A namespace that is not a tuple of non-empty strings without ``.``.

    Also LangGraph's ``InvalidNamespaceError``, so code written for LangGraph's
    stores keeps catching it."""

    code = "INVALID_NAMESPACE"


class ProviderError(LangmemError):
    """The storage or embedding provider failed in a way that may pass: a lost
    connection, a timeout. The memory engine retries these (3 times, with
    exponential backoff) before raising."""

    code = "PROVIDER_ERROR"
    retryable = True


class StoreError(ProviderError):
    """The database cannot be used: corrupt file, read-only file, locked too long.

    A :class:`ProviderError` (same code) that repeating the call will not fix.
    """

    retryable = False


class StoreUnavailableError(StoreError):
    """The database could not be reached, dropped the connection during the
    call, or was too busy (no free connection in time, too many clients, a
    deadlock or serialization conflict). Nothing of the call was applied, and
    unlike other :class:`StoreError` s, repeating it may succeed: retryable."""

    retryable = True


class RateLimitedError(ProviderError):
    """The provider asked us to slow down. ``details["retry_after"]`` (seconds),
    when known, is honoured before the next attempt."""

    code = "RATE_LIMITED"
    retryable = True


class MissingIdentifierError(LangmemError, ValueError):
    """A memory layer was used without its identifier; ``details["identifier"]``
    names it (for example ``session_id`` for the session layer)."""

    code = "MISSING_IDENTIFIER"


class InvalidLayerError(LangmemError, ValueError):
    """An unknown memory layer name; the message lists the valid layers."""

    code = "INVALID_LAYER"


class InvalidMemoryTypeError(LangmemError, ValueError):
    """An unknown memory type; the message lists the valid types."""

    code = "INVALID_MEMORY_TYPE"


class ContentTooLongError(LangmemError, ValueError):
    """Content longer than the configured maximum; ``details["max_length"]``
    holds the maximum and ``details["length"]`` the length received."""

    code = "CONTENT_TOO_LONG"


class MemoryNotFoundError(LangmemError, LookupError):
    """No memory with this id (and type) is visible to the caller."""

    code = "MEMORY_NOT_FOUND"


class FactNotFoundError(MemoryNotFoundError, KeyError):
    """No profile fact with this id (raises ``KeyError`` here, so this
    is one; ``except KeyError`` and ``except MemoryNotFoundError`` both work)."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; keep the plain message.
        return str(self.args[0]) if self.args else ""


class ExtractionError(ProviderError):
    """Fact extraction failed: the model kept failing or kept returning output
    that is not the facts it was asked for. Retryable: the conversation turn
    stays pending and is reflected again later."""

    code = "EXTRACTION_FAILED"
    retryable = True


class InvalidOperationError(LangmemError, ValueError):
    """The operation does not apply as asked: confirming an episode, or an
    import that would overwrite existing items without ``replace=True``."""

    code = "INVALID_OPERATION"


class InvalidStateError(LangmemError, RuntimeError):
    """The object cannot do this in its present state: a reflection executor
    that is shut down, a store closed from inside its own event loop, sync
    calls on an async store that was given no sync connection. The message
    says what to call instead."""

    code = "INVALID_STATE"


class DamagedMemoryError(InvalidOperationError):
    """The stored item under this id is not a valid memory (a field of the wrong
    type, written by another program or damaged). Reads skip it; it can be
    read by id (as a ``Damaged`` record) and deleted, never changed, so no
    write re-saves it with fields dropped."""

    code = "MEMORY_DAMAGED"


class TenantAccessError(LangmemError, PermissionError):
    """A caller named a tenant it may not use: non-admins never select a tenant,
    admins cross tenants only with an explicit elevation."""

    code = "TENANT_FORBIDDEN"


class IdentityError(TenantAccessError):
    """Under authentication, the config asked to act as someone the caller is not:
    a ``user_id`` other than the authenticated user's, or a shared-layer
    identifier (``org_id``, ``project_id``…) the authenticated user was not
    granted. Identity comes from the authentication, never from the request."""

    code = "IDENTITY_FORBIDDEN"


def lookup(code: str) -> type[LangmemError]:
    """The error class for a code (the most general class using it).

    Examples:
        >>> lookup("RATE_LIMITED").__name__
        'RateLimitedError'
    """
    for cls in _all_subclasses(LangmemError):
        if cls.code == code:
            return cls
    raise KeyError(f"unknown error code {code!r}")


def _all_subclasses(cls: type[LangmemError]) -> list[type[LangmemError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_all_subclasses(sub))
    return out


class MemoryToolError(LangmemError, ValueError):
    """A tool call the model got wrong; the message says how to fix it. From a
    tool call it becomes an error ``ToolMessage`` the model reads."""

    code = "INVALID_TOOL_INPUT"


class MemoryToolNotFoundError(MemoryToolError, MemoryNotFoundError):
    """A tool call names a memory id that is not there (a
    :class:`MemoryNotFoundError` too, so one ``except`` catches both)."""

    code = "MEMORY_NOT_FOUND"


class CompartmentFullError(MemoryToolError):
    """A save would take a compartment over its size limit."""

    code = "COMPARTMENT_FULL"


class PermissionDeniedError(TenantAccessError):
    """The caller may not use this operation: a read-only caller asked to
    change memories."""

    code = "PERMISSION_DENIED"


class AuthenticationError(TenantAccessError):
    """A request without a valid bearer token (MCP server, memory browser)."""

    code = "UNAUTHENTICATED"
