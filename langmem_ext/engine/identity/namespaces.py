"""Namespaces filled in at call time from the caller's identity.

A memory tool writes into one namespace of the store. Which one is decided at
each call, from two sources LangGraph hands to every node and tool:

* ``config["configurable"]`` of the ``RunnableConfig``
  (``graph.invoke(..., {"configurable": {"user_id": "u-1"}})``), and
* the run's ``Runtime.context`` (``graph.invoke(..., context=Ctx(user_id="u-1"))``),
  which may be a dict, a dataclass or a pydantic model.

A key found in both must carry the same value; a conflict is an error rather
than a silent pick, because the namespace decides whose memories are touched.

**Templates.** ``NamespaceTemplate(("{user_id}", "memories"))`` replaces each
``{name}`` with that key's value, coerced to ``str`` (ints and UUIDs are
accepted). A label may mix text and one placeholder (``"team-{team_id}"``),
never two: ``"{org_id}-{user_id}"`` would give org ``a-b`` with user ``c``
and org ``a`` with user ``b-c`` the same label, so it is refused when the
template is built (give each id a label of its own: ``("{org_id}",
"{user_id}")``).

**Identity rule** (a template of ``None``). The identity keys, outermost first,
are :data:`IDENTITY_KEYS` = ``org_id``, ``user_id``, ``agent_id``. The
namespace starts with the scope label of the outermost key present (``"org"``,
``"user"`` or ``"agent"``) and its value; then ``user_id`` adds ``"user", value``
and ``agent_id`` adds its value:

================================================  =================================
identity                                          namespace
================================================  =================================
``user_id=u-123``                                 ``("user", "u-123")``
``org_id=acme``                                   ``("org", "acme")``
``agent_id=alpha``                                ``("agent", "alpha")``
``org_id=acme, agent_id=alpha``                   ``("org", "acme", "alpha")``
``org_id=acme, user_id=u-1``                      ``("org", "acme", "user", "u-1")``
``user_id=u-1, agent_id=alpha``                   ``("user", "u-1", "alpha")``
``org_id=acme, user_id=u-1, agent_id=alpha``      ``("org", "acme", "user", "u-1", "alpha")``
================================================  =================================

**The rule both keep.** Under one app configuration (one template, or the
identity rule), two different identities never get the same namespace, and one
identity's namespace is a prefix of another's only under the identity rule and
only when the second is narrower (the same org or user plus more ids: an org's
users and agents, a user's agents). Store searches match by prefix, so a search
at a wide scope (an org) also sees the narrower scopes below it; scopes that are
not nested never see each other. Templates get this from three properties:
each label holds at most one id, so filling a template is one-to-one; ids can
never be ``"."``-joined into several labels or take a reserved value (below);
and a filled template never starts with a reserved label, so it can never be
a prefix of the memory layout's own namespaces (``("tenant", ...)`` of another
tenant, ``("_meta", ...)`` bookkeeping): ``("t{user_id}", ...)`` with
``user_id="enant"`` is refused when it is filled.

**Values that are rejected** (:class:`~langmem_ext.errors.ConfigurationError`,
naming the key): ``None`` counts as missing; booleans, floats and containers;
empty or blank strings and leading/trailing whitespace (``" u1"`` and ``"u1"``
would be two users); ``"."`` (the store joins labels with dots, so ``"a.b"``
would read as two labels and ``".."`` could climb into another namespace);
control characters; and the reserved labels: the identity rule's scope labels
``org``, ``user`` and ``agent`` (``agent_id="user"`` would otherwise sit where
the org's users live, and a template ``("{user_id}", "memories")`` with
``user_id="user"`` where the identity rule puts the user ``memories``) and the
memory layout's own ``tenant``, ``_meta``, ``_shared`` and ``_sessions``
(:data:`RESERVED_LABELS`; a template may not start with those either).

Examples:
    >>> NamespaceTemplate(("{user_id}", "memories"))({"configurable": {"user_id": 42}})
    ('42', 'memories')
    >>> NamespaceTemplate()({"configurable": {"org_id": "acme", "agent_id": "alpha"}})
    ('org', 'acme', 'alpha')
"""

