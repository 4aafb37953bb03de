"""Background reflection: memories from a conversation without delaying the reply.

:class:`ReflectionExecutor` schedules a reflection of a thread ``delay``
seconds after each turn (LangMem's ``after_seconds``). A new turn of the same
thread before that moves the deadline and joins the pending reflection
(debouncing): one reflection covers both turns, and both callers' futures get
its result. Reflections run on one daemon worker thread (:meth:`submit`) or on
the running event loop (:meth:`asubmit`); either way ``submit`` returns at once.

It runs either of two reflectors:

* a chat model (or a ``"provider:model"`` string, or a :class:`FactExtractor`):
  profile facts are extracted into the user's memories, one model call per
  turn (see :mod:`.reflect`);
* a LangMem store manager (:func:`~langmem_ext.create_memory_store_manager`,
  or any runnable with a ``namespace``), LangMem's form:
  ``ReflectionExecutor(manager, store=store).submit({"messages": ...},
  after_seconds=...)``.

Failures never lose a turn: when a reflection fails, the failure is logged,
recorded in :attr:`failures` and set on the futures, and the turn's messages
stay pending; the next turn of the thread (or :meth:`retry_failed`) reflects
them together with the new ones. In a graph, the per-thread cursor of
:mod:`.reflect` makes this hold across processes too.

Shutdown is explicit and bounded: :meth:`shutdown` drains the pending
reflections (or cancels them) within ``timeout``; at interpreter exit the same
runs with ``exit_timeout`` (``on_exit="drain"`` by default), and the worker is
a daemon thread, so the process never hangs at exit. Reflections pending on an
event loop that closes (``asyncio.run`` returning) move to the worker thread,
so they are drained at exit too.

In a graph::

    executor = ReflectionExecutor("openai:gpt-4o-mini")
    builder.add_node("agent", agent)
    builder.add_node("reflect", executor.as_node())   # after the agent
    builder.add_edge("agent", "reflect")

or with LangChain's ``create_agent``: ``middleware=[executor.middleware()]``.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryEngine
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> model = ScriptedExtractionModel([[("Lives in Berlin", "context", 0.9)]])
    >>> engine = MemoryEngine(SQLiteStore())
    >>> config = {"configurable": {"user_id": "ada", "thread_id": "t1"}}
    >>> with ReflectionExecutor(model, engine=engine, delay=0) as executor:
    ...     done = executor.submit([HumanMessage("I live in Berlin"), AIMessage("Nice!")], config)
    ...     [f.content for f in done.result(timeout=30).added]
    ['Lives in Berlin']
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import uuid
import weakref
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from ..._langgraph import config_runtime, graph_store
from ...engine import EngineConfig, EnginesByStore, MemoryEngine, NamespaceTemplate
from ...engine.checks import check_int, check_number, check_text, run_config, shown
from ...engine.env import check_filter
from ...engine.requests import run_async, run_sync
from ...errors import ConfigurationError, InvalidValueError
from .extract import FactExtractor
from .jobs import Job, as_current, merge_messages, messages_of, store_config
from .reflect import ReflectionSettings, reflect_steps
from .screen import cut

__all__ = ["ReflectionExecutor", "ReflectionFailure"]

logger = logging.getLogger("langmem_ext.agents.reflection")
_UNSET: Any = object()


@dataclass(frozen=True)
class ReflectionFailure:
    """A reflection that gave up; its messages stay pending."""

    thread_id: str
    error: BaseException
    at: datetime


def _is_manager(reflector: Any) -> bool:
    return isinstance(reflector, Runnable) and not isinstance(reflector, BaseChatModel)


class ReflectionExecutor:
    """Runs reflection in the background, debounced per thread and user.

    Args:
        reflector: a chat model, a ``"provider:model"`` string, a
            :class:`FactExtractor` or None (``ChatOpenAI``): facts go into the
            user's memories; or a LangMem store manager (see the module docs).
        namespace: LangMem's remote form (a second positional argument); not
            supported: pass a store manager and ``store=`` instead.
        engine: the engine facts go to (model reflectors); without it, the store
            passed to :meth:`submit` or the graph's store is used.
        store: the store to write to (both forms; LangMem's ``store=``).
        delay: seconds to wait after a turn before reflecting (debounce window).
        settings: :class:`ReflectionSettings` (threshold, max_facts, attempts, …).
        default_tenant: tenant of runs without LangGraph auth; with auth, the
            auth user's tenant is always used.
        memory_namespace: the app's namespace template for each user's memories
            (model reflectors; same as the memory tools'); None: the identity rule.
        on_exit: at interpreter exit, ``"drain"`` pending reflections (within
            ``exit_timeout`` seconds) or ``"cancel"`` them.
        engine_config: config of engines built on a store.
        workers: background threads (2): one stuck or slow model call holds
            one of them, and a user with a reflection running waits behind
            other users' due work.

    Raises:
        ConfigurationError: LangMem's remote form (``namespace``, ``url``,
            ``client``) was used.
    """

    def __init__(
        self,
        reflector: BaseChatModel | FactExtractor | Runnable | str | None = None,
        namespace: Any = None,
        /,
        *,
        engine: MemoryEngine | None = None,
        store: BaseStore | None = None,
        delay: float = 2.0,
        settings: ReflectionSettings | None = None,
        default_tenant: str | None = None,
        memory_namespace: Any = None,
        on_exit: Literal["drain", "cancel"] = "drain",
        exit_timeout: float = 10.0,
        engine_config: EngineConfig | None = None,
        workers: int = 2,
        url: str | None = None,
        client: Any = None,
        sync_client: Any = None,
    ) -> None:
        if namespace is not None or url is not None or client is not None or sync_client:
            raise ConfigurationError(
                "remote reflection on a LangGraph server (a graph name, namespace, url or "
                "client) is not supported; run the manager in this process instead: "
                "ReflectionExecutor(create_memory_store_manager(...), store=store)"
            )
        if on_exit not in ("drain", "cancel"):
            raise ConfigurationError(f"on_exit must be 'drain' or 'cancel', got {shown(on_exit)}")
        _check_delay(delay)
        check_number("exit_timeout", exit_timeout, 0.0, MAX_DELAY, ConfigurationError)
        check_int("workers", workers, 1, 64, ConfigurationError)
        _check_parts(reflector, engine, store, settings, engine_config, default_tenant)
        NamespaceTemplate(memory_namespace)
        self.workers = workers
        self.manager: Runnable | None = (
            cast(Runnable, reflector) if _is_manager(reflector) else None
        )
        if self.manager is not None and getattr(self.manager, "namespace", None) is None:
            raise ConfigurationError(
                "the reflector must be a chat model, a 'provider:model' string or a store "
                "manager with a namespace (create_memory_store_manager(...)); got "
                f"{type(reflector).__name__}"
            )
        self.extractor = (
            None
            if self.manager is not None
            else reflector
            if isinstance(reflector, FactExtractor)
            else FactExtractor(reflector)  # type: ignore[arg-type]
        )
        self.settings = settings or ReflectionSettings()
        self.delay = float(delay)
        self.default_tenant = default_tenant
        self.memory_namespace = memory_namespace
        self.on_exit = on_exit
        self.exit_timeout = exit_timeout
        self._store = store
        cfg = engine_config or EngineConfig()
        if memory_namespace is not None or default_tenant is not None:
            import dataclasses

            cfg = dataclasses.replace(
                cfg, namespace=memory_namespace, default_tenant=default_tenant
            )
        self._engine = engine or (MemoryEngine(store, cfg) if store is not None else None)
        self._engines = EnginesByStore(cfg)
        self._cv = threading.Condition()
        self._jobs: dict[tuple[Any, ...], Job] = {}
        self._failed: dict[tuple[Any, ...], Job] = {}
        self._running: set[tuple[Any, ...]] = set()
        self._tasks: dict[tuple[Any, ...], asyncio.Task[None]] = {}
        # Set to wake an event-loop task sleeping until its deadline (a new
        # turn moved it, or aflush wants it now).
        self._wake: dict[tuple[Any, ...], asyncio.Event] = {}
        self._cancelling = False
        self._workers: list[threading.Thread] = []
        self._closed = False
        self.failures: list[ReflectionFailure] = []
        self.results: deque[Any] = deque(maxlen=1000)
        ref = weakref.ref(self)

        def at_exit() -> None:
            executor = ref()
            if executor is not None:
                executor._at_exit()

        self._atexit = at_exit
        atexit.register(self._atexit)

    # -- what to reflect, for whom ------------------------------------------------

    @property
    def model_calls(self) -> int:
        """Model calls made by this executor's extractor (model reflectors)."""
        return self.extractor.calls if self.extractor is not None else 0

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
        thread_id: Any,
        mode: Literal["thread", "loop"],
    ) -> Job:
        if self._closed:
            raise RuntimeError("this ReflectionExecutor is shut down; create a new one")
        messages, extra = messages_of(payload)
        config = cast(RunnableConfig, dict(run_config(config)))
        if store is not None and not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a LangGraph BaseStore, got {type(store).__name__}"
            )
        if thread_id is _UNSET:
            thread_id = (config.get("configurable") or {}).get("thread_id")
        if thread_id is not None and (
            isinstance(thread_id, bool) or not isinstance(thread_id, str | int | uuid.UUID)
        ):
            raise InvalidValueError(
                f"thread_id must be a string, an integer or a UUID, got {shown(thread_id)}"
            )
        thread = str(thread_id) if thread_id is not None else "default"
        wait = self.delay if delay is None else _check_delay(delay)
        due = time.monotonic() + wait
        store = store or self._store or getattr(config_runtime(config), "store", None)
        if self.manager is not None:
            store = store or graph_store()
            if store is None and getattr(self.manager, "_store", None) is None:
                raise ConfigurationError(
                    "ReflectionExecutor cannot tell which store the manager writes to: create "
                    "it with ReflectionExecutor(manager, store=store), give the manager "
                    "store=..., or submit from inside a graph compiled with a store"
                )
            ns = self.manager.namespace(store_config(config, store))  # type: ignore[attr-defined]
            key: tuple[Any, ...] = (id(self.manager), tuple(ns), thread)
            return Job(
                key, "manager", thread, messages, due, mode, config, store=store, extra=extra
            )
        if store is None and self._engine is None:
            store = graph_store()
        engine = self.engine_for(store)
        ctx = engine.context(
            config, namespace=self.memory_namespace, default_tenant=self.default_tenant
        )
        key = (id(engine), ctx.tenant_id, ctx.own_space(), thread)
        return Job(key, "model", thread, messages, due, mode, config, engine=engine, ctx=ctx)

    def _enqueue(self, job: Job) -> Job:
        with self._cv:
            for earlier in (self._failed.pop(job.key, None), self._jobs.get(job.key)):
                if earlier is not None:
                    job.absorb(earlier)
            self._jobs[job.key] = job
            self._cv.notify_all()
        return job

    # -- running one job -------------------------------------------------------------

    def _model_steps(self, job: Job) -> Any:
        assert job.engine is not None and job.ctx is not None and self.extractor is not None
        env = job.engine.env(job.ctx)
        return reflect_steps(env, self.extractor, job.messages, job.thread_id, self.settings)

    def _run_sync(self, job: Job) -> Any:
        if job.kind == "model":
            assert job.engine is not None
            return run_sync(self._model_steps(job), job.engine.store, job.engine.config)
        config = store_config(job.config, job.store)
        with as_current(config):
            return self.manager.invoke(job.payload(), config)  # type: ignore[union-attr]

    async def _run_async(self, job: Job) -> Any:
        if job.kind == "model":
            assert job.engine is not None
            return await run_async(self._model_steps(job), job.engine.store, job.engine.config)
        config = store_config(job.config, job.store)
        with as_current(config):
            return await self.manager.ainvoke(job.payload(), config)  # type: ignore[union-attr]

    def _finished(self, job: Job, result: Any) -> None:
        self.results.append(result)
        job.settle(result)

    def _failed_job(self, job: Job, e: BaseException) -> None:
        logger.error(
            "reflection of thread %s failed; its turns stay pending: %s", job.thread_id, cut(str(e))
        )
        with self._cv:
            self.failures.append(ReflectionFailure(job.thread_id, e, datetime.now(timezone.utc)))
            if job.key in self._jobs:  # a newer turn arrived meanwhile: it covers these too
                newer = self._jobs[job.key]
                newer.messages = merge_messages(job.messages, newer.messages)
            else:
                self._failed[job.key] = job
        job.settle(error=e)

    # -- thread mode ---------------------------------------------------------------

    def submit(
        self,
        payload: Any,
        config: RunnableConfig | None = None,
        *,
        after_seconds: float | None = None,
        thread_id: Any = _UNSET,
        store: BaseStore | None = None,
        delay: float | None = None,
    ) -> Future[Any]:
        """Schedule a reflection of the thread (returns at once).

        Args:
            payload: the thread's messages, or a state/dict holding ``messages``
                (other keys, such as ``max_steps``, go to a store manager).
            config: the run's config (default: the running graph's): the thread
                and the caller (``user_id``, LangGraph's auth user, or a
                ``MemoryContext`` in ``configurable["memory_context"]``).
            after_seconds: wait this long first (LangMem's name for ``delay``);
                default: the executor's ``delay``.
            thread_id: the debounce key (default: ``config``'s ``thread_id``).
            store: the store to write to (default: the executor's, the graph's).
            delay: same as ``after_seconds``.

        Returns:
            A future with the reflection's result (a :class:`ReflectionResult`,
            or the store manager's output), or its error.
        """
        fut: Future[Any] = Future()
        wait = after_seconds if after_seconds is not None else delay
        job = self._job(payload, config, store, wait, thread_id, "thread")
        job.futures.append(fut)
        self._enqueue(job)
        self._ensure_worker()
        return fut

    def _next_due(self) -> tuple[Job | None, float | None]:
        jobs = [j for j in self._jobs.values() if j.mode == "thread" and j.key not in self._running]
        if not jobs:
            return None, None
        # Fairness: a user whose reflection is already running waits behind
        # other users' due work, so one user's slow or stuck call cannot
        # starve everyone else of the other workers.
        busy = {_owner(k) for k in self._running}
        job = min(jobs, key=lambda j: (_owner(j.key) in busy, j.due))
        wait = job.due - time.monotonic()
        return (job, None) if wait <= 0 else (None, wait)

    def _work(self) -> None:
        # A few workers: reflections of one thread never overlap (a job's key is
        # running at most once), a stuck model call blocks one worker only, and
        # a slow model is never called by more than ``workers`` threads at once.
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
                result = self._run_sync(job)
            except BaseException as e:  # recorded, never raised into the daemon thread
                self._failed_job(job, e)
            else:
                self._finished(job, result)
            finally:
                with self._cv:
                    self._running.discard(job.key)
                    self._cv.notify_all()

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
            self._workers = [w for w in self._workers if w.is_alive()]
            while len(self._workers) < self.workers:
                worker = threading.Thread(
                    target=self._work,
                    name=f"langmem-ext-reflection-{len(self._workers)}",
                    daemon=True,
                )
                self._workers.append(worker)
                worker.start()

    @property
    def pending(self) -> int:
        """Threads with a reflection scheduled or running."""
        with self._cv:
            return len(self._jobs) + len(self._running)

    def flush(self, timeout: float | None = None) -> bool:
        """Run every pending thread-mode reflection now and wait for them;
        True when none is left (False on timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._drain(deadline)

    def _drain(self, deadline: float | None) -> bool:
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
        self,
        wait: bool = True,
        *,
        cancel_pending: bool = False,
        cancel_futures: bool = False,
        timeout: float | None = None,
    ) -> bool:
        """Stop the executor.

        Args:
            wait: drain (run) the pending reflections before returning.
            cancel_pending: drop the pending reflections instead (their turns
                are reflected by the thread's next reflection, in a graph);
                ``cancel_futures`` is LangMem's name for it.
            timeout: the most seconds to wait in all; the daemon worker is
                abandoned after it, so shutdown never hangs.

        Returns:
            True when nothing was left pending or running.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            if cancel_pending or cancel_futures:
                for key in [k for k, j in self._jobs.items() if j.mode == "thread"]:
                    logger.info("cancelled the pending reflection of thread %s", key[-1])
                    for fut in self._jobs.pop(key).futures:
                        fut.cancel()
            self._closed = True
            self._cv.notify_all()
        drained = self._drain(deadline) if wait else not self._jobs
        if wait:
            for worker in self._workers:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                worker.join(left)
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
        after_seconds: float | None = None,
        thread_id: Any = _UNSET,
        store: BaseStore | None = None,
        delay: float | None = None,
    ) -> Future[Any]:
        """:meth:`submit` on the running event loop (async stores and models).
        Pending reflections survive the loop's end: they move to the worker thread."""
        fut: Future[Any] = Future()
        wait = after_seconds if after_seconds is not None else delay
        job = self._job(payload, config, store, wait, thread_id, "loop")
        job.futures.append(fut)
        self._ensure_task(self._enqueue(job))
        return fut

    def _ensure_task(self, job: Job) -> None:
        task = self._tasks.get(job.key)
        if task is None or task.done():
            self._wake[job.key] = asyncio.Event()
            self._tasks[job.key] = asyncio.get_running_loop().create_task(self._arun(job.key))
        else:
            self._wake[job.key].set()

    async def _arun(self, key: tuple[Any, ...]) -> None:
        try:
            await self._aloop(key)
        except asyncio.CancelledError:
            if not self._cancelling:
                self._hand_over(key)
            raise

    def _hand_over(self, key: tuple[Any, ...]) -> None:
        """The loop is going away with this thread's reflection pending: run it
        on the worker thread instead (drained at exit)."""
        with self._cv:
            job = self._jobs.get(key)
            if job is None or job.mode != "loop":
                return
            job.mode = "thread"
            job.due = time.monotonic()
            self._cv.notify_all()
        logger.info("event loop closed; reflection of thread %s moves to the worker", key[-1])
        self._ensure_worker()

    async def _aloop(self, key: tuple[Any, ...]) -> None:
        while True:
            with self._cv:
                job = self._jobs.get(key)
                if job is None or job.mode != "loop":
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
                result = await self._run_async(job)
            except asyncio.CancelledError:
                # Cancelled mid-run: the turns go back to pending (and, when the
                # loop is closing, on to the worker thread).
                with self._cv:
                    self._running.discard(key)
                    if key in self._jobs:
                        self._jobs[key].absorb(job)
                    else:
                        self._jobs[key] = job
                raise
            except Exception as e:
                self._failed_job(job, e)
            else:
                self._finished(job, result)
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
            self._cancelling = True
            with self._cv:
                for key in [k for k, j in self._jobs.items() if j.mode == "loop"]:
                    for fut in self._jobs.pop(key).futures:
                        fut.cancel()
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
    ) -> Any:
        """Reflect now, in this thread (no scheduling); raises on failure."""
        return self._run_sync(self._job(payload, config, store, 0, _UNSET, "thread"))

    async def areflect(
        self, payload: Any, config: RunnableConfig | None = None, *, store: BaseStore | None = None
    ) -> Any:
        """Async :meth:`reflect`."""
        return await self._run_async(self._job(payload, config, store, 0, _UNSET, "loop"))

    # -- LangMem's search ----------------------------------------------------------------

    def search(
        self,
        query: str | None = None,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        namespace: str | tuple[str, ...] | None = None,
        config: RunnableConfig | None = None,
    ) -> list[dict[str, Any]]:
        """Search the memories this executor writes (LangMem's form): the
        manager's namespace, or the caller's own memories; items as dicts."""
        store, ns = self._search_target(namespace, config, query, filter, (limit, offset))
        items = store.search(ns, query=query, filter=filter, limit=limit, offset=offset)
        return [it.dict() for it in items]

    async def asearch(
        self,
        query: str | None = None,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        namespace: str | tuple[str, ...] | None = None,
        config: RunnableConfig | None = None,
    ) -> list[dict[str, Any]]:
        """Async :meth:`search`."""
        store, ns = self._search_target(namespace, config, query, filter, (limit, offset))
        items = await store.asearch(ns, query=query, filter=filter, limit=limit, offset=offset)
        return [it.dict() for it in items]

    def _search_target(
        self, namespace: Any, config: RunnableConfig | None, query: Any, filter: Any, page: Any
    ) -> tuple[BaseStore, tuple[str, ...]]:
        if query is not None and not isinstance(query, str):
            raise InvalidValueError(f"query must be text or None, got {shown(query)}")
        check_filter(filter)
        check_int("limit", page[0], 1, MAX_PAGE)
        check_int("offset", page[1], 0, MAX_PAGE)
        labels = (namespace,) if isinstance(namespace, str) else namespace
        if namespace is not None and not (
            isinstance(labels, tuple)
            and labels
            and all(isinstance(x, str) and x and "." not in x and "\x00" not in x for x in labels)
        ):
            raise InvalidValueError(
                f"namespace must be a tuple of labels such as ('memories', 'ada'), "
                f"got {shown(namespace)}"
            )
        config = run_config(config)
        store = self._store or getattr(config_runtime(config), "store", None) or graph_store()
        if store is None and self._engine is not None:
            store = self._engine.store
        if store is None:
            raise ConfigurationError(
                "ReflectionExecutor has no store to search: create it with store=..."
            )
        if namespace is not None:
            return store, namespace if isinstance(namespace, tuple) else (namespace,)
        if self.manager is not None:
            ns = self.manager.namespace(store_config(config, store))  # type: ignore[attr-defined]
            return store, tuple(ns)
        engine = self.engine_for(store)
        ctx = engine.context(
            config, namespace=self.memory_namespace, default_tenant=self.default_tenant
        )
        return store, engine.env(ctx).layer("user").ns

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
        from ..middleware import ReflectionMiddleware

        return ReflectionMiddleware(self)


