"""Docs that cannot drift: docstring examples run, README commands are the CI's,
README Python snippets run, the CLI works as documented."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]

MODULES = [
    "langmem_ext",
    "langmem_ext.errors",
    "langmem_ext.stores._filters",
    "langmem_ext.stores._hybrid",
    "langmem_ext.stores._vector_index",
    "langmem_ext.stores._base",
    "langmem_ext.stores.embeddings",
    "langmem_ext.stores.embeddings.cache",
    "langmem_ext.stores.embeddings.local",
    "langmem_ext.stores.sqlite.store",
    "langmem_ext.surfaces.demo",
    "langmem_ext.surfaces.namespaces",
    "langmem_ext.surfaces.tools",
    "langmem_ext.surfaces.compartments",
    "langmem_ext.surfaces.memory_tools",
    "langmem_ext.engine",
    "langmem_ext.engine.engine",
    "langmem_ext.engine.policy",
    "langmem_ext.engine.models",
    "langmem_ext.engine.layers",
    "langmem_ext.engine.tenancy",
    "langmem_ext.engine.scoring",
    "langmem_ext.engine.metrics",
    "langmem_ext.engine.profile",
    "langmem_ext.reflection",
    "langmem_ext.reflection.tokens",
    "langmem_ext.reflection.extract",
    "langmem_ext.reflection.context",
    "langmem_ext.reflection.executor",
    "langmem_ext.reflection.middleware",
    "langmem_ext.testing.chat",
    "langmem_ext.bench.locomo_data",
]


def _ours(module, name: str, test_name: str) -> bool:
    if test_name == name:
        return True
    top = getattr(module, test_name[len(name) + 1 :].split(".")[0], None)
    return str(getattr(top, "__module__", "")).startswith("langmem_ext")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    # module=False: also collect examples of public classes re-homed with __module__
    tests = finder.find(module, name, module=False, globs=dict(vars(module)))
    # module=False also finds the examples of imported foreign classes: keep ours.
    tests = [t for t in tests if _ours(module, name, t.name)]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no runnable example"


def _readme_blocks(lang: str) -> list[str]:
    # Blocks whose info string says more than the language (```python needs-server)
    # are shown but not run here.
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    commands = "\n".join(_readme_blocks("bash"))
    assert "scripts/test" in commands and "scripts/test" in ci
    assert "scripts/demo" in commands


def test_readme_python_snippets_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _readme_blocks("python")
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_cli_demo_prints_hits_with_scores(tmp_path):
    from langmem_ext.surfaces.cli import app

    db = tmp_path / "demo.db"
    result = CliRunner().invoke(app, ["demo", "--db", str(db)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Is allergic to peanuts and tree nuts" in out
    assert "filter={'category': 'preference'}" in out
    assert "mode=vector" in out and "mode=keyword" in out and "mode=hybrid" in out
    assert re.search(r"1\.000 │ user/ada/m4 │ Her dog Biscuit", out)
    assert db.exists()
    again = CliRunner().invoke(app, ["demo", "--db", str(db)])
    assert again.exit_code != 0 and "exists" in again.output


def test_every_cli_command_has_help():
    from langmem_ext.surfaces.cli import app

    for cmd in app.registered_commands:
        assert cmd.callback.__doc__ and "Example:" in cmd.callback.__doc__


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=str)
def test_notebooks_run(notebook, capsys):
    import json

    cells = json.loads(notebook.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code
    namespace: dict = {}
    for cell in code:
        exec(compile("".join(cell["source"]), str(notebook), "exec"), namespace)
    out = capsys.readouterr().out
    for expected in NOTEBOOK_OUTPUT[notebook.name]:
        assert expected in out, f"{notebook.name} did not print {expected!r}"


NOTEBOOK_OUTPUT = {
    "01_sqlite_store.ipynb": [
        "Is allergic to peanuts",
        "None 1",  # the TTL cell: expired, then swept
    ],
    "02_agent_memory.ipynb": [
        "- [context | 0.90] Lives in Berlin",
        "superseded by",
        "- [correction | 0.95] Lives in Munich",
        "extraction calls: 3",
    ],
}
