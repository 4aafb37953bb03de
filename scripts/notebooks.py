"""Run the notebooks and save them with their outputs (what a reader on GitHub
sees), or check that the saved outputs are what running them prints now.

    .venv/bin/python scripts/notebooks.py           # run and save every notebook
    .venv/bin/python scripts/notebooks.py --check   # fail if a saved output is stale

Outputs are compared after replacing what changes from run to run (ids,
timestamps, temporary paths), so a stale output means the notebook's code or
the library's behaviour changed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

_VOLATILE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"fact_[0-9a-f]{8}"), "fact_<id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?"), "<time>"),
    (re.compile(r"/tmp/[^\s'\"]+"), "<tmp>"),
    (re.compile(r"0x[0-9a-f]+"), "0x<addr>"),
]


def normalise(text: str) -> str:
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def outputs(nb: nbformat.NotebookNode) -> list[str]:
    """The text each code cell showed, normalised."""
    shown = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            elif out.output_type in ("execute_result", "display_data"):
                parts.append(str(out.get("data", {}).get("text/plain", "")))
            elif out.output_type == "error":
                parts.append(f"ERROR {out.ename}: {out.evalue}")
        shown.append(normalise("".join(parts)))
    return shown


def execute(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of saving")
    parser.add_argument("notebooks", nargs="*", type=Path, default=NOTEBOOKS)
    args = parser.parse_args()
    stale = 0
    for path in args.notebooks:
        saved = nbformat.read(path, as_version=4)
        fresh = execute(path)
        if args.check:
            if outputs(saved) != outputs(fresh):
                print(f"{path.name}: saved outputs are stale; run scripts/notebooks.py")
                stale += 1
        else:
            nbformat.write(fresh, path)
            print(f"{path.name}: saved with outputs")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
