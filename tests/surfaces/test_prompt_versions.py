"""Procedural memory that lasts: prompt versions in the store per user, made
by hand, by the optimizer (with the trajectories kept) or by a rollback;
served to an agent by middleware; one user never sees another's, nor an
organisation its members'; damaged versions are skipped, never overwritten;
bad input changes nothing. (Concurrent writers: test_prompt_versions_concurrency.)"""

from __future__ import annotations

import asyncio
import logging

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage

from langmem_ext import PromptVersions, SQLiteStore, create_prompt_optimizer
from langmem_ext.errors import DamagedMemoryError, InvalidValueError, MemoryNotFoundError
from langmem_ext.testing.chat import ScriptedExtractionModel

ADA = {"configurable": {"user_id": "ada"}}
BOB = {"configurable": {"user_id": "bob"}}


def update(text: str) -> AIMessage:
    call = {"name": "update_prompt", "args": {"new_prompt": text}, "id": "u"}
    return AIMessage("", tool_calls=[call])


@pytest.fixture(params=["sqlite", "postgres"])
def store(request):
    if request.param == "sqlite":
        s = SQLiteStore()
    else:
        from langmem_ext.stores.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_server").fresh_schema())
    yield s
    s.close()


def test_three_conversations_two_optimizations_one_rollback(store, capsys):
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("main", "You are a helpful assistant.", ADA)
    optimizer = create_prompt_optimizer(
        ScriptedExtractionModel(
            [update("Answer in the user's language."), update("Answer briefly, in French.")]
        ),
        kind="prompt_memory",
    )
    feedback = [
        ([("user", "bonjour"), ("assistant", "Hello!")], "answer in my language"),
        ([("user", "ça va ?"), ("assistant", "Very well, and a long story...")], "too long"),
        ([("user", "merci"), ("assistant", "De rien !")], "good"),
    ]
    prompts.optimize(optimizer, "main", feedback[:1], ADA)
    prompts.optimize(optimizer, "main", feedback[1:], ADA)
    prompts.rollback("main", 2, ADA)
    history = prompts.history("main", ADA)
    for v in reversed(history):
        print(f"v{v['version']} [{v['reason']}] {v['prompt']}")
    assert [(v["version"], v["reason"]) for v in history] == [
        (4, "rollback to version 2"),
        (3, "optimized"),
        (2, "optimized"),
        (1, "set"),
    ]
    assert prompts.current("main", ADA) == "Answer in the user's language."
    assert "too long" in history[1]["trajectories"]  # what produced version 3
    assert prompts.current("main", BOB) is None  # another user's space
    out = capsys.readouterr().out
    assert "v4 [rollback to version 2] Answer in the user's language." in out


def test_async_faces_and_an_unchanged_optimization_stores_nothing(store):
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))

    async def run():
        await prompts.asave("main", "Keep it short.", ADA)
        opt = create_prompt_optimizer(ScriptedExtractionModel([update("")]), kind="prompt_memory")
        same = await prompts.aoptimize(opt, "main", "all good", ADA)
        return same, await prompts.ahistory("main", ADA)

    same, history = asyncio.run(run())
    assert same == "Keep it short." and len(history) == 1


def test_bad_input_changes_nothing(store):
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("main", "v1 text", ADA)
    with pytest.raises(InvalidValueError, match="non-empty text"):
        prompts.save("main", "  ", ADA)
    with pytest.raises(InvalidValueError, match="without ':'"):
        prompts.save("a:b", "text", ADA)
    with pytest.raises(MemoryNotFoundError, match="no version 7"):
        prompts.rollback("main", 7, ADA)
    with pytest.raises(MemoryNotFoundError, match="no version yet"):
        prompts.optimize(create_prompt_optimizer(ScriptedExtractionModel([])), "other", "t", ADA)
    assert [v["version"] for v in prompts.history("main", ADA)] == [1]


def test_the_middleware_serves_the_current_version():
    store = SQLiteStore()
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("main", "Always answer in French.", ADA)
    model = ScriptedExtractionModel([AIMessage("Bonjour !")])
    agent = create_agent(model, tools=[], middleware=[prompts.middleware("main")], store=store)
    agent.invoke({"messages": [("user", "hi")]}, ADA)
    assert model.seen[0][0].content == "Always answer in French."


def test_the_engines_rule_feedback_drives_an_optimization(store):
    from langmem_ext import MemoryEngine
    from langmem_ext.engine import MemoryContext
    from langmem_ext.langmem import arule_feedback, rule_feedback

    engine = MemoryEngine(store)
    ada, bob = MemoryContext("acme", user_id="ada"), MemoryContext("acme", user_id="bob")
    assert rule_feedback(engine, ada) == ""  # no rule has feedback yet
    good = engine.store_rule(ada, "Answer in the user's language")
    bad = engine.store_rule(ada, "Always use bullet points")
    engine.store_rule(ada, "Never rated")
    for _ in range(2):
        engine.mark_helpful(ada, good.id)
    engine.mark_harmful(ada, bad.id)
    engine.store_rule(bob, "Bob's own rule")
    text = rule_feedback(engine, ada)
    assert text == asyncio.run(arule_feedback(engine, ada))
    lines = text.splitlines()[1:]
    assert lines == [
        '- "Always use bullet points": marked helpful 0 times, harmful 1 time (candidate)',
        '- "Answer in the user\'s language": marked helpful 2 times, harmful 0 times (candidate)',
    ]
    model = ScriptedExtractionModel([update("Answer in the user's language; no bullet lists.")])
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("main", "You are a helpful assistant.", ADA)
    new = prompts.optimize(create_prompt_optimizer(model, kind="prompt_memory"), "main", text, ADA)
    assert new == "Answer in the user's language; no bullet lists."
    shown = str(model.seen[0][-1].content)
    assert "Always use bullet points" in shown and "harmful 1 time" in shown
    assert "Bob's own rule" not in shown and "Never rated" not in shown
    assert "harmful 1 time" in str(prompts.history("main", ADA)[0]["trajectories"])


