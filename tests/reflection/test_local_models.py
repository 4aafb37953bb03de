"""What a small local model gets wrong, and how reflection copes: assistant
words filed as user facts, paragraphs and repeats, category spellings,
invented slots, unknown ``replaces``, broken or cut-off answers, a prompt
longer than the context, streaming callers, slow servers."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

from langmem_ext.agents.reflection import FactExtractor, ReflectionSettings, token_counter
from langmem_ext.agents.reflection.extract import FEEDBACK_CHARS, classify
from langmem_ext.agents.reflection.screen import LOG_CHARS, MAX_FACT_CHARS
from langmem_ext.errors import ExtractionError
from langmem_ext.testing.chat import ScriptedExtractionModel

from .conftest import config_for, make_executor
from .openai_server import LocalChatServer

BERLIN = [
    HumanMessage("Hi! I live in Berlin and I work as a nurse.", id="h1"),
    AIMessage(
        "Nice to meet you! Berlin has been the capital of Germany since 1990 and it has "
        "more than 3.7 million inhabitants.",
        id="a1",
    ),
]


def fact(content: str, category: str = "context", confidence: float = 0.9, **kw: Any) -> dict:
    return {"content": content, "category": category, "confidence": confidence, **kw}


def contents(engine, ctx) -> list[str]:
    return sorted(f.content for f in engine.get_profile(ctx).facts)


def long_thread(turns: int, said: str, reply: str) -> list[BaseMessage]:
    """``turns`` turns of the user saying ``said`` (numbered) and the reply."""
    out: list[BaseMessage] = []
    for i in range(turns):
        out += [HumanMessage(f"{i}: {said}", id=f"h{i}"), AIMessage(reply, id=f"a{i}")]
    return out


# -- the user's words are the evidence ----------------------------------------------


def test_the_assistant_is_shown_as_context_and_its_words_are_not_stored(
    engine, ctx, reflect, caplog
):
    capital = "Berlin has been the capital of Germany since 1990"
    model = ScriptedExtractionModel([[fact("Lives in Berlin"), fact(capital, "knowledge")]])
    ex = make_executor(model, engine)
    with caplog.at_level(logging.WARNING, logger="langmem_ext.agents.reflection"):
        result = reflect(ex, BERLIN, config_for(ctx))
    prompt = model.seen[0][1].content
    assert "user: Hi! I live in Berlin" in prompt
    assert "assistant (context only, not about the user): Nice to meet you!" in prompt
    assert "never record what the assistant said" in model.seen[0][0].content
    assert contents(engine, ctx) == ["Lives in Berlin"]
    assert [(d.content, d.reason) for d in result.dropped] == [(capital, "assistant_copy")]
    assert "dropped an extracted fact (assistant_copy)" in caplog.text


def test_a_paragraph_five_times_is_dropped_and_repeats_collapse(engine, ctx, reflect):
    paragraph = BERLIN[1].content + " " + BERLIN[1].content
    reply = [fact(paragraph)] * 5 + [
        fact("Works as a nurse", confidence=0.7),
        fact("works as a  NURSE", confidence=0.95),
    ]
    ex = make_executor([reply], engine)
    result = reflect(ex, BERLIN, config_for(ctx))
    assert [(f.content, f.confidence) for f in engine.get_profile(ctx).facts] == [
        ("Works as a nurse", 0.95)
    ]
    assert [d.reason for d in result.dropped] == ["too_long"] * 5 + ["repeat"]
    long_line = "Works as a nurse " + "in a big hospital " * 20
    assert len(long_line) > MAX_FACT_CHARS
    ex = make_executor([[fact(long_line)]], engine)
    result = reflect(ex, BERLIN, config_for(ctx, "t2"))
    assert [d.reason for d in result.dropped] == ["too_long"]


def test_initials_and_titles_are_not_sentence_ends(engine, ctx, reflect):
    # "George R. R. Martin" once counted as three sentences: the fact was dropped
    # as a paragraph.
    keep = ["Favourite author is George R. R. Martin", "Sees Dr. Lee. Takes Mrs. Park's class."]
    three = "Reads a lot. Likes tea. Walks daily."
    ex = make_executor([[fact(keep[0]), fact(keep[1]), fact(three)]], engine)
    result = reflect(ex, BERLIN, config_for(ctx))
    assert contents(engine, ctx) == sorted(keep)
    assert [(d.content, d.reason) for d in result.dropped] == [(three, "too_long")]


@pytest.mark.parametrize("spelt", ["preferences", " Preference", "PREFERENCES ", "pre ference"])
def test_category_variants_are_read_in_one_call(engine, ctx, reflect, spelt):
    model = ScriptedExtractionModel([[fact("Likes jazz", spelt)]])
    ex = make_executor(model, engine)
    result = reflect(ex, BERLIN, config_for(ctx))
    assert model.calls == 1 and result.invalid == []
    [stored] = engine.get_profile(ctx).facts
    assert (stored.content, stored.category) == ("Likes jazz", "preference")


def test_other_categories_are_still_rejected(engine, ctx, reflect):
    model = ScriptedExtractionModel([[fact("Likes jazz", "hobby")]] * 3)
    ex = make_executor(model, engine)
    result = reflect(ex, BERLIN, config_for(ctx))
    assert model.calls == 3 and contents(engine, ctx) == []
    assert result.invalid and "unknown category 'hobby'" in result.invalid[0]


# -- supersession only with evidence --------------------------------------------------


def test_an_invented_slot_does_not_retire_an_unrelated_fact(engine, ctx, reflect):
    slot = {"subject": "user", "predicate": "info"}
    first = [fact("Lives in Berlin", **slot), fact("Works as a nurse", **slot)]
    later = [fact("Has a dog called Rex", **slot)]
    ex = make_executor([first, later], engine)
    result = reflect(ex, BERLIN, config_for(ctx))
    assert result.superseded == []
    turn = [HumanMessage("I have a dog called Rex", id="h2"), AIMessage("Cute!", id="a2")]
    result = reflect(ex, [*BERLIN, *turn], config_for(ctx))
    assert result.superseded == []
    assert contents(engine, ctx) == ["Has a dog called Rex", "Lives in Berlin", "Works as a nurse"]


def test_a_slot_retires_a_fact_about_the_same_thing(engine, ctx, reflect):
    slot = {"subject": "user", "predicate": "home_city"}
    ex = make_executor(
        [[fact("Lives in Berlin", **slot)], [fact("Lives in Munich", **slot)]], engine
    )
    reflect(ex, BERLIN, config_for(ctx))
    turn = [HumanMessage("I moved to Munich", id="h2"), AIMessage("Great!", id="a2")]
    result = reflect(ex, [*BERLIN, *turn], config_for(ctx))
    assert len(result.superseded) == 1 and contents(engine, ctx) == ["Lives in Munich"]


def test_alike_facts_of_one_answer_sharing_a_slot_keep_the_later(engine, ctx, reflect):
    slot = {"subject": "user", "predicate": "home_city"}
    ex = make_executor(
        [[fact("Lives in Berlin", **slot), fact("Lives in Berlin-Mitte", **slot)]], engine
    )
    result = reflect(ex, BERLIN, config_for(ctx))
    assert contents(engine, ctx) == ["Lives in Berlin-Mitte"]
    assert [(s.content, s.reason) for s in result.skipped] == [("Lives in Berlin", "same_slot")]
    assert result.superseded == []


@pytest.mark.parametrize("replaces", ["munich", "fact_00000000"])
def test_an_unknown_replaces_is_logged_and_the_old_fact_stays(
    engine, ctx, reflect, caplog, replaces
):
    """Screening by words: nothing ties the new fact to the old one (by
    meaning, a correction of the same thing is tied: test_screen_meaning)."""
    ex = make_executor(
        [[fact("Lives in Berlin")], [fact("Lives in Munich", "correction", replaces=replaces)]],
        engine,
        settings=ReflectionSettings(backoff=0.01, embeddings=None),
    )
    reflect(ex, BERLIN, config_for(ctx))
    turn = [HumanMessage("I moved to Munich", id="h2"), AIMessage("Great!", id="a2")]
    with caplog.at_level(logging.WARNING, logger="langmem_ext.agents.reflection"):
        result = reflect(ex, [*BERLIN, *turn], config_for(ctx))
    assert result.unknown_replaces == [replaces] and result.superseded == []
    assert contents(engine, ctx) == ["Lives in Berlin", "Lives in Munich"]
    assert f"replaces '{replaces}', which is no known fact" in caplog.text


# -- failures that fit a small context -------------------------------------------------


def broken_call(size: int, *, closed: bool = False, **meta: Any) -> AIMessage:
    args = '{"facts": [{"content": "' + "Lives in Berlin. " * (size // 17)
    if closed:  # wrong, not cut off
        args += '"}]} and more'
    bad = {"name": "extract_facts", "args": args, "id": "b1", "error": "bad JSON"}
    return AIMessage("", invalid_tool_calls=[bad], response_metadata=meta)


def test_a_broken_tool_call_is_never_quoted_whole(engine, ctx, reflect, caplog):
    model = ScriptedExtractionModel([broken_call(22_793, closed=True), [fact("Lives in Berlin")]])
    ex = make_executor(model, engine)
    with caplog.at_level(logging.INFO, logger="langmem_ext"):
        reflect(ex, BERLIN, config_for(ctx))
    first, again = model.seen[0][1].content, model.seen[1][1].content
    assert "Your previous answer was invalid: the tool call's arguments are not valid JSON" in again
    assert len(again) - len(first) < FEEDBACK_CHARS + 200
    assert max(len(r.getMessage()) for r in caplog.records) < 3 * LOG_CHARS
    assert contents(engine, ctx) == ["Lives in Berlin"]


def test_a_cut_off_answer_is_asked_again_for_fewer_shorter_facts(engine, ctx, reflect):
    model = ScriptedExtractionModel(
        [
            broken_call(4000, finish_reason="length"),
            broken_call(4000, finish_reason="length"),
            [fact("Lives in Berlin")],
        ]
    )
    ex = make_executor(model, engine)
    reflect(ex, BERLIN, config_for(ctx))
    prompts = [seen[1].content for seen in model.seen]
    assert "at most" not in prompts[0]
    assert "cut off at the output limit" in prompts[1] and "Give at most 5 facts" in prompts[1]
    assert "Give at most 2 facts" in prompts[2]
    assert contents(engine, ctx) == ["Lives in Berlin"]


def _lying(kind: str) -> AIMessage:
    """A cut-off answer from a server that does not say so."""
    if kind == "says tool_calls":  # llama.cpp's server, checked with max_tokens=20
        return broken_call(600, finish_reason="tool_calls")
    if kind == "whole cap used":  # closed, but all 512 tokens used
        args = '{"facts": [{"content": "Lives in Berlin" "category"}]}'
        bad = {"name": "extract_facts", "args": args, "id": "b1", "error": "bad JSON"}
        meta = {"finish_reason": "tool_calls", "token_usage": {"completion_tokens": 512}}
        return AIMessage("", invalid_tool_calls=[bad], response_metadata=meta)
    if kind == "empty arguments":
        call = {"name": "extract_facts", "args": {}, "id": "c1"}
        return AIMessage("", tool_calls=[call], response_metadata={"finish_reason": "stop"})
    # text JSON that stops before it closes, finish_reason "stop"
    return AIMessage(
        '{"facts": [{"content": "Lives in', response_metadata={"finish_reason": "stop"}
    )


LIES = ["says tool_calls", "whole cap used", "empty arguments", "unclosed text JSON"]


@pytest.mark.parametrize("kind", LIES)
def test_a_cut_off_answer_is_recognised_when_the_server_does_not_say_so(engine, ctx, reflect, kind):
    model = ScriptedExtractionModel([_lying(kind), [fact("Lives in Berlin")]])
    ex = make_executor(FactExtractor(model, max_tokens=512), engine)
    reflect(ex, BERLIN, config_for(ctx))
    again = model.seen[1][1].content
    assert "cut off at the output limit" in again and "Give at most 5 facts" in again
    assert contents(engine, ctx) == ["Lives in Berlin"]


@pytest.mark.parametrize("kind", LIES)
def test_cut_off_every_time_keeps_the_turn_pending_and_stores_no_fragment(
    engine, ctx, reflect, kind, caplog
):
    model = ScriptedExtractionModel([_lying(kind) for _ in range(3)])
    ex = make_executor(FactExtractor(model, max_tokens=512), engine)
    with (
        caplog.at_level(logging.WARNING, logger="langmem_ext"),
        pytest.raises(ExtractionError, match=r"failed 3 times.*stays pending"),
    ):
        reflect(ex, BERLIN, config_for(ctx))
    prompts = [seen[1].content for seen in model.seen]
    assert "Give at most 5 facts" in prompts[1] and "Give at most 2 facts" in prompts[2]
    assert caplog.text.count("cut-off extraction output") == 3
    assert contents(engine, ctx) == []


def test_the_best_answer_is_kept_not_the_last(engine, ctx, reflect):
    bad = fact("Plays chess", "hobby")
    answers = [
        [fact("Lives in Berlin"), fact("Works as a nurse"), bad],
        [fact("Lives in Berlin"), bad],
        [bad],
    ]
    ex = make_executor(answers, engine)
    result = reflect(ex, BERLIN, config_for(ctx))
    assert result.model_calls == 3
    assert contents(engine, ctx) == ["Lives in Berlin", "Works as a nurse"]


class Overflowing(Exception):
    status_code = 400


def test_context_overflow_sends_fewer_turns_and_keeps_tool_calling(engine, ctx):
    """A 400 for a too-long prompt is not "no tool support": the extractor
    stays in tool mode, the window shrinks and every turn is reflected."""
    count = token_counter()
    limit = 900  # what the server really takes, less than the settings claim
    overflows = []

    def answer(messages: list[BaseMessage]) -> Any:
        size = sum(count(str(m.content)) for m in messages)
        if size > limit:
            overflows.append(size)
            return Overflowing(f"Requested tokens ({size}) exceed context window of {limit}")
        return []

    model = ScriptedExtractionModel([answer] * 50)
    extractor = FactExtractor(model, max_tokens=256)
    settings = ReflectionSettings(backoff=0, context_tokens=2048)
    ex = make_executor(extractor, engine, settings=settings)
    turns = long_thread(12, "I like long walks by the river. " * 8, "Sounds nice.")
    result = ex.reflect(turns, config_for(ctx))
    assert overflows and extractor.method_in_use == "tool"
    assert all(b["tool_choice"] == "extract_facts" for b in model.bound)
    assert result.messages == len(turns)
    # every turn was reflected: nothing is pending for the next reflection
    model.script = [[]] * 5
    again = ex.reflect(turns, config_for(ctx))
    assert again.messages == 0 and again.model_calls == 0


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (Overflowing("This model's maximum context length is 4096 tokens"), "context_overflow"),
        (Overflowing("Requested tokens (5000) exceed context window of 4096"), "context_overflow"),
        (NotImplementedError("no tools"), "unsupported"),
        (type("E", (Exception,), {"status_code": 500})("tools not supported"), "unsupported"),
        (type("E", (Exception,), {"status_code": 500})("Internal Server Error"), "error"),
        (TimeoutError("slow"), "timeout"),
    ],
)
def test_errors_are_classified_by_cause(error, cause):
    assert classify(error) == cause


def test_a_backlog_larger_than_the_context_is_reflected_window_by_window(engine, ctx):
    count = token_counter()
    model = ScriptedExtractionModel([[]] * 100)
    extractor = FactExtractor(model, max_tokens=300)
    settings = ReflectionSettings(backoff=0, context_tokens=1536, window=1000)
    ex = make_executor(extractor, engine, settings=settings)
    turns = long_thread(40, "I went hiking in the hills again. " * 10, "Lovely.")
    huge = HumanMessage("My garden diary: " + "tomatoes, beans and herbs. " * 3000, id="big")
    result = ex.reflect([*turns, huge], config_for(ctx))
    assert result.messages == len(turns) + 1 and model.calls > 1
    for seen in model.seen:
        prompt = sum(count(str(m.content)) for m in seen)
        assert prompt + 300 <= 1536
    assert "[…]" in model.seen[-1][1].content  # the huge message, shortened


def test_settings_below_the_instructions_are_a_clear_error(engine, ctx):
    extractor = FactExtractor(ScriptedExtractionModel([]), max_tokens=900)
    ex = make_executor(extractor, engine, settings=ReflectionSettings(context_tokens=1024))
    with pytest.raises(ExtractionError, match="leaves no room for the conversation"):
        ex.reflect(BERLIN, config_for(ctx))


# -- requests to a local server -------------------------------------------------------------


def test_the_output_cap_reaches_a_local_server(engine, ctx, reflect):
    with LocalChatServer([{"facts": [fact("Lives in Berlin")]}]) as server:
        model = ChatOpenAI(model="local", base_url=server.base_url, api_key="x", max_retries=0)
        ex = make_executor(FactExtractor(model, max_tokens=333), engine)
        reflect(ex, BERLIN, config_for(ctx))
    assert server.requests[0]["max_tokens"] == 333
    assert contents(engine, ctx) == ["Lives in Berlin"]


def test_a_call_slower_than_the_timeout_fails_and_the_turn_stays_pending(engine, ctx, reflect):
    def slow(body: dict) -> dict:
        time.sleep(3)
        return {"facts": []}

    with LocalChatServer([slow, {"facts": [fact("Lives in Berlin")]}]) as server:
        model = ChatOpenAI(model="local", base_url=server.base_url, api_key="x", max_retries=0)
        settings = ReflectionSettings(attempts=1, backoff=0)
        ex = make_executor(FactExtractor(model, timeout=0.5), engine, settings=settings)
        started = time.monotonic()
        with pytest.raises(ExtractionError, match="Timeout"):
            reflect(ex, BERLIN, config_for(ctx))
        assert time.monotonic() - started < 2.5
        reflect(ex, BERLIN, config_for(ctx))  # pending turn, reflected next time
    assert contents(engine, ctx) == ["Lives in Berlin"]


# -- callers that stream -------------------------------------------------------------------


class StreamingModel(ScriptedExtractionModel):
    """Streams when asked to, as a chat model does under a streaming caller;
    ``streamed`` counts the calls that went out streamed."""

    streamed: int = 0

    def _stream(self, *args: Any, **kwargs: Any) -> Any:
        self.streamed += 1
        raise RuntimeError("the tool call came back streamed in pieces")
        yield ChatGenerationChunk(message=AIMessage(""))  # pragma: no cover

    async def _astream(self, *args: Any, **kwargs: Any) -> Any:
        self.streamed += 1
        raise RuntimeError("the tool call came back streamed in pieces")
        yield ChatGenerationChunk(message=AIMessage(""))  # pragma: no cover


@pytest.mark.parametrize("mode", ["async", "sync", "sync-no-timeout"])
def test_extraction_inside_a_streamed_graph_is_neither_streamed_nor_shown(engine, ctx, mode):
    model = StreamingModel([[fact("Lives in Berlin")]])
    timeout = None if mode == "sync-no-timeout" else 30.0
    ex = make_executor(FactExtractor(model, timeout=timeout), engine)

    async def aremember(state: MessagesState, config) -> dict:
        await ex.areflect(state["messages"], config)
        return {"messages": [AIMessage("Noted.", id="a9")]}

    def remember(state: MessagesState, config) -> dict:
        ex.reflect(state["messages"], config)
        return {"messages": [AIMessage("Noted.", id="a9")]}

    graph = StateGraph(MessagesState)
    graph.add_node("remember", aremember if mode == "async" else remember)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", END)
    app = graph.compile()

    async def run() -> list[Any]:
        return [
            chunk
            async for chunk in app.astream(
                {"messages": BERLIN}, config_for(ctx), stream_mode="messages"
            )
        ]

    if mode == "async":
        chunks = asyncio.run(run())
    else:
        chunks = list(app.stream({"messages": BERLIN}, config_for(ctx), stream_mode="messages"))
    assert model.streamed == 0 and model.calls == 1
    assert contents(engine, ctx) == ["Lives in Berlin"]
    shown = [m for m, _ in chunks]
    assert not any(getattr(m, "tool_calls", None) for m in shown)


# -- an agent whose server never chooses a tool ---------------------------------------------


def test_a_server_that_never_calls_tools_still_remembers(store):
    """The recipe of docs/local-models.md: no memory tools for the agent; the
    memory block goes into the prompt and reflection saves the facts, so
    nothing depends on the server choosing a tool by itself."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_ext.agents import MemoryPrompt
    from langmem_ext.agents.reflection import ReflectionExecutor

    def answer(body: dict) -> Any:
        if body.get("tools"):  # the extraction call, with a named tool choice
            return {"facts": [fact("Lives in Berlin")]}
        return "Noted."

    with LocalChatServer([answer] * 4) as server:
        local = ChatOpenAI(model="local", base_url=server.base_url, api_key="x", max_retries=0)
        reflection = ReflectionExecutor(
            FactExtractor(local, max_tokens=512, timeout=30),
            settings=ReflectionSettings(context_tokens=4096),
            delay=0,
            default_tenant="local",
        )
        agent = create_agent(
            local,
            tools=[],
            store=store,
            checkpointer=InMemorySaver(),
            middleware=[MemoryPrompt(default_tenant="local").middleware(), reflection.middleware()],
        )
        for thread, text in [("t1", "I live in Berlin"), ("t2", "Where should I eat?")]:
            config = {"configurable": {"user_id": "ada", "thread_id": thread}}
            agent.invoke({"messages": [HumanMessage(text)]}, config)
            assert reflection.flush(timeout=30)
        reflection.shutdown()
    agent_calls = [r for r in server.requests if not r.get("tools")]
    assert len(agent_calls) == 2 and not any("tool_choice" in r for r in agent_calls)
    system = agent_calls[1]["messages"][0]
    assert system["role"] == "system" and "Lives in Berlin" in system["content"]
    assert all(
        r["tool_choice"]["function"]["name"] == "extract_facts"
        for r in server.requests
        if r.get("tools")
    )


