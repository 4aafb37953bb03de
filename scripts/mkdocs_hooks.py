"""MkDocs hooks of the documentation site (configured in mkdocs.yml).

The home page is the README: ``docs/index.md`` is only a placeholder, and its
text is read from README.md at build time, with links into ``docs/`` made
relative to the site, so the two can never drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def on_page_read_source(page: Any, config: Any) -> str | None:
    """The README's text for the home page; every other page as it is."""
    if page.file.src_uri != "index.md":
        return None
    readme = Path(config["config_file_path"]).parent / "README.md"
    return readme.read_text(encoding="utf-8").replace("](docs/", "](")
