"""Who is calling a server surface (the MCP server, the memory browser): bearer
tokens mapped to callers.

A callers file is JSON (or the same JSON in an environment variable) mapping
each token to the caller it authenticates::

    {
      "tokens": {
        "tok-ada": {"tenant_id": "acme", "user_id": "ada"},
        "tok-ops": {"tenant_id": "acme", "user_id": "ops", "permissions": ["memory:admin"]}
      }
    }

Each caller has a ``tenant_id`` (default: the single-tenant default), a
``user_id``, optional shared-layer ids (``agent_id``, ``project_id``,
``team_id``, ``org_id``) and ``permissions`` (``memory:admin``,
``memory:elevate``; ``memory:read`` without ``memory:write`` for a caller who
may only read), exactly as a LangGraph auth handler would return them.
Tokens are compared in constant time; an unknown or missing token is refused.

Examples:
    >>> callers = Callers.from_json(
    ...     '{"tokens": {"tok-ada-123": {"tenant_id": "acme", "user_id": "ada"}}}')
    >>> ctx = callers.authenticate("Bearer tok-ada-123")
    >>> (ctx.tenant_id, ctx.user_id, ctx.is_admin)
    ('acme', 'ada', False)
    >>> callers.authenticate("Bearer nope")
    Traceback (most recent call last):
    ...
    langmem_ext.errors.AuthenticationError: unknown token; ...
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..engine import ADMIN_PERMISSION, ELEVATE_PERMISSION, MemoryContext, read_only
from ..errors import AuthenticationError, ConfigurationError

__all__ = ["ENV_VAR", "Callers"]

#: The environment variable that may hold the callers JSON.
ENV_VAR = "LANGMEM_EXT_CALLERS"
_FIELDS = {
    "tenant_id",
    "user_id",
    "agent_id",
    "project_id",
    "team_id",
    "org_id",
    "permissions",
    "name",
}


class Callers:
    """Bearer tokens and the callers they authenticate."""

    def __init__(self, tokens: Mapping[str, Mapping[str, Any]]) -> None:
        if not isinstance(tokens, Mapping) or not tokens:
            raise ConfigurationError("the callers file lists no tokens: add {'tokens': {...}}")
        self._contexts: dict[str, MemoryContext] = {}
        for token, caller in tokens.items():
            if not isinstance(token, str) or len(token) < 8:
                raise ConfigurationError(
                    f"token {token!r} is too short; use at least 8 characters (32+ random "
                    "characters in production)"
                )
            self._contexts[token] = _context(token, caller)

    @classmethod
    def from_json(cls, text: str) -> Callers:
        """Callers from JSON text ``{"tokens": {token: caller}}``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigurationError(f"the callers JSON is invalid: {e}") from e
        if not isinstance(data, Mapping) or "tokens" not in data:
            raise ConfigurationError("the callers JSON must be an object with 'tokens'")
        return cls(data["tokens"])

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> Callers:
        """Callers from ``path``, else from the :data:`ENV_VAR` environment variable.

        Raises:
            ConfigurationError: neither is given, or the JSON is invalid.
        """
        if path is not None:
            return cls.from_json(Path(path).read_text())
        text = os.environ.get(ENV_VAR)
        if not text:
            raise ConfigurationError(
                f"no callers configured: pass a callers file or set {ENV_VAR} to its JSON "
                '({"tokens": {"<token>": {"tenant_id": ..., "user_id": ...}}})'
            )
        return cls.from_json(text)

    def authenticate(self, authorization: str | None) -> MemoryContext:
        """The caller of an ``Authorization`` header value (``Bearer <token>``).

        Raises:
            AuthenticationError: no header, not a bearer token, or an unknown token.
        """
        if not authorization or not authorization.startswith("Bearer "):
            raise AuthenticationError("missing bearer token; send 'Authorization: Bearer <token>'")
        given = authorization.removeprefix("Bearer ").strip()
        found = None
        for token, ctx in self._contexts.items():
            # Compare against every token so timing says nothing about which matched.
            if hmac.compare_digest(token.encode(), given.encode()):
                found = ctx
        if found is None:
            raise AuthenticationError("unknown token; check the token or the callers file")
        return found


def _context(token: str, caller: Any) -> MemoryContext:
    if not isinstance(caller, Mapping):
        raise ConfigurationError(f"the caller of a token must be an object, got {caller!r}")
    unknown = set(caller) - _FIELDS
    if unknown:
        raise ConfigurationError(
            f"unknown caller fields {sorted(unknown)}; use {', '.join(sorted(_FIELDS))}"
        )
    perms = set(caller.get("permissions") or ())
    ids = {k: caller.get(k) for k in ("user_id", "agent_id", "project_id", "team_id", "org_id")}
    kwargs: dict[str, Any] = {k: str(v) for k, v in ids.items() if v is not None}
    if caller.get("tenant_id"):
        kwargs["tenant_id"] = str(caller["tenant_id"])
    return MemoryContext(
        is_admin=ADMIN_PERMISSION in perms,
        elevated=ELEVATE_PERMISSION in perms,
        read_only=read_only(perms),
        **kwargs,
    )
