"""Who is calling: the tenant, the actor and the layer identifiers.

The tenant always comes from the authenticated caller — LangGraph's auth user
(``config["configurable"]["langgraph_auth_user"]``) or a :class:`MemoryContext`
built by a non-LangGraph host — never from tool arguments. Rules:

* every operation reads and writes only ``(root, tenant, ...)`` namespaces, so
  one tenant never reads, changes or counts another's data;
* a non-admin caller that names a tenant (even its own) is rejected with
  ``TENANT_FORBIDDEN``;
* an admin may name another tenant only when its context is *elevated*
  (``elevated=True``, or the auth user holds the ``memory:elevate`` permission).

The auth user may be a dict or an object (LangGraph's ``BaseUser``); these keys
are read: ``tenant_id`` (required), ``identity`` (the actor and default
``user_id``), ``permissions`` (``memory:admin`` makes an admin,
``memory:elevate`` elevates), ``is_admin`` and ``elevated``.

Example:
    >>> config = {"configurable": {"langgraph_auth_user": {
    ...     "identity": "ada", "tenant_id": "acme", "permissions": []}}}
    >>> ctx = MemoryContext.from_config(config)
    >>> (ctx.tenant_id, ctx.user_id, ctx.is_admin)
    ('acme', 'ada', False)
    >>> ctx.resolve_tenant(None)
    'acme'
    >>> ctx.resolve_tenant("globex")
    Traceback (most recent call last):
    ...
    langmem_ext.errors.TenantAccessError: ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import MissingIdentifierError, TenantAccessError

try:
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME as _RUNTIME_KEY
except ImportError:  # pragma: no cover - moved in a future LangGraph
    _RUNTIME_KEY = "__pregel_runtime"

__all__ = ["ADMIN_PERMISSION", "ELEVATE_PERMISSION", "MemoryContext"]

ADMIN_PERMISSION = "memory:admin"
ELEVATE_PERMISSION = "memory:elevate"
_ID_KEYS = ("user_id", "agent_id", "session_id", "project_id", "team_id", "org_id")


@dataclass(frozen=True)
class MemoryContext:
    """The authenticated caller of an engine operation.

    Args:
        tenant_id: the caller's tenant; all data lives under it.
        actor: who acts (recorded in audit events); defaults to ``user_id``.
        is_admin: may name another tenant, when ``elevated``.
        elevated: the explicit cross-tenant elevation of an admin.
        user_id, agent_id, session_id, project_id, team_id, org_id: layer
            identifiers (see :mod:`.layers`).

    Example:
        >>> MemoryContext("acme", user_id="ada").actor
        'ada'
    """

    tenant_id: str
    actor: str | None = None
    is_admin: bool = False
    elevated: bool = False
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    team_id: str | None = None
    org_id: str | None = None

    def __post_init__(self) -> None:
        if not self.tenant_id or not isinstance(self.tenant_id, str):
            raise MissingIdentifierError(
                "the caller has no tenant_id; authenticate the caller (LangGraph auth "
                "user with a tenant_id) or build a MemoryContext with one",
                identifier="tenant_id",
            )
        if self.actor is None:
            object.__setattr__(self, "actor", self.user_id)

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | None, *, default_tenant: str | None = None
    ) -> MemoryContext:
        """Build the context from a LangGraph ``RunnableConfig``.

        The tenant, actor and admin rights come only from the auth user;
        ``configurable`` (or the run's ``Runtime.context``) may add layer
        identifiers (``user_id``, ``session_id``…; ``thread_id`` stands in for
        ``session_id``). A ``MemoryContext`` placed in
        ``configurable["memory_context"]`` is used as is.

        ``default_tenant``: for single-tenant apps without LangGraph auth, the
        tenant of a run that has no auth user (never an admin). An auth user,
        when present, always decides.

        Example:
            >>> MemoryContext.from_config({"configurable": {"user_id": "ada"}},
            ...                           default_tenant="local").tenant_id
            'local'
        """
        conf = dict((config or {}).get("configurable") or {})
        given = conf.get("memory_context")
        if isinstance(given, MemoryContext):
            return given
        runtime_ctx = getattr(conf.get(_RUNTIME_KEY), "context", None)
        ids = {k: v for k in _ID_KEYS if (v := conf.get(k, _read(runtime_ctx, k))) is not None}
        user = conf.get("langgraph_auth_user")
        if user is None:
            if default_tenant is not None:
                return cls(default_tenant, **{k: str(v) for k, v in _with_session(ids, conf)})
            raise MissingIdentifierError(
                "no authenticated caller: the config has no configurable"
                "['langgraph_auth_user'] and no configurable['memory_context']; run the "
                "graph with LangGraph auth, pass a MemoryContext, or (single-tenant "
                "apps) give a default tenant",
                identifier="tenant_id",
            )
        tenant = _read(user, "tenant_id")
        identity = _read(user, "identity")
        perms = set(_read(user, "permissions") or ())
        ids.setdefault("user_id", identity)
        return cls(
            tenant_id=tenant,
            actor=identity,
            is_admin=bool(_read(user, "is_admin")) or ADMIN_PERMISSION in perms,
            elevated=bool(_read(user, "elevated")) or ELEVATE_PERMISSION in perms,
            **{k: str(v) for k, v in _with_session(ids, conf) if v is not None},
        )

    def resolve_tenant(self, requested: str | None) -> str:
        """The tenant an operation may touch, given a tenant selector (or None).

        Raises:
            TenantAccessError: a non-admin named a tenant, or an admin named
                another tenant without elevation.
        """
        if requested is None:
            return self.tenant_id
        if not self.is_admin:
            raise TenantAccessError(
                f"tenant selection is not allowed: the tenant comes from the "
                f"authenticated caller ({self.tenant_id!r}); remove the tenant argument",
                requested=requested,
            )
        if requested != self.tenant_id and not self.elevated:
            raise TenantAccessError(
                f"crossing into tenant {requested!r} needs an elevated admin context "
                f"(permission {ELEVATE_PERMISSION!r})",
                requested=requested,
            )
        return requested

    def with_ids(self, **ids: str | None) -> MemoryContext:
        """A copy with other layer identifiers (the tenant cannot change here)."""
        bad = set(ids) - set(_ID_KEYS)
        if bad:
            raise TypeError(f"unknown identifiers {sorted(bad)}; use {', '.join(_ID_KEYS)}")
        return dataclasses.replace(self, **ids)


def _with_session(ids: dict[str, Any], conf: Mapping[str, Any]) -> list[tuple[str, Any]]:
    if "session_id" not in ids and conf.get("thread_id") is not None:
        ids = {**ids, "session_id": conf["thread_id"]}
    return list(ids.items())


def _read(user: Any, key: str) -> Any:
    if user is None:
        return None
    if isinstance(user, Mapping):
        return user.get(key)
    try:
        return getattr(user, key)
    except AttributeError:
        try:
            return user[key]
        except (KeyError, TypeError):
            return None
