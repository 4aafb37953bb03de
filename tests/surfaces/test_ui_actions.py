"""The operations page's browser column is what the browser's pages run:
``BROWSER_ACTIONS`` names exactly the operations ``ui.py`` calls."""

from __future__ import annotations

import ast
import inspect

from langmem_ext.engine import OPERATIONS
from langmem_ext.servers import ui


def _called() -> set[str]:
    tree = ast.parse(inspect.getsource(ui))
    names = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "act"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(node.args[0].value)
    return names | set(ui._NEW.values())  # act(_NEW[kind], ...)


def test_the_browser_actions_are_the_operations_its_pages_run():
    assert _called() == ui.BROWSER_ACTIONS
    assert set(OPERATIONS) >= ui.BROWSER_ACTIONS
