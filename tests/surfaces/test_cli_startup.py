"""The command line starts fast and says what is missing in one line.

``langmem-ext --help`` imported the whole stack (4.5 s); the README's ``ui``
and ``mcp`` commands ended in a traceback (``No module named 'uvicorn'``) in
the venv the demo built. Each check runs the real entry point in a fresh
process, with the missing extra's modules hidden as if not installed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from langmem_ext.cli.app import LAZY_GROUPS

_RUN = """
import sys
for name in {hidden!r}:
    sys.modules[name] = None  # as if not installed: imports and find_spec fail
sys.argv = ["langmem-ext", *{args!r}]
from langmem_ext.cli import main
main()
"""


def run_cli(*args: str, hidden: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    code = _RUN.format(hidden=list(hidden), args=list(args))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_help_imports_no_library_module():
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from langmem_ext.cli.app import app\n"
        "out = CliRunner().invoke(app, ['--help'])\n"
        "assert out.exit_code == 0 and 'memories' in out.output and 'store' in out.output\n"
        "heavy = ('langmem_ext.engine', 'langmem_ext.stores', 'langmem_ext.agents', "
        "'langchain', 'langgraph', 'numpy')\n"
        "print(sorted({m.split('.')[0] + '.' + m.split('.')[1] if m.startswith('langmem_ext.') "
        "else m.split('.')[0] for m in sys.modules if m.startswith(heavy)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_lazy_groups_show_their_own_help():
    # The help line --help shows without importing a group is the group's own.
    from langmem_ext.cli.memories import app as memories
    from langmem_ext.cli.store import app as store

    assert LAZY_GROUPS["memories"][1] == memories.info.help
    assert LAZY_GROUPS["store"][1] == store.info.help


@pytest.mark.parametrize(
    "args, extra, hidden",
    [
        (("ui", "--db", "memories.db", "--allow-anonymous", "--user-id", "ada"), "ui",
         ("uvicorn", "starlette")),
        (("mcp", "--db", "memories.db", "--user-id", "ada"), "mcp", ("mcp",)),
        (("mcp", "--db", "memories.db", "--user-id", "ada"), "mcp", ("uvicorn",)),
    ],
)  # fmt: skip
def test_a_command_without_its_extra_names_it_in_one_line(args, extra, hidden):
    out = run_cli(*args, hidden=hidden)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].endswith(f"pip install 'langmem-ext[{extra}]'"), lines[0]
    assert hidden[0] in lines[0]


def test_the_command_line_without_its_extra_names_it_in_one_line():
    out = run_cli("--help", hidden=("typer",))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "langmem-ext: the command line needs the 'cli' extra (typer is not installed): "
        "pip install 'langmem-ext[cli]'"
    )


def test_a_development_command_without_the_tools_says_so_in_one_line():
    out = run_cli("bench", "store", "--sizes", "10", hidden=("langmem_ext_dev",))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "langmem-ext: this command runs the development tools, which are not part of the "
        "library: from a checkout of langmem-ext, pip install -e ./dev"
    ]
