"""Procedural memory that lasts: prompt versions in the store per user, made
by hand, by the optimizer (with the trajectories kept) or by a rollback;
served to an agent by middleware; one user never sees another's; bad input
changes nothing."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage

from langmem_ext import (
    InvalidValueError,
    MemoryNotFoundError,
    PromptVersions,
    SQLiteStore,
    create_prompt_optimizer,
)
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
    from langmem_ext import MemoryEngine, arule_feedback, rule_feedback
    from langmem_ext.engine import MemoryContext

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
