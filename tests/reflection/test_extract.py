"""Extraction: call shapes (named tool, JSON), validation of malformed output,
retries, related facts, the per-thread cursor. Direct reflections, sync and async."""

from __future__ import annotations

import logging
import re
from datetime import datetime

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from langmem_ext.agents.reflection import FactExtractor, ReflectionSettings
from langmem_ext.errors import ExtractionError
from langmem_ext.testing.chat import ScriptedExtractionModel

from .conftest import config_for, make_executor
from .openai_server import LocalChatServer

TURN = [HumanMessage("I moved to Berlin last year", id="h1"), AIMessage("Nice!", id="a1")]


def contents(engine, ctx):
    return [f.content for f in engine.get_profile(ctx).facts]


def test_one_named_tool_call_per_turn(engine, ctx, reflect):
    model = ScriptedExtractionModel([[("Lives in Berlin", "context", 0.9)]])
    ex = make_executor(model, engine)
    result = reflect(ex, TURN, config_for(ctx))
    assert result.model_calls == 1 and model.calls == 1
    assert model.bound[0]["tool_choice"] == "extract_facts"
    assert contents(engine, ctx) == ["Lives in Berlin"]
    prompt = model.seen[0][1].content
    assert "user: I moved to Berlin last year" in prompt
    assert "assistant (context only, not about the user): Nice!" in prompt
    f = engine.get_profile(ctx).facts[0]
    # "I moved to Berlin last year": the fact held since last year, read from the words
    year = str(datetime.fromisoformat(f.created_at).year - 1)
    assert f.provenance == {
        "source": "reflection",
        "thread_id": "t1",
        "message_ids": ["h1", "a1"],
        "when": {"label": year, "phrase": "last year", "source": "text"},
    }
    assert f.valid_at.startswith(f"{year}-01-01")
    ex.shutdown()


def test_local_server_named_tool_choice(engine, ctx, reflect):
    """The real ChatOpenAI client against a llama.cpp-like server: a named
    tool_choice is what we send, and it works."""
    facts = {"facts": [{"content": "Lives in Berlin", "category": "context", "confidence": 0.9}]}
    with LocalChatServer([facts]) as server:
        model = ChatOpenAI(model="local", base_url=server.base_url, api_key="x", max_retries=0)
        ex = make_executor(FactExtractor(model), engine)
        result = reflect(ex, TURN, config_for(ctx))
    assert server.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "extract_facts"},
    }
    assert result.model_calls == 1 and contents(engine, ctx) == ["Lives in Berlin"]


def test_local_server_without_tools_falls_back_to_json_object(engine, ctx, reflect, caplog):
    facts = {"facts": [{"content": "Lives in Berlin", "category": "context", "confidence": 0.9}]}
    more = {"facts": [{"content": "Has a dog", "category": "context", "confidence": 0.9}]}
    with LocalChatServer([facts, more], tools=False) as server:
        model = ChatOpenAI(model="local", base_url=server.base_url, api_key="x", max_retries=0)
        ex = make_executor(FactExtractor(model), engine)
        with caplog.at_level(logging.WARNING, logger="langmem_ext.agents.reflection"):
            result = reflect(ex, TURN, config_for(ctx))
        # the fall-back is remembered: the next turn makes one call, in JSON mode
        nxt = [HumanMessage("I have a dog", id="h2"), AIMessage("Cute", id="a2")]
        again = reflect(ex, TURN + nxt, config_for(ctx))
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]
    assert server.requests[1]["response_format"] == {"type": "json_object"}
    assert "Answer with one JSON object" in server.requests[1]["messages"][0]["content"]
    assert (result.model_calls, again.model_calls) == (2, 1)
    assert "extracting with JSON output from now on" in caplog.text
    assert sorted(contents(engine, ctx)) == ["Has a dog", "Lives in Berlin"]


def test_json_mode_reads_fenced_json(engine, ctx, reflect):
    fact = '{"content": "Likes tea", "category": "preference", "confidence": 0.8}'
    text = f'Sure!\n```json\n{{"facts": [{fact}]}}\n```'
    model = ScriptedExtractionModel([text])
    ex = make_executor(FactExtractor(model, method="json"), engine)
    reflect(ex, TURN, config_for(ctx))
    assert "tool_choice" not in model.bound[0]
    assert contents(engine, ctx) == ["Likes tea"]


GOOD = [("Lives in Berlin", "context", 0.9)]
WORDS_ONLY = ReflectionSettings(backoff=0.01, embeddings=None)


