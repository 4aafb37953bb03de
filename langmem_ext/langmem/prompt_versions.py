"""Procedural memory that lasts: an agent's prompts as versioned items of the
store, in each user's (or org's, or agent's) namespace, with the trajectories
and feedback that produced each version, rollback to any version, and a
``create_agent`` middleware that serves the current one.

Each version is one store item, key ``"{name}:v{n}"`` (``n`` from 1, zero
padded), value ``{"kind": "prompt_version", "name", "version", "prompt",
"reason", "trajectories", "created_at"}``. A version is never changed or
deleted: a rollback writes a new version with the old text. Sync and async
share one body.

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

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from .._langgraph import current_config
from ..engine import Batch, NamespaceTemplate, Operation, run_async, run_sync
from ..errors import ConfigurationError, InvalidValueError, MemoryNotFoundError
from .optimizers import PromptOptimizer, _trajectories

__all__ = ["PromptVersions"]

_KIND = "prompt_version"


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
        _check_name(name)
        found: list[dict[str, Any]] = []
        offset = 0
        while True:
            flt = {"kind": _KIND, "name": name}
            [page] = yield Batch([SearchOp(ns, flt, 500, offset)])
            found += [it.value for it in page]
            if len(page) < 500:
                return sorted(found, key=lambda v: -int(v["version"]))
            offset += 500

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
        n = (int(versions[0]["version"]) if versions else 0) + 1
        value = {
            "kind": _KIND,
            "name": name,
            "version": n,
            "prompt": prompt,
            "reason": reason,
            "trajectories": trajectories,
            "created_at": datetime.now(timezone.utc).isoformat(),
        }
        yield Batch([PutOp(ns, f"{name}:v{n:06d}", value, index=False)])
        return n

    def _rollback(self, name: str, version: int, config: RunnableConfig | None) -> Operation[int]:
        ns = self._ns(config)
        [item] = yield Batch([GetOp(ns, f"{name}:v{int(version):06d}")])
        if item is None:
            raise MemoryNotFoundError(f"prompt {name!r} has no version {version}; see history()")
        return (
            yield from self._save(
                name, item.value["prompt"], config, f"rollback to version {version}", None
            )
        )

    def _optimize(
        self,
        optimizer: PromptOptimizer,
        name: str,
        trajectories: Any,
        config: RunnableConfig | None,
    ) -> Operation[str]:
        ns = self._ns(config)
        versions = yield from self._versions(name, ns)
        if not versions:
            raise MemoryNotFoundError(f"prompt {name!r} has no version yet; save() one first")
        old = versions[0]["prompt"]
        new = yield from optimizer._steps({"trajectories": trajectories, "prompt": old})
        if new != old:
            yield from self._save(name, new, config, "optimized", _trajectories(trajectories))
        return new

    # -- the faces ----------------------------------------------------------------------

    def save(self, name: str, prompt: str, config: RunnableConfig | None = None) -> int:
        """Store ``prompt`` as the next version of ``name``; returns its number."""
        return run_sync(self._save(name, prompt, config, "set", None), self.store)

    async def asave(self, name: str, prompt: str, config: RunnableConfig | None = None) -> int:
        """Async :meth:`save`."""
        return await run_async(self._save(name, prompt, config, "set", None), self.store)

    def history(self, name: str, config: RunnableConfig | None = None) -> list[dict[str, Any]]:
        """Every version of ``name``, newest first."""
        return run_sync(self._versions(name, self._ns(config)), self.store)

    async def ahistory(
        self, name: str, config: RunnableConfig | None = None
    ) -> list[dict[str, Any]]:
        """Async :meth:`history`."""
        return await run_async(self._versions(name, self._ns(config)), self.store)

    def current(
        self, name: str, config: RunnableConfig | None = None, default: str | None = None
    ) -> str | None:
        """The newest version's text (``default`` when there is none)."""
        versions = self.history(name, config)
        return versions[0]["prompt"] if versions else default

    async def acurrent(
        self, name: str, config: RunnableConfig | None = None, default: str | None = None
    ) -> str | None:
        """Async :meth:`current`."""
        versions = await self.ahistory(name, config)
        return versions[0]["prompt"] if versions else default

    def rollback(self, name: str, version: int, config: RunnableConfig | None = None) -> int:
        """A new version with the text of ``version``; returns its number."""
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
