"""Find the runnable Python examples of a LangMem checkout.

A *unit* is what LangMem's own docs test (``tests/test_docstring_examples.py``)
runs in one namespace: every Python block of one docs page (README and
``docs/docs/**.md``), or every block of one function's docstring (after the
file's hidden setup block). Fences are read the way that test reads them:
a fence whose language mentions ``skip`` is not run, nor one that names another
language.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

_SETUP_START = re.compile(r"^#\s*```python\s+setup")
_SETUP_END = re.compile(r"^#\s*```")
_NOT_PYTHON = ("bash", "text", "js", "javascript", "markdown")


@dataclass
class Unit:
    """One page or docstring: its blocks run in order in one namespace."""

    source: str  # "docs/guides/memory_tools.md" or "langmem/knowledge/tools.py::fn"
    blocks: list[str]
    setup: list[str] = field(default_factory=list)
    module: str | None = None  # the module a docstring belongs to
    qualname: str | None = None

    def to_json(self) -> dict:
        return self.__dict__.copy()


def code_blocks(text: str) -> list[str]:
    """The runnable Python fences of a page or docstring, dedented."""
    blocks: list[str] = []
    current: list[str] = []
    state: str | None = None  # None, "python" or "other"
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            if state is None:
                lang = stripped[3:].strip()
                if "skip" in lang:
                    state = "other"
                elif lang.startswith(("python", "py")) or lang == "":
                    state, current = "python", []
                else:
                    state = "other"
            elif state == "other":
                state = None
            else:
                state = None
                if current:
                    blocks.append("\n".join(current))
                current = []
        elif state == "python":
            current.append(line)
    out = [textwrap.dedent(b).strip() for b in blocks]
    return [b for b in out if b and not b.startswith(_NOT_PYTHON)]


def _file_setup(source: str) -> list[str]:
    lines: list[str] = []
    inside = False
    for line in source.splitlines():
        if not inside and _SETUP_START.match(line):
            inside = True
            continue
        if inside and _SETUP_END.match(line):
            break
        if inside:
            s = line.lstrip()
            if s.startswith("#"):
                s = s[1:]
                s = s[1:] if s.startswith(" ") else s
            lines.append(s)
    code = textwrap.dedent("\n".join(lines)).strip()
    return [code] if code else []


def _docstrings(path: Path, src_root: Path) -> list[Unit]:
    source = path.read_text(encoding="utf-8")
    module = ".".join(path.relative_to(src_root).with_suffix("").parts)
    setup = _file_setup(source)
    units: list[Unit] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                blocks = code_blocks(ast.get_docstring(child) or "")
                if isinstance(child, ast.FunctionDef) and blocks:
                    name = f"{prefix}{child.name}"
                    rel = path.relative_to(src_root).as_posix()
                    units.append(Unit(f"{rel}::{name}", blocks, setup, module, name))
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return units


def find_units(checkout: Path) -> list[Unit]:
    """Every unit of a LangMem checkout, docs pages first."""
    units: list[Unit] = []
    pages = [checkout / "README.md", *sorted((checkout / "docs" / "docs").rglob("*.md"))]
    for page in pages:
        blocks = code_blocks(page.read_text(encoding="utf-8"))
        if blocks:
            rel = page.relative_to(checkout).as_posix().replace("docs/docs/", "docs/")
            units.append(Unit(rel, blocks))
    src = checkout / "src"
    for path in sorted(src.rglob("*.py")):
        units.extend(_docstrings(path, src))
    return units
