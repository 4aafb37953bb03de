"""The PostgreSQL store's docstring examples run (pure modules: no server)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "langmem_ext.stores.postgres._errors",
    "langmem_ext.stores.postgres._merge",
    "langmem_ext.stores.postgres._steps",
    "langmem_ext.stores.postgres._config",
    "langmem_ext.stores.postgres._vector_search",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    tests = doctest.DocTestFinder().find(module, name, globs=dict(vars(module)))
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no runnable example"
