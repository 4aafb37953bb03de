"""Tenancy: the tenant comes from the authenticated caller; non-admins never
select one; admins cross only with elevation; no operation of one tenant reads,
changes or counts another's data (property-based, over random sequences)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.errors import IdentityError, MemoryNotFoundError, TenantAccessError
from tests.embeddings import WordEmbeddings

from .conftest import START


def auth_config(tenant: str, identity: str = "ada", **extra) -> dict:
    user = {"identity": identity, "tenant_id": tenant, "permissions": extra.pop("perms", [])}
    user.update(extra)
    return {"configurable": {"langgraph_auth_user": user}}


def test_tenant_comes_from_langgraph_auth_user(eng):
    f = eng.store_fact(auth_config("acme"), "user", "name", "Ada")
    assert f.tenant_id == "acme" and f.layer_id == "ada" and f.created_by == "ada"
    assert eng.get(auth_config("globex"), f.id) is None
    assert eng.get(auth_config("acme"), f.id).id == f.id


def test_explicit_context_for_non_langgraph_callers(eng):
    ctx = MemoryContext("acme.com", user_id="ada")  # dots in ids are fine
    f = eng.store_fact(ctx, "user", "name", "Ada")
    assert eng.get({"configurable": {"memory_context": ctx}}, f.id).id == f.id


def test_unauthenticated_runs_use_the_default_tenant(eng, store):
    f = eng.store_fact({"configurable": {"user_id": "ada"}}, "user", "name", "Ada")
    assert f.tenant_id == "default"
    # the default tenant adds no prefix: the memory sits where the tools look
    assert store.get(("user", "ada"), f.id).value["content"] == "Ada"
    assert eng.get(auth_config("default", "bob"), f.id) is None


def test_an_auth_user_without_tenant_is_the_default_tenant(eng):
    f = eng.store_fact(auth_config(None), "user", "name", "Ada")
    assert f.tenant_id == "default"
    assert eng.get({"configurable": {"user_id": "ada"}}, f.id).id == f.id


def test_auth_user_is_never_overridden_by_configurable(eng):
    f = eng.store_fact(auth_config("acme"), "user", "name", "Ada")
    spoof = auth_config("acme", "bob")
    spoof["configurable"]["user_id"] = "ada"
    with pytest.raises(IdentityError, match="authenticated user is 'bob'"):
        eng.get(spoof, f.id)
    with pytest.raises(IdentityError):
        eng.search(spoof, "Ada")
    assert eng.get(auth_config("acme", "bob"), f.id) is None


def test_non_admin_tenant_override_rejected(eng):
    with pytest.raises(TenantAccessError):
        eng.search(auth_config("acme"), "x", tenant="globex")


def test_admin_cross_tenant_requires_elevation(eng):
    f = eng.store_fact(auth_config("globex", "gina"), "user", "name", "Gina")
    admin = auth_config("acme", "root", perms=["memory:admin"], user_id="gina")
    admin["configurable"]["user_id"] = "gina"
    with pytest.raises(TenantAccessError) as e:
        eng.get(admin, f.id, tenant="globex")
    assert "elevat" in str(e.value)
    elevated = auth_config("acme", "root", perms=["memory:admin", "memory:elevate"])
    elevated["configurable"]["user_id"] = "gina"
    assert eng.get(elevated, f.id, tenant="globex").content == "Gina"
    assert eng.get(elevated, f.id) is None  # without the selector: its own tenant


# -- property: tenants are isolated ------------------------------------------------

SUBJECTS = st.sampled_from(["color", "city", "food"])
WORDS = st.sampled_from(["tea", "coffee", "paris", "rome", "blue", "green"])
OP = st.one_of(
    st.tuples(st.just("fact"), SUBJECTS, WORDS),
    st.tuples(st.just("episode"), WORDS, st.just(None)),
    st.tuples(st.just("rule"), WORDS, st.just(None)),
    st.tuples(st.just("forget"), st.integers(0, 9), st.booleans()),
    st.tuples(st.just("confirm"), st.integers(0, 9), st.booleans()),
    st.tuples(st.just("helpful"), st.integers(0, 9), st.booleans()),
    st.tuples(st.just("recall"), WORDS, st.just(None)),
    st.tuples(st.just("search"), WORDS, st.just(None)),
    st.tuples(st.just("sweep"), st.just(None), st.just(None)),
)
SEQ = st.lists(st.tuples(st.sampled_from("AB"), OP), min_size=1, max_size=25)
CTX = {t: MemoryContext(t, user_id="same-user") for t in "AB"}  # same user id on purpose


class Clock:
    now = START

    def __call__(self):
        return self.now


def run(store, steps, only=None):
    clock = Clock()
    engine = MemoryEngine(store, clock=clock)
    created: dict[str, list[tuple[str, str]]] = {"A": [], "B": []}
    for i, (tenant, (op, a, b)) in enumerate(steps):
        if only and tenant != only:
            continue
        clock.now = START + timedelta(hours=i)
        ctx = CTX[tenant]
        # b=True on id ops: aim at the *other* tenant's memory, which must fail
        target_tenant = ("B" if tenant == "A" else "A") if b is True else tenant
        pool = created[target_tenant]
        if op == "fact":
            created[tenant].append(("fact", engine.store_fact(ctx, a, "is", f"{a} {b}").id))
        elif op == "episode":
            created[tenant].append(("episode", engine.store_episode(ctx, a).id))
        elif op == "rule":
            created[tenant].append(("rule", engine.store_rule(ctx, f"prefer {a}").id))
        elif op in ("forget", "confirm", "helpful"):
            if not pool or (only and target_tenant != tenant):
                continue  # the single-tenant replay skips attempts on the other tenant
            kind, id_ = pool[a % len(pool)]
            if op == "forget":
                call, args = engine.forget, (ctx, kind, id_)
            elif op == "confirm" and kind != "episode":
                call, args = engine.confirm, (ctx, kind, id_)
            elif op == "helpful" and kind == "rule":
                call, args = engine.mark_helpful, (ctx, id_)
            else:
                continue
            try:
                call(*args)
            except MemoryNotFoundError:
                assert target_tenant != tenant
                continue
            except Exception as e:  # confirming a forgotten memory, for example
                assert getattr(e, "code", "") == "INVALID_OPERATION"
                continue
            assert target_tenant == tenant, "touched another tenant's memory"
        elif op == "recall":
            for h in engine.recall(ctx, a):
                assert h.record.tenant_id == tenant
        elif op == "search":
            for h in engine.search(ctx, a):
                assert h.record.tenant_id == tenant
        elif op == "sweep":
            engine.sweep(ctx)
    clock.now = START + timedelta(hours=len(steps))
    return engine


def view(engine: MemoryEngine, tenant: str):
    """Everything a tenant can observe, without the random ids."""
    ctx = CTX[tenant]
    drop = {"id", "superseded_by", "memory_id", "replaces", "subject_entity", "object_entity"}
    drop |= {"mentions"}  # entity ids: random like memory ids
    rows = []
    for item in engine.store.search(("tenant", tenant), limit=10_000):
        value = dict(item.value)
        if "changes" in value:  # old/new values may hold random ids; keep the fields
            value["changes"] = sorted(value["changes"])
        where = tuple(item.namespace)[2:]
        rows.append((where, sorted((k, str(v)) for k, v in value.items() if k not in drop)))
    listed = sorted((r.type, r.content) for r in engine.list(ctx, limit=1000).items)
    return engine.stats(ctx), sorted(rows), listed


def _check(make_store, steps):
    mixed = run(make_store(), steps)
    alone = run(make_store(), steps, only="B")
    assert view(mixed, "B") == view(alone, "B")
    mixed_a = run(make_store(), steps)
    alone_a = run(make_store(), steps, only="A")
    assert view(mixed_a, "A") == view(alone_a, "A")


def _index():
    return {"dims": 16, "embed": WordEmbeddings(16), "fields": ["content"]}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEQ)
def test_tenants_are_isolated_in_memory_store(steps):
    _check(lambda: InMemoryStore(index=_index()), steps)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEQ)
def test_tenants_are_isolated_in_sqlite_store(steps):
    _check(lambda: SQLiteStore(":memory:", index=_index()), steps)