@pytest.mark.parametrize(
    ("bad", "logged"),
    [
        ("this is not json", "the reply holds no JSON"),
        ('{"facts": [{"content": "x",}]}', "invalid JSON"),
        ('{"memories": []}', "no 'facts' list"),
        ('{"facts": "Lives in Berlin"}', "'facts' must be a list"),
        (
            [{"content": "Lives in Berlin", "category": "context", "confidence": "high"}],
            "confidence must be a number",
        ),
        (
            [{"content": "Lives in Berlin", "category": "hobby", "confidence": 0.9}],
            "unknown category 'hobby'",
        ),
        (
            [{"content": "Lives in Berlin", "category": "context", "confidence": 1.4}],
            "confidence 1.4 is outside 0-1",
        ),
        (
            [{"content": 42, "category": "context", "confidence": 0.9}],
            "content must be a non-empty string",
        ),
        (
            AIMessage(
                "",
                tool_calls=[
                    {"name": "extract_facts", "args": {"facts": [["Berlin", 0.9]]}, "id": "c1"}
                ],
            ),
            "must be an object",
        ),
    ],
)
def test_malformed_output_is_logged_and_asked_again(engine, ctx, reflect, caplog, bad, logged):
    model = ScriptedExtractionModel([bad, GOOD])
    ex = make_executor(model, engine)
    with caplog.at_level(logging.WARNING, logger="langmem_ext.agents.reflection"):
        result = reflect(ex, TURN, config_for(ctx))
    assert logged in caplog.text
    assert result.model_calls == 2
    # the second prompt tells the model what was wrong
    assert "Your previous answer was invalid" in model.seen[1][1].content
    assert logged.split("'")[0] in model.seen[1][1].content
    assert contents(engine, ctx) == ["Lives in Berlin"]
    [f] = engine.get_profile(ctx).facts
    assert (f.category, f.confidence) == ("context", 0.9)


def test_garbage_every_time_keeps_the_turn_pending(engine, ctx, reflect, store):
    ex = make_executor(["nope", "nope", "still nope"], engine)
    with pytest.raises(ExtractionError, match="stays pending"):
        reflect(ex, TURN, config_for(ctx))
    assert contents(engine, ctx) == []
    cursors = ("tenant", "acme", "_meta", "user/ada", "reflection")
    assert store.search(cursors) == []  # cursor not advanced
    # the next reflection of the thread covers the failed turn and the new one
    nxt = [HumanMessage("And I adopted a dog", id="h2"), AIMessage("Lovely", id="a2")]
    model = ScriptedExtractionModel(
        [[("Lives in Berlin", "context", 0.9), ("Has a dog", "context", 0.9)]]
    )
    ex2 = make_executor(model, engine)
    result = reflect(ex2, TURN + nxt, config_for(ctx))
    prompt = model.seen[0][1].content
    assert "I moved to Berlin" in prompt and "adopted a dog" in prompt
    assert result.messages == 4 and sorted(contents(engine, ctx)) == [
        "Has a dog",
        "Lives in Berlin",
    ]


def test_invalid_facts_after_all_attempts_keep_the_valid_ones(engine, ctx, reflect, caplog):
    mixed = [
        {"content": "Lives in Berlin", "category": "context", "confidence": 0.9},
        {"content": "Likes jazz", "category": "music", "confidence": 0.9},
    ]
    ex = make_executor([mixed, mixed, mixed], engine)
    with caplog.at_level(logging.WARNING, logger="langmem_ext.agents.reflection"):
        result = reflect(ex, TURN, config_for(ctx))
    assert result.model_calls == 3
    assert result.invalid == [
        "fact 2: unknown category 'music'; use one of "
        "preference, knowledge, context, behavior, goal, correction"
    ]
    assert contents(engine, ctx) == ["Lives in Berlin"]
    assert "dropped 1 invalid ones after 3 attempts" in caplog.text


def test_model_errors_are_retried_with_backoff(engine, ctx, sleeps):
    err = ConnectionError("server down")
    ex = make_executor([err, err, GOOD], engine, settings=ReflectionSettings(backoff=0.5))
    result = ex.reflect(TURN, config_for(ctx))
    assert sleeps == [0.5, 1.0] and result.model_calls == 3
    assert contents(engine, ctx) == ["Lives in Berlin"]
    ex2 = make_executor([err, err, err], engine, settings=ReflectionSettings(backoff=0.5))
    with pytest.raises(ExtractionError) as e:
        ex2.reflect([HumanMessage("x", id="h9")], config_for(ctx, "t2"))
    assert e.value.retryable and e.value.details["attempts"] == 3


