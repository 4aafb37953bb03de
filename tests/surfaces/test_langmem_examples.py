"""LangMem's documented examples, as LangMem wrote them, on langmem_ext.

``langmem_examples.json`` holds every runnable block of LangMem's README, docs
pages and docstrings, verbatim (written by ``scripts/compat --export`` from a
LangMem checkout), with how each block fared on LangMem itself. Each page runs
here as LangMem's own docs test runs it (its blocks in order, in one namespace),
with only the ``langmem`` imports renamed ``langmem_ext`` and the hosted models
the examples name replaced by the same offline stand-ins ``scripts/compat``
gives both packages.

A block that passes on LangMem must pass here, unless it is one of the
deliberate deviations (then it must fail: a deviation that starts passing is
dropped from the list). Blocks that fail on LangMem too (a missing ``crewai``,
a raw provider SDK) are reported, not asserted. Checks of what the examples
*do* (what is stored, what the agent answers) are in
``test_langmem_examples_outcomes.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langmem_ext_dev.compat import standin
from langmem_ext_dev.compat.blocks import Unit
from langmem_ext_dev.compat.deviations import DEVIATIONS, listed
from langmem_ext_dev.compat.runner import run_blocks

DATA = json.loads((Path(__file__).with_name("langmem_examples.json")).read_text())
UNITS = [
    (Unit(**{k: v for k, v in u.items() if k != "on_langmem"}), u["on_langmem"])
    for u in DATA["units"]
]


@pytest.fixture
def stand_ins(monkeypatch):
    standin.install(monkeypatch.setattr)


@pytest.mark.parametrize(("unit", "on_langmem"), UNITS, ids=[u.source for u, _ in UNITS])
def test_example_runs_as_on_langmem(unit: Unit, on_langmem: list, stand_ins, capsys) -> None:
    outcomes = run_blocks(unit, "langmem_ext")
    wrong = []
    for i, (ours, (theirs, _)) in enumerate(zip(outcomes, on_langmem, strict=True)):
        source = f"{unit.source}#{i + 1}"
        if listed(source, DEVIATIONS) is not None:
            if ours["status"] == "pass":
                wrong.append(f"{source} passes now: drop it from the deviations")
        elif theirs == "pass" and ours["status"] != "pass":
            wrong.append(f"{source}: {ours.get('error')}")
    assert not wrong, "\n".join(wrong)


def test_every_deviation_is_a_block_of_the_examples_or_a_suite_test():
    sources = {f"{u.source}#{i + 1}" for u, _ in UNITS for i in range(len(u.blocks))}
    for source in DEVIATIONS:
        assert source in sources or "::test_" in source, source


def test_every_deviation_is_explained_to_users():
    docs = Path(__file__).parents[2] / "docs"
    text = (docs / "langmem.md").read_text() + (docs / "langgraph-migration.md").read_text()
    for source in DEVIATIONS:
        # A block by its page or docstring; a LangGraph test by its name.
        test = source.rsplit("::", 1)[-1].split("[")[0].rstrip("*")
        named = source.split("#")[0] if "#" in source else test
        assert named in text, (
            f"{source} is not explained in docs/langmem.md or langgraph-migration.md"
        )
