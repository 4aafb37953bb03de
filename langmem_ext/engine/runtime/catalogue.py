"""The catalogue of memory operations: each operation is declared once, and
every surface is derived from that declaration.

An operation is a generator (see :mod:`.requests`) whose **signature is its
declaration**: each parameter's type (with enums as ``Literal``, ranges and
formats as pydantic ``Field`` constraints) and one-line description, the
result type (``Operation[Fact]``), the summary (the docstring's first
paragraph), the errors it may raise and who may call it::

    @operation(access="write", tool="memory_store_rule", errors=(ContentTooLongError,))
    def store_rule(c: Caller, content: Text, *, scope: Scope = "global",
                   tenant: Tenant = None) -> Operation[Rule]:
        \"\"\"Store a behavioural rule ...\"\"\"
        return lc.store_rule(c.env(tenant), content, None, scope, None)

From it come the engine's methods (``engine.store_rule`` / ``astore_rule``,
:func:`bind`), the agent tool and the MCP tool (:meth:`Spec.schema`,
:meth:`Spec.tool_model`), the command ``langmem-ext memories store-rule`` and
the browser's forms. Arguments from every surface are checked by one pydantic
model (:meth:`Spec.validate`), so a bad argument gets the same coded error,
with the same message, wherever it comes from; :func:`error_text` is how every
surface shows an error.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> from langmem_ext.engine.operations import OPERATIONS
    >>> spec = OPERATIONS["store_rule"]
    >>> spec.tool, spec.access, spec.schema()["required"]
    ('memory_store_rule', 'write', ['content'])
    >>> engine = MemoryEngine(SQLiteStore())
    >>> engine.store_rule(MemoryContext(user_id="ada"), "   ")
    Traceback (most recent call last):
    ...
    langmem_ext.errors.InvalidValueError: content must contain text, got '   '
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, Literal, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from ...errors import (
    InvalidValueError,
    LangmemError,
    PermissionDeniedError,
    ProviderError,
    TenantAccessError,
)
from ..records.models import Fact, MemoryRecord, Rule
from .requests import Operation, run_async, run_sync
from .wording import error_text, invalid

__all__ = [
    "Access",
    "Caller",
    "Param",
    "Spec",
    "bind",
    "bind_all",
    "error_text",
    "operation",
]

P = ParamSpec("P")
T = TypeVar("T")
Access = Literal["read", "write"]

#: Parameters whose name on the tool and command-line surfaces differs from the
#: Python name (one name per concept: tools say ``tenant_id`` like the callers file).
PUBLIC_NAMES = {"tenant": "tenant_id"}


@dataclass(frozen=True)
class Meta:
    """Extra facts about a parameter, given in its ``Annotated`` metadata."""

    #: The error class of a value this parameter refuses (default INVALID_VALUE).
    error: type[LangmemError] = InvalidValueError
    #: What the value is, in an error message ("memory type", "layer").
    what: str | None = None
    #: Only for admins (offered to no one else: the tenant selector).
    admin: bool = False
    #: For Python callers only: not offered to agents, MCP clients or the CLI.
    internal: bool = False


@dataclass(frozen=True)
class Param:
    """One declared parameter of an operation."""

    name: str
    annotation: Any
    field: FieldInfo
    meta: Meta
    positional: bool

    @property
    def public(self) -> str:
        """Its name on tool, MCP and command-line surfaces."""
        return PUBLIC_NAMES.get(self.name, self.name)

    @property
    def description(self) -> str:
        return self.field.description or ""

    @property
    def required(self) -> bool:
        return self.field.is_required()


class Caller:
    """What an operation receives first: the engine and the caller, from
    which ``env(tenant)`` builds the per-call environment. Who may call it is
    decided there, before any store request: the tenant, and for a writing
    operation whether the caller may write.

    An operation run inside another one (:meth:`Spec.within`) gets a caller
    made from that operation's environment: same caller, same tenant, same
    clock."""

    __slots__ = ("_env", "access", "ctx", "engine")

    def __init__(self, engine: Any, ctx: Any, access: Access = "write", env: Any = None) -> None:
        self.engine, self.ctx, self.access, self._env = engine, ctx, access, env

    @classmethod
    def inside(cls, env: Any, access: Access) -> Caller:
        """The caller of an operation run within another, from its environment."""
        return cls(None, env.ctx, access, env)

    def env(self, tenant: str | None = None) -> Any:
        if self._env is not None:
            if tenant is not None:
                raise InvalidValueError(
                    "an operation run within another acts in that operation's tenant; "
                    "do not pass tenant"
                )
            env = self._env
        elif self.ctx is None:  # an operation without a caller: the engine's limits only
            return self.engine.plain_env()
        else:
            env = self.engine.env(self.ctx, tenant)
        if self.access == "write" and env.ctx.read_only:
            raise PermissionDeniedError(
                "you may read memories but not change them (your permissions grant "
                "memory:read without memory:write)"
            )
        return env


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


@dataclass(frozen=True, eq=False)
class Spec(Generic[P, T]):
    """One operation of the catalogue (see the module docs)."""

    name: str
    build: Callable[..., Operation[T]]
    summary: str
    access: Access
    tool: str | None
    cli: str | None
    errors: tuple[type[LangmemError], ...]
    params: tuple[Param, ...]
    caller: bool
    result: Any

    @functools.cached_property
    def model(self) -> type[BaseModel]:
        """The pydantic model of every parameter (Python names)."""
        return _model(self.name, self.params)

    @functools.cached_property
    def _signature(self) -> inspect.Signature:
        return inspect.Signature(
            [
                inspect.Parameter(
                    p.name,
                    inspect.Parameter.POSITIONAL_OR_KEYWORD
                    if p.positional
                    else inspect.Parameter.KEYWORD_ONLY,
                    default=inspect.Parameter.empty if p.required else None,
                )
                for p in self.params
            ]
        )

    def offered(self, *, admin: bool = False) -> list[Param]:
        """The parameters a tool, MCP client or command offers: not the
        internal ones, and the admin-only ones only to admins."""
        return [p for p in self.params if not p.meta.internal and (admin or not p.meta.admin)]

    def tool_model(self, *, admin: bool = False) -> type[BaseModel]:
        """The pydantic model of the offered parameters, under their public names."""
        return _tool_model(self, admin)

    def schema(self, *, admin: bool = False) -> dict[str, Any]:
        """The JSON schema of the offered parameters: types, enums, ranges and a
        description for each; no titles (they only repeat the names)."""
        schema = strip_titles(self.tool_model(admin=admin).model_json_schema())
        schema.pop("description", None)  # the tool's description says it already
        return schema

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Checked arguments by Python name, defaults filled in. Accepts Python
        names and public names; raises the parameter's coded error (the same
        message on every surface) for the first bad value."""
        by_public = {p.public: p.name for p in self.params}
        named = {by_public.get(k, k): v for k, v in args.items()}
        try:
            checked = self.model.model_validate(named)
        except ValidationError as e:
            raise invalid(self, e) from None
        return {p.name: getattr(checked, p.name) for p in self.params}

    def bind_call(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A Python call's arguments by name (a wrong count or name is an
        INVALID_VALUE naming the parameters)."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            names = ", ".join(p.name for p in self.params)
            raise InvalidValueError(f"{self.name}: {e}; its parameters are {names}") from None
        return dict(bound.arguments)

    def start(self, engine: Any, ctx: Any, args: Mapping[str, Any]) -> Operation[T]:
        """The operation for a caller (None for an operation without one) and
        arguments (any surface's names), checked before any store request."""
        return self.build(Caller(engine, ctx, self.access), **self.validate(args))

    def within(self, env: Any, /, *args: P.args, **kwargs: P.kwargs) -> Operation[T]:
        """This operation run inside another (reflection, the memory block, a
        manager) with that operation's environment: the same caller, tenant
        and clock, arguments checked as from any surface.

        Examples:
            >>> from langmem_ext import SQLiteStore
            >>> from langmem_ext.engine import MemoryContext, MemoryEngine, OPERATIONS
            >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
            >>> def remember_twice(env):
            ...     first = yield from OPERATIONS["add"].within(env, "Likes tea")
            ...     again = yield from OPERATIONS["search"].within(env, "tea", limit=5)
            ...     return [h.id for h in again] == [first.id]
            >>> engine.run(remember_twice(engine.env(ctx)))
            True
        """
        return self.build(
            Caller.inside(env, self.access), **self.validate(self.bind_call(args, kwargs))
        )

    def __repr__(self) -> str:
        return f"<operation {self.name}>"


