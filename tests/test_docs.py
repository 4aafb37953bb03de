"""Docs that cannot drift: docstring examples run, README commands are the CI's,
the CLI works as documented."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]


def _all_modules() -> list[str]:
    # Every module of the package (sqlite-utils-style: the real surface, not a
    # hand-kept list); bench/ and testing/ need optional extras or servers.
    import pkgutil

    import langmem_ext

    names = ["langmem_ext"]
    for info in pkgutil.walk_packages(langmem_ext.__path__, "langmem_ext."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


MODULES = _all_modules()
#: Modules that may have no example (internal plumbing, or needing a server).
NO_EXAMPLE_NEEDED = {
    "langmem_ext.__main__",
    "langmem_ext.cli.app",  # its commands are run by test_cli_* below
    "langmem_ext.cli.memories",  # run by tests/surfaces/test_cli_memories.py
    "langmem_ext.cli.store",  # run by tests/surfaces/test_cli_memories.py
    "langmem_ext.cli.dev",  # a command: its --help shows how to run it
    "langmem_ext.cli.bench_retrieval",  # a command, run by tests/bench/test_bench_retrieval.py
    "langmem_ext.testing",
    "langmem_ext.stores.postgres",  # needs a server: its examples are shown, not run
    "langmem_ext.stores.postgres.store",
    "langmem_ext.stores.postgres.store_async",
    "langmem_ext.stores.sqlite",
    "langmem_ext.stores.sqlite.schema",
    "langmem_ext.stores.sqlite.store",  # SQLiteStore is documented under langmem_ext
}


def _ours(module, name: str, test_name: str) -> bool:
    if test_name == name or test_name.startswith(f"{name}.__test__."):
        return True
    # Objects defined here, or re-homed here with __module__ (MemoryTool lives in
    # agents.tooling but says langmem_ext.agents); not names imported from
    # another module, whose examples run there with that module's globals.
    top = getattr(module, test_name[len(name) + 1 :].split(".")[0], None)
    return getattr(top, "__module__", None) == name


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
    private = any(part.startswith("_") for part in name.split(".")[1:])
    if not private and name not in NO_EXAMPLE_NEEDED:
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


def test_the_readme_lists_every_page():
    # A newcomer finds the pages from the README's list; a new page must join it.
    listed = set(re.findall(r"^- \[docs/([\w-]+\.md)\]", (ROOT / "README.md").read_text(), re.M))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages - listed == set(), f"add to the README's Documentation list: {pages - listed}"
    assert listed - pages == set(), f"listed in the README but missing: {listed - pages}"


def test_install_commands_name_where_the_package_comes_from():
    # langmem-ext is installed from its repository or a checkout, not an index:
    # a bare `pip install "langmem-ext[ui]"` in the docs finds nothing.
    bad = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if "pip install" not in line or not re.search(r"langmem-ext(\[|\b)", line):
                continue
            if "@ git+" in line or "-e " in line or re.search(r"not installed|needs the", line):
                continue  # the repository, a checkout, or a quoted error message
            bad.append(f"{page.name}:{n}: {line.strip()}")
    assert not bad, bad


def test_cli_demo_prints_hits_with_scores(tmp_path):
    from langmem_ext.cli.app import app

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
    from langmem_ext.cli.app import app

    for cmd in app.registered_commands:
        assert cmd.callback.__doc__ and "Example:" in cmd.callback.__doc__


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=str)
def test_notebooks_are_saved_with_their_current_outputs(notebook):
    # Run by the notebook kernel, as a reader would; the saved outputs (what GitHub
    # shows) must be what running it prints now (ids and times aside).
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebooks", ROOT / "scripts" / "notebooks.py")
    nbtool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbtool)
    import nbformat

    saved = nbformat.read(notebook, as_version=4)
    assert any(c.get("outputs") for c in saved.cells if c.cell_type == "code"), (
        f"{notebook.name} is saved without outputs; run scripts/notebooks.py"
    )
    now, then = nbtool.outputs(nbtool.execute(notebook)), nbtool.outputs(saved)
    # Scores differ in the last digit between CPUs (SIMD paths of the embedder).
    assert [_FLOAT.sub("#", t) for t in now] == [_FLOAT.sub("#", t) for t in then], (
        f"{notebook.name}'s saved outputs are stale; run scripts/notebooks.py"
    )
    for a, b in zip(now, then, strict=True):
        assert [float(x) for x in _FLOAT.findall(a)] == pytest.approx(
            [float(x) for x in _FLOAT.findall(b)], abs=0.0015
        ), f"{notebook.name}'s saved scores are stale; run scripts/notebooks.py"


_FLOAT = re.compile(r"-?\d+\.\d+")


def test_the_operations_page_is_made_from_the_catalogue():
    # docs/operations.md is generated from the operation declarations; a change to
    # an operation without running scripts/operations_page.py fails here.
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "operations_page.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