# Quoted text after "e.g." or in brackets: how the prompt and the tool schema
# give examples (a small model copies them as the user's facts).
_EXAMPLE = re.compile(r"""(?:e\.g\.,?|\()\s*(["'])([^"'\n]{2,120})\1""")


def test_no_example_text_of_the_request_becomes_a_stored_fact(engine, ctx, reflect):
    probe = ScriptedExtractionModel([[]])
    reflect(make_executor(probe, engine), BERLIN, config_for(ctx, "probe"))
    sent = str(probe.seen[0][0].content) + json.dumps(probe.bound[0]["tools"])
    examples = sorted({m.group(2) for m in _EXAMPLE.finditer(sent)})
    assert examples  # the request does give examples
    copied = [fact(e, subject=e) for e in examples] + [fact("Lives in <city>")]
    model = ScriptedExtractionModel([[*copied, fact("Works as a nurse")]])
    result = reflect(make_executor(model, engine), BERLIN, config_for(ctx))
    assert contents(engine, ctx) == ["Works as a nurse"]
    assert {d.reason for d in result.dropped} == {"example_text"}
    assert not {f.subject for f in engine.get_profile(ctx).facts} & set(examples)


def test_an_invented_first_person_line_is_not_stored(engine, ctx, reflect):
    """A small model answering small talk writes lines as if it were someone;
    a first-person line keeps its place only when the user said its words."""
    turn = [HumanMessage("Hello again, I live in Lyon now", id="h1"), AIMessage("Hi!", id="a1")]
    answer = [
        fact("I'm looking forward to working with you soon."),
        fact("What's your favorite color?"),
        fact("How about you have a picnic? I'd love to try it!"),
        fact("I live in Lyon"),
    ]
    result = reflect(make_executor([answer], engine), turn, config_for(ctx))
    assert contents(engine, ctx) == ["I live in Lyon"]
    assert [d.reason for d in result.dropped] == ["not_from_user"] * 3