from __future__ import annotations

import dataclasses
import string
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from ..._langgraph import config_runtime
from ...errors import ConfigurationError
from ..records.checks import check_mapping, run_config, shown

__all__ = [
    "IDENTITY_KEYS",
    "RESERVED_LABELS",
    "NamespaceTemplate",
    "check_label",
    "resolve_identity",
]

IDENTITY_KEYS: tuple[str, ...] = ("org_id", "user_id", "agent_id")
_SCOPE_LABELS = {"org_id": "org", "user_id": "user", "agent_id": "agent"}
#: Labels the memory layout uses for its own namespaces (see :mod:`.layout`):
#: ``tenant`` starts an authenticated tenant's namespaces, ``_meta``,
#: ``_shared`` and ``_sessions`` hold bookkeeping, shared layers and session
#: memory. No id may take one of these values (nor the identity rule's scope
#: labels), and no template may start with one, so a filled template can never
#: reach into those namespaces or into another identity's.
RESERVED_LABELS = frozenset({"tenant", "_meta", "_shared", "_sessions"})
_RESERVED_VALUES = RESERVED_LABELS | frozenset(_SCOPE_LABELS.values())

_MISSING = object()
# Keys LangGraph itself puts in a node's configurable; listing them would only
# distract from the keys the user set.
_INTERNAL = frozenset({"checkpoint_id", "checkpoint_map", "checkpoint_ns"})


class NamespaceTemplate:
    """A namespace whose ``{placeholders}`` are filled at call time.

    Args:
        template: A tuple of labels such as ``("{user_id}", "memories")``, a
            single label, another template, or ``None`` for the identity rule
            (see the module docs: ``{"user_id": "u-123"}`` → ``("user", "u-123")``).

    Raises:
        ConfigurationError: at construction, for an empty template or label, a
            label with ``"."``, or a placeholder that is not a plain ``{name}``.

    Examples:
        >>> ns = NamespaceTemplate(("org", "{org_id}", "{user_id}"))
        >>> ns.keys
        ('org_id', 'user_id')
        >>> ns({"configurable": {"org_id": "acme"}}, context={"user_id": "u-1"})
        ('org', 'acme', 'u-1')
    """

    __slots__ = ("_parts", "keys", "template")

    def __init__(self, template: tuple[str, ...] | str | NamespaceTemplate | None = None) -> None:
        if isinstance(template, NamespaceTemplate):
            template = template.template
        if isinstance(template, str):
            template = (template,)
        if template is not None and not isinstance(template, tuple | list):
            raise ConfigurationError(
                "namespace template must be a tuple of labels such as ('memories', '{user_id}'), "
                f"a single label, or None for the identity rule; got {type(template).__name__} "
                f"{shown(template)}"
            )
        self.template: tuple[str, ...] | None = tuple(template) if template is not None else None
        self._parts: list[list[tuple[str, str | None]]] = []
        keys: dict[str, None] = {}
        if self.template is not None:
            if not self.template:
                raise ConfigurationError("namespace template is empty; give at least one label")
            for label in self.template:
                parts = _parse_label(label, self.template)
                held = list(dict.fromkeys(k for _, k in parts if k is not None))
                if len(held) > 1:
                    raise ConfigurationError(
                        f"namespace label {shown(label)} holds {len(held)} ids "
                        f"({', '.join(held)}); ids side by side in one label can run together "
                        "('a-b' + 'c' and 'a' + 'b-c' give one label), so two identities could "
                        "share a namespace. Give each id a label of its own, e.g. "
                        f"{shown(tuple('{' + k + '}' for k in held))}"
                    )
                self._parts.append(parts)
                keys.update((k, None) for k in held)
            first = self.template[0]
            if first in RESERVED_LABELS:
                raise ConfigurationError(
                    f"namespace template {shown(self.template)} starts with {shown(first)}, "
                    "a label reserved for the memory layout "
                    f"({', '.join(sorted(RESERVED_LABELS))}); start it with another label, "
                    "e.g. 'memories'"
                )
        self.keys: tuple[str, ...] = tuple(keys) if self.template is not None else IDENTITY_KEYS

    def __repr__(self) -> str:
        return f"NamespaceTemplate({self.template!r})"

    def __call__(
        self,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        fixed: Mapping[str, Any] | None = None,
    ) -> tuple[str, ...]:
        """Fill the template for one call.

        Args:
            config: The call's ``RunnableConfig``; by default the one of the
                running graph (none outside a graph).
            context: The run's context; by default ``Runtime.context`` of the
                running graph, found through ``config``.
            fixed: Values that win over ``config`` and ``context`` (the
                authenticated identity, decided by
                :meth:`~langmem_ext.engine.MemoryContext.from_config`).

        Raises:
            ConfigurationError: a key is missing (the message names it and the
                keys available), found twice with different values, or has a
                value that cannot be a namespace label.
        """
        lookup = _Lookup(config, context, fixed)
        if self.template is None:
            return resolve_identity(lookup.get_many(IDENTITY_KEYS), available=lookup.available())
        out: list[str] = []
        for parts in self._parts:
            text = []
            for literal, key in parts:
                text.append(literal)
                if key is not None:
                    value = lookup.get(key)
                    if value is _MISSING:
                        raise ConfigurationError(
                            f"missing key {shown(key)} for namespace {shown(self.template)}; "
                            f"available keys: {lookup.available()}. Pass it in "
                            f"config['configurable'] or in the run's context",
                            key=key,
                        )
                    text.append(check_label(key, value))
            out.append(check_label("namespace label", "".join(text), reserved=False))
        if out[0] in RESERVED_LABELS:
            raise ConfigurationError(
                f"namespace {shown(tuple(out))} starts with {shown(out[0])}, a label reserved for "
                f"the memory layout ({', '.join(sorted(RESERVED_LABELS))}): the ids filled into "
                f"{shown(self.template[0])} made it, and it would reach into other tenants' or "
                "bookkeeping namespaces; choose other ids, or start the template with a fixed "
                "label such as 'memories'"
            )
        return tuple(out)