def operation(
    *,
    access: Access,
    tool: str | None = None,
    cli: str | bool = True,
    errors: Iterable[type[LangmemError]] = (),
    caller: bool = True,
    name: str | None = None,
) -> Callable[[Callable[Concatenate[Caller, P], Operation[T]]], Spec[P, T]]:
    """Declare an operation (see the module docs).

    Args:
        access: ``"read"`` or ``"write"`` (read-only callers may not write).
        tool: its name in the agent tool set and over MCP (None: not a tool).
        cli: its ``langmem-ext memories`` command (True: the name with dashes,
            False: none).
        errors: the errors it raises besides bad arguments (documented).
        caller: False for operations that need no caller (health checks).
        name: the operation's name, when the function's cannot be it (``list``).
    """

    def declare(build: Callable[Concatenate[Caller, P], Operation[T]]) -> Spec[P, T]:
        params = _params(build)
        summary = inspect.cleandoc(build.__doc__ or "").split("\n\n")[0].replace("\n", " ")
        hints = typing.get_type_hints(build)
        result = typing.get_args(hints.get("return"))
        raised = _raised(params, errors, access)
        called = name or build.__name__
        return Spec(
            name=called,
            build=build,
            summary=summary,
            access=access,
            tool=tool,
            cli=(called.replace("_", "-") if cli is True else cli or None),
            errors=raised,
            params=params,
            caller=caller,
            result=result[2] if len(result) == 3 else Any,
        )

    return declare