def test_the_feedback_of_a_retry_is_not_stored_as_a_fact(engine, ctx, reflect):
    """After an invalid answer the retry says what was wrong; a small model
    copied that sentence as a fact."""
    parrot = fact("The tool call's arguments are not valid JSON (Expecting ',' delimiter)")
    model = ScriptedExtractionModel(
        [broken_call(300, closed=True), [parrot, fact("Lives in Berlin")]]
    )
    result = reflect(make_executor(model, engine), BERLIN, config_for(ctx))
    assert contents(engine, ctx) == ["Lives in Berlin"]
    assert [d.reason for d in result.dropped] == ["example_text"]


def test_small_talk_copied_from_the_user_is_not_stored(engine, ctx, reflect):
    """The user's goodbye is the user's words, but no fact about the user."""
    turn = [
        HumanMessage("Thanks, that's all for today! I start at the clinic on Monday.", id="h1"),
        AIMessage("Good luck!", id="a1"),
    ]
    answer = [fact("Thanks, that's all for today!"), fact("Starts at the clinic on Monday")]
    result = reflect(make_executor([answer], engine), turn, config_for(ctx))
    assert contents(engine, ctx) == ["Starts at the clinic on Monday"]
    assert [d.reason for d in result.dropped] == ["small_talk"]


