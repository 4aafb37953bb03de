"""A small bounded pool of daemon threads, for calls that may never return.

``concurrent.futures.ThreadPoolExecutor`` is the obvious pool, but its
threads are joined when the interpreter exits: one call to a model that
never answers would keep the whole program from exiting. Starting a thread
per call instead (joined with a time-out) frees the caller, but leaks one
thread per hung call, forever. :class:`Workers` keeps at most ``size``
daemon threads: a call past its caller's time keeps its thread until it
returns, later calls wait in the queue (a caller that gives up cancels its
queued call, so nothing piles up), and :meth:`Workers.stuck` tells a caller
that every thread is held by a call older than it is willing to wait, so it
can give up at once. Idle threads exit; a forked child starts its own.

Examples:
    >>> workers = Workers(2, "langmem-ext-doc")
    >>> workers.submit(sum, [1, 2, 3]).result(timeout=5)
    6
    >>> workers.stuck(longer_than=1.0)
    False
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from .errors import ConfigurationError

__all__ = ["Workers"]


class Workers:
    """At most ``size`` daemon threads named ``name`` running submitted calls.

    Args:
        size: most threads at once.
        name: the threads' name (shown in thread dumps).
        idle: seconds an idle thread waits for work before it exits.
    """

    def __init__(self, size: int, name: str, *, idle: float = 30.0) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigurationError(f"size must be a whole number of at least 1, got {size!r}")
        self.size = size
        self.name = name
        self.idle = idle
        self._reset()

    def _reset(self) -> None:
        # Threads are not copied by fork(), and a lock held by one of them at
        # the fork would stay held in the child: a child starts afresh.
        self._pid = os.getpid()
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque[tuple[concurrent.futures.Future[Any], Any, Any]] = (
            collections.deque()
        )
        self._threads = 0
        self._waiting = 0
        self._running: dict[int, float] = {}

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)`` on a worker; its result, or whatever it raised
        (``BaseException`` included), comes back through the future."""
        if self._pid != os.getpid():
            self._reset()
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._cond:
            self._queue.append((future, fn, args))
            if len(self._queue) > self._waiting and self._threads < self.size:
                self._threads += 1
                threading.Thread(target=self._work, name=self.name, daemon=True).start()
            else:
                self._cond.notify()
        return future

    def stuck(self, longer_than: float) -> bool:
        """True when every worker is running a call that started more than
        ``longer_than`` seconds ago (a new call would only wait in the queue)."""
        if self._pid != os.getpid():
            return False
        now = time.monotonic()
        with self._cond:
            running = list(self._running.values())
        return len(running) >= self.size and all(now - t > longer_than for t in running)

    def _work(self) -> None:
        me = threading.get_ident()
        cond = self._cond
        with cond:
            while True:
                if not self._queue:
                    self._waiting += 1
                    cond.wait(self.idle)
                    self._waiting -= 1
                    if not self._queue:
                        self._threads -= 1
                        return
                future, fn, args = self._queue.popleft()
                if not future.set_running_or_notify_cancel():
                    continue  # its caller gave up while it waited
                self._running[me] = time.monotonic()
                cond.release()
                try:
                    future.set_result(fn(*args))
                except BaseException as e:  # the call's own: handed to its caller
                    future.set_exception(e)
                finally:
                    cond.acquire()
                    del self._running[me]