def resolve_identity(
    identity: Mapping[str, Any], *, available: list[str] | None = None
) -> tuple[str, ...]:
    """Apply the identity rule to ``{"org_id"?, "user_id"?, "agent_id"?}``.

    Raises:
        ConfigurationError: no identity key is present, or a value is invalid.

    Examples:
        >>> resolve_identity({"user_id": "u-123"})
        ('user', 'u-123')
        >>> resolve_identity({"org_id": "acme", "user_id": 7})
        ('org', 'acme', 'user', '7')
    """
    present = [(k, identity[k]) for k in IDENTITY_KEYS if identity.get(k) is not None]
    if not present:
        known = available if available is not None else sorted(identity)
        raise ConfigurationError(
            f"no identity to build a namespace from: set one of {', '.join(IDENTITY_KEYS)} "
            f"in config['configurable'] or the run's context, or create the tool with "
            f"namespace=(...); available keys: {known}",
            key="user_id",
        )
    values = [(key, check_label(key, raw)) for key, raw in present]
    (first, first_value), rest = values[0], values[1:]
    out = [_SCOPE_LABELS[first], first_value]
    for key, value in rest:
        out.extend(("user", value) if key == "user_id" else (value,))
    return tuple(out)


def check_label(key: str, value: Any, *, reserved: bool = True) -> str:
    """Coerce one value to a namespace label, or raise naming ``key``.
    ``reserved``: also reject the reserved labels (for ids, not for a
    template's own literal text).

    Examples:
        >>> check_label("user_id", 7)
        '7'
        >>> check_label("user_id", "../u-2")
        Traceback (most recent call last):
        ...
        langmem_ext.errors.ConfigurationError: user_id='../u-2' contains '.', ...
    """
    if isinstance(value, bool) or not isinstance(value, str | int | uuid.UUID):
        raise ConfigurationError(
            f"{key} must be a string, an integer or a UUID, got "
            f"{type(value).__name__} {shown(value)}",
            key=key,
        )
    text = str(value)
    if not text.strip():
        raise ConfigurationError(f"{key} is empty; give a non-empty id", key=key)
    if text != text.strip():
        raise ConfigurationError(
            f"{key}={shown(text)} has leading or trailing whitespace; strip it", key=key
        )
    if "." in text:
        raise ConfigurationError(
            f"{key}={shown(text)} contains '.', which separates namespace labels in the store "
            "(and '..' could reach another namespace); replace the dots (e.g. with '-') "
            "or use a hash of the id",
            key=key,
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ConfigurationError(f"{key}={shown(text)} contains control characters", key=key)
    if reserved and text in _RESERVED_VALUES:
        raise ConfigurationError(
            f"{key}={shown(text)} is reserved for the memory layout "
            f"({', '.join(sorted(_RESERVED_VALUES))}); choose another id",
            key=key,
        )
    return text


class _Lookup:
    """Keys from ``configurable`` and the runtime context, checked for conflicts."""

    def __init__(
        self, config: RunnableConfig | None, context: Any, fixed: Mapping[str, Any] | None = None
    ) -> None:
        config = run_config(config)
        self.configurable: Mapping[str, Any] = config.get("configurable") or {}
        if context is None:
            runtime = config_runtime(config)
            context = getattr(runtime, "context", None)
        self.context = context
        check_mapping("fixed", fixed, error=ConfigurationError)
        self.fixed = {k: v for k, v in (fixed or {}).items() if v is not None}

    def _from_context(self, key: str) -> Any:
        ctx = self.context
        if ctx is None:
            return _MISSING
        value = ctx.get(key, _MISSING) if isinstance(ctx, Mapping) else getattr(ctx, key, _MISSING)
        return _MISSING if value is None else value

    def get(self, key: str) -> Any:
        if key in self.fixed:
            return self.fixed[key]
        a = self.configurable.get(key, _MISSING)
        a = _MISSING if a is None else a
        b = self._from_context(key)
        if a is not _MISSING and b is not _MISSING and _as_text(a) != _as_text(b):
            raise ConfigurationError(
                f"{key} differs between config['configurable'] ({shown(a)}) and the run's "
                f"context ({shown(b)}); set it in one place",
                key=key,
            )
        return a if a is not _MISSING else b

    def get_many(self, keys: tuple[str, ...]) -> dict[str, Any]:
        out = {}
        for k in keys:
            value = self.get(k)
            if value is not _MISSING:
                out[k] = value
        return out

    def available(self) -> list[str]:
        keys = {k for k in self.configurable if not k.startswith("__") and k not in _INTERNAL}
        ctx = self.context
        if isinstance(ctx, Mapping):
            keys.update(str(k) for k in ctx)
        elif dataclasses.is_dataclass(ctx):
            keys.update(f.name for f in dataclasses.fields(ctx))
        elif hasattr(type(ctx), "model_fields"):
            keys.update(type(ctx).model_fields)
        elif ctx is not None and hasattr(ctx, "__dict__"):
            keys.update(k for k in vars(ctx) if not k.startswith("_"))
        return sorted(keys)


def _as_text(value: Any) -> Any:
    return str(value) if isinstance(value, str | int | uuid.UUID) else value


def _parse_label(label: Any, template: tuple[Any, ...]) -> list[tuple[str, str | None]]:
    if not isinstance(label, str) or not label:
        raise ConfigurationError(
            f"namespace template {shown(template)} has an empty or non-string label {shown(label)}"
        )
    try:
        parsed = list(string.Formatter().parse(label))
    except ValueError as e:
        raise ConfigurationError(
            f"namespace label {shown(label)} is not a valid template: {e}"
        ) from e
    parts: list[tuple[str, str | None]] = []
    for literal, field, spec, conv in parsed:
        if "." in literal:
            raise ConfigurationError(
                f"namespace label {shown(label)} contains '.', which separates labels in the store"
            )
        if field is not None and (not field.isidentifier() or spec or conv):
            raise ConfigurationError(
                f"namespace label {shown(label)}: placeholders must be plain names such as "
                f"'{{user_id}}', got '{{{field}{'!' + conv if conv else ''}"
                f"{':' + spec if spec else ''}}}'"
            )
        parts.append((literal, field))
    return parts
