"""The catalogue's erasure: ``erase`` removes everything of one user, or of
one tenant, for good (see :mod:`..runtime.catalogue`).

Unlike ``forget`` and ``delete``, nothing stays: not the archive, not the
audit events (they hold the content), not the vectors. What one user's
erase covers, in the tenant's namespaces (:mod:`..identity.layout`):

* the user's space and every namespace below it (the user's own agents);
* every session of the user (``_sessions/<space>/*``);
* the user's bookkeeping: ``_meta/<space…>/*`` (archive, events, refs,
  profile, reflection cursors, entities) of the space, of what is below it
  and of the sessions;
* in the shared layers (team, org, project, agent, company): the memories
  the user created (found by the user's ``created`` events), with their
  archive entries and events, and every other event the user's actions left
  there (an event may hold content);
* the namespaces the app configured for the user (``namespaces``, a Python
  argument: the templates of its running summaries, prompt versions or
  LangMem tools, e.g. ``("summaries", "{user_id}")``), filled with the
  user's id as those components fill them;
* in the store: the vectors and keyword entries of all that, the cached
  embeddings of their texts and every cached query (a query cannot be traced
  to its author; the cache refills itself), with the bytes overwritten on
  this package's stores (see ``SQLiteStore.purge`` / ``PostgresStore.purge``).

Everything goes in one store transaction together with one content-free
**erasure record** (``_meta/_erasures/log``): a hash of whom, who asked,
when, and how many items per place, never what they said. A run killed in
the middle leaves all or nothing; running it again finishes it. A tenant's
erase removes every namespace of the tenant (its record is kept outside it).

What lives above the engine (a reflection executor's queued turns, the memory
browser's signed-in sessions) is dropped by those components' own hooks,
which the surfaces call after the engine's erase; see
``ReflectionExecutor.erase_user`` and ``Sessions.close_user``.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> engine, ada = MemoryEngine(SQLiteStore()), MemoryContext(user_id="ada")
    >>> _ = engine.add(ada, "Allergic to peanuts")
    >>> engine.erase(ada, dry_run=True).counts["memories"]
    1
    >>> receipt = engine.erase(ada, confirm="ada")
    >>> receipt.counts["memories"], receipt.counts["events"], engine.search(ada, "peanuts")
    (1, 1, [])
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langgraph.store.base import ListNamespacesOp, MatchCondition, PutOp
from pydantic import Field

from ...errors import InvalidOperationError, MemoryNotFoundError, PermissionDeniedError
from ..identity import layout
from ..identity.namespaces import NamespaceTemplate
from ..identity.tenancy import fill_space
from ..records.checks import shown
from ..records.models import new_id
from ..runtime.catalogue import Caller, Meta, Spec, operation
from ..runtime.env import Env
from ..runtime.planning import paged
from ..runtime.requests import Batch, Operation, Purge
from .params import Tenant

__all__ = ["ERASURES", "ErasureReceipt", "erase"]

#: Where erasure records are kept (under the tenant's root, or the store's
#: root for a tenant's own erase).
ERASURES = (layout.META, "_erasures", "log")


@dataclass
class ErasureReceipt:
    """What an erase removed (or, in a dry run, would remove)."""

    #: ``"user"`` or ``"tenant"``.
    scope: str
    #: The user or tenant erased.
    subject: str
    tenant: str
    #: Items removed per place (``memories``, ``sessions``, ``archive``,
    #: ``events``, ``profile``, ``reflection``, ``entities``, ``refs``,
    #: ``shared``, ``app``...), and ``vectors`` and ``embedding_cache``.
    counts: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    #: When it ran (the erasure record's time).
    at: str = ""
    #: Whether the bytes were overwritten too (this package's stores).
    scrubbed: bool = False
    #: The id of the erasure record (empty in a dry run).
    record: str = ""

    @property
    def total(self) -> int:
        """Items removed, every place together (vectors and cache entries aside)."""
        return sum(v for k, v in self.counts.items() if k not in ("vectors", "embedding_cache"))

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "total": self.total}


UserId = Annotated[
    str | None,
    Field(
        min_length=1,
        description="The user to erase; default: yourself. Admins may name another user.",
    ),
]
Confirm = Annotated[
    str | None,
    Field(
        description="Required to erase: repeat the user id (or, with scope 'tenant', the "
        "tenant id). Without it nothing is erased and the error says what would be."
    ),
]
DryRun = Annotated[bool, Field(description="Only count what would be erased.")]
EraseScope = Annotated[
    Literal["user", "tenant"],
    Field(description="'user' (one user) or 'tenant' (everything of the tenant; admins only)."),
]
AppNamespaces = Annotated[
    Sequence[Any] | None,
    Field(
        description="The app's namespace templates of the user's other data (running "
        "summaries, prompt versions), e.g. ('summaries', '{user_id}')."
    ),
    Meta(internal=True),
]


@operation(access="write", errors=(MemoryNotFoundError, InvalidOperationError))
def erase(
    c: Caller,
    user: UserId = None,
    *,
    scope: EraseScope = "user",
    confirm: Confirm = None,
    dry_run: DryRun = False,
    namespaces: AppNamespaces = None,
    tenant: Tenant = None,
) -> Operation[ErasureReceipt]:
    """Erase everything of a user (or, for admins, of a tenant) for good:
    memories in every layer, sessions, archive, audit events, profile,
    reflection state, vectors and cached embeddings. Returns a receipt with
    counts per place; one content-free erasure record is kept."""
    env = c.env(tenant)
    ctx = env.ctx
    if scope == "tenant":
        if not ctx.is_admin:
            raise PermissionDeniedError("only an admin may erase a tenant")
        if env.tenant == layout.DEFAULT_TENANT:
            raise InvalidOperationError(
                "the default tenant is the whole store; erase its users one by one"
            )
        subject = env.tenant
    else:
        subject = user or ctx.user_id or ""
        if not subject:
            raise InvalidOperationError("erase needs a user: pass user (or call as that user)")
        if subject != ctx.user_id and not ctx.is_admin:
            raise PermissionDeniedError(
                f"you may erase only your own memories, not user {shown(subject)}'s "
                "(erasing another user needs the memory:admin permission)"
            )
    prefixes, names = _places(env, scope, subject, namespaces)
    shared_names: dict[tuple[str, ...], str] = {}
    keys: list[tuple[tuple[str, ...], str]] = []
    if scope == "user":
        more, keys, shared_names = yield from _bookkeeping(env, subject)
        prefixes += more
    digest = _subject_hash(env.tenant, scope, subject)
    log_ns = (*(() if scope == "tenant" else layout.tenant_root(env.tenant)), *ERASURES)
    preview = yield Purge(prefixes, keys, (), True)
    counts = _counts(preview, names, shared_names)
    receipt = ErasureReceipt(scope, subject, env.tenant, counts, dry_run, env.stamp)
    if dry_run:
        return receipt
    if not sum(preview.namespaces.values()):
        earlier = yield from paged(env.caps, log_ns, {"subject": digest})
        if not earlier:
            raise MemoryNotFoundError(
                f"nothing is stored for {scope} {shown(subject)} in tenant "
                f"{shown(env.tenant)}; check the id (nothing was changed)",
                subject=subject,
            )
        # Erased before (perhaps by a run that stopped before overwriting):
        # running it again finishes the overwrite; the first record stays.
        done = yield Purge((), (), (), False)
        return dataclasses.replace(
            receipt, counts={k: 0 for k in counts}, scrubbed=done.scrubbed, record=earlier[0].key
        )
    if confirm != subject:
        raise InvalidOperationError(
            f"erasing {scope} {shown(subject)} removes {_summary(counts)} for good; "
            f"pass confirm={subject!r} to go ahead (or dry_run to only count)",
            would_remove=counts,
        )
    record_id = new_id()
    record = {
        "action": "erased",
        "scope": scope,
        "subject": digest,
        "actor": ctx.actor,
        "at": env.stamp,
        "counts": counts,
    }
    report = yield Purge(prefixes, keys, [PutOp(log_ns, record_id, record, False)], False)
    final = _counts(report, names, shared_names)
    return dataclasses.replace(receipt, counts=final, scrubbed=report.scrubbed, record=record_id)


def _subject_hash(tenant: str, scope: str, subject: str) -> str:
    return hashlib.sha256(f"{tenant}\x00{scope}\x00{subject}".encode()).hexdigest()[:32]


def _places(
    env: Env, scope: str, subject: str, namespaces: Sequence[Any] | None
) -> tuple[list[tuple[str, ...]], dict[tuple[str, ...], str]]:
    """The namespace subtrees an erase removes, and what each is called in
    the receipt (bookkeeping ones are named by their kind)."""
    root = layout.tenant_root(env.tenant)
    if scope == "tenant":
        return [root], {root: "memories"}
    ctx = env.ctx
    target = ctx if subject == ctx.user_id else _other_user(env, subject)
    space = tuple(target.own_space())
    names: dict[tuple[str, ...], str] = {
        layout.user_space(env.tenant, space): "memories",
        (*root, layout.SESSIONS, layout.encode(space)): "sessions",
    }
    config: Any = {"configurable": {"user_id": subject, "langgraph_user_id": subject}}
    for template in namespaces or ():
        # As the components fill them (running summaries, prompt versions):
        # from the user's id, without a tenant prefix.
        names[tuple(NamespaceTemplate(template)(config))] = "app"
    return list(names), names


def _other_user(env: Env, user_id: str) -> Any:
    """Another user of the caller's tenant, as their own calls would be seen:
    the space from the engine's namespace template, else the identity rule."""
    other = dataclasses.replace(
        env.ctx, user_id=user_id, actor=None, agent_id=None, session_id=None, space=None
    )
    return fill_space(other, env.config.namespace)


