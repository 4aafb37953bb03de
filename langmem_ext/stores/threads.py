"""How many threads the package's own compute uses: the offline embedder
(OpenMP), the vector scans (OpenMP) and numpy's BLAS.

A server runs several worker processes on a few cores. If each process's
query work fans out to every core, the workers' threads spin-wait for each
other: four workers searching on two cores measured 237 ms per search, against
40 ms with one thread each. So:

* **query work** (embedding a query, scanning for one search) runs on one
  thread by default: a single query gains little from more, and N processes
  on C cores then never oversubscribe;
* **bulk work** (embedding many documents, scans of very large scopes) uses
  every core the process may run on;
* OpenMP threads wait passively (``OMP_WAIT_POLICY=PASSIVE``, unless you set
  it), so idle threads of one process leave the cores to the others.

``LANGMEM_EXT_THREADS`` (a whole number, or ``auto``) overrides both counts,
e.g. ``LANGMEM_EXT_THREADS=2`` for a single process on an otherwise idle
machine; :func:`set_threads` does the same from Python. Only the package's
own calls are limited, for their duration: your numpy code keeps its threads.

Examples:
    >>> set_threads(1)
    >>> threads_for("query"), threads_for("bulk")
    (1, 1)
    >>> set_threads(None)  # back to the defaults
    >>> threads_for("query")
    1
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from typing import Any, Literal

from ..errors import ConfigurationError

__all__ = ["ENV", "available_cores", "limited", "set_threads", "threads_for"]

#: The environment variable that sets the thread count of the package's compute.
ENV = "LANGMEM_EXT_THREADS"

Work = Literal["query", "bulk"]
_chosen: int | None = None
_lock = threading.Lock()
_controller: Any = None

# Before any OpenMP runtime starts (read once, when the library loads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@functools.cache
def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the count),
    read once: a scan asks for it on every search."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _check(value: Any, name: str) -> int | None:
    # Called on every scan: the common case (nothing set) returns at once.
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    top = 4 * available_cores()
    try:
        n = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        n = None
    if n is None or not 1 <= n <= top or (isinstance(value, float) and value != n):
        raise ConfigurationError(
            f"{name} must be a whole number of threads from 1 to {top}, or 'auto', got {value!r}"
        )
    return n


def set_threads(n: int | str | None) -> None:
    """Set the threads of the package's compute (None or ``"auto"``: the
    defaults, or ``LANGMEM_EXT_THREADS`` when set).

    Raises:
        ConfigurationError: ``n`` is not a whole number from 1 to four times
            the cores, nor ``"auto"``/None.
    """
    global _chosen
    _chosen = _check(n, "threads")


def threads_for(work: Work) -> int:
    """Threads for ``work`` (``"query"``: one search; ``"bulk"``: many documents).

    Raises:
        ConfigurationError: ``LANGMEM_EXT_THREADS`` is set to something else
            than a whole number from 1 to four times the cores, or ``auto``.
    """
    if _chosen is not None:
        return _chosen
    from_env = _check(os.environ.get(ENV), ENV)
    if from_env is not None:
        return from_env
    return 1 if work == "query" else available_cores()


@contextlib.contextmanager
def limited(n: int) -> Iterator[None]:
    """OpenMP and BLAS limited to ``n`` threads in this thread, for the block
    (the libraries loaded so far; a no-op without ``threadpoolctl``)."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - a dependency
        yield
        return
    with _lock:
        if _controller is None:
            _controller = ThreadpoolController()
        controller = _controller
    with controller.limit(limits=n):
        yield


def refresh() -> None:
    """See libraries loaded since the first limit (the embedder's OpenMP)."""
    global _controller
    with _lock:
        _controller = None
