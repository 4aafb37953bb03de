"""LangMem's prompt optimizers with its names and shapes, the three kinds, and
the two things LangMem gets wrong: a failure that loses the original prompt,
and prompts the trajectories do not concern rewritten anyway."""

from __future__ import annotations

import asyncio
import logging

import pytest
from langchain_core.messages import AIMessage

from langmem_ext import create_multi_prompt_optimizer, create_prompt_optimizer
from langmem_ext.errors import ConfigurationError
from langmem_ext.testing.chat import ScriptedExtractionModel

TRAJECTORIES = [
    (
        [{"role": "user", "content": "bonjour"}, {"role": "assistant", "content": "Hello!"}],
        {"score": 0, "comment": "answer in the user's language"},
    )
]


def call(name: str, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": name}])


def update(text) -> AIMessage:
    return call("update_prompt", new_prompt=text)


@pytest.mark.parametrize(
    ("kind", "script", "calls"),
    [
        ("prompt_memory", [update("Answer in the user's language.")], 1),
        (
            "gradient",
            [
                call("critique", analysis="It never says which language."),
                update("Answer in the user's language."),
            ],
            2,
        ),
        (
            "metaprompt",
            [
                call("critique", analysis="Language is unspecified."),
                call("critique", analysis="Language is unspecified."),
                update("Answer in the user's language."),
            ],
            3,
        ),
    ],
)
def test_each_kind_returns_the_new_prompt_text(kind, script, calls):
    model = ScriptedExtractionModel(script)
    opt = create_prompt_optimizer(model, kind=kind, config={"max_reflection_steps": 2})
    new = opt.invoke({"trajectories": TRAJECTORIES, "prompt": "You are a helpful assistant."})
    assert new == "Answer in the user's language."
    assert model.calls == calls
    shown = model.seen[0][-1].content
    assert "You are a helpful assistant." in shown and "answer in the user's language" in shown
    if kind == "gradient":  # the update applies the critique
        assert "It never says which language." in model.seen[1][-1].content


def test_a_prompt_dict_and_async_and_text_trajectories():
    model = ScriptedExtractionModel([update("Be brief.")])
    opt = create_prompt_optimizer(model, kind="prompt_memory")
    prompt = {"name": "main", "prompt": "Be thorough.", "update_instructions": "keep it short"}
    new = asyncio.run(opt.ainvoke({"trajectories": "user said: too long", "prompt": prompt}))
    assert new == "Be brief."
    assert "keep it short" in model.seen[0][-1].content


@pytest.mark.parametrize("answer", [update(""), update(None), AIMessage("no idea, sorry")])
def test_a_useless_answer_keeps_the_original_prompt(answer, caplog):
    opt = create_prompt_optimizer(ScriptedExtractionModel([answer]), kind="prompt_memory")
    with caplog.at_level(logging.WARNING, logger="langmem_ext.langmem"):
        new = opt.invoke({"trajectories": TRAJECTORIES, "prompt": "Original prompt."})
    assert new == "Original prompt."
    assert "unchanged" in caplog.text


def test_only_the_prompts_the_trajectories_concern_change():
    prompts = [
        {"name": "reply", "prompt": "Reply helpfully."},
        {"name": "search", "prompt": "Write a search query.", "when_to_update": "never"},
    ]
    model = ScriptedExtractionModel(
        [call("select_prompts", names=["reply"]), update("Reply in the user's language.")]
    )
    out = create_multi_prompt_optimizer(model, kind="prompt_memory").invoke(
        {"trajectories": TRAJECTORIES, "prompts": prompts}
    )
    assert out[0] == {"name": "reply", "prompt": "Reply in the user's language."}
    assert out[1] is prompts[1]  # untouched, the very object given
    assert model.calls == 2


def test_awaiting_the_optimizer_is_ainvoke():
    # LangMem's shorthand: ``await optimizer(trajectories, prompt)``.
    one = create_prompt_optimizer(
        ScriptedExtractionModel([update("Be brief.")]), kind="prompt_memory"
    )
    assert asyncio.run(one(TRAJECTORIES, "Be thorough.")) == "Be brief."
    model = ScriptedExtractionModel([call("select_prompts", names=["a"]), update("New a.")])
    many = create_multi_prompt_optimizer(model, kind="prompt_memory")
    out = asyncio.run(many(TRAJECTORIES, [{"name": "a", "prompt": "Old a."}]))
    assert out == [{"name": "a", "prompt": "New a."}]


def test_bad_inputs_are_refused_by_name():
    with pytest.raises(ConfigurationError, match="unknown kind"):
        create_prompt_optimizer(ScriptedExtractionModel([]), kind="beam")
    opt = create_prompt_optimizer(ScriptedExtractionModel([]))
    with pytest.raises(ConfigurationError, match="needs 'trajectories'"):
        opt.invoke({"prompt": "x"})
    with pytest.raises(ConfigurationError, match="prompt must be text or a Prompt"):
        opt.invoke({"trajectories": "t", "prompt": 3})
    with pytest.raises(ConfigurationError, match="needs 'prompts'"):
        create_multi_prompt_optimizer(ScriptedExtractionModel([])).invoke(
            {"trajectories": "t", "prompts": []}
        )
