"""The one scheduler of background reflection: pending jobs by key, each run
when due, by a few worker threads.

Every job, submitted from sync or async code, waits here until its deadline.
A worker then takes it and runs it where it belongs: a ``thread`` job in the
worker (``run_sync``), a ``loop`` job on the event loop it was submitted from
(``run_async`` through ``asyncio.run_coroutine_threadsafe``, so async stores
and models stay on their loop). When that loop has closed, or closes while the
job waits or runs, the job moves to the worker thread: no turn is lost when
``asyncio.run`` returns with reflections pending.

Rules the scheduler keeps:

* a key (one thread of one user) runs at most once at a time; a job submitted
  for a key while one is pending merges into it (debouncing);
* a user whose reflection is running waits behind other users' due work, so a
  slow or stuck model call cannot starve everyone else;
* at most ``workers`` threads call models synchronously.

Examples:
    >>> import time
    >>> ran = []
    >>> s = Scheduler(workers=1, run_sync=lambda job: ran.append(job) or "ok",
    ...               run_async=None, finished=lambda job, r: None, failed=None)
    >>> class J:  # the attributes of a Job the scheduler reads
    ...     key, due, mode, loop = ("u", "t"), time.monotonic(), "thread", None
    >>> s.add(J(), merge=lambda new, old: None); s.drain(None)
    True
    >>> len(ran)
    1
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError
from typing import Any

__all__ = ["Scheduler"]


class Scheduler:
    """Jobs by key, run when due (see the module docs).

    Args:
        workers: worker threads.
        run_sync: runs a job in the calling (worker) thread; returns its result.
        run_async: a coroutine function running a job on its event loop.
        finished: called with a job and its result.
        failed: called with a job and the error it raised.
    """

    def __init__(
        self,
        *,
        workers: int,
        run_sync: Callable[[Any], Any],
        run_async: Callable[[Any], Any] | None,
        finished: Callable[[Any, Any], None],
        failed: Callable[[Any, BaseException], None] | None,
    ) -> None:
        self.workers = workers
        self._run_sync, self._run_async = run_sync, run_async
        self._finished, self._failed = finished, failed
        self.cv = threading.Condition()
        self.jobs: dict[tuple[Any, ...], Any] = {}
        self.running: set[tuple[Any, ...]] = set()
        self._on_loop: dict[tuple[Any, ...], Any] = {}  # key -> its concurrent future
        self._threads: list[threading.Thread] = []
        self.closed = False
        self.cancelling = False

    # -- adding and taking ---------------------------------------------------------------

    def add(self, job: Any, merge: Callable[[Any, Any], None]) -> None:
        """Schedule ``job``; a pending job of its key merges into it first."""
        with self.cv:
            earlier = self.jobs.get(job.key)
            if earlier is not None:
                merge(job, earlier)
            self.jobs[job.key] = job
            self.cv.notify_all()
        self._ensure_workers()

    def _next_due(self) -> tuple[Any, float | None]:
        jobs = [j for j in self.jobs.values() if j.key not in self.running]
        if not jobs:
            return None, None
        busy = {k[:-1] for k in self.running}  # the owner: everything but the thread id
        job = min(jobs, key=lambda j: (j.key[:-1] in busy, j.due))
        wait = job.due - time.monotonic()
        return (job, None) if wait <= 0 else (None, wait)

    def _work(self) -> None:
        while True:
            with self.cv:
                while True:
                    if self.closed and not self.jobs:
                        return
                    job, wait = self._next_due()
                    if job is not None:
                        break
                    self.cv.wait(wait)
                del self.jobs[job.key]
                self.running.add(job.key)
            if job.mode == "loop" and self._dispatch(job):
                continue  # running on its loop; _settled() finishes it
            try:
                result = self._run_sync(job)
            except BaseException as e:  # recorded, never raised into the daemon thread
                self._settled(job, error=e)
            else:
                self._settled(job, result)

    def _dispatch(self, job: Any) -> bool:
        """Start a loop job on its event loop; False when the loop is gone (the
        worker runs it instead)."""
        loop = job.loop
        if self._run_async is None or loop is None or loop.is_closed() or not loop.is_running():
            job.mode = "thread"
            return False
        try:
            fut = asyncio.run_coroutine_threadsafe(self._run_async(job), loop)
        except RuntimeError:  # closed between the check and the call
            job.mode = "thread"
            return False
        with self.cv:
            self._on_loop[job.key] = fut
        fut.add_done_callback(lambda f: self._loop_done(job, f))
        return True

    def _loop_done(self, job: Any, fut: Any) -> None:
        with self.cv:
            self._on_loop.pop(job.key, None)
        try:
            result = fut.result()
        except (CancelledError, asyncio.CancelledError):
            # The loop closed under it (or ashutdown cancelled it): unless that was a
            # cancellation, the turns go back, to be run by a worker thread.
            if self.cancelling:
                for f in job.futures:
                    f.cancel()
            with self.cv:
                self.running.discard(job.key)
                if not self.cancelling:
                    job.mode, job.due = "thread", time.monotonic()
                    newer = self.jobs.get(job.key)
                    if newer is not None:
                        newer.absorb(job)
                    else:
                        self.jobs[job.key] = job
                self.cv.notify_all()
            if not self.cancelling:
                self._ensure_workers()
            return
        except BaseException as e:
            self._settled(job, error=e)
        else:
            self._settled(job, result)

    def _settled(self, job: Any, result: Any = None, error: BaseException | None = None) -> None:
        try:
            if error is None:
                self._finished(job, result)
            elif self._failed is not None:
                self._failed(job, error)
        finally:
            with self.cv:
                self.running.discard(job.key)
                self.cv.notify_all()

    def _ensure_workers(self) -> None:
        with self.cv:
            self._threads = [t for t in self._threads if t.is_alive()]
            while len(self._threads) < self.workers:
                worker = threading.Thread(
                    target=self._work,
                    name=f"langmem-ext-reflection-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(worker)
                worker.start()

    # -- waiting and stopping ------------------------------------------------------------

    def drain(self, deadline: float | None, keys: Iterable[tuple[Any, ...]] | None = None) -> bool:
        """Make the pending jobs (of ``keys``, default: all) due now and wait until
        they and the running ones are done; False when ``deadline`` passed first."""
        self._hand_over_own_loop()
        wanted = None if keys is None else set(keys)
        with self.cv:
            for job in self.jobs.values():
                if wanted is None or job.key in wanted:
                    job.due = 0.0
            self.cv.notify_all()
            while any(wanted is None or k in wanted for k in (*self.jobs, *self.running)):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self.cv.wait(left)
        return True

    def _hand_over_own_loop(self) -> None:
        """A sync call waiting from inside an event loop cannot let that loop run
        its jobs: they move to the workers instead of deadlocking."""
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            return
        with self.cv:
            for job in self.jobs.values():
                if job.mode == "loop" and job.loop is here:
                    job.mode = "thread"

    def join(self, deadline: float | None) -> None:
        """Wait for the worker threads to end (at most until ``deadline``)."""
        for worker in list(self._threads):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            worker.join(left)

    def cancel_running_on_loops(self) -> list[Any]:
        """Cancel the jobs running on event loops (``ashutdown(cancel_pending=True)``)."""
        self.cancelling = True
        with self.cv:
            futures = list(self._on_loop.values())
        for fut in futures:
            fut.cancel()
        return futures
