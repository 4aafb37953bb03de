"""Deadlines for replica reads: at its deadline a connection's socket is shut
down, which ends any wait on it with a connection error.

Why a socket shutdown: libpq has no client-side time-out for a query, and a
server that never answers (its processes stopped, a listener that accepts
and never replies) cannot be reached by a cancel request either, nor by a
server-side ``statement_timeout``; TCP keepalives are answered by the
kernel. Shutting the socket down wakes the blocked read at once (sync and
asyncio alike), and the pool discards the broken connection.

Examples:
    >>> import socket, time
    >>> a, b = socket.socketpair()
    >>> alarm = WATCHDOG.arm(a.fileno(), time.monotonic() + 0.05)
    >>> a.recv(1)  # would wait forever: nothing is ever sent on b
    b''
    >>> alarm.fired
    True
    >>> a.close(); b.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import socket
import threading
import time

__all__ = ["WATCHDOG", "Alarm", "Watchdog", "arm_async", "shut_down"]


def shut_down(fd: int) -> None:
    """Shut the socket ``fd`` down for reading and writing (the descriptor
    stays open for its owner to close)."""
    with contextlib.suppress(OSError):
        dup = socket.socket(fileno=socket.dup(fd))
        try:
            dup.shutdown(socket.SHUT_RDWR)
        finally:
            dup.close()


class Alarm:
    """One armed deadline: ``disarm()`` it once the read is done; ``fired``
    tells whether the deadline shut the socket down."""

    __slots__ = ("_done", "_fd", "_lock", "fired")

    def __init__(self, fd: int, lock: threading.Lock) -> None:
        self._fd, self._lock = fd, lock
        self._done = False
        self.fired = False

    def disarm(self) -> None:
        with self._lock:
            self._done = True

    def _fire(self) -> None:
        # Under the lock: a socket disarmed (handed back to its pool) is never shut.
        with self._lock:
            if not self._done:
                self._done = self.fired = True
                shut_down(self._fd)


class Watchdog:
    """One daemon thread for every deadline of the process's sync replica
    reads (a timer thread per read would cost more than the read)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, fd: int, deadline: float) -> Alarm:
        """Shut socket ``fd`` down at ``deadline`` (``time.monotonic()``)
        unless the returned alarm is disarmed first."""
        alarm = Alarm(fd, threading.Lock())
        with self._cv:
            heapq.heappush(self._heap, (deadline, next(self._ids), alarm))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="langmem-replica-deadlines", daemon=True
                )
                self._thread.start()
            self._cv.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._heap and self._heap[0][2]._done:
                    heapq.heappop(self._heap)  # disarmed: drop it
                if not self._heap:
                    self._cv.wait(timeout=60)
                    if not self._heap:
                        self._thread = None
                        return
                    continue
                deadline, _, alarm = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cv.wait(timeout=wait)
                    continue
                heapq.heappop(self._heap)
            alarm._fire()


#: The process's watchdog.
WATCHDOG = Watchdog()


def arm_async(fd: int, deadline: float) -> tuple[Alarm, asyncio.TimerHandle]:
    """:meth:`Watchdog.arm` on the running event loop (a timer, no thread);
    cancel the handle and disarm the alarm once the read is done."""
    alarm = Alarm(fd, threading.Lock())
    loop = asyncio.get_running_loop()
    handle = loop.call_at(loop.time() + max(0.0, deadline - time.monotonic()), alarm._fire)
    return alarm, handle
