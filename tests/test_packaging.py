"""What ``pip install langmem-ext`` and ``import langmem_ext`` give a user:
a fast import that loads nothing until a name is used, optional backends that
say which extra to install, one import path for every public name."""

from __future__ import annotations

import subprocess
import sys

import langmem_ext


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_loads_no_framework_until_a_name_is_used():
    out = _run(
        "import sys, langmem_ext\n"
        "heavy = [m for m in ('langchain', 'langchain_core', 'langgraph', 'psycopg', 'numpy')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
        "from langmem_ext import SQLiteStore\n"
        "print('psycopg' in sys.modules, 'langchain.agents' in sys.modules)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "False False"]


def test_postgres_without_its_extra_says_what_to_install():
    out = _run("import sys; sys.modules['psycopg'] = None\nfrom langmem_ext import PostgresStore")
    assert "PostgresStore needs the 'postgres' extra: pip install 'langmem-ext[postgres]'" in (
        out.stderr
    )


def test_every_public_name_is_importable_from_the_package():
    for name in langmem_ext.__all__:
        assert getattr(langmem_ext, name) is not None
    assert set(langmem_ext.__all__) <= set(dir(langmem_ext))
    try:
        langmem_ext.NotAName  # noqa: B018
    except AttributeError as e:
        assert "NotAName" in str(e)
    else:  # pragma: no cover
        raise AssertionError("unknown names must raise AttributeError")