Keys = list[tuple[tuple[str, ...], str]]


def _bookkeeping(
    env: Env, subject: str
) -> Operation[tuple[list[tuple[str, ...]], Keys, dict[tuple[str, ...], str]]]:
    """The bookkeeping namespaces of the user (found by listing ``_meta``),
    and in the shared layers: the memories the user created, their archive
    entries and all their events, and every other event of the user."""
    root = layout.tenant_root(env.tenant)
    meta_root = (*root, layout.META)
    [found] = yield Batch(
        [ListNamespacesOp((MatchCondition("prefix", meta_root),), None, 100_000, 0)]
    )
    space = tuple(
        (env.ctx if subject == env.ctx.user_id else _other_user(env, subject)).own_space()
    )
    own = layout.encode(space)
    sessions = layout.encode((layout.SESSIONS, own)) + "/"
    prefixes: list[tuple[str, ...]] = []
    keys: Keys = []
    names: dict[tuple[str, ...], str] = {}
    for ns in found:
        ns = tuple(ns)
        if len(ns) != len(meta_root) + 2:
            continue
        label, kind = ns[len(meta_root)], ns[-1]
        if label == own or label.startswith(own + "/") or label.startswith(sessions):
            names[ns] = kind
            prefixes.append(ns)
        elif label.startswith(layout.SHARED + "/") and kind == "events":
            events = yield from paged(env.caps, ns, {})
            created = {
                e.value.get("memory_id")
                for e in events
                if e.value.get("actor") == subject and e.value.get("action") == "created"
            }
            layer_ns = (*root, *label.split("/"))
            archive = (*meta_root, label, "archive")
            for e in events:
                if e.value.get("actor") == subject or e.value.get("memory_id") in created:
                    keys.append((ns, e.key))
                    names[ns] = "shared_events"
            for mid in created:
                if isinstance(mid, str) and mid:
                    keys += [(layer_ns, mid), (archive, mid)]
                    names[layer_ns] = names[archive] = "shared"
    return prefixes, keys, names


def _counts(
    report: Any, names: dict[tuple[str, ...], str], shared: dict[tuple[str, ...], str]
) -> dict[str, int]:
    counts: dict[str, int] = {"memories": 0, "sessions": 0}
    labels = {**names, **shared}
    for ns, n in report.namespaces.items():
        ns = tuple(ns)
        kind = labels.get(ns)
        if kind is None:  # below a named subtree: the nearest ancestor's name
            kind = next(
                (labels[ns[:i]] for i in range(len(ns) - 1, 0, -1) if ns[:i] in labels), "memories"
            )
        counts[kind] = counts.get(kind, 0) + n
    counts["vectors"] = report.vectors
    counts["embedding_cache"] = report.cache_entries
    return counts


def _summary(counts: dict[str, int]) -> str:
    parts = [f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n]
    return ", ".join(parts) or "nothing"


# The examples in the declarations' docstrings are run by doctest like any other.
__test__ = {s.name: s.build for s in list(globals().values()) if isinstance(s, Spec)}
