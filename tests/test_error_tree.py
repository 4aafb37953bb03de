"""Every error the package raises is in its error tree (``LangmemError`` with a
``code``), read from the source: each ``raise X(...)`` / ``raise X`` whose
``X`` names an exception class must name a ``LangmemError`` subclass, unless
it is on the short list below, each with its reason.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
from pathlib import Path

import langmem_ext
from langmem_ext.errors import LangmemError

PACKAGE = Path(langmem_ext.__file__).parent

#: (module, class name) -> why raising it is intended.
ALLOWED: dict[tuple[str, str], str] = {
    ("langmem_ext.stores.sqlite.store", "TypeError"): "a connection of the wrong type",
    ("langmem_ext.stores.sqlite.store_async", "TypeError"): "a connection of the wrong type",
    ("langmem_ext.agents.reflection.extract", "TypeError"): "a model of the wrong type",
    ("langmem_ext.stores._base", "NotImplementedError"): "an abstract method",
    ("langmem_ext.stores.postgres._ivf", "NotImplementedError"): "an abstract method",
    ("langmem_ext.testing.chat", "NotImplementedError"): "a test model without tools",
    ("langmem_ext.testing.chat", "AssertionError"): "a scripted test model ran out of steps",
    ("langmem_ext.testing.chat", "UnsupportedRequest"): "imitates a server's own error",
    ("langmem_ext._lazy", "AttributeError"): "module __getattr__ protocol",
    ("langmem_ext._moved", "AttributeError"): "module __getattr__ protocol",
    ("langmem_ext.errors", "KeyError"): "lookup() of an unknown code, a mapping's protocol",
    ("langmem_ext.stores._segment", "IndexError"): "a sequence's __getitem__ protocol",
    ("langmem_ext._langgraph", "InvalidNamespaceError"): "LangGraph's own check, its own error",
    ("langmem_ext._lazy", "ImportError"): "a missing extra, named with its pip command",
    ("langmem_ext.cli", "SystemExit"): "the command line's exit status",
    (
        "langmem_ext.cli.demo",
        "FileExistsError",
    ): "an OS error about the --db file, as the OS says it",
    ("langmem_ext.stores.sqlite._vectors", "FileNotFoundError"): "a vector segment file is gone",
    ("langmem_ext.stores.rerankers", "TimeoutError"): "control flow, caught in the module",
    ("langmem_ext.stores.rerankers", "_RerankerFailed"): "control flow, caught in the module",
    ("langmem_ext.stores.rerankers", "_Stuck"): "control flow, caught in the module",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _raised_name(node: ast.Raise) -> str | None:
    exc = node.exc
    if isinstance(exc, ast.Call):
        exc = exc.func
    if isinstance(exc, ast.Name):
        return exc.id
    if isinstance(exc, ast.Attribute):
        return exc.attr
    return None


def _resolve(module: object, name: str) -> object:
    value = getattr(module, name, None)
    if value is None:
        value = getattr(builtins, name, None)
    return value


def _raises():
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                raised = _raised_name(node)
                if raised is not None:
                    yield name, raised, node.lineno


def test_every_raised_error_is_in_the_package_tree():
    bad = []
    seen_allowed = set()
    for name, raised, line in _raises():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an extra that is not installed
            module = None
        value = _resolve(module, raised) if module is not None else getattr(builtins, raised, None)
        if not (inspect.isclass(value) and issubclass(value, BaseException)):
            continue  # a variable holding an error (re-raised), not a class
        if issubclass(value, LangmemError):
            continue
        if (name, raised) in ALLOWED:
            seen_allowed.add((name, raised))
            continue
        bad.append(f"{name}:{line} raises {raised}")
    assert not bad, "raise an error of langmem_ext.errors' tree instead:\n" + "\n".join(bad)
    # The list names only what is still raised.
    assert set(ALLOWED) - seen_allowed == set()


def test_the_reparented_errors_keep_their_builtin_base():
    from langmem_ext.errors import InvalidStateError
    from langmem_ext.model_calls import ContextOverflow, MalformedOutput, ModelTimeout

    assert issubclass(MalformedOutput, ValueError)
    assert issubclass(ContextOverflow, RuntimeError)
    assert issubclass(ModelTimeout, TimeoutError)
    assert issubclass(InvalidStateError, RuntimeError)
    codes = [c.code for c in (MalformedOutput, ContextOverflow, ModelTimeout, InvalidStateError)]
    assert codes == ["MALFORMED_OUTPUT", "CONTEXT_OVERFLOW", "MODEL_TIMEOUT", "INVALID_STATE"]
    assert MalformedOutput("cut", truncated=True).truncated


def test_the_check_finds_a_builtin_raise(tmp_path):
    # The reader itself: a bare RuntimeError is found.
    tree = ast.parse("def f():\n    raise RuntimeError('x')\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.Raise)]
    assert _raised_name(node) == "RuntimeError"
