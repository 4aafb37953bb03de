"""Corrections of LoCoMo's answer key, read from a file the user gives (never
downloaded).

The format is the one a public audit of the key publishes (the LoCoMo audit's
``errors_conv_N.json`` files, or all of them in one list): a JSON list of
entries, each with

``question_id``
    ``"locomo_{sample}_qa{n}"``: the sample's position in ``locomo10.json``
    and the question's position in its ``qa`` list, both from 0;
``question``, ``golden_answer``
    the question and the answer key's answer, as the data file has them
    (checked: an entry that names another question is not applied);
``error_type``
    ``HALLUCINATION``, ``TEMPORAL_ERROR``, ``ATTRIBUTION_ERROR``,
    ``INCOMPLETE``, ``AMBIGUOUS`` (the answer is wrong: corrected) or
    ``WRONG_CITATION`` (only the evidence ids are wrong: the answer stays);
``correct_answer``
    the corrected answer.

A dict whose values are such lists (one per conversation), or
``{"errors": [...]}``, is read too. Anything else fails before any work, with
what was expected.

Examples:
    >>> entry = {"question_id": "locomo_0_qa5", "question": "When did Ana run?",
    ...          "golden_answer": "Sunday", "error_type": "TEMPORAL_ERROR",
    ...          "correct_answer": "Saturday"}
    >>> errata = parse_errata([entry])
    >>> errata.corrections[(0, 5)].answer
    'Saturday'
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Correction", "Errata", "ErrataError", "load_errata", "parse_errata"]

#: Error types whose entries leave the answer as it is.
CITATION_ONLY = frozenset({"WRONG_CITATION"})
_ID = re.compile(r"^locomo_(\d+)_qa(\d+)$")


class ErrataError(ValueError):
    """The errata file is not in the expected format (the message says what is)."""


@dataclass(frozen=True)
class Correction:
    question: str
    golden: str
    answer: str
    error_type: str


@dataclass
class Errata:
    """Corrections by ``(sample position, qa index)``; ``skipped`` counts the
    entries that change no answer, by error type."""

    corrections: dict[tuple[int, int], Correction] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    source: str = ""

    def correct(self, position: int, index: int, question: str, gold: str) -> Correction | None:
        """The correction of this question, when the entry names it (same
        question text and answer-key answer, spaces and case aside)."""
        c = self.corrections.get((position, index))
        if c is None:
            return None
        if _same(c.question, question) and _same(c.golden, gold):
            return c
        return None


def _same(a: str, b: str) -> bool:
    return " ".join(str(a).split()).casefold() == " ".join(str(b).split()).casefold()


def _entries(raw: Any) -> list[Any]:
    if isinstance(raw, list):
        return raw
    if isinstance(raw, dict):
        if isinstance(raw.get("errors"), list):
            return raw["errors"]
        if raw and all(isinstance(v, list) for v in raw.values()):
            return [e for v in raw.values() for e in v]
    raise ErrataError(
        "an errata file is a JSON list of corrections (the LoCoMo audit's format: "
        '[{"question_id": "locomo_0_qa5", "question": ..., "golden_answer": ..., '
        '"error_type": ..., "correct_answer": ...}]), or a dict of such lists; '
        f"got {type(raw).__name__}"
    )


def parse_errata(raw: Any, source: str = "") -> Errata:
    """Errata from parsed JSON.

    Raises:
        ErrataError: not a list of entries, or an entry without the fields above.
    """
    errata = Errata(source=source)
    for n, e in enumerate(_entries(raw), 1):
        where = f"errata entry {n}" + (f" of {source}" if source else "")
        if not isinstance(e, dict):
            raise ErrataError(f"{where} is a {type(e).__name__}, expected an object")
        missing = [
            k
            for k in ("question_id", "question", "golden_answer", "error_type", "correct_answer")
            if k not in e
        ]
        if missing:
            raise ErrataError(f"{where} has no {', '.join(missing)} (fields of the audit's format)")
        match = _ID.match(str(e["question_id"]))
        if not match:
            raise ErrataError(
                f"{where}: question_id {e['question_id']!r} is not locomo_<sample>_qa<n>"
            )
        kind = str(e["error_type"]).upper()
        if kind in CITATION_ONLY or _same(e["correct_answer"], e["golden_answer"]):
            errata.skipped[kind] += 1
            continue
        key = (int(match.group(1)), int(match.group(2)))
        errata.corrections[key] = Correction(
            str(e["question"]), str(e["golden_answer"]), str(e["correct_answer"]), kind
        )
    return errata


def load_errata(path: Path) -> Errata:
    """Errata from a file (see the module).

    Raises:
        ErrataError: the file cannot be read, is not JSON, or has another shape.
    """
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as e:
        raise ErrataError(f"cannot read the errata file {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ErrataError(f"the errata file {path} is not JSON: {e}") from None
    return parse_errata(raw, str(path))
