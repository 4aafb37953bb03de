"""Import paths that are not where the code lives.

Old paths of this package, kept working for one release with a
``DeprecationWarning`` that names the new one (the package was regrouped by
audience: ``agents``, ``langmem``, ``servers``, ``cli``); and LangMem's module
paths (``langmem.knowledge.tools``, ``langmem.prompts.optimization``,
``langmem.short_term.summarization`` ...) under ``langmem_ext``, without a
warning, so code written for LangMem needs only its import renamed.

    >>> from langmem_ext.knowledge.tools import create_manage_memory_tool
    >>> create_manage_memory_tool.__module__
    'langmem_ext.langmem.tools'

``import langmem_ext.surfaces.tools`` gives the module now at
``langmem_ext.langmem.tools`` (the same module object), and
``from langmem_ext.surfaces import create_manage_memory_tool`` the name now at
``langmem_ext.langmem``.

Examples:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     from langmem_ext.surfaces.tools import create_manage_memory_tool
    >>> str(caught[0].message)
    'langmem_ext.surfaces.tools moved to langmem_ext.langmem.tools; import it from there'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["LANGMEM_PATHS", "MODULES", "install", "old_package"]

#: Old module path -> new module path.
MODULES: Mapping[str, str] = {
    "langmem_ext.surfaces.tools": "langmem_ext.langmem.tools",
    "langmem_ext.surfaces.searcher": "langmem_ext.langmem.searcher",
    "langmem_ext.surfaces.memory_tools": "langmem_ext.agents.tools",
    "langmem_ext.surfaces.compartments": "langmem_ext.agents.compartments",
    "langmem_ext.surfaces.mcp": "langmem_ext.servers.mcp",
    "langmem_ext.surfaces.ui": "langmem_ext.servers.ui",
    "langmem_ext.surfaces.callers": "langmem_ext.servers.callers",
    "langmem_ext.surfaces.cli": "langmem_ext.cli.app",
    "langmem_ext.reflection.context": "langmem_ext.agents.reflection.context",
    "langmem_ext.reflection.executor": "langmem_ext.agents.reflection.executor",
    "langmem_ext.reflection.extract": "langmem_ext.agents.reflection.extract",
    "langmem_ext.reflection.reflect": "langmem_ext.agents.reflection.reflect",
    "langmem_ext.reflection.tokens": "langmem_ext.model_calls.tokens",
    "langmem_ext.agents.reflection.calls": "langmem_ext.model_calls.calls",
    "langmem_ext.agents.reflection.replies": "langmem_ext.model_calls.replies",
    "langmem_ext.agents.reflection.tokens": "langmem_ext.model_calls.tokens",
    "langmem_ext.agents.reflection.usage": "langmem_ext.model_calls.usage",
    "langmem_ext.reflection.middleware": "langmem_ext.agents.middleware",
    "langmem_ext.reflection.managers": "langmem_ext.langmem.managers",
    "langmem_ext.reflection.store_manager": "langmem_ext.langmem.store_manager",
}


#: LangMem's module path (renamed) -> the module that holds its names here.
LANGMEM_PATHS: Mapping[str, str] = {
    "langmem_ext.knowledge": "langmem_ext.langmem",
    "langmem_ext.knowledge.extraction": "langmem_ext.langmem",
    "langmem_ext.knowledge.tools": "langmem_ext.langmem.tools",
    "langmem_ext.prompts": "langmem_ext.langmem.optimizers",
    "langmem_ext.prompts.optimization": "langmem_ext.langmem.optimizers",
    "langmem_ext.prompts.types": "langmem_ext.langmem.optimizers",
    "langmem_ext.short_term.summarization": "langmem_ext.langmem.summarization",
}


def _alias(name: str, target: str) -> ModuleType:
    """A module named as LangMem names it whose names are ``target``'s."""
    module = ModuleType(
        name, f"LangMem's ``{name.replace('langmem_ext', 'langmem')}``: see {target}."
    )
    module.__path__ = []  # LangMem's submodules resolve here too

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__") and attr != "__all__":
            raise AttributeError(attr)
        return getattr(importlib.import_module(target), attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = lambda: dir(importlib.import_module(target))  # type: ignore[method-assign]
    return module


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; import it from there", DeprecationWarning, stacklevel=3)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module path with the new module."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name in MODULES or name in LANGMEM_PATHS:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec: Any) -> ModuleType:
        if spec.name in LANGMEM_PATHS:
            return _alias(spec.name, LANGMEM_PATHS[spec.name])
        new = MODULES[spec.name]
        _warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        # The new module is already executed; registering it under the old
        # name is all there is to do.
        return None


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def old_package(
    name: str, names: Mapping[str, str], listed: Sequence[str] = (), quiet: Sequence[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__``/``__dir__`` of an old package: each name is taken from its
    new module, with a warning (none for ``quiet`` names: LangMem's paths)."""

    def __getattr__(attr: str) -> Any:
        new = names.get(attr)
        if new is None:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if attr not in quiet:
            _warn(f"{name}.{attr}", f"{new}.{attr}")
        return getattr(importlib.import_module(new), attr)

    def __dir__() -> list[str]:
        return sorted({*names, *listed})

    return __getattr__, __dir__
