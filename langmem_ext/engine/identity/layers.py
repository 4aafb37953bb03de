"""Memory layers, their precedence, and which a caller may read.

=========  ===========  ==========================================================
layer      identifier   meaning
=========  ===========  ==========================================================
agent      agent_id     one agent's own memory, shared by its users (highest precedence)
user       user_id      one end user: the caller's own space (the memory tools'
                        namespace, see :mod:`.layout`)
session    session_id   one conversation of the user (inside the user's space)
project    project_id   one project
team       team_id      a team; without ``team_id``, the tenant-wide team
org        org_id       an organisation; without ``org_id``, the tenant-wide org
company    (none)       the whole tenant (lowest precedence)
=========  ===========  ==========================================================

Precedence is the order of the table: when layered search merges results, a
result from a more specific layer comes before one from a broader layer, and of
two near-duplicates only the more specific one is kept. A caller may read a
layer when it carries the layer's identifier; team, org and company are always
readable (they are shared by everyone in the tenant), so a caller with
``user_id`` and ``project_id`` reads user, project, team, org and company, but
not agent or session. The user layer also opens with an app namespace template
(the caller's space then comes from the template), and the session layer needs
the user layer too, since a session lives inside its user.

Examples:
    >>> from types import SimpleNamespace as ids
    >>> accessible_layers(ids(user_id="u1", project_id="p1"))
    ('user', 'project', 'team', 'org', 'company')
    >>> layer_id("session", ids(user_id="u1"))
    Traceback (most recent call last):
    ...
    langmem_ext.errors.MissingIdentifierError: the session layer needs session_id...
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...errors import InvalidLayerError, MissingIdentifierError
from ..records.checks import shown

__all__ = ["IDENTIFIERS", "LAYERS", "accessible_layers", "check_layer", "layer_id", "precedence"]

#: Layers in precedence order (first wins).
LAYERS: tuple[str, ...] = ("agent", "user", "session", "project", "team", "org", "company")
#: The identifier each layer is keyed by.
IDENTIFIERS: dict[str, str | None] = {
    "agent": "agent_id",
    "user": "user_id",
    "session": "session_id",
    "project": "project_id",
    "team": "team_id",
    "org": "org_id",
    "company": None,
}
#: Layers that cannot be used without their identifier.
REQUIRED: frozenset[str] = frozenset({"agent", "user", "session", "project"})
#: ``layer_id`` of the shared layers when no identifier is given.
SHARED_ID = "_"


def check_layer(layer: str) -> str:
    """Return ``layer`` if it is a layer name, else raise INVALID_LAYER."""
    if not isinstance(layer, str) or layer not in LAYERS:
        raise InvalidLayerError(
            f"unknown memory layer {shown(layer)}; use one of {', '.join(LAYERS)}",
            layer=shown(layer),
            valid=list(LAYERS),
        )
    return layer


def precedence(layer: str) -> int:
    """0 for the highest-precedence layer (agent), 6 for company."""
    return LAYERS.index(layer)


def _has_space(ids: Any) -> bool:
    return getattr(ids, "space", None) is not None or any(
        getattr(ids, k, None) for k in ("user_id", "org_id", "agent_id")
    )


def layer_id(layer: str, ids: Any) -> str:
    """The identifier value keying ``layer`` for a caller.

    Raises:
        InvalidLayerError: unknown layer.
        MissingIdentifierError: the layer needs an identifier the caller lacks;
            ``details["identifier"]`` names it.
    """
    check_layer(layer)
    name = IDENTIFIERS[layer]
    value = getattr(ids, name, None) if name else None
    if layer == "user" and not value and _has_space(ids):
        # A template space without user_id (e.g. ("memories", "{org_id}")): the
        # space itself names the owner.
        return "/".join(ids.own_space())
    if layer == "session" and value and not _has_space(ids):
        raise MissingIdentifierError(
            "the session layer lives inside the user's space; pass user_id too",
            identifier="user_id",
            layer=layer,
        )
    if value:
        return str(value)
    if layer in REQUIRED:
        raise MissingIdentifierError(
            f"the {layer} layer needs {name}; pass {name} in the config's "
            f"'configurable' (or the context) or use another layer",
            identifier=name,
            layer=layer,
        )
    return SHARED_ID


def accessible_layers(ids: Any) -> tuple[str, ...]:
    """Layers a caller may read, in precedence order."""

    def ok(layer: str) -> bool:
        if layer == "user":
            return _has_space(ids)
        if layer == "session":
            return bool(getattr(ids, "session_id", None)) and _has_space(ids)
        return layer not in REQUIRED or bool(getattr(ids, IDENTIFIERS[layer] or "", None))

    return tuple(layer for layer in LAYERS if ok(layer))


def resolve_layers(requested: Iterable[str] | None, ids: Any) -> list[tuple[str, str]]:
    """``(layer, layer_id)`` pairs to read: the requested layers (each checked,
    each needing its identifier) or, by default, every accessible layer."""
    if requested is not None and (
        isinstance(requested, str) or not isinstance(requested, list | tuple | set | frozenset)
    ):
        raise InvalidLayerError(
            f"layers must be a list of layer names ({', '.join(LAYERS)}), got {shown(requested)}",
            layer=shown(requested),
            valid=list(LAYERS),
        )
    names = accessible_layers(ids) if requested is None else [check_layer(x) for x in requested]
    ordered = sorted(dict.fromkeys(names), key=precedence)
    return [(layer, layer_id(layer, ids)) for layer in ordered]