ORG = ("prompts", "{org_id}")
MEMBER = ("prompts", "{org_id}", "{user_id}")
ACME_ADA = {"configurable": {"org_id": "acme", "user_id": "ada"}}
ACME_BOB = {"configurable": {"org_id": "acme", "user_id": "bob"}}


def test_an_organisations_prompt_never_includes_its_members_versions(store):
    """The org's namespace is a prefix of its members': a search there reads
    theirs too, and a member's save must not become the org's system prompt."""
    org = PromptVersions(store, namespace=ORG)
    member = PromptVersions(store, namespace=MEMBER)
    assert org.save("main", "You are Acme's assistant.", ACME_ADA) == 1
    assert member.save("main", "Ada's own prompt.", ACME_ADA) == 1
    assert member.save("main", "Ada's second prompt.", ACME_ADA) == 2
    assert [(v["version"], v["prompt"]) for v in org.history("main", ACME_BOB)] == [
        (1, "You are Acme's assistant.")
    ]
    assert org.current("main", ACME_BOB) == "You are Acme's assistant."
    model = ScriptedExtractionModel([AIMessage("Hello from Acme.")])
    agent = create_agent(model, tools=[], middleware=[org.middleware("main")], store=store)
    agent.invoke({"messages": [("user", "hi")]}, ACME_BOB)
    assert model.seen[0][0].content == "You are Acme's assistant."  # not Ada's
    scripted = ScriptedExtractionModel([update("You are Acme's assistant; be brief.")])
    optimizer = create_prompt_optimizer(scripted, kind="prompt_memory")
    org.optimize(optimizer, "main", "too long", ACME_BOB)
    shown = str(scripted.seen[0])
    assert "You are Acme's assistant." in shown and "Ada's" not in shown  # the org's, improved
    assert org.rollback("main", 1, ACME_BOB) == 3  # the org's own numbers
    assert [v["version"] for v in org.history("main", ACME_BOB)] == [3, 2, 1]
    assert [v["prompt"] for v in member.history("main", ACME_ADA)] == [
        "Ada's second prompt.",
        "Ada's own prompt.",
    ]
    assert member.history("main", ACME_BOB) == []


def test_damaged_versions_are_skipped_listed_and_never_overwritten(store, caplog):
    caplog.set_level(logging.WARNING, logger="langmem_ext.engine")
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("main", "A good prompt.", ADA)
    ns = ("prompts", "ada")
    # Written by another program: no text, a version that is not a number,
    # and an item of its own under a version key.
    store.put(ns, "main:v000002", {"kind": "prompt_version", "name": "main", "version": 2})
    three = {"kind": "prompt_version", "name": "main", "version": "three", "prompt": "x"}
    store.put(ns, "main:v000003", three)
    store.put(ns, "main:v000005", {"note": "another program's item"})
    history = prompts.history("main", ADA)
    assert [(v["version"], v.get("damaged", False)) for v in history] == [
        (3, True),
        (2, True),
        (1, False),
    ]
    assert history[0]["value"] == three and "version must be an integer" in history[0]["problem"]
    assert prompts.current("main", ADA) == "A good prompt."
    prompts.history("main", ADA)
    damaged = [r for r in caplog.records if "damaged prompt version" in r.getMessage()]
    assert len(damaged) == 2  # once each, however often they are read
    assert prompts.save("main", "The next prompt.", ADA) == 4
    assert prompts.save("main", "And the one after.", ADA) == 6  # 5 is taken
    assert store.get(ns, "main:v000005").value == {"note": "another program's item"}
    assert store.get(ns, "main:v000003").value == three
    with pytest.raises(DamagedMemoryError, match="version 2 of prompt 'main' is damaged"):
        prompts.rollback("main", 2, ADA)
    assert prompts.rollback("main", 1, ADA) == 7
    model = ScriptedExtractionModel([AIMessage("ok")])
    agent = create_agent(model, tools=[], middleware=[prompts.middleware("main")], store=store)
    agent.invoke({"messages": [("user", "hi")]}, ADA)
    assert model.seen[0][0].content == "A good prompt."
    better = ScriptedExtractionModel([update("Better.")])
    opt = create_prompt_optimizer(better, kind="prompt_memory")
    assert prompts.optimize(opt, "main", "feedback", ADA) == "Better."
    assert [v["version"] for v in prompts.history("main", ADA)] == [8, 7, 6, 4, 3, 2, 1]


def test_a_writer_that_stopped_after_its_claim_leaves_its_number_unused(store, monkeypatch):
    from langmem_ext.langmem import _version_numbers

    # Any claim older than one's own counts as left by a writer that stopped
    # (5 s in use): the test need not wait for it to age.
    monkeypatch.setattr(_version_numbers, "STALE_S", 0.0)
    prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    prompts.save("main", "One.", ADA)
    ns = ("prompts", "ada")
    claim = {"kind": "prompt_version_claim", "name": "main", "version": 2}
    store.put(ns, "main:claim:000002:gone", {**claim, "namespace": "prompts.ada", "token": "gone"})
    assert prompts.save("main", "Two.", ADA) == 3
    assert prompts.save("main", "Three.", ADA) == 4
    assert [v["version"] for v in prompts.history("main", ADA)] == [4, 3, 1]
    # the writers' own claims are gone; the stopped writer's stays, unread
    assert [i.key for i in store.search(ns, filter={"kind": "prompt_version_claim"})] == [
        "main:claim:000002:gone"
    ]
