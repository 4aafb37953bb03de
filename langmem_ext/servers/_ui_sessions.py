"""The memory browser's signed-in sessions: a random id in the cookie, the
session itself on the server, ended after an idle limit, after an absolute
limit, or at sign-out.

Why a table on the server rather than a signed cookie (Starlette's
``SessionMiddleware``): a signed cookie is valid until its own expiry
whatever the server does, so signing out could not end it, and a copied
cookie would keep working. Here the cookie holds only a random id, 256 bits
from :mod:`secrets`; signing out deletes the entry, and the id means
nothing any more. Sessions live in the process: restarting the browser's
server signs everyone out.

Examples:
    >>> from langmem_ext.engine import MemoryContext
    >>> now = [0.0]
    >>> sessions = Sessions(idle=60, lifetime=3600, clock=lambda: now[0])
    >>> sid = sessions.open(MemoryContext(user_id="ada"))
    >>> sessions.use(sid)[0].caller.user_id
    'ada'
    >>> now[0] = 61.0
    >>> sessions.use(sid)
    (None, 'idle')
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..engine import MemoryContext
from ..errors import ConfigurationError

__all__ = ["DEFAULT_IDLE", "DEFAULT_LIFETIME", "Session", "Sessions", "ended_message"]

#: Seconds without a request after which a session ends (30 minutes).
DEFAULT_IDLE = 30 * 60.0
#: Seconds after signing in after which a session ends, however active (12 hours).
DEFAULT_LIFETIME = 12 * 3600.0
# Most sessions (live and recently ended) kept at once; past it the least
# recently used go first, so a flood of sign-ins cannot grow memory without end.
_MAX = 10_000


@dataclass
class Session:
    caller: MemoryContext
    #: The per-session form token (against cross-site form posts).
    csrf: str
    opened: float
    seen: float


class Sessions:
    """Signed-in browsers: a random session id (the cookie) → the caller.

    Args:
        idle: seconds without a request after which a session ends.
        lifetime: seconds after signing in after which a session ends.
        clock: monotonic seconds (tests pass a fake one).
    """

    def __init__(
        self,
        idle: float = DEFAULT_IDLE,
        lifetime: float = DEFAULT_LIFETIME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("session_idle", idle), ("session_lifetime", lifetime)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ConfigurationError(f"{name} must be a number of seconds > 0, got {value!r}")
        if idle > lifetime:
            raise ConfigurationError(
                f"session_idle ({idle:g} s) must not be longer than session_lifetime "
                f"({lifetime:g} s): a session would always end by its lifetime first"
            )
        self.idle, self.lifetime, self._clock = float(idle), float(lifetime), clock
        self._lock = threading.Lock()
        self._live: dict[str, Session] = {}
        # Ended sessions' ids → (why, when), kept for a lifetime so a browser
        # coming back is told why it must sign in again.
        self._ended: dict[str, tuple[str, float]] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._live) + len(self._ended)

    def open(self, caller: MemoryContext) -> str:
        """A new session for ``caller``; returns its id (the cookie's value)."""
        now = self._clock()
        sid = secrets.token_urlsafe(32)
        with self._lock:
            self._sweep(now)
            self._live[sid] = Session(caller, secrets.token_urlsafe(32), now, now)
        return sid

    def peek(self, sid: str | None) -> Session | None:
        """The live session ``sid``, without counting a use."""
        with self._lock:
            s = self._live.get(sid) if sid else None
            return s if s is not None and self._why_ended(s, self._clock()) is None else None

    def use(self, sid: str | None) -> tuple[Session | None, str | None]:
        """The live session ``sid``, its idle time restarted; else None and
        why it ended (``"idle"``, ``"lifetime"``; None: no such session, or
        signed out)."""
        if not sid:
            return None, None
        now = self._clock()
        with self._lock:
            s = self._live.get(sid)
            if s is None:
                ended = self._ended.get(sid)
                return None, ended[0] if ended else None
            why = self._why_ended(s, now)
            if why is not None:
                del self._live[sid]
                self._ended[sid] = (why, self._end(s))
                return None, why
            s.seen = now
            return s, None

    def close_user(self, tenant_id: str, user_id: str) -> int:
        """End every session of a user (for an erase); returns how many."""
        with self._lock:
            gone = [
                sid
                for sid, s in self._live.items()
                if s.caller.tenant_id == tenant_id and s.caller.user_id == user_id
            ]
            for sid in gone:
                del self._live[sid]
        return len(gone)

    def close(self, sid: str | None) -> None:
        """Sign out: the id means nothing from now on."""
        with self._lock:
            self._live.pop(sid or "", None)
            self._ended.pop(sid or "", None)

    def _why_ended(self, s: Session, now: float) -> str | None:
        if now - s.opened > self.lifetime:
            return "lifetime"
        if now - s.seen > self.idle:
            return "idle"
        return None

    def _end(self, s: Session) -> float:
        return min(s.opened + self.lifetime, s.seen + self.idle)

    def _sweep(self, now: float) -> None:
        for sid, s in list(self._live.items()):
            why = self._why_ended(s, now)
            if why is not None:
                del self._live[sid]
                self._ended[sid] = (why, self._end(s))
        for sid, (_, when) in list(self._ended.items()):
            if now - when > self.lifetime:
                del self._ended[sid]
        while len(self._ended) + len(self._live) >= _MAX:
            if self._ended:
                oldest = min(self._ended, key=lambda k: self._ended[k][1])
                del self._ended[oldest]
            else:
                oldest = min(self._live, key=lambda k: self._live[k].seen)
                del self._live[oldest]


def ended_message(why: str | None, idle: float, lifetime: float) -> str | None:
    """What the sign-in page says to a browser whose session ended (None:
    nothing; ``why`` comes from the address, so only known values are shown).

    Examples:
        >>> ended_message("idle", 1800, 43200)
        'You were signed out after 30 minutes without use. Sign in again.'
        >>> ended_message("<script>", 1800, 43200) is None
        True
    """
    if why == "idle":
        return f"You were signed out after {_span(idle)} without use. Sign in again."
    if why == "lifetime":
        return f"You were signed out: a session lasts {_span(lifetime)} at most. Sign in again."
    return None


def _span(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        n, unit = int(seconds // 3600), "hour"
    elif seconds >= 60 and seconds % 60 == 0:
        n, unit = int(seconds // 60), "minute"
    else:
        n, unit = round(seconds), "second"
    return f"{n} {unit}{'' if n == 1 else 's'}"
