"""Items and their vectors partitioned by tenant (PostgreSQL declarative
partitioning), opt-in.

A store opened with ``partition_by_tenant`` keeps its items and their vectors
in tables partitioned by ``LIST (tenant)``: each tenant's items and vectors
live in two tables of their own (``lmx_items_<md5>``, ``lmx_vectors_<md5>``,
the vectors' foreign key pointing at their tenant's items table), which an
operator can back up, move, detach or drop apart from the others
(:meth:`drop_tenant`, :meth:`detach_tenant`).

**Which tenant** a namespace belongs to is the store's :class:`TenantKey`,
chosen when the store is created and kept in ``lmx_meta``: by default the
memory engine's layout, where a tenant's namespaces start with ``("tenant",
<tenant>)`` and the namespaces of the single-tenant default (no prefix) are
tenant ``"default"``; or any template such as ``("{tenant}",)`` (the first
label) or ``("org", "{tenant}")``.

**Creating a partition** never happens inside a write's transaction: a
``CREATE TABLE ... PARTITION OF`` there takes an ACCESS EXCLUSIVE lock on the
parent table, waits for every transaction that read any tenant, blocks every
read queued behind it until the write commits, and deadlocks batches that
read before they write. Instead a write first makes sure its tenants exist,
each in a short transaction of its own: the two tables are created on their
own, then attached (``ATTACH PARTITION`` takes SHARE UPDATE EXCLUSIVE on the
parents, which readers and writers of other tenants never wait for). All
tenant creations take one advisory lock first, so they take turns and hold
the parents' locks in one order (items, then vectors): no deadlock. A write
whose batch then fails leaves its tenants' (empty) partitions behind.

A write for a tenant without a partition either creates it (``"create"``, the
default with ``True``) or is refused before anything is written
(``"refuse"``: :class:`~langmem_ext.errors.InvalidNamespaceError` naming the
tenant; :meth:`add_tenant` creates one).

Partitioning is chosen when the store is created: ``setup()`` builds the
partitioned tables in an empty schema, refuses a schema that already holds a
plain store, and a store opened without the option on a partitioned schema
adopts it, with its tenant key. No I/O here: the stores' drivers run the
statements.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from ...errors import ConfigurationError, InvalidNamespaceError
from .._ops import decode_namespace
from ._steps import Exec, Steps

__all__ = [
    "DEFAULT_TENANT",
    "ENGINE_TENANT_KEY",
    "PARTITIONED_TABLES",
    "PartitionMode",
    "TenantKey",
    "TenantPartitions",
]

logger = logging.getLogger("langmem_ext.stores.postgres")

PartitionMode = Literal["create", "refuse"]

#: The tenant of a namespace that the tenant key does not match.
DEFAULT_TENANT = "default"

#: The memory engine's layout: an authenticated tenant's namespaces start with
#: ``("tenant", <tenant>)``; the single-tenant default's have no prefix.
ENGINE_TENANT_KEY = ("tenant", "{tenant}")

#: ``pg_advisory_xact_lock`` key taken by every tenant creation ("lmx" + 3).
TENANT_LOCK_KEY = 0x6C6D7803

#: The tables of a partitioned store, created before the migrations (whose
#: ``CREATE TABLE IF NOT EXISTS`` and ``ADD COLUMN IF NOT EXISTS`` then keep
#: them): the columns of every migration, ``tenant`` in the keys, and ids from
#: a sequence (identity columns on partitioned tables need PostgreSQL 17).
#: The vectors' foreign key is declared per tenant, from its vectors table to
#: its items table, so that a tenant's two tables detach or drop together.
PARTITIONED_TABLES = [
    "CREATE SEQUENCE IF NOT EXISTS lmx_items_id_seq",
    """CREATE TABLE lmx_items (
        id bigint NOT NULL DEFAULT nextval('lmx_items_id_seq'),
        tenant text COLLATE "C" NOT NULL,   -- from the namespace, by the tenant key
        prefix text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        value jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz,
        ttl_minutes double precision,
        tsv tsvector,
        PRIMARY KEY (tenant, id),
        UNIQUE (tenant, prefix, key)
    ) PARTITION BY LIST (tenant)""",
    "ALTER SEQUENCE lmx_items_id_seq OWNED BY lmx_items.id",
    """CREATE TABLE lmx_vectors (
        item_id bigint NOT NULL,
        field text NOT NULL,
        prefix text COLLATE "C" NOT NULL,
        embedding vector NOT NULL,
        embedding_half halfvec GENERATED ALWAYS AS (embedding::halfvec) STORED,
        cell integer NOT NULL DEFAULT -1,
        tenant text COLLATE "C" NOT NULL,
        PRIMARY KEY (item_id, field, tenant)
    ) PARTITION BY LIST (tenant)""",
    'CREATE TABLE lmx_tenants (tenant text COLLATE "C" PRIMARY KEY)',
    # A tenant's two tables, named from a hash of the tenant (any label is a
    # valid tenant; table names are not), created apart and then attached;
    # see the module docstring for the locks. Returns whether it created them.
    f"""CREATE FUNCTION lmx_add_tenant(t text) RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
        items text := 'lmx_items_' || md5(t);
        vectors text := 'lmx_vectors_' || md5(t);
    BEGIN
        PERFORM pg_advisory_xact_lock({TENANT_LOCK_KEY});
        IF EXISTS (SELECT 1 FROM lmx_tenants WHERE tenant = t) THEN
            RETURN false;
        END IF;
        EXECUTE format('CREATE TABLE %I (LIKE lmx_items INCLUDING ALL)', items);
        -- rows up to 4 kB inline, as on a plain store (see the migrations)
        EXECUTE format('CREATE TABLE %I (LIKE lmx_vectors INCLUDING ALL) '
                       'WITH (toast_tuple_target = 4080)', vectors);
        EXECUTE format('ALTER TABLE %I ADD FOREIGN KEY (tenant, item_id) '
                       'REFERENCES %I (tenant, id) ON DELETE CASCADE', vectors, items);
        EXECUTE format('ALTER TABLE lmx_items ATTACH PARTITION %I FOR VALUES IN (%L)', items, t);
        EXECUTE format('ALTER TABLE lmx_vectors ATTACH PARTITION %I FOR VALUES IN (%L)',
                       vectors, t);
        INSERT INTO lmx_tenants (tenant) VALUES (t);
        RETURN true;
    END $$""",
]


class TenantKey:
    """Where a namespace names its tenant: a template of its first labels, one
    of them ``"{tenant}"``; ``"*"`` or any other ``"{placeholder}"`` matches
    any label, other labels match themselves. A namespace that does not start
    with the template's labels belongs to tenant ``"default"``.

    Examples:
        >>> engine = TenantKey.of(None)
        >>> engine.tenant_of("tenant.acme.user.ada"), engine.tenant_of("user.ada")
        ('acme', 'default')
        >>> TenantKey.of(("{region}", "{tenant}")).tenant_of("eu.acme.ada")
        'acme'
        >>> TenantKey.of(("org", "{tenant}")).template
        ('org', '{tenant}')
    """

    __slots__ = ("_literals", "_position", "template")

    def __init__(self, template: tuple[str, ...]) -> None:
        self.template = template
        self._position = template.index("{tenant}")
        self._literals = [(i, label) for i, label in enumerate(template) if label != "*"][:-1]

    @classmethod
    def of(cls, option: Any) -> TenantKey:
        """The key of a ``tenant_key=`` option (``None`` or ``"engine"``: the
        memory engine's layout), checked."""
        if option is None or option == "engine":
            return cls(ENGINE_TENANT_KEY)
        if isinstance(option, str) or not isinstance(option, Sequence) or not option:
            raise _bad_key(option, "give a tuple of labels such as ('org', '{tenant}')")
        labels: list[str] = []
        for label in option:
            if not isinstance(label, str) or not label or "." in label:
                raise _bad_key(option, f"{label!r} is not a namespace label")
            placeholder = label.startswith("{") and label.endswith("}")
            labels.append("*" if placeholder and label != "{tenant}" else label)
        if labels.count("{tenant}") != 1:
            raise _bad_key(option, "name the tenant's label exactly once, as '{tenant}'")
        position = labels.index("{tenant}")
        if position != len(labels) - 1:
            raise _bad_key(
                option,
                f"end it at '{{tenant}}' ({tuple(labels[: position + 1])!r}): the labels "
                "after the tenant do not decide it",
            )
        return cls(tuple(labels))

    def tenant_of(self, prefix: str) -> str:
        """The tenant of a stored namespace (its labels joined by ``.``)."""
        labels = decode_namespace(prefix)
        if len(labels) <= self._position or any(labels[i] != lit for i, lit in self._literals):
            return DEFAULT_TENANT
        return labels[self._position]

    def scope_tenant(self, prefix: str) -> str | None:
        """The tenant of every namespace at or below ``prefix``, or ``None``
        when they may have several.

        Examples:
            >>> engine = TenantKey.of(None)
            >>> engine.scope_tenant("tenant.acme"), engine.scope_tenant("tenant")
            ('acme', None)
            >>> engine.scope_tenant("user"), engine.scope_tenant("")
            ('default', None)
        """
        labels = decode_namespace(prefix) if prefix else ()
        if any(labels[i] != lit for i, lit in self._literals if i < len(labels)):
            return DEFAULT_TENANT
        if len(labels) <= self._position:
            return None
        return labels[self._position]

    def describe(self) -> str:
        return repr(self.template)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TenantKey) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)


