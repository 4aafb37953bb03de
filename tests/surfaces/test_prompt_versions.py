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
