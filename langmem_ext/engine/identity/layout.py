"""Where memories live: one namespace per user, shared layers beside them,
bookkeeping apart. Pure functions, no I/O.

Every memory of a user — saved by a tool, extracted by reflection, stored
through the engine — lives in that user's **space**: the namespace the memory
tools use, i.e. the app's namespace template (``("memories", "{user_id}")``)
or, without one, the identity rule (``{"user_id": "ada"}`` → ``("user",
"ada")``; see :mod:`.namespaces`). An authenticated tenant's namespaces all
start with ``("tenant", <tenant>)``; the single-tenant default (no
authentication) adds nothing, so a single-user app's memories sit exactly where
LangMem's tools would put them.

================  =============================================================
what              namespace (``R`` = ``()`` or ``("tenant", <tenant>)``)
================  =============================================================
user layer        ``R + space`` — tools, reflection, the engine's notes,
                  facts, episodes and rules of the user; only *current*
                  memories
session layer     ``R + ("_sessions", <space>, <session_id>)``
agent, project,   ``R + ("_shared", <layer>, <id>)``; team and org without an
team, org         id use ``"_"`` (the whole tenant)
company           ``R + ("_shared", "company", "_")``
bookkeeping       ``R + ("_meta", <layer namespace>, <kind>)`` with kind
                  ``archive`` (superseded, retracted, expired and forgotten
                  memories), ``events`` (the audit trail), ``refs``
                  (reference counts), ``profile`` and ``reflection``
================  =============================================================

``<space>`` and ``<layer namespace>`` are one label: the labels joined with
``/`` (``%`` and ``/`` escaped), so no bookkeeping namespace is ever the prefix
of another user's. Why this shape:

* a prefix search of a user's space reads only that user's memories, by
  construction: the user is in the path, not only in a field, and ids and
  templates can never take a reserved label (:data:`.namespaces.RESERVED_LABELS`);
* the space holds only current memories, so LangMem-style search tools, store
  managers and plain ``store.search`` calls never see a superseded fact or an
  audit event;
* shared layers are leaves: reading the org layer never reads the org's users.

Examples:
    >>> user_space("default", ("user", "ada"))
    ('user', 'ada')
    >>> user_space("acme", ("user", "ada"))
    ('tenant', 'acme', 'user', 'ada')
    >>> meta_space("acme", ("tenant", "acme", "user", "ada"), "events")
    ('tenant', 'acme', '_meta', 'user/ada', 'events')
    >>> shared_space("acme", "team", None)
    ('tenant', 'acme', '_shared', 'team', '_')
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "DEFAULT_TENANT",
    "META",
    "SESSIONS",
    "SHARED",
    "SHARED_ID",
    "encode",
    "is_meta_space",
    "meta_space",
    "session_space",
    "shared_space",
    "tenant_label",
    "tenant_root",
    "user_space",
]

#: The tenant of runs without authentication (single-tenant apps); its
#: namespaces carry no tenant prefix.
DEFAULT_TENANT = "default"
META = "_meta"
SHARED = "_shared"
SESSIONS = "_sessions"
#: ``layer_id`` of the team and org layers without an identifier, and of company.
SHARED_ID = "_"


def tenant_label(tenant: str) -> str:
    """A tenant id as one namespace label (``acme.com`` works: dots are escaped).

    Examples:
        >>> tenant_label("acme.com")
        'acme%2Ecom'
    """
    return tenant.replace("%", "%25").replace(".", "%2E")


def tenant_root(tenant: str) -> tuple[str, ...]:
    """``()`` for the default tenant, else ``("tenant", <tenant>)``."""
    return () if tenant == DEFAULT_TENANT else ("tenant", tenant_label(tenant))


def encode(labels: Sequence[str]) -> str:
    """Several labels as one, reversibly (``%`` and ``/`` escaped, joined by ``/``).

    Examples:
        >>> encode(("user", "a/b"))
        'user/a%2Fb'
    """
    return "/".join(x.replace("%", "%25").replace("/", "%2F") for x in labels)


def user_space(tenant: str, space: Sequence[str]) -> tuple[str, ...]:
    """The namespace of a user's own memories."""
    return (*tenant_root(tenant), *space)


def session_space(tenant: str, space: Sequence[str], session_id: str) -> tuple[str, ...]:
    """The namespace of one session's memories, inside its user."""
    return (*tenant_root(tenant), SESSIONS, encode(space), session_id)


def shared_space(tenant: str, layer: str, layer_id: str | None) -> tuple[str, ...]:
    """The namespace of a shared layer (agent, project, team, org, company)."""
    return (*tenant_root(tenant), SHARED, layer, layer_id or SHARED_ID)


def meta_space(tenant: str, namespace: Sequence[str], kind: str) -> tuple[str, ...]:
    """The bookkeeping namespace ``kind`` of a layer namespace."""
    root = tenant_root(tenant)
    return (*root, META, encode(tuple(namespace)[len(root) :]), kind)


def is_meta_space(namespace: Sequence[str]) -> bool:
    """Whether ``namespace`` is (or is below) a bookkeeping namespace of any tenant.

    Examples:
        >>> is_meta_space(meta_space("acme", ("tenant", "acme", "user", "ada"), "events"))
        True
        >>> is_meta_space(("user", "ada")), is_meta_space(("_meta", "user/ada", "archive"))
        (False, True)
    """
    ns = tuple(namespace)
    return ns[:1] == (META,) or (len(ns) > 2 and ns[0] == "tenant" and ns[2] == META)
