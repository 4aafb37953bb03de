"""Who is calling: the tenant, the user, the layer identifiers, and where the
caller's memories live.

**Without authentication** (no LangGraph auth user): the run belongs to the
default tenant (:data:`~.layout.DEFAULT_TENANT`, or ``default_tenant=``), and
``configurable`` / ``Runtime.context`` say who the user is. Nothing to set up
for a single-tenant app: ``{"configurable": {"user_id": "ada"}}`` is enough.

**With authentication** (``configurable["langgraph_auth_user"]``, as LangGraph
Platform sets it, or a :class:`MemoryContext` given by a non-LangGraph host),
identity comes from the authentication, never from the request:

* the tenant is the auth user's ``tenant_id`` (the default tenant without one);
* the user is the auth user's ``identity``. A ``user_id`` (or LangMem's
  ``langgraph_user_id``) in the config must be that same id; another id is an
  :class:`~langmem_ext.errors.IdentityError`, unless the caller is an admin with
  an elevated context (acting for a user, like crossing tenants);
* shared-layer identifiers (``agent_id``, ``project_id``, ``team_id``,
  ``org_id``) come from the auth user (``org_id`` there, or a list in
  ``org_ids``); a config value is accepted when the auth user grants it (the same
  value or one of the list) or is an admin, else it is an ``IdentityError``;
* ``session_id`` (or ``thread_id``) comes from the config: sessions live inside
  the user's own space, so naming one reaches nothing of anyone else.

The auth user may be a dict or an object (LangGraph's ``BaseUser``); read keys:
``identity``, ``tenant_id``, ``permissions`` (``memory:admin`` makes an admin,
``memory:elevate`` elevates), ``is_admin``, ``elevated``, the shared-layer ids
and their plural lists. An auth user with ``is_authenticated`` false or an
empty identity counts as no authentication.

Tenants: every operation reads and writes only that tenant's namespaces; a
non-admin caller that names a tenant (even its own) is rejected with
``TENANT_FORBIDDEN``; an admin may name another tenant only when elevated.

Examples:
    >>> config = {"configurable": {"langgraph_auth_user": {
    ...     "identity": "ada", "tenant_id": "acme", "permissions": []}}}
    >>> ctx = MemoryContext.from_config(config)
    >>> (ctx.tenant_id, ctx.user_id, ctx.is_admin, ctx.own_space())
    ('acme', 'ada', False, ('user', 'ada'))
    >>> MemoryContext.from_config({"configurable": {"user_id": "bob"}}).tenant_id
    'default'
    >>> ctx.resolve_tenant("globex")
    Traceback (most recent call last):
    ...
    langmem_ext.errors.TenantAccessError: ...
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from ..._langgraph import RUNTIME_KEY
from ...errors import (
    ConfigurationError,
    IdentityError,
    InvalidValueError,
    LangmemError,
    MissingIdentifierError,
    TenantAccessError,
)
from ..records.checks import check_config, shown
from .layout import DEFAULT_TENANT
from .namespaces import IDENTITY_KEYS, RESERVED_LABELS, NamespaceTemplate, resolve_identity

__all__ = [
    "ADMIN_PERMISSION",
    "ELEVATE_PERMISSION",
    "READ_PERMISSION",
    "WRITE_PERMISSION",
    "MemoryContext",
    "fill_space",
    "read_only",
]

ADMIN_PERMISSION = "memory:admin"
ELEVATE_PERMISSION = "memory:elevate"
#: A caller granted ``memory:read`` without ``memory:write`` may only read.
READ_PERMISSION = "memory:read"
WRITE_PERMISSION = "memory:write"
_ID_KEYS = ("user_id", "agent_id", "session_id", "project_id", "team_id", "org_id")
_SHARED_KEYS = ("agent_id", "project_id", "team_id", "org_id")
#: Names under which a config may carry the user id (LangMem's default
#: namespace uses ``{langgraph_user_id}``; LangGraph Platform sets
#: ``langgraph_auth_user_id``).
USER_ALIASES = ("user_id", "langgraph_user_id", "langgraph_auth_user_id")


@dataclass(frozen=True)
class MemoryContext:
    """The caller of an engine operation.

    Args:
        tenant_id: the caller's tenant; all data lives under it.
        actor: who acts (recorded in audit events); defaults to ``user_id``.
        is_admin: may name another tenant, when ``elevated``.
        elevated: the explicit cross-tenant elevation of an admin.
        user_id: the user (the ``user`` layer, and the default ``actor``).
        agent_id: the agent (the ``agent`` layer).
        session_id: the session (the ``session`` layer).
        project_id: the project (the ``project`` layer).
        team_id: the team (the ``team`` layer).
        org_id: the organisation (the ``org`` layer).

    Under authentication, agent, project, team and org ids must be granted
    by the auth user (see :meth:`from_config`).
        space: the namespace of the caller's own memories, without the tenant
            prefix (a filled namespace template); None uses the identity rule
            over ``org_id``, ``user_id`` and ``agent_id`` (``("user", "ada")``).
        read_only: the caller may read but not write (``memory:read``
            without ``memory:write``); writing operations are refused.

    Examples:
        >>> MemoryContext("acme", user_id="ada").actor
        'ada'
        >>> MemoryContext("acme", user_id="ada").own_space()
        ('user', 'ada')
    """

    tenant_id: str = DEFAULT_TENANT
    actor: str | None = None
    is_admin: bool = False
    elevated: bool = False
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    team_id: str | None = None
    org_id: str | None = None
    space: tuple[str, ...] | None = None
    read_only: bool = False

    def __post_init__(self) -> None:
        if not self.tenant_id or not isinstance(self.tenant_id, str):
            raise MissingIdentifierError(
                f"tenant_id must be a non-empty string, got {shown(self.tenant_id)}; leave it out "
                f"for the default tenant ({DEFAULT_TENANT!r})",
                identifier="tenant_id",
            )
        for key in _ID_KEYS:
            object.__setattr__(self, key, _id_text(key, getattr(self, key), InvalidValueError))
        for flag in ("is_admin", "elevated", "read_only"):
            if not isinstance(getattr(self, flag), bool):
                raise InvalidValueError(
                    f"{flag} must be True or False, got {shown(getattr(self, flag))}"
                )
        if self.actor is not None and not isinstance(self.actor, str):
            raise InvalidValueError(f"actor must be a string or None, got {shown(self.actor)}")
        if self.space is not None:
            space = self.space
            if (
                isinstance(space, str)
                or not isinstance(space, tuple | list)
                or not space
                or not all(isinstance(x, str) and x for x in space)
            ):
                raise InvalidValueError(
                    f"space must be a tuple of non-empty strings (a namespace), got {shown(space)}"
                )
            if space[0] in RESERVED_LABELS:
                # Such a space would be a prefix of other tenants' or of bookkeeping namespaces.
                raise InvalidValueError(
                    f"space {shown(space)} starts with {shown(space[0])}, a label reserved for "
                    f"the memory layout ({', '.join(sorted(RESERVED_LABELS))}); start it with "
                    "another label, e.g. 'memories'"
                )
            object.__setattr__(self, "space", tuple(space))
        if self.actor is None:
            object.__setattr__(self, "actor", self.user_id)

    def own_space(self) -> tuple[str, ...]:
        """The namespace of the caller's own memories (without the tenant prefix).

        Raises:
            MissingIdentifierError: no template was filled and the caller has no
                ``user_id``, ``org_id`` or ``agent_id`` to apply the identity rule to.
        """
        if self.space is not None:
            return self.space
        ids = {k: getattr(self, k) for k in IDENTITY_KEYS if getattr(self, k)}
        if not ids:
            raise MissingIdentifierError(
                "the caller has no user: pass user_id in config['configurable'] or the run's "
                "context (or authenticate the caller), or give the component a namespace",
                identifier="user_id",
                layer="user",
            )
        return resolve_identity(ids)

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any] | None,
        *,
        namespace: tuple[str, ...] | str | NamespaceTemplate | None = None,
        default_tenant: str | None = None,
    ) -> MemoryContext:
        """Build the context of a LangGraph run (see the module docs for the rules).

        Args:
            config: the run's ``RunnableConfig``. A ``MemoryContext`` placed in
                ``configurable["memory_context"]`` is used as is (its ``space``
                filled from ``namespace`` when it has none).
            namespace: the app's namespace template for the user's memories
                (``("memories", "{user_id}")``); None: the identity rule.
            default_tenant: tenant of runs without authentication (and of auth
                users without a ``tenant_id``); default :data:`~.layout.DEFAULT_TENANT`.

        Raises:
            IdentityError: the config names a user or shared-layer id the
                authenticated caller may not act for.
            ConfigurationError: a template key is missing or has a bad value.

        Examples:
            >>> ctx = MemoryContext.from_config(
            ...     {"configurable": {"user_id": "ada", "thread_id": "t1"}},
            ...     namespace=("memories", "{user_id}"))
            >>> ctx.space, ctx.session_id
            (('memories', 'ada'), 't1')
        """
        template = _template(namespace)
        conf: Mapping[str, Any] = check_config(config).get("configurable") or {}
        if default_tenant is not None and (
            not isinstance(default_tenant, str) or not default_tenant
        ):
            raise ConfigurationError(
                f"default_tenant must be a non-empty string or None, got {shown(default_tenant)}"
            )
        runtime_ctx = getattr(conf.get(RUNTIME_KEY), "context", None)

        def read(key: str) -> Any:
            value = conf.get(key)
            return value if value is not None else _read(runtime_ctx, key)

        user = conf.get("langgraph_auth_user")
        given = conf.get("memory_context")
        if isinstance(given, MemoryContext):
            if _authenticated(user):
                _check_acts_for(given, _authenticated_context(cls, user, read, default_tenant))
            if template is None or given.space is not None:
                return given
            return dataclasses.replace(given, space=_fill(template, config, given))
        if not _authenticated(user):
            ids = {k: read(k) for k in _ID_KEYS}
            ids["user_id"] = _first(read(k) for k in USER_ALIASES)
            ids["session_id"] = ids["session_id"] or read("thread_id")
            tenant = default_tenant or DEFAULT_TENANT
            ctx = cls(tenant, **{k: _id_text(k, v) for k, v in ids.items()})  # type: ignore[arg-type]
        else:
            ctx = _authenticated_context(cls, user, read, default_tenant)
        if template is None:
            return ctx
        return dataclasses.replace(ctx, space=_fill(template, config, ctx))

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
                f"authenticated caller ({shown(self.tenant_id)}); remove the tenant argument",
                requested=requested,
            )
        if requested != self.tenant_id and not self.elevated:
            raise TenantAccessError(
                f"crossing into tenant {shown(requested)} needs an elevated admin context "
                f"(permission {ELEVATE_PERMISSION!r})",
                requested=requested,
            )
        return requested

    def reads_below(self) -> bool:
        """Whether the namespaces below the caller's space are the caller's
        too: for a user (its own agents), and for an app's namespace template
        (what the app put below its namespace, as in LangMem's shared team
        namespaces). Not for an org or an agent under the identity rule: the
        spaces below ``("org", <org>)`` are its users'."""
        return self.user_id is not None or self.space is not None

    def owns(self, space: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
        """Whether an item found under the caller's own ``space`` (by a prefix
        search) is the caller's: the space itself, or one below it when
        :meth:`reads_below`. Every surface that reads a space by prefix asks this.

        Examples:
            >>> org = MemoryContext(org_id="acme")
            >>> org.owns(("org", "acme"), ("org", "acme", "user", "ada"))
            False
            >>> MemoryContext(user_id="ada").owns(("user", "ada"), ("user", "ada", "alpha"))
            True
        """
        space, namespace = tuple(space), tuple(namespace)
        if namespace == space:
            return True
        return self.reads_below() and namespace[: len(space)] == space

    def with_ids(self, **ids: str | None) -> MemoryContext:
        """A copy with other layer identifiers (the tenant cannot change here).
        A space derived from the identity rule follows the new ids."""
        bad = set(ids) - set(_ID_KEYS)
        if bad:
            raise InvalidValueError(f"unknown identifiers {sorted(bad)}; use {', '.join(_ID_KEYS)}")
        return dataclasses.replace(self, **ids)  # type: ignore[arg-type]


def fill_space(ctx: MemoryContext, namespace: Any) -> MemoryContext:
    """``ctx`` with its space filled from ``namespace`` (a template) and its own
    identifiers, when it has none yet.

    Examples:
        >>> fill_space(MemoryContext(user_id="ada"), ("memories", "{user_id}")).space
        ('memories', 'ada')
    """
    template = _template(namespace)
    if template is None or ctx.space is not None:
        return ctx
    return dataclasses.replace(ctx, space=_fill(template, None, ctx))


def _template(namespace: Any) -> NamespaceTemplate | None:
    """The template to fill, or None for the identity rule (applied lazily by
    :meth:`MemoryContext.own_space`, so a caller without a user fails only when
    something needs the user's space)."""
    if namespace is None:
        return None
    template = (
        namespace if isinstance(namespace, NamespaceTemplate) else NamespaceTemplate(namespace)
    )
    return None if template.template is None else template


def _fill(template: NamespaceTemplate, config: Any, ctx: MemoryContext) -> tuple[str, ...]:
    fixed: dict[str, Any] = {k: getattr(ctx, k) for k in _ID_KEYS}
    for alias in USER_ALIASES[1:]:
        fixed[alias] = ctx.user_id
    return template(cast(RunnableConfig, config or {}), fixed=fixed)


def _authenticated(user: Any) -> bool:
    if user is None:
        return False
    if not isinstance(user, Mapping) and not hasattr(user, "identity"):
        # Fail closed: an auth user we cannot read is not "no authentication".
        raise ConfigurationError(
            "config['configurable']['langgraph_auth_user'] must be the authenticated user "
            f"(a dict or an object with an identity), got {type(user).__name__}"
        )
    if _read(user, "is_authenticated") is False:
        return False
    return bool(_read(user, "identity"))


def _authenticated_context(
    cls: type[MemoryContext], user: Any, read: Any, default_tenant: str | None
) -> MemoryContext:
    identity = _id_text("the auth user's identity", _read(user, "identity"))
    perms = set(_strings("the auth user's permissions", _read(user, "permissions")))
    # Only a real True makes an admin: a string such as "false" must not.
    admin = _read(user, "is_admin") is True or ADMIN_PERMISSION in perms
    elevated = _read(user, "elevated") is True or ELEVATE_PERMISSION in perms
    ids: dict[str, Any] = {"user_id": identity}
    asked = _id_text("user_id", _first(read(k) for k in USER_ALIASES))
    if asked is not None and asked != identity:
        if not (admin and elevated):
            raise IdentityError(
                f"the config asks for user {shown(str(asked))} but the authenticated user is "
                f"{shown(identity)}; remove user_id from the config (it comes from the "
                "authentication), or act for another user with an elevated admin context",
                requested=str(asked),
            )
        ids["user_id"] = str(asked)
    for key in _SHARED_KEYS:
        own = _id_text(f"the auth user's {key}", _read(user, key))
        grants = _strings(f"the auth user's {key}s", _read(user, key + "s"))
        wanted = _id_text(key, read(key))
        if wanted is None or wanted == own:
            ids[key] = own
        elif admin or wanted in grants:
            ids[key] = wanted
        else:
            raise IdentityError(
                f"the config asks for {key}={shown(str(wanted))}, which the authenticated user "
                f"{shown(identity)} was not granted; have the auth handler return it in "
                f"{shown(key)} or {shown(key + 's')}, or remove it from the config",
                requested=str(wanted),
                identifier=key,
            )
    ids["session_id"] = _id_text("session_id", read("session_id") or read("thread_id"))
    tenant = _id_text("the auth user's tenant_id", _read(user, "tenant_id"))
    return cls(
        tenant or default_tenant or DEFAULT_TENANT,
        actor=identity,
        is_admin=admin,
        elevated=elevated,
        read_only=read_only(perms),
        **ids,
    )


def read_only(permissions: Any) -> bool:
    """Whether permissions grant reading only: ``memory:read`` without
    ``memory:write`` (or admin). No memory permission at all is full access, as
    for apps that do not use permissions."""
    perms = set(permissions or ())
    return READ_PERMISSION in perms and not perms & {WRITE_PERMISSION, ADMIN_PERMISSION}


def _check_acts_for(given: MemoryContext, auth: MemoryContext) -> None:
    """A ``MemoryContext`` placed in the config of an authenticated run may
    only name the authenticated caller (an admin: anyone of the tenant, another
    tenant with elevation), as ``user_id`` in the config may."""
    if given.tenant_id != auth.tenant_id:
        auth.resolve_tenant(given.tenant_id)
    same = (given.user_id, given.actor) == (auth.user_id, auth.actor)
    if not same and not auth.is_admin:
        raise IdentityError(
            f"the config's memory_context is for user {shown(given.user_id)} but the "
            f"authenticated user is {shown(auth.actor)}; leave memory_context out of "
            "authenticated runs (the identity comes from the authentication)",
            requested=str(given.user_id),
        )


def _first(values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _id_text(key: str, value: Any, error: type[LangmemError] = ConfigurationError) -> str | None:
    """An identifier as text: strings as they are, integers and UUIDs as
    strings, None for missing; anything else (a dict, a list, a float) is an
    error naming ``key``, never its ``str()``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | uuid.UUID) and not isinstance(value, bool):
        return str(value)
    raise error(
        f"{key} must be a string, an integer or a UUID, got {type(value).__name__} {shown(value)}",
        key=key,
    )


def _strings(what: str, values: Any) -> list[str]:
    """A list of identifiers or permissions (None: empty)."""
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, list | tuple | set | frozenset):
        raise ConfigurationError(f"{what} must be a list of strings, got {shown(values)}")
    return [t for v in values if (t := _id_text(what, v)) is not None]


def _read(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    try:
        return getattr(obj, key)
    except AttributeError:
        try:
            return obj[key]
        except (KeyError, TypeError):
            return None
