"""Run one unit's blocks the way LangMem's docs test runs them.

In-process (the examples test)::

    outcomes = run_blocks(unit, "langmem_ext")

or as a child of ``scripts/compat`` (a time-out per block needs a process to
kill)::

    python -m langmem_ext_dev.compat.runner UNIT.json PACKAGE LANGMEM_SRC

which prints one ``@@compat {json}`` line when a block starts and one when it
ends. PACKAGE is ``langmem`` (the original, imported from LANGMEM_SRC) or
``langmem_ext`` (each block's ``langmem`` imports renamed, nothing else).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
import textwrap
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .blocks import Unit

MARK = "@@compat "
_IMPORT = re.compile(r"^(\s*)(from|import)\s+langmem\b", re.MULTILINE)


def rename(code: str, package: str) -> str:
    """Point a block's ``langmem`` imports at PACKAGE; nothing else changes.

    >>> rename("from langmem import create_manage_memory_tool", "langmem_ext")
    'from langmem_ext import create_manage_memory_tool'
    """
    if package == "langmem":
        return code
    code = re.sub(r"^(\s*)import langmem$", rf"\1import {package} as langmem", code, flags=re.M)
    return _IMPORT.sub(rf"\1\2 {package}", code)


def _module(module: str, package: str) -> str:
    return package + module[len("langmem") :]


def namespace(unit: Unit, package: str) -> dict[str, Any]:
    """The globals LangMem's runner gives a unit (its module and function).

    Unlike LangMem's runner, they are a module's, registered in ``sys.modules``
    as a user's script would be: pydantic and LangGraph resolve a class's
    annotations through its module, and fail on ones defined in a bare dict.
    """
    name = "docstring_example_" + re.sub(r"\W", "_", unit.source)
    module = types.ModuleType(name)
    sys.modules[name] = module
    ns: dict[str, Any] = module.__dict__
    ns["__file__"] = "README.md"
    if unit.module and unit.qualname:
        home = importlib.import_module(_module(unit.module, package))
        obj: Any = home
        for part in unit.qualname.split("."):
            obj = getattr(obj, part)
        ns["__file__"] = getattr(home, "__file__", None)
        ns[unit.module.split(".")[-1]] = home
        ns[unit.qualname.split(".")[-1]] = obj
    return ns


async def _run_async(code: str, ns: dict[str, Any]) -> None:
    # As LangMem's runner does: a block with ``await`` runs as a coroutine
    # whose locals are kept for the next block.
    wrapped = (
        "async def _test_docstring():\n    global_ns = globals()\n"
        + textwrap.indent(code, "    ")
        + "\n    global_ns.update(locals())\n"
    )
    exec(wrapped, ns, ns)
    await ns["_test_docstring"]()


def why(exc: BaseException) -> str:
    """One line: the exception and where it was raised."""
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {Path(last[0].filename).name}:{last[0].lineno})" if last else ""
    text = (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0][:220]
    return text + where


def iter_blocks(unit: Unit, package: str) -> Iterator[dict[str, Any]]:
    """Yield ``{"start": i}`` before and ``{"block": i, "status": ...}`` after
    each block; ``{"block": -1, ...}`` when the module or setup fails."""
    try:
        ns = namespace(unit, package)
        for setup in unit.setup:
            exec(rename(setup, package), ns, ns)
    except Exception as exc:
        yield {"block": -1, "status": "fail", "error": "setup: " + why(exc)}
        return
    for i, block in enumerate(unit.blocks):
        yield {"start": i}
        code = rename(block, package)
        try:
            if "await " in code:
                asyncio.run(_run_async(code, ns))
            else:
                exec(code, ns, ns)
        except BaseException as exc:
            yield {"block": i, "status": "fail", "error": why(exc)}
            continue
        yield {"block": i, "status": "pass"}


def run_blocks(unit: Unit, package: str = "langmem_ext") -> list[dict[str, Any]]:
    """Each block's outcome, in-process (no time-out)."""
    out: list[dict[str, Any]] = [
        {"status": "not run", "error": "the setup failed"} for _ in unit.blocks
    ]
    for event in iter_blocks(unit, package):
        if event.get("block") == -1:
            out = [{"status": "fail", "error": event["error"]} for _ in unit.blocks]
        elif "block" in event:
            out[event["block"]] = event
    return out


def main(argv: list[str], emit: Callable[[str], None] = print) -> None:
    unit_path, package, langmem_src = argv
    sys.path.insert(0, langmem_src)
    from . import standin

    standin.install()
    unit = Unit(**json.loads(Path(unit_path).read_text()))
    for event in iter_blocks(unit, package):
        emit(MARK + json.dumps(event))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
