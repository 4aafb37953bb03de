"""The reliability suite: attacks on the public surfaces, each counted.

Every test records how many cases it tried against an attack and how many
violated the promise (a leak, a crash, a lost or changed memory); the table is
printed at the end of the run. CI runs a short version; ``LMX_RELIABILITY=long``
runs each attack about twenty times longer (``pytest tests/reliability``), and
``LMX_RELIABILITY_REPORT=path.json`` writes the table as JSON too.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, settings

LONG = os.environ.get("LMX_RELIABILITY", "").lower() == "long"
SCALE = 20 if LONG else 1

settings.register_profile(
    "reliability",
    max_examples=400 if LONG else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=not LONG,  # CI runs the same cases every time; long runs explore
)

_TALLY: dict[str, list[int]] = defaultdict(lambda: [0, 0])


class Tally:
    """Counts the cases of one attack; ``violation`` records one that broke a
    promise (the test asserts there were none at its end)."""

    def __init__(self, attack: str) -> None:
        self.attack = attack
        _TALLY[attack]  # listed even when a test fails before its first case

    def case(self, n: int = 1) -> None:
        _TALLY[self.attack][0] += n

    def violation(self, what: str) -> None:
        _TALLY[self.attack][1] += 1
        self.seen.append(what)
        if os.environ.get("LMX_RELIABILITY_LOG"):
            with open(os.environ["LMX_RELIABILITY_LOG"], "a") as f:
                f.write(f"{self.attack}: {what}\n")

    @property
    def seen(self) -> list[str]:
        return self.__dict__.setdefault("_seen", [])

    def check(self) -> None:
        assert not self.seen, f"{self.attack}: {len(self.seen)} violations, first: {self.seen[:3]}"


@pytest.fixture
def tally():
    made: list[Tally] = []

    def make(attack: str) -> Tally:
        made.append(Tally(attack))
        return made[-1]

    yield make
    for t in made:
        t.check()


def pytest_terminal_summary(terminalreporter) -> None:
    if not _TALLY:
        return
    mode = "long" if LONG else "CI"
    terminalreporter.write_sep("-", f"reliability ({mode} mode)")
    width = max(len(a) for a in _TALLY)
    terminalreporter.write_line(f"{'attack'.ljust(width)} | cases tried | violations")
    for attack, (cases, bad) in _TALLY.items():
        terminalreporter.write_line(f"{attack.ljust(width)} | {cases:11d} | {bad:10d}")
    path = os.environ.get("LMX_RELIABILITY_REPORT")
    if path:
        rows = [{"attack": a, "cases": c, "violations": v} for a, (c, v) in _TALLY.items()]
        with open(path, "w") as f:
            json.dump({"mode": mode, "rows": rows}, f, indent=1)
