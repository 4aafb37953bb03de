"""ReflectionExecutor: debounced background reflection that never blocks,
loses no turn, and stops cleanly (the process never hangs at exit)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langmem_ext.agents.reflection import ReflectionExecutor, ReflectionSettings
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.errors import ConfigurationError, InvalidValueError, MissingIdentifierError
from langmem_ext.testing.chat import ScriptedExtractionModel

from .conftest import config_for, make_executor

FACT = [("Lives in Berlin", "context", 0.9)]


def turn(n: int) -> list:
    return [HumanMessage(f"message number {n}", id=f"h{n}"), AIMessage(f"ok {n}", id=f"a{n}")]


def contents(engine, ctx):
    return sorted(f.content for f in engine.get_profile(ctx).facts)


def test_turns_within_the_delay_are_reflected_once(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    with make_executor(model, engine, delay=60) as ex:
        history: list = []
        for n in range(3):  # a graph submits its whole state after each turn
            history += turn(n)
            ex.submit(list(history), config_for(ctx))
        assert model.calls == 0 and ex.pending == 1
        assert ex.flush(timeout=30)
    assert model.calls == 1
    prompt = model.seen[0][1].content
    assert all(f"message number {n}" in prompt for n in range(3))
    assert contents(engine, ctx) == ["Lives in Berlin"]


def test_turn_by_turn_submissions_are_merged(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    with make_executor(model, engine, delay=60) as ex:
        ex.submit(turn(0), config_for(ctx))
        ex.submit(turn(1), config_for(ctx))
        ex.flush(timeout=30)
    assert "message number 0" in model.seen[0][1].content
    assert "message number 1" in model.seen[0][1].content


def test_threads_are_reflected_separately(engine, ctx):
    model = ScriptedExtractionModel([FACT, [("Has a dog", "context", 0.9)]])
    with make_executor(model, engine) as ex:
        ex.submit(turn(0), config_for(ctx, "t1"))
        ex.submit(turn(1), config_for(ctx, "t2"))
        ex.flush(timeout=30)
    assert model.calls == 2 and contents(engine, ctx) == ["Has a dog", "Lives in Berlin"]


def test_submit_returns_while_the_model_is_still_working(engine, ctx):
    release = threading.Event()
    started = threading.Event()

    def slow(messages):
        started.set()
        assert release.wait(30)
        return FACT

    with make_executor([slow], engine) as ex:
        ex.submit(turn(0), config_for(ctx))  # returns at once...
        assert started.wait(30)  # ...while the worker is inside the model call
        assert contents(engine, ctx) == [] and ex.pending == 1
        release.set()
        assert ex.flush(timeout=30)
    assert contents(engine, ctx) == ["Lives in Berlin"]


def test_a_failed_turn_stays_pending_and_joins_the_next(engine, ctx):
    err = ConnectionError("model server down")
    model = ScriptedExtractionModel([err, err, err, [FACT[0], ("Has a dog", "context", 0.9)]])
    with make_executor(model, engine) as ex:
        ex.submit(turn(0), config_for(ctx))
        ex.flush(timeout=30)
        assert [f.thread_id for f in ex.failures] == ["t1"]
        assert "stays pending" in str(ex.failures[0].error) and contents(engine, ctx) == []
        ex.submit(turn(1), config_for(ctx))  # turn by turn: the failed turn joins
        ex.flush(timeout=30)
    prompt = model.seen[-1][1].content
    assert "message number 0" in prompt and "message number 1" in prompt
    assert contents(engine, ctx) == ["Has a dog", "Lives in Berlin"]


def test_retry_failed_runs_the_failed_turn_again(engine, ctx):
    model = ScriptedExtractionModel(["x", "x", "x", FACT])
    with make_executor(model, engine) as ex:
        ex.submit(turn(0), config_for(ctx))
        ex.flush(timeout=30)
        assert len(ex.failures) == 1
        assert ex.retry_failed() == 1
        ex.flush(timeout=30)
    assert contents(engine, ctx) == ["Lives in Berlin"] and len(ex.results) == 1


def test_shutdown_drains_pending_reflections(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    ex = make_executor(model, engine, delay=3600)
    ex.submit(turn(0), config_for(ctx))
    assert ex.shutdown(timeout=30) is True
    assert contents(engine, ctx) == ["Lives in Berlin"]
    with pytest.raises(RuntimeError, match="shut down"):
        ex.submit(turn(1), config_for(ctx))


def test_shutdown_can_cancel_pending_reflections(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    ex = make_executor(model, engine, delay=3600)
    ex.submit(turn(0), config_for(ctx))
    assert ex.shutdown(cancel_pending=True, timeout=30) is True
    assert model.calls == 0 and contents(engine, ctx) == []


def test_bad_configuration_is_a_clear_error_at_submit(engine, store):
    with make_executor([], engine) as ex:
        with pytest.raises(MissingIdentifierError, match="has no user"):
            ex.submit(turn(0), {"configurable": {"thread_id": "t1"}})
        with pytest.raises(InvalidValueError, match="list of messages"):
            ex.submit("hello", config_for(MemoryContext("acme", user_id="ada")))
    with pytest.raises(ConfigurationError, match="has no store"):
        ReflectionExecutor(ScriptedExtractionModel([])).submit(
            turn(0), {"configurable": {"user_id": "ada"}}
        )
    with pytest.raises(ValueError, match="on_exit"):
        ReflectionExecutor(ScriptedExtractionModel([]), engine=engine, on_exit="wait")


def test_default_tenant_for_apps_without_auth(engine):
    model = ScriptedExtractionModel([FACT])
    with make_executor(model, engine, default_tenant="local") as ex:
        ex.submit(turn(0), {"configurable": {"user_id": "ada", "thread_id": "t"}})
        ex.flush(timeout=30)
    assert contents(engine, MemoryContext("local", user_id="ada")) == ["Lives in Berlin"]


def test_event_loop_mode_debounces_and_drains(engine, ctx):
    model = ScriptedExtractionModel([FACT, [("Has a dog", "context", 0.9)]])
    ex = make_executor(model, engine, delay=60)

    async def main():
        await ex.asubmit(turn(0), config_for(ctx))
        await ex.asubmit(turn(0) + turn(1), config_for(ctx))
        await ex.asubmit(turn(2), config_for(ctx, "t2"), delay=0)
        for _ in range(300):  # a loaded CI machine may take a while to run t2
            if ex.results:
                break
            await asyncio.sleep(0.1)
        assert model.calls == 1  # t2 ran, t1 is still waiting for its delay
        await ex.aflush()
        await ex.ashutdown()

    asyncio.run(main())
    assert model.calls == 2
    assert contents(engine, ctx) == ["Has a dog", "Lives in Berlin"]


EXIT_SCRIPT = """
import sys, threading
from langchain_core.messages import HumanMessage
from langmem_ext import SQLiteStore
from langmem_ext.engine import MemoryEngine
from langmem_ext.agents.reflection import ReflectionExecutor
from langmem_ext.testing.chat import ScriptedExtractionModel

