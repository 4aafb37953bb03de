"""Items partitioned by tenant (PostgreSQL declarative partitioning), opt-in.

A store opened with ``partition_by_tenant`` keeps its items in a table
partitioned by ``LIST (tenant)``, where the tenant is the first label of the
namespace (``("acme", "ada", "memories")`` is tenant ``acme``): each tenant's
items live in a table of their own, which an operator can move, back up,
detach or drop apart from the others. Vectors keep one table, tied to their
item by ``(tenant, item_id)`` (a deleted item's vectors go with it).

A write for a tenant without a partition either creates it in the write's
transaction (``"create"``, the default with ``True``) or is refused before
anything is written (``"refuse"``: :class:`~langmem_ext.errors.InvalidNamespaceError`
naming the tenant; :meth:`add_tenant` creates one). Either way no write is
lost: a failed write changes nothing.

Partitioning is chosen when the store is created: ``setup()`` builds the
partitioned table in an empty schema, refuses a schema that already holds a
plain one, and a store opened without the option on a partitioned schema
adopts it (creating partitions as needed). No I/O here: the stores' drivers
run the statements.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Literal

from ...errors import ConfigurationError, InvalidNamespaceError
from ._steps import Exec, Steps

__all__ = ["PARTITIONED_TABLES", "PartitionMode", "TenantPartitions", "tenant_of"]

logger = logging.getLogger("langmem_ext.stores.postgres")

PartitionMode = Literal["create", "refuse"]

#: The tables of a partitioned store, created before the migrations (whose
#: ``CREATE TABLE IF NOT EXISTS`` then keep them): the columns of every
#: migration, ``tenant`` in the keys, and ids from a sequence (identity
#: columns on partitioned tables need PostgreSQL 17).
PARTITIONED_TABLES = [
    "CREATE SEQUENCE IF NOT EXISTS lmx_items_id_seq",
    """CREATE TABLE lmx_items (
        id bigint NOT NULL DEFAULT nextval('lmx_items_id_seq'),
        tenant text COLLATE "C" NOT NULL,   -- the namespace's first label
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
        tenant text COLLATE "C" GENERATED ALWAYS AS (split_part(prefix, '.', 1)) STORED,
        PRIMARY KEY (item_id, field),
        FOREIGN KEY (tenant, item_id) REFERENCES lmx_items (tenant, id) ON DELETE CASCADE
    )""",
    'CREATE TABLE lmx_tenants (tenant text COLLATE "C" PRIMARY KEY)',
    # One partition per tenant, named from a hash of the tenant (any label
    # is a valid tenant; table names are not); the advisory lock makes two
    # writers creating the same tenant at once take turns.
    """CREATE FUNCTION lmx_add_tenant(t text) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('lmx_tenant'), hashtext(t));
        IF NOT EXISTS (SELECT 1 FROM lmx_tenants WHERE tenant = t) THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF lmx_items FOR VALUES IN (%L)',
                           'lmx_items_' || md5(t), t);
            INSERT INTO lmx_tenants (tenant) VALUES (t);
        END IF;
    END $$""",
]


def tenant_of(prefix: str) -> str:
    """The tenant of a stored namespace (labels joined by ``.``): its first label.

    Examples:
        >>> tenant_of("acme.ada.memories"), tenant_of("acme")
        ('acme', 'acme')
    """
    return prefix.split(".", 1)[0]


class TenantPartitions:
    """The stores' side of partitioning: the setting, setup, and the
    partitions a write needs."""

    #: What a write for a tenant without a partition does; ``None``: the store
    #: is not partitioned.
    _partitions: PartitionMode | None = None
    _partition_option: PartitionMode | None = None

    def _configure_partitions(self, partition_by_tenant: Any) -> None:
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
        self._known_tenants: set[str] = set()

    def _partitions_setup_steps(self) -> Steps:
        """Before the migrations: build the partitioned tables in an empty
        schema, or learn whether the existing items table is partitioned."""
        rows = yield Exec(
            "SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass('lmx_items')", fetch=True
        )
        kind = rows[0][0] if rows else None
        if self._partition_option is not None and kind is None:
            for stmt in PARTITIONED_TABLES:
                yield Exec(stmt)
            kind = "p"
        elif self._partition_option is not None and kind != "p":
            raise ConfigurationError(
                "partition_by_tenant applies to a new store: this schema already holds a "
                "store whose items are not partitioned. Open it without partition_by_tenant, "
                "or create the partitioned store in an empty schema (or database) and copy "
                "the memories over with `langmem-ext memories export` and "
                "`langmem-ext memories import`"
            )
        if kind == "p":
            self._partitions = self._partition_option or "create"
        return None

    def _items_upsert_shape(self) -> tuple[str, str, str, str]:
        """The parts of the items upsert that partitioning changes: the
        tenant column and its value (none unpartitioned), the conflict
        target, and whether a returned row is new (which spares deleting
        vectors it cannot have). A partitioned table cannot return ``xmax``:
        every row counts as re-put there."""
        if self._partitions is None:
            return "", "", "prefix, key", "(xmax = 0)"
        return "tenant, ", "split_part(d.prefix, '.', 1), ", "tenant, prefix, key", "false"

    def _tenant_steps(self, prefixes: Iterable[str]) -> Steps:
        """The partitions a write's namespaces need: created, or the write
        refused before anything is written."""
        wanted = sorted({tenant_of(p) for p in prefixes} - self._known_tenants)
        if not wanted:
            return None
        rows = yield Exec(
            "SELECT tenant FROM lmx_tenants WHERE tenant = ANY(%s::text[])", [wanted], fetch=True
        )
        # Found here, they were committed by earlier transactions: safe to remember.
        self._known_tenants.update(r[0] for r in rows)
        missing = [t for t in wanted if t not in self._known_tenants]
        if not missing:
            return None
        if self._partitions == "refuse":
            raise InvalidNamespaceError(
                f"tenant {missing[0]!r} (the first label of the namespace) has no partition "
                "in this store, which refuses writes for unknown tenants; nothing was "
                f"written. Create it first with store.add_tenant({missing[0]!r}), or open "
                "the store with partition_by_tenant='create'"
            )
        logger.info("creating the partition of tenant(s) %s", ", ".join(map(repr, missing)))
        yield Exec("SELECT lmx_add_tenant(t) FROM unnest(%s::text[]) AS t", [missing])
        return None

    def _add_tenant_steps(self, tenant: str) -> Steps:
        if self._partitions is None:
            raise ConfigurationError(
                "add_tenant needs a store partitioned by tenant (partition_by_tenant=True "
                "when the store is created)"
            )
        if not isinstance(tenant, str) or not tenant or "." in tenant:
            raise InvalidNamespaceError(
                f"a tenant is a namespace's first label: a non-empty string without '.', "
                f"got {tenant!r}"
            )
        yield Exec("SELECT lmx_add_tenant(%s)", [tenant])
        return None
