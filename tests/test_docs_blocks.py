"""Every Python block in README.md and docs/ runs as written (a reader copies
them).

Blocks run in a fresh directory with a local OpenAI-compatible server standing
in for hosted models (``OPENAI_BASE_URL``), so ``"openai:gpt-4o-mini"`` works
offline; blocks marked ``<!-- needs-server -->`` (an HTML comment on the line
before the fence: the site does not show it, and the fence stays a plain
```` ```python ```` the Markdown renders) get a real PostgreSQL in place of their
``postgresql://`` URL. Only blocks that need a service CI cannot run are shown
but not run, each listed below with the reason and the test that covers it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from langmem_ext import ReflectionExecutor
from tests.postgres_server import pg_server  # noqa: F401 - fixture
from tests.reflection.openai_server import LocalChatServer

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^(?:<!-- ([\w-]+) -->\n)?```python\n(.*?)^```", re.S | re.M)
#: A fence with words after the language: the site renders it as prose.
BAD_FENCE = re.compile(r"^ {0,3}```[\w-]+[ \t]+\S", re.M)

#: (page, text in the block) of blocks shown but not run, and why.
NOT_RUN = {
    ("deploy.md", "client = get_sync_client("): "run by test_deploy.py against langgraph dev",
    ("metrics.md", "PrometheusMetricReader()"): "needs a Prometheus server",
    ("metrics.md", "OTLPMetricExporter("): "needs an OpenTelemetry collector",
}


def _blocks() -> list[tuple[str, int, str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.name == "index.md":  # the README again (docs/hooks.py renders it there)
            continue
        text = page.read_text()
        for m in BLOCK.finditer(text):
            line = text[: m.start()].count("\n") + 1
            found.append((page.name, line, (m.group(1) or "").strip(), m.group(2)))
    return found


def test_no_fence_has_words_after_its_language():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = [f"{p.name}: {m.group(0)}" for p in pages for m in BAD_FENCE.finditer(p.read_text())]
    assert not bad, f"mark blocks with <!-- marker --> on the line before instead: {bad}"


BLOCKS = _blocks()


def _not_run(page: str, code: str) -> str | None:
    return next((why for (p, marker), why in NOT_RUN.items() if p == page and marker in code), None)


@pytest.fixture(scope="module")
def chat_server():
    # Every request is answered; a named tool choice gets {"facts": []} as its
    # arguments (nothing to extract), a plain chat turn the same text.
    with LocalChatServer([lambda body: {"facts": []}] * 10_000) as server:
        yield server


@pytest.mark.parametrize(
    ("page", "line", "info", "code"), BLOCKS, ids=[f"{p}:{n}" for p, n, _, _ in BLOCKS]
)
def test_docs_python_block_runs(
    page, line, info, code, tmp_path, monkeypatch, chat_server, request
):
    reason = _not_run(page, code)
    if reason is not None:
        compile(code, f"{page}:{line}", "exec")  # still valid Python
        assert info, f"{page}:{line} is not run ({reason}): put <!-- no-run --> before it"
        return
    assert info in ("", "needs-server"), f"{page}:{line}: unknown block marker {info!r}"
    if info == "needs-server":
        server = request.getfixturevalue("pg_server")
        url = server.uri(conninfo_to_dict(server.fresh_database())["dbname"])
        code, n = re.subn(r"\"postgres(?:ql)?://[^\"]*\"", repr(url), code)
        assert n, f"{page}:{line} needs a server but names no postgresql:// URL"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    scope: dict = {"__name__": "__main__"}
    exec(compile(code, f"{page}:{line}", "exec"), scope)
    # A block's scheduled reflections run now, against the local server: left
    # pending, they ran at interpreter exit, after the key above was unset.
    for value in scope.values():
        if isinstance(value, ReflectionExecutor):
            assert value.shutdown(timeout=30), f"{page}:{line}: reflection still pending"


def test_blocks_not_run_still_exist():
    # A renamed block must not leave a stale exception behind.
    for page, marker in NOT_RUN:
        assert any(p == page and marker in c for p, _, _, c in BLOCKS), (page, marker)


#: What a reader cannot run without a key or a server of their own.
_NEEDS = re.compile(
    r"\"openai:|\"anthropic:|ChatOpenAI\(|OpenAIEmbeddings\(|init_chat_model\(|postgres(?:ql)?://"
)


def test_a_block_that_needs_a_key_or_a_server_says_so():
    # The <!-- marker --> is for the tests (the site and GitHub hide it): a
    # reader sees the line before the block, which must start with "Needs ".
    unmarked = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if page.name == "index.md":
            continue
        text = page.read_text()
        for m in BLOCK.finditer(text):
            code = "\n".join(line.split("#", 1)[0] for line in m.group(2).splitlines())
            if not (m.group(1) or _NEEDS.search(code)):
                continue
            before = [line for line in text[: m.start()].splitlines() if line.strip()]
            if not before or not before[-1].startswith("Needs "):
                unmarked.append(f"{page.name}:{text[: m.start()].count(chr(10)) + 1}")
    assert not unmarked, f"say what these blocks need on the line before them: {unmarked}"