never = threading.Event()
def stuck(messages):
    never.wait()  # a model call that never returns
def quick(messages):
    return [("Lives in Berlin", "context", 0.9)]

mode, db = sys.argv[1], sys.argv[2]
store = SQLiteStore(db)
step = stuck if mode == "stuck" else quick
ex = ReflectionExecutor(ScriptedExtractionModel([step]), engine=MemoryEngine(store),
                        delay=0 if mode == "stuck" else 3600,
                        exit_timeout=1.0 if mode == "stuck" else 30.0,
                        on_exit="cancel" if mode == "cancel" else "drain",
                        default_tenant="local")
ex.submit([HumanMessage("I live in Berlin", id="h1")],
          {"configurable": {"user_id": "ada", "thread_id": "t1"}})
print("main done", flush=True)
"""


@pytest.mark.parametrize("mode", ["stuck", "drain", "cancel"])
def test_the_process_exits_without_hanging(tmp_path, mode):
    db = tmp_path / "exit.db"
    script = tmp_path / "exit.py"
    script.write_text(textwrap.dedent(EXIT_SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script), mode, str(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "main done" in done.stdout
    from langmem_ext import SQLiteStore

    with SQLiteStore(db) as store:
        engine = MemoryEngine(store)
        facts = contents(engine, MemoryContext("local", user_id="ada"))
    # drain: the pending reflection (due in an hour) ran at exit; cancel dropped it;
    # stuck: the model call never returned, so nothing was stored
    assert facts == (["Lives in Berlin"] if mode == "drain" else [])


@pytest.mark.parametrize(
    "bad",
    [{"threshold": 1.5}, {"max_facts": 0}, {"attempts": 0}, {"backoff": -1}, {"window": 0}],
)
def test_settings_are_validated(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        ReflectionSettings(**bad)


def test_delay_is_validated(engine):
    with pytest.raises(ValueError, match="delay"):
        ReflectionExecutor(ScriptedExtractionModel([]), engine=engine, delay=-1)


# -- LangMem's form, futures, the event loop going away ---------------------------------


def test_submit_returns_a_future_with_the_result(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    with make_executor(model, engine) as ex:
        fut = ex.submit(turn(0), config_for(ctx), after_seconds=0)
        result = fut.result(timeout=30)
    assert [f.content for f in result.added] == ["Lives in Berlin"]


def test_a_failed_reflection_sets_its_future_and_keeps_the_turn(engine, ctx):
    model = ScriptedExtractionModel([RuntimeError("down")] * 3 + [FACT])
    settings = ReflectionSettings(backoff=0.0)
    with make_executor(model, engine, settings=settings) as ex:
        fut = ex.submit(turn(0), config_for(ctx))
        with pytest.raises(Exception, match="failed 3 times"):
            fut.result(timeout=30)
        assert ex.retry_failed() == 1
        assert ex.flush(timeout=30)
    assert contents(engine, ctx) == ["Lives in Berlin"]


def test_debounced_submissions_share_one_result(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    with make_executor(model, engine, delay=60) as ex:
        first = ex.submit(turn(0), config_for(ctx))
        second = ex.submit(turn(0) + turn(1), config_for(ctx))
        ex.flush(timeout=30)
        assert first.result(timeout=5) is second.result(timeout=5)
    assert model.calls == 1


def test_remote_form_is_a_clear_error():
    with pytest.raises(ConfigurationError, match="remote reflection"):
        ReflectionExecutor("my_memory_manager", ("memories",), url="http://127.0.0.1:2024")


def test_pending_async_reflections_survive_the_loop_ending(engine, ctx):
    model = ScriptedExtractionModel([FACT])
    ex = make_executor(model, engine, delay=3600)

    async def main():
        await ex.asubmit(turn(0), config_for(ctx))  # due in an hour; no ashutdown()

    asyncio.run(main())  # the loop ends with the reflection pending
    assert ex.flush(timeout=30)  # it moved to the worker thread instead of being lost
    ex.shutdown()
    assert contents(engine, ctx) == ["Lives in Berlin"]


def test_shutdown_waits_at_most_its_timeout_in_all(engine, ctx):
    never = threading.Event()

    def stuck(messages):
        never.wait(10)
        return []

    ex = make_executor(ScriptedExtractionModel([stuck]), engine)
    ex.submit(turn(0), config_for(ctx))
    deadline = time.monotonic() + 10
    while not ex._scheduler.running and time.monotonic() < deadline:  # the worker took the job
        time.sleep(0.01)
    assert ex.shutdown(timeout=0.5) is False
    never.set()


def test_one_users_stuck_call_does_not_stall_other_users(engine, ctx):
    release = threading.Event()

    def stuck(messages):
        release.wait(30)
        return []

    def answer(messages):
        return [("Has a dog", "context", 0.9)]

    bob = MemoryContext("acme", user_id="bob")
    model = ScriptedExtractionModel([stuck, answer])
    ex = make_executor(model, engine)
    ex.submit(turn(0), config_for(ctx))  # ada's call hangs
    deadline = time.monotonic() + 30
    while model.calls < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    done = ex.submit(turn(1), config_for(bob, "t2"))
    done.result(timeout=30)  # bob's reflection ran beside ada's stuck one
    assert contents(engine, bob) == ["Has a dog"]
    release.set()
    ex.shutdown(timeout=30)