def _owner(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Whose reflection a job key is (everything but the thread id)."""
    return key[:-1]


#: The longest debounce delay accepted, in seconds (a week): longer waits are
#: mistakes, and a timeout beyond the platform's limit would kill the worker.
MAX_DELAY = 7 * 24 * 3600.0
#: The largest limit or offset of :meth:`ReflectionExecutor.search`.
MAX_PAGE = 10_000


def _check_delay(delay: Any) -> float:
    return check_number("delay", delay, 0.0, MAX_DELAY, ConfigurationError)


def _check_parts(
    reflector: Any,
    engine: Any,
    store: Any,
    settings: Any,
    engine_config: Any,
    default_tenant: Any,
) -> None:
    """The executor's collaborators, checked when it is created."""
    if reflector is not None and not isinstance(
        reflector, str | BaseChatModel | FactExtractor | Runnable
    ):
        raise ConfigurationError(
            "the reflector must be a chat model, a 'provider:model' string, a FactExtractor "
            f"or a store manager, got {type(reflector).__name__}"
        )
    for name, value, kind in (
        ("engine", engine, MemoryEngine),
        ("store", store, BaseStore),
        ("settings", settings, ReflectionSettings),
        ("engine_config", engine_config, EngineConfig),
    ):
        if value is not None and not isinstance(value, kind):
            raise ConfigurationError(
                f"{name} must be a {kind.__name__} or None, got {type(value).__name__}"
            )
    check_text("default_tenant", default_tenant, optional=True, error=ConfigurationError)
