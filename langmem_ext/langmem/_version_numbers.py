"""Numbering a prompt's versions exactly under concurrent writers, on any
``BaseStore``.

``BaseStore`` has no conditional write: two writers that read the same highest
version and both write the next one overwrite each other, and one of two
acknowledged saves is gone. A writer therefore *claims* a number ``n`` first:

1. it puts a claim under a key of its own (``{name}:claim:{n}:{token}``), so
   no claim ever overwrites another;
2. then, in one batch, it reads the item under the version key
   (``{name}:v{n}``) and searches the claims and the version of ``n`` in the
   namespace (one statement: the filter holds the exact namespace, so it is
   one small page);
3. it takes ``n`` only if it saw neither another claim nor a version there, and
   then writes the version (carrying ``name``, ``version`` and the namespace,
   so that search finds it) and removes its claim in one batch. Otherwise it
   removes its claim and moves on: past the highest version it saw when ``n``
   is used (a version, an item of another program under the version key),
   to ``n + 1`` when ``n`` holds a claim left :data:`STALE_S` seconds before
   its own (by a writer that stopped), or back to ``n`` after a short random
   pause when other writers are claiming it now. Of several live claims, the
   oldest (by the store's time, then key: all writers agree) keeps its claim
   and checks again; the others withdraw, and look (read only) before they
   claim again, so ``n`` soon has one claimer.

Two writers never take the same number: of two claims of ``n``, the one
written second is followed by a read (step 2) that sees the first claim, or,
once its writer took ``n``, the version written in the batch that removed it.
This needs only that a read sees every write that finished before it began:
true of SQLiteStore, of PostgresStore (a replica serves a store's read only
once it has replayed that store's own last write, hence every earlier
commit), and of LangGraph's stores within one process or one database.
Numbers are used in order, without gaps, except those skipped on purpose (an
item another program put under a version key; a writer that stopped between
its claim and its version, which leaves its number unused).

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import run_sync
    >>> store, ns = SQLiteStore(), ("prompts", "ada")
    >>> make = lambda n: {"kind": "prompt_version", "name": "main", "version": n}
    >>> [run_sync(claim_version(ns, "main", 1, make), store) for _ in range(2)]
    [1, 2]
    >>> sorted(i.key for i in store.search(ns))  # no claim is left behind
    ['main:v000001', 'main:v000002']
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from langgraph.store.base import GetOp, PutOp, SearchOp

from ..engine import Batch, Call, Operation
from ..errors import StoreUnavailableError

__all__ = ["CLAIM_KIND", "STALE_S", "claim_version", "scope_of", "version_key"]

#: ``kind`` of a claim item (never a version: history does not list it).
CLAIM_KIND = "prompt_version_claim"
#: A claim this many seconds older than one's own belongs to a writer that
#: stopped (a live writer holds its claim for a few store round trips): its
#: number is skipped, never taken.
STALE_S = 5.0
#: Pauses after a lost race: random, up to 5 ms doubling to at most 0.5 s.
_PAUSE_S, _PAUSE_MAX_S = 0.005, 0.5
#: Races lost before the save gives up (half a minute of pauses or so): a
#: store that is too busy, not a lost version.
_MAX_RACES = 150
#: More claims of one number than this: treated as a race (never as free).
_PAGE = 1000


def version_key(name: str, n: int) -> str:
    """The key of version ``n`` of prompt ``name``.

    Examples:
        >>> version_key("main", 12)
        'main:v000012'
    """
    return f"{name}:v{n:06d}"


def scope_of(ns: tuple[str, ...]) -> str:
    """The namespace as one text (labels never hold ``.``), kept in each claim
    and version so a search can select exactly one namespace's items (a search
    reads a whole prefix: an organisation's namespace holds its members').

    Examples:
        >>> scope_of(("prompts", "acme"))
        'prompts.acme'
    """
    return ".".join(ns)


def claim_version(
    ns: tuple[str, ...],
    name: str,
    first: int,
    make: Callable[[int], dict[str, Any]],
) -> Operation[int]:
    """Store ``make(n)`` as version ``n`` of ``name`` in ``ns``, for the lowest
    free ``n >= first`` (see the module); returns ``n``. The value stored has
    ``name``, ``version`` and ``namespace`` (:func:`scope_of`) set.

    Raises:
        StoreUnavailableError: other writers kept claiming the same numbers
            (150 races lost); nothing was saved, and trying again may succeed.
    """
    token = uuid.uuid4().hex
    scope = scope_of(ns)
    n, races, waited = first, 0, 0.0
    look = False  # after a race: look before claiming, so claimers are not disturbed
    while True:
        if look:
            state, after = yield from _check(ns, name, n, scope, None)
            if state == "used":
                n, waited = after, 0.0
                continue
            if state == "race" and waited < STALE_S:  # claimed now: let it finish
                pause = random.uniform(_PAUSE_S, 4 * _PAUSE_S)
                yield _pause(pause)
                waited += pause
                continue
        outcome, after = yield from _attempt(ns, name, n, token, scope, make)
        if outcome == "taken":
            return n
        look = True
        if outcome == "used":
            n, waited = after, 0.0
            continue
        races += 1
        if races >= _MAX_RACES:
            raise StoreUnavailableError(
                f"could not number a new version of prompt {name!r}: other writers claimed "
                f"the same numbers at the same time {races} times; nothing was saved, try again"
            )
        yield _pause(random.uniform(_PAUSE_S, min(_PAUSE_MAX_S, _PAUSE_S * 2**races)))


def _attempt(
    ns: tuple[str, ...],
    name: str,
    n: int,
    token: str,
    scope: str,
    make: Callable[[int], dict[str, Any]],
) -> Operation[tuple[str, int]]:
    """One claim of ``n``: ``("taken", n)``, ``("used", next number to try)``
    or ``("race", n)`` (the claim withdrawn)."""
    mine = f"{name}:claim:{n:06d}:{token}"
    found_by = {"name": name, "version": n, "namespace": scope}  # what the check searches
    yield Batch([PutOp(ns, mine, {"kind": CLAIM_KIND, **found_by, "token": token}, index=False)])
    try:
        waited = 0.0
        while True:
            outcome = yield from _check(ns, name, n, scope, mine)
            if outcome[0] != "wait":
                break
            if waited > STALE_S:  # a younger claim that stays: its writer stopped
                outcome = ("race", n)
                break
            # The oldest claim of n: the younger ones withdraw when they see
            # it, then n is this writer's.
            yield _pause(_PAUSE_S)
            waited += _PAUSE_S
        if outcome[0] == "taken":
            # The version first, then the claim removed: a store that applies
            # a batch's writes one by one never shows neither.
            yield Batch(
                [
                    PutOp(ns, version_key(name, n), {**make(n), **found_by}, index=False),
                    PutOp(ns, mine, None),
                ]
            )
            return outcome
    except Exception:
        # A failed attempt leaves no claim behind when the store still answers
        # (otherwise the claim goes stale and its number is skipped).
        yield Batch([PutOp(ns, mine, None)])
        raise
    yield Batch([PutOp(ns, mine, None)])
    return outcome


def _check(
    ns: tuple[str, ...], name: str, n: int, scope: str, mine: str | None
) -> Operation[tuple[str, int]]:
    """What the store says of ``n`` for the writer of claim ``mine`` (None:
    one that has not claimed yet): ``taken`` (``n`` is its to write),
    ``used`` (with the next number to try), ``race`` (leave, come back) or
    ``wait`` (the oldest claim: check again)."""
    found_by = {"name": name, "version": n, "namespace": scope}
    # The claims and version of n in one search (one statement: what
    # decides); the versions above n say where to go when n is used.
    at_key, found, above = yield Batch(
        [
            GetOp(ns, version_key(name, n)),
            SearchOp(ns, found_by, _PAGE, 0),
            SearchOp(ns, {**found_by, "version": {"$gt": n}}, 100, 0),
        ]
    )
    here = [i for i in found if tuple(i.namespace) == ns]
    others = [i for i in here if i.key != mine]
    if at_key is not None or any(not _is_claim(i) for i in others):
        # A version of n (or another program's item under its key). Range
        # filters compare text in some stores: the hint is checked like n.
        higher = [_number(i) for i in above if tuple(i.namespace) == ns and not _is_claim(i)]
        return "used", 1 + max([n, *(v for v in higher if v is not None)])
    own = next((i for i in here if i.key == mine), None)
    if own is None or len(found) >= _PAGE:
        # Not claimed yet (only looking), or cannot tell: never taken on doubt.
        return ("race", n) if others or mine is not None else ("taken", n)
    if any((own.updated_at - i.updated_at).total_seconds() > STALE_S for i in others):
        return "used", n + 1  # a writer stopped between its claim and its version
    if not others:
        return "taken", n
    # Every writer sees the same claims in the same order: the oldest waits
    # for the others to withdraw, which they do on seeing it.
    oldest = min(here, key=lambda i: (i.updated_at, i.key))
    return ("wait", n) if oldest.key == mine else ("race", n)


def _number(item: Any) -> int | None:
    value = item.value
    n = value.get("version") if isinstance(value, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _is_claim(item: Any) -> bool:
    value = item.value
    return isinstance(value, dict) and value.get("kind") == CLAIM_KIND


def _pause(seconds: float) -> Call:
    return Call(lambda: time.sleep(seconds), lambda: asyncio.sleep(seconds))
