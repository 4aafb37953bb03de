"""Erase a user everywhere this package keeps their words, above the engine
too: the engine's ``erase`` (memories, sessions, archive, events, profile,
reflection state, vectors, cached embeddings) with the namespaces of the
app's running summaries and prompt versions, and the pending reflections of
the app's executors.

Examples:
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import MemoryContext, MemoryEngine
    >>> from langmem_ext.langmem import PromptVersions
    >>> store = SQLiteStore()
    >>> engine, ada = MemoryEngine(store), MemoryContext(user_id="ada")
    >>> prompts = PromptVersions(store, namespace=("prompts", "{user_id}"))
    >>> _ = prompts.save("greeting", "Hi Ada", {"configurable": {"user_id": "ada"}})
    >>> _ = engine.add(ada, "Allergic to peanuts")
    >>> receipt = erase_user(engine, ada, confirm="ada", components=[prompts])
    >>> receipt.counts["memories"], receipt.counts["app"]
    (1, 1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..engine import ErasureReceipt, MemoryContext, MemoryEngine

__all__ = ["erase_user"]


def erase_user(
    engine: MemoryEngine,
    ctx: MemoryContext,
    user_id: str | None = None,
    *,
    confirm: str | None = None,
    dry_run: bool = False,
    components: Sequence[Any] = (),
) -> ErasureReceipt:
    """The engine's ``erase`` of ``user_id`` (default: the caller) with the
    app's components: those with a namespace ``template`` (``PromptVersions``,
    running summaries' places) have their namespace of the user erased in the
    same transaction; those with ``erase_user(tenant_id, user_id)``
    (``ReflectionExecutor``) drop the user's pending work first, so nothing
    writes the user's words back after the erase. The receipt counts
    ``reflection_jobs`` too."""
    templates = [c.template for c in components if hasattr(c, "template")]
    subject = user_id or ctx.user_id or ""
    jobs = 0
    if not dry_run and confirm is not None and confirm == subject:
        for c in components:
            hook = getattr(c, "erase_user", None)
            if hook is not None:
                jobs += hook(ctx.tenant_id, subject)
    receipt = engine.erase(ctx, user_id, confirm=confirm, dry_run=dry_run, namespaces=templates)
    return dataclasses.replace(receipt, counts={**receipt.counts, "reflection_jobs": jobs})