def test_a_turn_of_only_assistant_copies_is_asked_again_with_the_users_lines(
    engine, ctx, reflect, caplog
):
    """A small model that files the assistant's sentences and nothing else
    gets one more request showing the user's lines alone; there, a "fact"
    mostly not in the user's words is the model answering, not reporting."""
    copy = "Berlin has been the capital of Germany since 1990"
    answer = [fact("Lives in Berlin"), fact("Nurses earn well in Germany")]
    model = ScriptedExtractionModel([[fact(copy, "knowledge")], answer])
    with caplog.at_level(logging.INFO, logger="langmem_ext.agents.reflection"):
        result = reflect(make_executor(model, engine), BERLIN, config_for(ctx))
    first, second = (m[1].content for m in model.seen)
    assert "assistant (context only" in first and "capital of Germany" in first
    assert "user: Hi! I live in Berlin" in second
    assert "assistant" not in second.split("\n", 1)[1] and "capital" not in second
    assert contents(engine, ctx) == ["Lives in Berlin"]
    assert result.model_calls == 2
    assert [(d.content, d.reason) for d in result.dropped] == [
        ("Nurses earn well in Germany", "not_from_user")
    ]
    assert "asking again with the user's lines only" in caplog.text


@pytest.mark.parametrize(
    "said",
    ["Quick question: what's the capital of Australia?", "Thanks, that's all for today!"],
)
def test_a_question_or_small_talk_is_not_asked_again(engine, ctx, reflect, said):
    """Nothing the user said could be a fact: the copies are dropped, one call."""
    reply = AIMessage("Canberra, since 1913. Have a nice day!", id="a1")
    turn = [HumanMessage(said, id="h1"), reply]
    model = ScriptedExtractionModel([[fact("Canberra has been the capital since 1913")]])
    result = reflect(make_executor(model, engine), turn, config_for(ctx))
    assert contents(engine, ctx) == [] and result.model_calls == 1 and len(model.seen) == 1
    assert [d.reason for d in result.dropped] == ["assistant_copy"]
