"""The documentation site as a reader sees it: every page built with MkDocs has
the headings and code blocks its Markdown source has, and no raw fence text.

A page can build without a warning and still render wrong: a fence the
Markdown extensions do not recognise turns code into prose and swallows the
rest of the page into one block. This compares each built page with its
source (reference pages made by mkdocstrings aside: they have no source text).
"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^ {0,3}(```+|~~~+)(.*)$")


def source_outline(text: str) -> tuple[list[str], int]:
    """The headings (text) and the number of fenced code blocks of Markdown."""
    headings, blocks, fence = [], 0, None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence is None and m:
            fence, blocks = m.group(1), blocks + 1
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip()[len(fence) :].strip():
                fence = None
            continue
        h = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if h:
            headings.append(_plain(h.group(2)))
    return headings, blocks


def _plain(markdown: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"[`*]", "", text)
    return " ".join(text.split())


class _Rendered(HTMLParser):
    """Headings, code blocks and visible text of a page's article."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.blocks = 0
        self.prose: list[str] = []
        self._depth = 0  # inside <article>
        self._heading: list[str] | None = None
        self._code = 0

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self._depth += 1
        if not self._depth:
            return
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = []
        elif tag == "pre":
            self.blocks += 1
            self._code += 1
        elif tag == "code":
            self._code += 1
        elif tag == "a" and self._heading is not None and ("class", "headerlink") in attrs:
            self._heading.append("\x00")  # the permalink sign: not heading text

    def handle_endtag(self, tag):
        if tag == "article":
            self._depth -= 1
        if not self._depth:
            return
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            text = "".join(self._heading).split("\x00")[0]
            self.headings.append(" ".join(text.split()))
            self._heading = None
        elif tag in ("pre", "code"):
            self._code -= 1

    def handle_data(self, data):
        if not self._depth:
            return
        if self._heading is not None:
            self._heading.append(data)
        elif not self._code:
            self.prose.append(data)


PAGES = sorted(
    p
    for p in DOCS.glob("*.md")
    if ":::" not in p.read_text()  # mkdocstrings pages have no source text to compare
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.prefix) / "bin" / "mkdocs"
    done = subprocess.run(
        [str(mkdocs), "build", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def rendered(site: Path, page: Path) -> _Rendered:
    name = page.stem
    html = site / ("index.html" if name == "index" else f"{name}/index.html")
    parsed = _Rendered()
    parsed.feed(html.read_text())
    return parsed


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_page_renders_its_headings_and_code_blocks(site, page):
    source = (ROOT / "README.md").read_text() if page.name == "index.md" else page.read_text()
    headings, blocks = source_outline(source)
    shown = rendered(site, page)
    assert shown.headings == headings, f"{page.name}: headings differ"
    assert shown.blocks == blocks, f"{page.name}: {blocks} code blocks, {shown.blocks} rendered"
    raw = [t for t in shown.prose if "```" in t]
    assert not raw, f"{page.name}: fence text shown as prose: {raw[:2]}"
