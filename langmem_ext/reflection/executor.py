"""Background reflection: extract facts after a turn without delaying the reply.

:class:`ReflectionExecutor` schedules a reflection of a thread ``delay``
seconds after each turn. A new turn of the same thread before that moves the
deadline and joins the pending reflection (debouncing): one reflection covers
both turns, so a fast conversation costs one model call per pause rather than
per message. Reflections run on one daemon worker thread (:meth:`submit`) or on
the running event loop (:meth:`asubmit`); either way ``submit`` returns at once.

Failures never lose a turn: when the model keeps failing (see
:mod:`.reflect`), the failure is recorded in :attr:`failures` and the turn's
messages stay pending; the next turn of the thread (or :meth:`retry_failed`)
reflects them together with the new ones. In a graph, the per-thread cursor of
:mod:`.reflect` makes this hold across processes too.

Shutdown is explicit and bounded: :meth:`shutdown` drains the pending
reflections (or cancels them) within ``timeout``; at interpreter exit the same
runs with ``exit_timeout`` (``on_exit="drain"`` by default), and the worker is
a daemon thread, so the process never hangs at exit.

In a graph::

    executor = ReflectionExecutor("openai:gpt-4o-mini", default_tenant="local")
    builder.add_node("agent", agent)
    builder.add_node("reflect", executor.as_node())   # after the agent
    builder.add_edge("agent", "reflect")

or with LangChain's ``create_agent``: ``middleware=[executor.middleware()]``.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> model = ScriptedExtractionModel([[("Lives in Berlin", "context", 0.9)]])
    >>> engine, ctx = MemoryEngine(SQLiteStore()), MemoryContext("acme", user_id="ada")
    >>> config = {"configurable": {"memory_context": ctx, "thread_id": "t1"}}
    >>> with ReflectionExecutor(model, engine=engine, delay=0) as executor:
    ...     executor.submit([HumanMessage("I live in Berlin"), AIMessage("Nice!")], config)
    ...     executor.flush()
    True
    >>> [f.content for f in engine.get_profile(ctx).facts]
    ['Lives in Berlin']
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from ..engine import EngineConfig, MemoryContext, MemoryEngine
from ..engine._core import run_async, run_sync
from ..errors import ConfigurationError
from ._graph import EnginesByStore, graph_store
from .extract import FactExtractor
from .reflect import ReflectionResult, ReflectionSettings, reflect_steps

__all__ = ["ReflectionExecutor", "ReflectionFailure"]

logger = logging.getLogger("langmem_ext.reflection")


@dataclass(frozen=True)
class ReflectionFailure:
    """A reflection that gave up; its messages stay pending."""

    thread_id: str
    error: BaseException
    at: datetime


@dataclass
class _Job:
    key: tuple[Any, ...]
    engine: MemoryEngine
    ctx: MemoryContext
    thread_id: str
    messages: list[BaseMessage]
    due: float
    mode: Literal["thread", "loop"]


def _merge(old: list[BaseMessage], new: list[BaseMessage]) -> list[BaseMessage]:
    """``old`` then what ``new`` adds: a graph state repeats earlier messages,
    a caller submitting turn by turn does not; both end up with each once."""
    seen = {m.id or id(m) for m in old}
    return [*old, *(m for m in new if (m.id or id(m)) not in seen)]


def _messages(payload: Any) -> list[BaseMessage]:
    if isinstance(payload, Mapping) and "messages" in payload:
        payload = payload["messages"]
    elif hasattr(payload, "messages") and not isinstance(payload, Sequence):
        payload = payload.messages
    if not isinstance(payload, Sequence) or isinstance(payload, str):
        raise TypeError(
            "submit() takes a list of messages or a state with 'messages', "
            f"got {type(payload).__name__}"
        )
    return list(convert_to_messages(payload))


class ReflectionExecutor:
    """Runs fact extraction in the background, debounced per thread.

    Args:
        model: a chat model, a ``"provider:model"`` string, a
            :class:`FactExtractor`, or None (``ChatOpenAI``, see :mod:`.extract`).
        engine: the engine facts go to; without it, the store passed to
            :meth:`submit` or the graph's store is used (``store=`` fixes one).
        store: a store to build the engine on when ``engine`` is not given.
        delay: seconds to wait after a turn before reflecting (debounce window).
        settings: :class:`ReflectionSettings` (threshold, max_facts, attempts, …).
        default_tenant: tenant for runs without LangGraph auth (single-tenant
            apps); with auth, the auth user's tenant is always used.
        on_exit: at interpreter exit, ``"drain"`` pending reflections (within
            ``exit_timeout`` seconds) or ``"cancel"`` them.
        engine_config: config of engines built on a store.
    """

    def __init__(
        self,
        model: BaseChatModel | FactExtractor | str | None = None,
        *,
        engine: MemoryEngine | None = None,
        store: BaseStore | None = None,
        delay: float = 2.0,
        settings: ReflectionSettings | None = None,
        default_tenant: str | None = None,
        on_exit: Literal["drain", "cancel"] = "drain",
        exit_timeout: float = 10.0,
        engine_config: EngineConfig | None = None,
    ) -> None:
        if on_exit not in ("drain", "cancel"):
            raise ValueError(f"on_exit must be 'drain' or 'cancel', got {on_exit!r}")
        if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
            raise ValueError(f"delay must be a number of seconds >= 0, got {delay!r}")
        self.extractor = model if isinstance(model, FactExtractor) else FactExtractor(model)
        self.settings = settings or ReflectionSettings()
        self.delay = float(delay)
        self.default_tenant = default_tenant
        self.on_exit = on_exit
        self.exit_timeout = exit_timeout
        self._engine = engine or (MemoryEngine(store, engine_config) if store else None)
        self._engines = EnginesByStore(engine_config)
        self._cv = threading.Condition()
        self._jobs: dict[tuple[Any, ...], _Job] = {}
        self._failed: dict[tuple[Any, ...], _Job] = {}
        self._running: set[tuple[Any, ...]] = set()
        self._tasks: dict[tuple[Any, ...], asyncio.Task[None]] = {}
        # Set to wake an event-loop task sleeping until its deadline (a new
        # turn moved it, or aflush wants it now).
        self._wake: dict[tuple[Any, ...], asyncio.Event] = {}
        self._worker: threading.Thread | None = None
        self._closed = False
        self.failures: list[ReflectionFailure] = []
        self.results: deque[ReflectionResult] = deque(maxlen=1000)
        ref = weakref.ref(self)
        self._atexit = lambda: (x := ref()) is not None and x._at_exit()
        atexit.register(self._atexit)

    # -- what to reflect, for whom ------------------------------------------------

    @property
    def model_calls(self) -> int:
        """Model calls made by this executor's extractor."""
        return self.extractor.calls

    def engine_for(self, store: BaseStore | None) -> MemoryEngine:
        """The engine a reflection writes with (explicit, else one per store)."""
        if self._engine is not None:
            return self._engine
        if store is None:
            raise ConfigurationError(
                "ReflectionExecutor has no store: pass engine= or store= when creating it, "
                "or use it in a graph compiled with a store"
            )
        return self._engines.get(store)

    def _job(
        self,
        payload: Any,
        config: RunnableConfig | None,
        store: BaseStore | None,
        delay: float | None,
        mode: Literal["thread", "loop"],
    ) -> _Job:
        if self._closed:
            raise RuntimeError("this ReflectionExecutor is shut down; create a new one")
        messages = _messages(payload)
        config = config or {}
        if store is None and self._engine is None:
            store = graph_store()
        engine = self.engine_for(store)
        ctx = MemoryContext.from_config(config, default_tenant=self.default_tenant)
        thread_id = str((config.get("configurable") or {}).get("thread_id") or "default")
        key = (id(engine), ctx.tenant_id, ctx.user_id, thread_id)
        wait = self.delay if delay is None else float(delay)
        return _Job(key, engine, ctx, thread_id, messages, time.monotonic() + wait, mode)

    def _enqueue(self, job: _Job) -> _Job:
        with self._cv:
            for earlier in (self._failed.pop(job.key, None), self._jobs.get(job.key)):
                if earlier is not None:
                    job.messages = _merge(earlier.messages, job.messages)
            self._jobs[job.key] = job
            self._cv.notify_all()
        return job

    # -- thread mode ---------------------------------------------------------------

    def submit(
        self,
        payload: Any,
        config: RunnableConfig | None = None,
        *,
        store: BaseStore | None = None,
        delay: float | None = None,
    ) -> None:
        """Schedule a reflection of the thread in ``config`` (returns at once).

        Args:
            payload: the thread's messages, or a state holding ``messages``.
            config: the run's config: ``thread_id`` and the caller
                (``user_id`` with ``default_tenant``, LangGraph's auth user, or a
                ``MemoryContext`` in ``configurable["memory_context"]``).
            store: the store to write to when the executor has no engine.
            delay: overrides the executor's ``delay`` for this turn.
        """
        self._enqueue(self._job(payload, config, store, delay, "thread"))
        self._ensure_worker()

    def _next_due(self) -> tuple[_Job | None, float | None]:
        jobs = [j for j in self._jobs.values() if j.mode == "thread" and j.key not in self._running]
        if not jobs:
            return None, None
        job = min(jobs, key=lambda j: j.due)
        wait = job.due - time.monotonic()
        return (job, None) if wait <= 0 else (None, wait)

    def _work(self) -> None:
        # One worker: reflections of one thread never overlap, and a slow model
        # delays others rather than multiplying concurrent calls to it.
        while True:
            with self._cv:
                while True:
                    if self._closed and not any(j.mode == "thread" for j in self._jobs.values()):
                        return
                    job, wait = self._next_due()
                    if job is not None:
                        break
                    self._cv.wait(wait)
                del self._jobs[job.key]
                self._running.add(job.key)
            try:
                result = run_sync(self._steps(job), job.engine.store, job.engine.config)
            except BaseException as e:  # recorded, never raised into the daemon thread
                self._failed_job(job, e)
            else:
                self.results.append(result)
            finally:
                with self._cv:
                    self._running.discard(job.key)
                    self._cv.notify_all()

    def _steps(self, job: _Job) -> Any:
        env = job.engine.env(job.ctx)
        return reflect_steps(env, self.extractor, job.messages, job.thread_id, self.settings)

    def _failed_job(self, job: _Job, e: BaseException) -> None:
        logger.error("reflection of thread %s failed; its turns stay pending: %s", job.thread_id, e)
        with self._cv:
            self.failures.append(ReflectionFailure(job.thread_id, e, datetime.now(timezone.utc)))
            if job.key in self._jobs:  # a newer turn arrived meanwhile: it covers these too
                newer = self._jobs[job.key]
                newer.messages = _merge(job.messages, newer.messages)
            else:
                self._failed[job.key] = job

    def retry_failed(self) -> int:
        """Schedule the failed reflections again, now; returns how many.
        (Event-loop ones need a running loop: call it from async code.)"""
        with self._cv:
            failed, self._failed = list(self._failed.values()), {}
        for job in failed:
            job.due = time.monotonic()
            self._enqueue(job)
            if job.mode == "thread":
                self._ensure_worker()
            else:
                self._ensure_task(job)
        return len(failed)

    def _ensure_worker(self) -> None:
        with self._cv:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._work, name="langmem-ext-reflection", daemon=True
                )
                self._worker.start()

    @property
    def pending(self) -> int:
        """Threads with a reflection scheduled or running."""
        with self._cv:
            return len(self._jobs) + len(self._running)

    def flush(self, timeout: float | None = None) -> bool:
        """Run every pending thread-mode reflection now and wait for them;
        True when none is left (False on timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            for job in self._jobs.values():
                if job.mode == "thread":
                    job.due = 0.0
            self._cv.notify_all()
            while any(j.mode == "thread" for j in self._jobs.values()) or self._running:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def shutdown(
        self, *, wait: bool = True, cancel_pending: bool = False, timeout: float | None = None
    ) -> bool:
        """Stop the executor.

        Args:
            wait: drain (run) the pending reflections before returning.
            cancel_pending: drop the pending reflections instead (their turns
                are reflected by the thread's next reflection, in a graph).
            timeout: the most seconds to wait; the daemon worker is abandoned
                after it, so shutdown never hangs.

        Returns:
            True when nothing was left pending or running.
        """
        with self._cv:
            if cancel_pending:
                for key in [k for k, j in self._jobs.items() if j.mode == "thread"]:
                    logger.info("cancelled the pending reflection of thread %s", key[-1])
                    del self._jobs[key]
            self._closed = True
            self._cv.notify_all()
        drained = self.flush(timeout) if wait else not self._jobs
        worker = self._worker
        if wait and worker is not None:
            worker.join(timeout if timeout is not None else None)
        atexit.unregister(self._atexit)
        return drained

    def _at_exit(self) -> None:
        if not self._closed or self._jobs or self._running:
            self.shutdown(cancel_pending=self.on_exit == "cancel", timeout=self.exit_timeout)

    def __enter__(self) -> ReflectionExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # -- event-loop mode --------------------------------------------------------------

    async def asubmit(
        self,
        payload: Any,
        config: RunnableConfig | None = None,
        *,
        store: BaseStore | None = None,
        delay: float | None = None,
    ) -> None:
        """:meth:`submit` on the running event loop (async stores and models)."""
        job = self._enqueue(self._job(payload, config, store, delay, "loop"))
        self._ensure_task(job)

    def _ensure_task(self, job: _Job) -> None:
        task = self._tasks.get(job.key)
        if task is None or task.done():
            self._wake[job.key] = asyncio.Event()
            self._tasks[job.key] = asyncio.get_running_loop().create_task(self._arun(job.key))
        else:
            self._wake[job.key].set()

    async def _arun(self, key: tuple[Any, ...]) -> None:
        while True:
            with self._cv:
                job = self._jobs.get(key)
                if job is None:
                    return
                wait = job.due - time.monotonic()
                if wait <= 0 and key not in self._running:
                    del self._jobs[key]
                    self._running.add(key)
            if wait > 0 or key not in self._running:
                wake = self._wake[key]
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(wake.wait(), max(wait, 0.01))
                wake.clear()
                continue
            try:
                result = await run_async(self._steps(job), job.engine.store, job.engine.config)
                self.results.append(result)
            except asyncio.CancelledError:
                self._failed_job(job, asyncio.CancelledError("cancelled"))
                raise
            except Exception as e:
                self._failed_job(job, e)
            finally:
                with self._cv:
                    self._running.discard(key)
                    self._cv.notify_all()

    async def aflush(self) -> None:
        """Run every pending event-loop reflection now and wait for them."""
        with self._cv:
            for job in self._jobs.values():
                if job.mode == "loop":
                    job.due = 0.0
                    if job.key in self._wake:
                        self._wake[job.key].set()
        tasks = [t for t in self._tasks.values() if not t.done()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def ashutdown(self, *, cancel_pending: bool = False) -> None:
        """Drain (or cancel) the event-loop reflections, then :meth:`shutdown`."""
        if cancel_pending:
            for task in self._tasks.values():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        else:
            await self.aflush()
        await asyncio.to_thread(self.shutdown, cancel_pending=cancel_pending)

    # -- direct runs ------------------------------------------------------------------

    def reflect(
        self, payload: Any, config: RunnableConfig | None = None, *, store: BaseStore | None = None
    ) -> ReflectionResult:
        """Reflect now, in this thread (no scheduling); raises on failure."""
        job = self._job(payload, config, store, 0, "thread")
        return run_sync(self._steps(job), job.engine.store, job.engine.config)

    async def areflect(
        self, payload: Any, config: RunnableConfig | None = None, *, store: BaseStore | None = None
    ) -> ReflectionResult:
        """Async :meth:`reflect`."""
        job = self._job(payload, config, store, 0, "loop")
        return await run_async(self._steps(job), job.engine.store, job.engine.config)

    # -- graph faces --------------------------------------------------------------------

    def as_node(self) -> RunnableLambda:
        """A LangGraph node to add after the agent node: schedules a reflection
        of the state's messages and returns no update (the reply is not delayed).
        Sync graphs use the worker thread, async graphs the event loop."""

        def reflect_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            self.submit(state, config)
            return {}

        async def areflect_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            await self.asubmit(state, config)
            return {}

        return RunnableLambda(reflect_node, afunc=areflect_node, name="reflect")

    def middleware(self) -> Any:
        """Middleware for LangChain's ``create_agent``: reflects after each run."""
        from .middleware import ReflectionMiddleware

        return ReflectionMiddleware(self)