def _raised(
    params: Sequence[Param], declared: Iterable[type[LangmemError]], access: Access
) -> tuple[type[LangmemError], ...]:
    out: list[type[LangmemError]] = [InvalidValueError]
    out += [p.meta.error for p in params]
    out += list(declared)
    if any(p.meta.admin for p in params):
        out.append(TenantAccessError)
    if access == "write":
        out.append(PermissionDeniedError)
    out.append(ProviderError)
    return tuple(dict.fromkeys(out))


def _params(build: Callable[..., Any]) -> tuple[Param, ...]:
    sig = inspect.signature(build)
    hints = typing.get_type_hints(build, include_extras=True)
    out = []
    for i, (name, p) in enumerate(sig.parameters.items()):
        if i == 0:  # the Caller
            continue
        annotation = hints[name]
        field, meta = _field_of(annotation)
        field = FieldInfo.merge_field_infos(
            field, default=... if p.default is inspect.Parameter.empty else p.default
        )
        positional = p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        out.append(Param(name, _bare(annotation), field, meta, positional))
    return tuple(out)


def _field_of(annotation: Any) -> tuple[FieldInfo, Meta]:
    fields = [m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, FieldInfo)]
    metas = [m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, Meta)]
    field = FieldInfo.merge_field_infos(*fields) if fields else FieldInfo()
    return field, metas[0] if metas else Meta()


def _bare(annotation: Any) -> Any:
    """The type without our metadata (pydantic constraints stay)."""
    if getattr(annotation, "__metadata__", None) is None:
        return annotation
    kept = [m for m in annotation.__metadata__ if not isinstance(m, Meta | FieldInfo)]
    base = annotation.__origin__
    return typing.Annotated.__class_getitem__((base, *kept)) if kept else base  # type: ignore[attr-defined]


