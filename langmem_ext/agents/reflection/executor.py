"""Background reflection: memories from a conversation without delaying the reply.

:class:`ReflectionExecutor` schedules a reflection of a thread ``delay``
seconds after each turn (LangMem's ``after_seconds``). A new turn of the same
thread before that moves the deadline and joins the pending reflection
(debouncing): one reflection covers both turns, and both callers' futures get
its result. One scheduler (:mod:`.scheduler`) holds every pending reflection;
a reflection submitted from sync code (:meth:`submit`) runs on a daemon worker
thread, one submitted from async code (:meth:`asubmit`) on its event loop;
either way ``submit`` returns at once.

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
import logging
import time
import uuid
import weakref
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.store.base import BaseStore

from ..._langgraph import config_runtime, graph_store
from ...engine import (
    EngineConfig,
    EnginesByStore,
    MemoryEngine,
    NamespaceTemplate,
    check_int,
    check_number,
    run_async,
    run_config,
    run_sync,
    shown,
)
from ...errors import ConfigurationError, InvalidStateError, InvalidValueError
from ...model_calls.usage import TokenUsage
from .extract import FactExtractor
from .faces import GraphFaces
from .jobs import UNSET, Job, as_current, merge_messages, messages_of, store_config
from .reflect import ReflectionSettings, reflect_steps
from .scheduler import Scheduler
from .screen import cut
from .searching import MAX_DELAY, LangMemSearch, check_delay, check_parts

__all__ = ["ReflectionExecutor", "ReflectionFailure"]

logger = logging.getLogger("langmem_ext.agents.reflection")


@dataclass(frozen=True)
class ReflectionFailure:
    """A reflection that gave up; its messages stay pending."""

    thread_id: str
    error: BaseException
    at: datetime


def _is_manager(reflector: Any) -> bool:
    return isinstance(reflector, Runnable) and not isinstance(reflector, BaseChatModel)


class ReflectionExecutor(LangMemSearch, GraphFaces):
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
        check_delay(delay)
        check_number("exit_timeout", exit_timeout, 0.0, MAX_DELAY, ConfigurationError)
        check_int("workers", workers, 1, 64, ConfigurationError)
        check_parts(reflector, engine, store, settings, engine_config, default_tenant)
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
        self._failed: dict[tuple[Any, ...], Job] = {}
        self._closed = False
        self._scheduler = Scheduler(
            workers=workers,
            run_sync=self._run_sync,
            run_async=self._run_async,
            finished=self._finished,
            failed=self._failed_job,
        )
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

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every model call this executor's extractor made
        (each reflection's own are in its ``ReflectionResult.tokens``)."""
        return self.extractor.usage if self.extractor is not None else TokenUsage()

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
            raise InvalidStateError("this ReflectionExecutor is shut down; create a new one")
        messages, extra = messages_of(payload)
        config = cast(RunnableConfig, dict(run_config(config)))
        if store is not None and not isinstance(store, BaseStore):
            raise ConfigurationError(
                f"store must be a LangGraph BaseStore, got {type(store).__name__}"
            )
        if thread_id is UNSET:
            thread_id = (config.get("configurable") or {}).get("thread_id")
        if thread_id is not None and (
            isinstance(thread_id, bool) or not isinstance(thread_id, str | int | uuid.UUID)
        ):
            raise InvalidValueError(
                f"thread_id must be a string, an integer or a UUID, got {shown(thread_id)}"
            )
        thread = str(thread_id) if thread_id is not None else "default"
        wait = self.delay if delay is None else check_delay(delay)
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
        with self._scheduler.cv:
            failed = self._failed.pop(job.key, None)
        if failed is not None:
            job.absorb(failed)
        self._scheduler.add(job, merge=Job.absorb)
        return job

    # -- running one job -------------------------------------------------------------

    def _model_steps(self, job: Job) -> Any:
        assert job.engine is not None and job.ctx is not None and self.extractor is not None
        env = job.engine.env(job.ctx)
        return reflect_steps(
            env, self.extractor, job.messages, job.thread_id, self.settings, job.config
        )

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
        with self._scheduler.cv:
            self.failures.append(ReflectionFailure(job.thread_id, e, datetime.now(timezone.utc)))
            newer = self._scheduler.jobs.get(job.key)
            if newer is not None:  # a newer turn arrived meanwhile: it covers these too
                newer.messages = merge_messages(job.messages, newer.messages)
            else:
                self._failed[job.key] = job
        job.settle(error=e)

    # -- submitting, waiting, stopping ------------------------------------------------

    def submit(
        self,
        payload: Any,
        config: RunnableConfig | None = None,
        *,
        after_seconds: float | None = None,
        thread_id: Any = UNSET,
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
        wait = after_seconds if after_seconds is not None else delay
        return self._submit(self._job(payload, config, store, wait, thread_id, "thread"))

    async def asubmit(
        self,
        payload: Any,
        config: RunnableConfig | None = None,
        *,
        after_seconds: float | None = None,
        thread_id: Any = UNSET,
        store: BaseStore | None = None,
        delay: float | None = None,
    ) -> Future[Any]:
        """:meth:`submit` from async code: the reflection runs on this event loop
        (async stores and models). Pending reflections survive the loop's end:
        they move to the worker thread."""
        wait = after_seconds if after_seconds is not None else delay
        job = self._job(payload, config, store, wait, thread_id, "loop")
        job.loop = asyncio.get_running_loop()
        return self._submit(job)

    def _submit(self, job: Job) -> Future[Any]:
        fut: Future[Any] = Future()
        job.futures.append(fut)
        self._enqueue(job)
        return fut

    def erase_user(self, tenant_id: str, user_id: str) -> int:
        """Drop every pending, and failed-and-kept, reflection of a user (their
        turns' messages with them), for an erase; returns how many. A
        reflection already running finishes; the engine's erase removes what
        it stored when it runs after this, which the surfaces ensure.

        Examples:
            >>> with ReflectionExecutor(lambda *a: None, delay=60) as ex:  # doctest: +SKIP
            ...     ex.erase_user("default", "ada")
            0
        """

        def theirs(job: Job) -> bool:
            if job.ctx is not None:
                return job.ctx.tenant_id == tenant_id and job.ctx.user_id == user_id
            conf = job.config.get("configurable") or {}
            return user_id in (conf.get("user_id"), conf.get("langgraph_user_id"))

        with self._scheduler.cv:
            dropped = [k for k, j in self._scheduler.jobs.items() if theirs(j)]
            for key in dropped:
                for fut in self._scheduler.jobs.pop(key).futures:
                    fut.cancel()
            failed = [k for k, j in self._failed.items() if theirs(j)]
            for key in failed:
                for fut in self._failed.pop(key).futures:
                    fut.cancel()
        if dropped or failed:
            logger.info(
                "erase: dropped %d pending reflection(s) of a user", len(dropped) + len(failed)
            )
        return len(dropped) + len(failed)

    def retry_failed(self) -> int:
        """Schedule the failed reflections again, now; returns how many."""
        with self._scheduler.cv:
            failed, self._failed = list(self._failed.values()), {}
        for job in failed:
            job.due = time.monotonic()
            self._enqueue(job)
        return len(failed)

    @property
    def pending(self) -> int:
        """Threads with a reflection scheduled or running."""
        with self._scheduler.cv:
            return len(self._scheduler.jobs) + len(self._scheduler.running)

    def flush(self, timeout: float | None = None) -> bool:
        """Run every pending reflection now and wait for them; True when none is
        left (False on timeout)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._scheduler.drain(deadline)

    async def aflush(self) -> None:
        """Run the reflections submitted from this event loop now and wait for them."""
        here = asyncio.get_running_loop()
        with self._scheduler.cv:
            keys = [
                k for k, j in self._scheduler.jobs.items() if j.mode == "loop" and j.loop is here
            ]
            keys += list(self._scheduler.running)
        await asyncio.to_thread(self._scheduler.drain, None, keys)

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
            timeout: the most seconds to wait in all; the daemon workers are
                abandoned after it, so shutdown never hangs.

        Returns:
            True when nothing was left pending or running.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        sched = self._scheduler
        with sched.cv:
            if cancel_pending or cancel_futures:
                for key in list(sched.jobs):
                    logger.info("cancelled the pending reflection of thread %s", key[-1])
                    for fut in sched.jobs.pop(key).futures:
                        fut.cancel()
            self._closed = sched.closed = True
            sched.cv.notify_all()
        drained = sched.drain(deadline) if wait else not sched.jobs
        if wait:
            sched.join(deadline)
        atexit.unregister(self._atexit)
        return drained

    async def ashutdown(self, *, cancel_pending: bool = False) -> None:
        """:meth:`shutdown` from async code: drain (or cancel) the pending
        reflections without blocking the event loop."""
        if cancel_pending:
            self._scheduler.cancel_running_on_loops()
        await asyncio.to_thread(self.shutdown, cancel_pending=cancel_pending)

    def _at_exit(self) -> None:
        sched = self._scheduler
        if not self._closed or sched.jobs or sched.running:
            self.shutdown(cancel_pending=self.on_exit == "cancel", timeout=self.exit_timeout)

    def __enter__(self) -> ReflectionExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
