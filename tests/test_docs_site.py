"""The documentation site builds with warnings as errors (broken links, bad
API references fail), and its home page is the README."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_home_page_is_the_readme():
    readme = (ROOT / "README.md").read_text().replace("](docs/", "](")
    assert (ROOT / "docs" / "index.md").read_text() == readme, (
        "docs/index.md is stale: copy README.md to it with links 'docs/x.md' -> 'x.md'"
    )
