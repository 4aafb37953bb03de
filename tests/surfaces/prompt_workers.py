"""What each writer of the concurrent prompt-version tests does, importable by
the processes ``multiprocessing`` spawns (they run these functions by name)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from langmem_ext import PromptVersions, create_prompt_optimizer
from langmem_ext.testing.chat import ScriptedExtractionModel

NAMESPACE = ("prompts", "{user_id}")
ADA = {"configurable": {"user_id": "ada"}}


def open_store(spec: tuple[str, str]) -> Any:
    """``("sqlite", path)`` or ``("postgres", conninfo)``: the same store as the test's."""
    kind, where = spec
    if kind == "sqlite":
        from langmem_ext import SQLiteStore

        return SQLiteStore(where)
    from langmem_ext.stores.postgres import PostgresStore

    return PostgresStore(where)


def update(text: str) -> AIMessage:
    call = {"name": "update_prompt", "args": {"new_prompt": text}, "id": "u"}
    return AIMessage("", tool_calls=[call])


def save_many(store: Any, writer: str, n: int) -> list[tuple[int, str]]:
    """``n`` saves of distinct texts; the numbers each save returned."""
    prompts = PromptVersions(store, namespace=NAMESPACE)
    out = []
    for i in range(n):
        text = f"prompt by {writer}, save {i}"
        out.append((prompts.save("main", text, ADA), text))
    return out


def optimize_many(store: Any, writer: str, n: int) -> list[tuple[str, str]]:
    """``n`` optimizations, each answered with a distinct new prompt."""
    prompts = PromptVersions(store, namespace=NAMESPACE)
    texts = [f"optimized by {writer}, run {i}" for i in range(n)]
    optimizer = create_prompt_optimizer(
        ScriptedExtractionModel([update(t) for t in texts]), kind="prompt_memory"
    )
    return [
        (prompts.optimize(optimizer, "main", f"feedback {writer} {i}", ADA), texts[i])
        for i in range(n)
    ]


def in_process(
    start: Any, results: Any, job: str, spec: tuple[str, str], writer: str, n: int
) -> None:
    """A process's work: open its own store, wait for the others, run ``job``
    (``"save"`` or ``"optimize"``), put what it acknowledged (or its error) in
    ``results``."""
    try:
        store = open_store(spec)
        try:
            start.wait(timeout=60)
            results.put((save_many if job == "save" else optimize_many)(store, writer, n))
        finally:
            store.close()
    except BaseException as e:  # reported by the test, not lost in the child
        results.put(f"{writer}: {e!r}")