def _model(name: str, params: Sequence[Param], *, public: bool = False) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for p in params:
        field = p.field
        if public and p.public != p.name:
            field = FieldInfo.merge_field_infos(field, alias=None)
        fields[p.public if public else p.name] = (p.annotation, field)
    return create_model(name, __base__=_Args, **fields)


@functools.cache
def _tool_model(spec: Spec[Any, Any], admin: bool) -> type[BaseModel]:
    model = _model(spec.tool or spec.name, spec.offered(admin=admin), public=True)
    model.__doc__ = spec.summary
    return model


def strip_titles(schema: Any) -> Any:
    """A JSON schema without pydantic's ``title`` keys (they only repeat the names)."""
    if isinstance(schema, dict):
        return {
            k: strip_titles(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [strip_titles(v) for v in schema]
    return schema


# -- the engine's methods ------------------------------------------------------------


def bind(spec: Spec[Any, T]) -> tuple[Callable[..., T], Callable[..., Awaitable[T]]]:
    """The engine's sync and async methods for an operation:
    ``engine.name(ctx, ...)`` runs it on ``store.batch``,
    ``await engine.aname(ctx, ...)`` on ``store.abatch``; an operation without
    a caller takes no ``ctx`` (``engine.health_check()``)."""

    def sync(self: Any, *args: Any, **kwargs: Any) -> T:
        ctx, args = (args[0], args[1:]) if spec.caller else (None, args)
        # Measured from the argument checks on: a refused call counts as an error.
        with self.metrics.measure(spec.name):
            step = spec.start(self, ctx, spec.bind_call(args, kwargs))
            return run_sync(step, self.store, self.config)

    async def async_(self: Any, *args: Any, **kwargs: Any) -> T:
        ctx, args = (args[0], args[1:]) if spec.caller else (None, args)
        with self.metrics.measure(spec.name):
            step = spec.start(self, ctx, spec.bind_call(args, kwargs))
            return await run_async(step, self.store, self.config)

    return _named(sync, spec, ""), _named(async_, spec, "a")


def bind_all(cls: type, specs: Iterable[Spec[Any, Any]]) -> None:
    """Give ``cls`` the sync and async method of every operation in ``specs``
    (``store_fact`` and ``astore_fact``, ...)."""
    for spec in specs:
        sync, async_ = bind(spec)
        setattr(cls, spec.name, sync)
        setattr(cls, "a" + spec.name, async_)


def _named(method: Any, spec: Spec[Any, Any], prefix: str) -> Any:
    method.__name__ = method.__qualname__ = prefix + spec.name
    doc = inspect.cleandoc(spec.build.__doc__ or "")
    if prefix:
        doc = f"Async :meth:`{spec.name}` (same arguments, runs on ``store.abatch``)."
    method.__doc__ = doc
    shown_params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    if spec.caller:
        shown_params.append(inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_ONLY))
    sig = inspect.signature(spec.build)
    shown_params += list(sig.parameters.values())[1:]
    method.__signature__ = sig.replace(parameters=shown_params)
    method.__wrapped_operation__ = spec
    return method


def to_json(value: Any, now: Any = None) -> Any:
    """An operation's result as JSON-ready data, the same on every surface:
    records and hits by their ``to_dict()``, pages with their cursor, other
    dataclasses field by field. Facts and rules get ``effective_confidence``
    at ``now``."""
    if isinstance(value, MemoryRecord):
        out = value.to_dict()
        if now is not None and isinstance(value, Fact | Rule):
            out["effective_confidence"] = round(value.effective_confidence(now), 4)
        return out
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name), now) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_json(v, now) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v, now) for v in value]
    return value


# Public classes say where they are public.
for _cls in (Spec, Param, Caller):
    _cls.__module__ = "langmem_ext.engine"
del _cls
