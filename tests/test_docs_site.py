"""The documentation site builds with warnings as errors (broken links, bad
API references fail), and its home page is the README."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_home_page_is_the_readme_not_a_copy():
    # scripts/mkdocs_hooks.py renders README.md as the home page (see
    # test_docs_rendered.py for what the built page shows); no copy to drift.
    stub = (ROOT / "docs" / "index.md").read_text()
    assert stub.startswith("<!--") and len(stub.splitlines()) == 1


def test_site_builds_strict(tmp_path):
    mkdocs = Path(sys.prefix) / "bin" / "mkdocs"
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "engine" / "index.html").exists()