def _bad_key(option: Any, why: str) -> ConfigurationError:
    return ConfigurationError(
        f"tenant_key {option!r} cannot name a namespace's tenant: {why}. Use 'engine' "
        "(the memory engine's layout: ('tenant', '{tenant}'), other namespaces are tenant "
        "'default'), ('{tenant}',) for the first label, or a template such as "
        "('org', '{tenant}')"
    )


def check_tenant(tenant: Any) -> str:
    if not isinstance(tenant, str) or not tenant or "." in tenant:
        raise InvalidNamespaceError(
            "a tenant is one namespace label (the one the store's tenant_key names): a "
            f"non-empty string without '.', got {tenant!r}"
        )
    return tenant


class TenantPartitions:
    """The stores' side of partitioning: the settings, setup, the partitions a
    write needs, and dropping or detaching a tenant."""

    #: What a write for a tenant without a partition does; ``None``: the store
    #: is not partitioned.
    _partitions: PartitionMode | None = None
    _partition_option: PartitionMode | None = None
    #: The tenant key in use (learnt at setup), and the one asked for.
    _tenant_key: TenantKey = TenantKey(ENGINE_TENANT_KEY)
    _tenant_key_option: TenantKey | None = None

    def _configure_partitions(self, partition_by_tenant: Any, tenant_key: Any = None) -> None:
        if partition_by_tenant is None or partition_by_tenant is False:
            self._partition_option = None
        elif partition_by_tenant is True:
            self._partition_option = "create"
        elif partition_by_tenant in ("create", "refuse"):
            self._partition_option = partition_by_tenant
        else:
            raise ConfigurationError(
                "partition_by_tenant must be True, False, 'create' (a write for a new "
                f"tenant creates its partition) or 'refuse', got {partition_by_tenant!r}"
            )
        self._tenant_key_option = None if tenant_key is None else TenantKey.of(tenant_key)
        self._known_tenants: set[str] = set()

    def _partitions_setup_steps(self) -> Steps:
        """Before the migrations: build the partitioned tables in an empty
        schema, or learn whether the existing items table is partitioned."""
        rows = yield Exec(
            "SELECT c.relkind, (SELECT relkind FROM pg_class WHERE oid = "
            "to_regclass('lmx_vectors')) FROM pg_class c WHERE c.oid = to_regclass('lmx_items')",
            fetch=True,
        )
        kind, vectors_kind = rows[0] if rows else (None, None)
        if self._partition_option is not None and kind is None:
            for stmt in PARTITIONED_TABLES:
                yield Exec(stmt)
            kind = vectors_kind = "p"
        elif self._partition_option is not None and kind != "p":
            raise ConfigurationError(
                "partition_by_tenant applies to a new store: this schema already holds a "
                "store whose items are not partitioned. Open it without partition_by_tenant, "
                "or create the partitioned store in an empty schema (or database) and copy "
                "the memories over with `langmem-ext memories export` and "
                "`langmem-ext memories import`"
            )
        elif self._partition_option is None and self._tenant_key_option is not None and kind != "p":
            raise ConfigurationError(
                "tenant_key applies to a store partitioned by tenant: pass "
                "partition_by_tenant=True as well (when the store is created)"
            )
        if kind == "p" and vectors_kind != "p":
            raise ConfigurationError(
                "this schema holds a store partitioned by tenant by an earlier development "
                "version (its vectors are not partitioned, so a tenant cannot be dropped "
                "alone). Create a new store in an empty schema and copy the memories over "
                "with `langmem-ext memories export` and `langmem-ext memories import`"
            )
        if kind == "p":
            self._partitions = self._partition_option or "create"
        return None

    def _tenant_key_setup_steps(self) -> Steps:
        """After the migrations (``lmx_meta`` exists): the tenant key a new
        partitioned store keeps, or the one an existing store was created with."""
        if self._partitions is None:
            return None
        asked = self._tenant_key_option
        rows = yield Exec("SELECT value FROM lmx_meta WHERE key = 'tenant_key'", fetch=True)
        if not rows:
            key = asked or TenantKey.of(None)
            yield Exec(
                "INSERT INTO lmx_meta (key, value) VALUES ('tenant_key', %s)",
                [json.dumps(list(key.template))],
            )
        else:
            key = TenantKey.of(tuple(json.loads(rows[0][0])))
            if asked is not None and asked != key:
                raise ConfigurationError(
                    f"this store's partitions are keyed by tenant_key {key.describe()}, "
                    f"chosen when it was created, not {asked.describe()}. Open it with that "
                    "key or without tenant_key; to change the key, create a new store and copy "
                    "the memories over with `langmem-ext memories export` and "
                    "`langmem-ext memories import`"
                )
        self._tenant_key = key
        return None

    def _tenants_of(self, prefixes: Iterable[str]) -> list[str]:
        """The tenants of stored namespaces (sorted, no repeats)."""
        of = self._tenant_key.tenant_of
        return sorted({of(p) for p in prefixes})

    def _scope_tenant(self, prefix: str) -> str | None:
        """The one tenant of every namespace at or below ``prefix``, for the
        planner to prune the other partitions; ``None`` when unpartitioned or
        when the scope spans tenants (too short to reach the tenant's label
        and not yet outside the tenant key)."""
        if self._partitions is None:
            return None
        return self._tenant_key.scope_tenant(prefix)

    def _tenant_column(self, prefixes: Sequence[str]) -> list[str] | None:
        """The ``tenant`` column of rows with these namespaces; ``None``
        unpartitioned (no such column)."""
        if self._partitions is None:
            return None
        of = self._tenant_key.tenant_of
        return [of(p) for p in prefixes]

    def _tenants_wanted(self, prefixes: Iterable[str]) -> list[str]:
        """The tenants of a write's namespaces not known to have a partition
        (none unpartitioned): run :meth:`_tenant_steps` on them first."""
        if self._partitions is None:
            return []
        return [t for t in self._tenants_of(prefixes) if t not in self._known_tenants]

    def _items_upsert_shape(self) -> tuple[str, str, str]:
        """The parts of the items upsert that partitioning changes: the tenant
        column, the conflict target, and whether a returned row is new (which
        spares deleting vectors it cannot have). A partitioned table cannot
        return ``xmax``: every row counts as re-put there."""
        if self._partitions is None:
            return "", "prefix, key", "(xmax = 0)"
        return "tenant, ", "tenant, prefix, key", "false"

    def _tenant_steps(self, tenants: Sequence[str], create: bool = True) -> Steps:
        """Run outside any transaction (autocommit), before the write that
        needs them: the tenants' partitions created, each in a transaction of
        its own, or the write refused before anything is written."""
        wanted = [t for t in tenants if t not in self._known_tenants]
        if not wanted:
            return None
        rows = yield Exec(
            "SELECT tenant FROM lmx_tenants WHERE tenant = ANY(%s::text[])", [wanted], fetch=True
        )
        # Found here, they were committed by earlier transactions: safe to remember.
        self._known_tenants.update(r[0] for r in rows)
        missing = [t for t in wanted if t not in self._known_tenants]
        if missing and self._partitions == "refuse":
            raise InvalidNamespaceError(
                f"tenant {missing[0]!r} has no partition in this store, which refuses writes "
                f"for unknown tenants (its tenant_key is {self._tenant_key.describe()}); "
                f"nothing was written. Create it first with store.add_tenant({missing[0]!r}), "
                "or open the store with partition_by_tenant='create'"
            )
        if not missing or not create:
            return None
        logger.info("creating the partition of tenant(s) %s", ", ".join(map(repr, missing)))
        for t in missing:
            yield Exec("SELECT lmx_add_tenant(%s)", [t])
            self._known_tenants.add(t)
        return None

    def _partitioned(self, what: str) -> None:
        if self._partitions is None:
            raise ConfigurationError(
                f"{what} needs a store partitioned by tenant (partition_by_tenant=True when "
                "the store is created)"
            )

    def _add_tenant_steps(self, tenant: str) -> Steps:
        self._partitioned("add_tenant")
        t = check_tenant(tenant)
        yield Exec("SELECT lmx_add_tenant(%s)", [t])
        self._known_tenants.add(t)
        return None

    def _remove_tenant_steps(self, tenant: str, keep: bool) -> Steps:
        """Run outside any transaction (autocommit): detach the tenant's items
        table, then its vectors table, each ``CONCURRENTLY`` (other tenants'
        reads and writes go on; it waits for the transactions already using
        them), then drop them, or rename them to ``lmx_detached_…`` and return
        the new names (``keep``). Safe to run again after an interruption."""
        self._partitioned("drop_tenant" if not keep else "detach_tenant")
        t = check_tenant(tenant)
        self._known_tenants.discard(t)
        stamp = "floor(extract(epoch FROM clock_timestamp()))::bigint"
        names = (
            yield Exec(
                "SELECT 'lmx_items_' || md5(%s), 'lmx_vectors_' || md5(%s), "
                f"'lmx_detached_items_' || left(md5(%s), 20) || '_' || {stamp}, "
                f"'lmx_detached_vectors_' || left(md5(%s), 20) || '_' || {stamp}",
                [t, t, t, t],
                fetch=True,
            )
        )[0]
        items, vectors = names[0], names[1]
        for parent, child in (("lmx_items", items), ("lmx_vectors", vectors)):
            state = yield Exec(
                "SELECT inhdetachpending FROM pg_inherits "
                "WHERE inhrelid = to_regclass(%s) AND inhparent = %s::regclass",
                [child, parent],
                fetch=True,
            )
            if state:  # an interrupted detach is finished, not started again
                how = "FINALIZE" if state[0][0] else "CONCURRENTLY"
                yield Exec(f'ALTER TABLE {parent} DETACH PARTITION "{child}" {how}')
        exists = (
            yield Exec(
                "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
                [items, vectors],
                fetch=True,
            )
        )[0]
        kept: tuple[str, str] = (names[2], names[3])
        if keep:
            if exists[0]:
                yield Exec(f'ALTER TABLE "{items}" RENAME TO "{names[2]}"')
            if exists[1]:
                yield Exec(f'ALTER TABLE "{vectors}" RENAME TO "{names[3]}"')
        elif exists[0] or exists[1]:
            yield Exec(f'DROP TABLE IF EXISTS "{vectors}", "{items}"')
        yield Exec("DELETE FROM lmx_tenants WHERE tenant = %s", [t])
        self._known_tenants.discard(t)
        if not (exists[0] or exists[1]):
            return None
        logger.info("tenant %r %s", t, f"detached as {kept[0]}, {kept[1]}" if keep else "dropped")
        return kept if keep else None

    def _forget_tenants(self, error: BaseException) -> None:
        """A write found a tenant's partition gone (dropped or detached by
        another process): forget the tenants this process knows, so the next
        write finds out again."""
        if self._partitions is not None and "no partition of relation" in str(error):
            self._known_tenants.clear()
