"""Procedural memory that lasts: an agent's prompts as versioned items of the
store, in each user's (or org's, or agent's) namespace, with the trajectories
and feedback that produced each version, rollback to any version, and a
``create_agent`` middleware that serves the current one.

Each version is one store item, key ``"{name}:v{n}"`` (``n`` from 1, zero
padded), value ``{"kind": "prompt_version", "name", "version", "prompt",
"reason", "trajectories", "created_at", "namespace"}``. A version is never
changed or deleted: a rollback writes a new version with the old text. Sync
and async share one body.

* **Exactly one namespace.** A namespace's versions are the items *in* it:
  with an organisation's prompts at ``("prompts", "{org_id}")`` and its
  members' at ``("prompts", "{org_id}", "{user_id}")``, the organisation's
  history, current version, rollback, optimization and middleware never see
  a member's versions (a store search reads a whole prefix; they are left out).
* **Exact numbers under concurrency.** Saves, optimizations and rollbacks
  running at once, in threads or processes, each get a number of their own;
  none overwrites another (see :mod:`._version_numbers`: a number is claimed,
  checked and only then written, on any store).
* **Damaged versions** (an item another program wrote under a version key with
  no text ``prompt``, or a ``version`` that is not its key's number) are
  skipped by :meth:`~PromptVersions.current`, the middleware and the
  optimizer, logged once per process, listed by
  :meth:`~PromptVersions.history` marked ``"damaged": True`` (with the
  ``problem`` and the stored ``value``), refused by
  :meth:`~PromptVersions.rollback`, and never overwritten: the next version
  takes the next free number.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> prompts = PromptVersions(SQLiteStore(), namespace=("prompts", "{user_id}"))
    >>> cfg = {"configurable": {"user_id": "ada"}}
    >>> prompts.save("main", "Be helpful.", cfg), prompts.save("main", "Be brief.", cfg)
    (1, 2)
    >>> prompts.rollback("main", 1, cfg), prompts.current("main", cfg)
    (3, 'Be helpful.')
    >>> [(v["version"], v["reason"]) for v in prompts.history("main", cfg)]
    [(3, 'rollback to version 1'), (2, 'set'), (1, 'set')]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, GetOp, Item, SearchOp

from .._langgraph import current_config
from ..engine import Batch, NamespaceTemplate, Operation, run_async, run_sync, shown, warn_once
from ..errors import (
    ConfigurationError,
    DamagedMemoryError,
    InvalidValueError,
    MemoryNotFoundError,
)
from ._version_numbers import claim_version, version_key
from .optimizers import PromptOptimizer, _trajectories

__all__ = ["PromptVersions"]

_KIND = "prompt_version"
_KEY = re.compile(r"(?P<name>[^:]+):v(?P<n>[0-9]+)")
_PAGE = 500


class PromptVersions:
    """Versioned prompts in ``store`` under ``namespace`` (a template filled
    from each call's config, e.g. ``("prompts", "{user_id}")``)."""

    def __init__(
        self,
        store: BaseStore,
        *,
        namespace: tuple[str, ...] | str = ("prompts", "{langgraph_user_id}"),
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigurationError(f"store must be a LangGraph BaseStore, got {store!r:.80}")
        self.store = store
        self.template = NamespaceTemplate(namespace)

    # -- one body for sync and async ----------------------------------------------

    def _ns(self, config: RunnableConfig | None) -> tuple[str, ...]:
        return self.template(current_config(config))

    def _versions(self, name: str, ns: tuple[str, ...]) -> Operation[list[dict[str, Any]]]:
        """Every version of ``name`` in ``ns`` itself, newest first, damaged ones marked."""
        _check_name(name)
        found: dict[str, Item] = {}
        offset = 0
        while True:
            flt = {"kind": _KIND, "name": name}
            [page] = yield Batch([SearchOp(ns, flt, _PAGE, offset)])
            # A search reads the whole prefix: a member's versions under an
            # organisation's namespace are the member's, not the organisation's.
            found.update((it.key, it) for it in page if tuple(it.namespace) == ns)
            if len(page) < _PAGE:
                break
            offset += _PAGE
        versions = [_version(item, name) for item in found.values()]
        return sorted(versions, key=lambda v: (v["version"] is None, -(v["version"] or 0)))

    def _save(
        self,
        name: str,
        prompt: Any,
        config: RunnableConfig | None,
        reason: str,
        trajectories: str | None,
    ) -> Operation[int]:
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidValueError(
                f"a prompt version must be non-empty text, got {prompt!r:.80}; nothing was saved"
            )
        ns = self._ns(config)
        versions = yield from self._versions(name, ns)
        # Damaged versions count: their numbers are never given again.
        first = 1 + max((v["version"] for v in versions if v["version"] is not None), default=0)

        def value(n: int) -> dict[str, Any]:
            return {
                "kind": _KIND,
                "name": name,
                "version": n,
                "prompt": prompt,
                "reason": reason,
                "trajectories": trajectories,
                "created_at": datetime.now(timezone.utc).isoformat(),
            }

        return (yield from claim_version(ns, name, first, value))

    def _rollback(self, name: str, version: int, config: RunnableConfig | None) -> Operation[int]:
        _check_name(name)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidValueError(f"version must be a positive integer, got {shown(version)}")
        ns = self._ns(config)
        [item] = yield Batch([GetOp(ns, version_key(name, version))])
        if item is None:
            raise MemoryNotFoundError(f"prompt {name!r} has no version {version}; see history()")
        problem = _problem(item, name)
        if problem is not None:
            raise DamagedMemoryError(
                f"version {version} of prompt {name!r} is damaged ({problem}); nothing was "
                "saved: roll back to another version (see history())"
            )
        return (
            yield from self._save(
                name, item.value["prompt"], config, f"rollback to version {version}", None
            )
        )

    def _current(self, name: str, ns: tuple[str, ...]) -> Operation[dict[str, Any] | None]:
        versions = yield from self._versions(name, ns)
        return next((v for v in versions if not v.get("damaged")), None)

    def _optimize(
        self,
        optimizer: PromptOptimizer,
        name: str,
        trajectories: Any,
        config: RunnableConfig | None,
    ) -> Operation[str]:
        current = yield from self._current(name, self._ns(config))
        if current is None:
            raise MemoryNotFoundError(f"prompt {name!r} has no version yet; save() one first")
        old = current["prompt"]
        new = yield from optimizer._steps({"trajectories": trajectories, "prompt": old})
        if new != old:
            yield from self._save(name, new, config, "optimized", _trajectories(trajectories))
        return new

    # -- the faces ----------------------------------------------------------------------

    def save(self, name: str, prompt: str, config: RunnableConfig | None = None) -> int:
        """Store ``prompt`` as the next version of ``name``; returns its number
        (a number of its own, whatever other writers save at the same time)."""
        return run_sync(self._save(name, prompt, config, "set", None), self.store)

    async def asave(self, name: str, prompt: str, config: RunnableConfig | None = None) -> int:
        """Async :meth:`save`."""
        return await run_async(self._save(name, prompt, config, "set", None), self.store)

    def history(self, name: str, config: RunnableConfig | None = None) -> list[dict[str, Any]]:
        """Every version of ``name`` in the namespace itself, newest first (a
        damaged one marked ``"damaged": True``, with its ``problem`` and the
        stored ``value``; its ``prompt`` is None)."""
        return run_sync(self._versions(name, self._ns(config)), self.store)

    async def ahistory(
        self, name: str, config: RunnableConfig | None = None
    ) -> list[dict[str, Any]]:
        """Async :meth:`history`."""
        return await run_async(self._versions(name, self._ns(config)), self.store)

    def current(
        self, name: str, config: RunnableConfig | None = None, default: str | None = None
    ) -> str | None:
        """The newest version's text (``default`` when there is none); a damaged
        version is skipped."""
        found = run_sync(self._current(name, self._ns(config)), self.store)
        return found["prompt"] if found else default

    async def acurrent(
        self, name: str, config: RunnableConfig | None = None, default: str | None = None
    ) -> str | None:
        """Async :meth:`current`."""
        found = await run_async(self._current(name, self._ns(config)), self.store)
        return found["prompt"] if found else default

    def rollback(self, name: str, version: int, config: RunnableConfig | None = None) -> int:
        """A new version with the text of ``version``; returns its number.

        Raises:
            MemoryNotFoundError: there is no such version.
            DamagedMemoryError: that version is damaged (nothing is saved).
        """
        return run_sync(self._rollback(name, version, config), self.store)

    async def arollback(self, name: str, version: int, config: RunnableConfig | None = None) -> int:
        """Async :meth:`rollback`."""
        return await run_async(self._rollback(name, version, config), self.store)

    def optimize(
        self,
        optimizer: PromptOptimizer,
        name: str,
        trajectories: Any,
        config: RunnableConfig | None = None,
    ) -> str:
        """Improve the current version with ``optimizer`` (from
        :func:`create_prompt_optimizer`) and store the result, with the
        trajectories, as a new version when it changed; returns the text."""
        return run_sync(self._optimize(optimizer, name, trajectories, config), self.store)

    async def aoptimize(
        self,
        optimizer: PromptOptimizer,
        name: str,
        trajectories: Any,
        config: RunnableConfig | None = None,
    ) -> str:
        """Async :meth:`optimize`."""
        return await run_async(self._optimize(optimizer, name, trajectories, config), self.store)

    def middleware(self, name: str, default: str | None = None) -> AgentMiddleware:
        """``create_agent`` middleware: the current version of ``name`` becomes
        the system prompt of each model call (``default`` until one is saved)."""
        return _PromptMiddleware(self, name, default)


class _PromptMiddleware(AgentMiddleware):
    def __init__(self, versions: PromptVersions, name: str, default: str | None) -> None:
        super().__init__()
        self.versions, self.prompt_name, self.default = versions, name, default

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        text = self.versions.current(self.prompt_name, None, self.default)
        return handler(_with_prompt(request, text))

    async def awrap_model_call(self, request: ModelRequest, handler: Any) -> ModelResponse:
        text = await self.versions.acurrent(self.prompt_name, None, self.default)
        return await handler(
            request.override(system_message=SystemMessage(text)) if text else request
        )


def _with_prompt(request: ModelRequest, text: str | None) -> ModelRequest:
    return request.override(system_message=SystemMessage(text)) if text else request


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name or ":" in name or len(name) > 200:
        raise InvalidValueError(
            f"a prompt name must be non-empty text without ':', got {name!r:.80}"
        )


def _problem(item: Item, name: str) -> str | None:
    """What makes ``item`` no valid version of ``name`` (None: it is one)."""
    m = _KEY.fullmatch(item.key)
    if m is None or m["name"] != name:
        return f"its key {item.key!r} is not {name!r}:v<number>"
    value = item.value
    if not isinstance(value, dict):
        return f"its value is not an object: {shown(value)}"
    version = value.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        return f"version must be an integer, got {shown(version)}"
    if version != int(m["n"]):
        return f"version {version} is not its key's number {int(m['n'])}"
    prompt = value.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return f"prompt must be non-empty text, got {shown(prompt)}"
    return None


def _version(item: Item, name: str) -> dict[str, Any]:
    """A history entry: the stored value, or a damaged version marked as such."""
    problem = _problem(item, name)
    if problem is None:
        return dict(item.value)
    warn_once(
        item,
        "skipped damaged prompt version %s in %s: %s; it stays stored as it is (history() "
        "lists it, the next version takes the next free number)",
        item.key,
        "/".join(item.namespace),
        problem,
    )
    m = _KEY.fullmatch(item.key)
    return {
        "kind": _KIND,
        "name": name,
        "version": int(m["n"]) if m is not None and m["name"] == name else None,
        "prompt": None,
        "reason": None,
        "trajectories": None,
        "created_at": item.created_at.isoformat(),
        "damaged": True,
        "problem": problem,
        "key": item.key,
        "value": item.value,
    }