def test_related_facts_are_shown_and_corrections_supersede(engine, ctx, reflect):
    old = engine.add_fact(ctx, "Lives in Berlin", "context", 0.9)

    def correct(messages):
        ids = re.findall(r"id=(fact_[0-9a-f]{8})", messages[0].content)
        assert ids == [old.id]
        return [
            {
                "content": "Lives in Munich",
                "category": "correction",
                "confidence": 0.95,
                "replaces": ids[0],
            }
        ]

    model = ScriptedExtractionModel([correct])
    ex = make_executor(model, engine)
    turn = [HumanMessage("Actually I live in Munich now, not Berlin", id="h5")]
    result = reflect(ex, turn, config_for(ctx))
    assert result.superseded == [old.id]
    assert contents(engine, ctx) == ["Lives in Munich"]
    assert engine.get(ctx, old.id).superseded_by == result.added[0].id


@pytest.mark.parametrize(
    ("named", "applied"),
    [(1, True), ("1", True), ("[1]", True), ("lives in berlin", True), (2, False), ("x", False)],
)
def test_a_correction_may_name_the_known_fact_by_number_or_text(
    engine, ctx, reflect, named, applied
):
    """What a small model can copy: the number before a known fact, or its text."""
    old = engine.add_fact(ctx, "Lives in Berlin", "context", 0.9)
    fact = {"content": "Lives in Munich", "category": "correction", "confidence": 0.95}
    model = ScriptedExtractionModel([[{**fact, "replaces": named}]])
    # The user's words name no old value here: only replaces can tie the two
    # (screening by words: by meaning, a correction of the same thing is tied
    # without it, see test_screen_meaning).
    turn = [HumanMessage("I live in Munich", id="h5")]
    result = reflect(make_executor(model, engine, settings=WORDS_ONLY), turn, config_for(ctx))
    assert f"1. id={old.id}" in model.seen[0][0].content
    assert (result.superseded == [old.id]) is applied
    assert result.unknown_replaces == ([] if applied else [str(named)])
    expected = ["Lives in Munich"] if applied else ["Lives in Berlin", "Lives in Munich"]
    assert sorted(contents(engine, ctx)) == expected


@pytest.mark.parametrize(
    ("said", "tied"),
    [
        ("Actually I live in Munich now, not Berlin", True),
        ("I moved to Munich", False),  # Berlin not named: no evidence
        ("My friend lives in Munich, I still love Berlin", False),  # no change said
    ],
)
def test_the_users_words_tie_a_correction_the_model_left_untied(engine, ctx, reflect, said, tied):
    """Screening by words (no embedder); by meaning see test_screen_meaning."""
    old = engine.add_fact(ctx, "Lives in Berlin", "context", 0.9)
    model = ScriptedExtractionModel([[("Lives in Munich", "correction", 0.9)]])
    ex = make_executor(model, engine, settings=WORDS_ONLY)
    result = reflect(ex, [HumanMessage(said, id="h1")], config_for(ctx))
    assert (result.superseded == [old.id]) is tied
    assert result.unknown_replaces == []


def test_the_cursor_sends_only_new_turns(engine, ctx, reflect, store):
    model = ScriptedExtractionModel([GOOD, [("Has a dog", "context", 0.9)]])
    ex = make_executor(model, engine)
    reflect(ex, TURN, config_for(ctx))
    nxt = [HumanMessage("I have a dog", id="h2"), AIMessage("Cute", id="a2")]
    result = reflect(ex, TURN + nxt, config_for(ctx))
    second = model.seen[1][1].content
    assert "I have a dog" in second and "Berlin" not in second
    assert result.messages == 2
    [cursor] = store.search(("tenant", "acme", "_meta", "user/ada", "reflection"))
    assert cursor.value["last_message_id"] == "a2"
    # nothing new: no model call at all
    assert reflect(ex, TURN + nxt, config_for(ctx)).model_calls == 0


def test_a_long_backlog_is_reflected_window_by_window(engine, ctx):
    msgs = [HumanMessage(f"fact number {i}", id=f"m{i}") for i in range(5)]
    model = ScriptedExtractionModel(
        [[("A", "knowledge", 0.9)], [("B", "knowledge", 0.9)], [("C", "knowledge", 0.9)]]
    )
    ex = make_executor(model, engine, settings=ReflectionSettings(window=2))
    result = ex.reflect(msgs, config_for(ctx))
    assert result.model_calls == 3 and result.messages == 5
    assert (
        "fact number 0" in model.seen[0][1].content and "fact number 4" in model.seen[2][1].content
    )


def test_tool_messages_and_empty_turns_cost_no_call(engine, ctx):
    model = ScriptedExtractionModel([])
    ex = make_executor(model, engine)
    result = ex.reflect([AIMessage("", id="x1")], config_for(ctx))
    assert result.model_calls == 0 and model.calls == 0
