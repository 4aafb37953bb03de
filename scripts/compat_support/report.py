"""The table ``scripts/compat`` prints and the exit status it returns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from langmem_ext_dev.compat.deviations import listed, matches


@dataclass
class Row:
    part: str  # docs | tests | langgraph
    source: str
    original: str  # pass | fail | timeout | not run | skipped | missing
    ours: str
    original_error: str = ""
    error: str = ""

    def regression(self) -> bool:
        return self.original == "pass" and self.ours != "pass"


def _why(row: Row, deviations: Mapping[str, str]) -> str:
    if (why := listed(row.source, deviations)) is not None:
        return "deliberate: " + why
    if row.regression():
        return "NOT LISTED: " + row.error
    if row.original != "pass" and row.ours != "pass":
        return "both: " + (row.error or row.original_error)
    if row.original != "pass":
        return "original: " + row.original_error
    return ""


def print_table(rows: list[Row], deviations: Mapping[str, str]) -> None:
    """Every row that is not a pass on both sides, then the counts per part."""
    print("| source | original | langmem_ext | why |")
    print("|---|---|---|---|")
    for row in rows:
        if row.original == row.ours == "pass":
            continue
        print(f"| {row.source} | {row.original} | {row.ours} | {_why(row, deviations)} |")
    print()
    label = {
        "docs": "LangMem docs blocks",
        "tests": "LangMem tests",
        "langgraph": "LangGraph suites",
    }
    print("| source | original passes | langmem_ext passes | of |")
    print("|---|---|---|---|")
    for part in ("docs", "tests", "langgraph"):
        mine = [r for r in rows if r.part == part]
        if not mine:
            continue
        if part == "langgraph":
            # Per suite: each is a different store of ours against LangGraph's.
            for suite in dict.fromkeys(r.source.split("::", 1)[0] for r in mine):
                _counts(
                    f"LangGraph suite {suite}",
                    [r for r in mine if r.source.startswith(suite + "::")],
                )
        _counts(label[part], mine)
    if any(r.part == "langgraph" for r in rows):
        print(
            "\n(original for the LangGraph suites: LangGraph's own stores, SqliteStore "
            "with the sqlite-vec extension loaded, flaky-marked tests retried on both sides)"
        )
    for pattern in deviations:
        hits = [r for r in rows if matches(r.source, pattern)]
        if hits and all(r.ours == "pass" for r in hits):
            print(f"note: {pattern} is listed as a deviation but passes now; drop it")


def _counts(label: str, rows: list[Row]) -> None:
    orig = Counter(r.original for r in rows)["pass"]
    ours = Counter(r.ours for r in rows)["pass"]
    print(f"| {label} | {orig} | {ours} | {len(rows)} |")


def verdict(rows: list[Row], deviations: Mapping[str, str]) -> int:
    """1 when a row passes on the original and fails on ours, unlisted."""
    bad = [r for r in rows if r.regression() and listed(r.source, deviations) is None]
    for r in bad:
        print(f"REGRESSION {r.source}: {r.error}")
    return 1 if bad else 0
