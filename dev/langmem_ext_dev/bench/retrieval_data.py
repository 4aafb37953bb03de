"""Retrieval sets: conversations of turns and questions with evidence turns.

The shape every set is read into (``langmem-ext bench retrieval --data FILE``)::

    {
      "name": "my-set",                      # optional, default: the file's stem
      "language": "en",                      # optional, informational
      "scope": "conversation",               # optional: "set" = one store per split
      "conversations": [
        {
          "id": "c1",
          "split": "dev",                    # optional: "dev" or "held-out"
          "language": "de",                  # optional, informational
          "turns": [
            {"id": "c1-t1", "speaker": "user", "text": "...",
             "timestamp": "2024-05-01T09:30:00", "session": 1}   # session optional
          ],
          "questions": [
            {"question": "...", "evidence": ["c1-t1"], "category": "single-hop",
             "answer": "..."}                # answer optional
          ]
        }
      ]
    }

A file of the wrong shape is refused with the path of the first wrong field
(``conversations[0].turns[3].timestamp: Input should be a valid datetime``).
Evidence ids that name no turn of the question's conversation are counted
and reported; a question left without evidence is counted and not scored.

LoCoMo's own file (a list of samples with ``conversation`` and ``qa``) is read
as one such source by :func:`from_locomo`.

A conversation without an explicit ``split`` goes to the held-out split when
a hash of its set and id falls in the lowest 30 % (:func:`split_of`): stable
when conversations are added, and the same on every machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "HELD_OUT_SHARE",
    "SPLITS",
    "DataShapeError",
    "Doc",
    "LoadedSet",
    "Question",
    "RetrievalSet",
    "SetConversation",
    "from_locomo",
    "load_set",
    "split_of",
]

SPLITS = ("dev", "held-out")
HELD_OUT_SHARE = 0.3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class Turn(_Strict):
    id: str = Field(min_length=1)
    speaker: str
    text: str
    timestamp: datetime
    session: int | str | None = None


class SetQuestion(_Strict):
    question: str = Field(min_length=1)
    evidence: list[str]
    category: str = Field(min_length=1)
    answer: str = ""


class SetConversation(_Strict):
    id: str = Field(min_length=1)
    split: Literal["dev", "held-out"] | None = None
    language: str = ""
    turns: list[Turn] = Field(min_length=1)
    questions: list[SetQuestion]


class RetrievalSet(_Strict):
    name: str = ""
    language: str = ""
    description: str = ""
    source: str = ""
    license: str = ""
    # "set": every conversation of a split shares one store (one user's memory
    # across chats; turn ids unique in the set); "conversation": one store each.
    scope: Literal["conversation", "set"] = "conversation"
    conversations: list[SetConversation] = Field(min_length=1)


class DataShapeError(ValueError):
    """A data file that is not a retrieval set; the message names the first
    wrong field by its path."""


@dataclass(frozen=True)
class Doc:
    key: str
    text: str
    dia_ids: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    context: str = ""  # neighbouring turns, indexed for keywords only


@dataclass(frozen=True)
class Question:
    text: str
    category: str
    evidence: frozenset[str]
    answer: str = ""


@dataclass
class Conv:
    id: str
    split: str
    turns: list[Doc]
    questions: list[Question]


@dataclass
class LoadedSet:
    name: str
    language: str
    conversations: list[Conv]
    counts: Counter[str]  # evidence_unknown, questions_without_evidence, ...


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validate(raw: Any) -> RetrievalSet:
    """``raw`` (parsed JSON) as a :class:`RetrievalSet`.

    Raises:
        DataShapeError: naming the first wrong field and its path.

    Examples:
        >>> try:
        ...     validate({"conversations": [{"id": "c", "turns": [{"id": "t"}], "questions": []}]})
        ... except DataShapeError as e:
        ...     print(e)
        conversations[0].turns[0].speaker: Field required (and 2 more problems)
    """
    try:
        return RetrievalSet.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        n = e.error_count()
        more = f" (and {n - 1} more problem{'s' if n > 2 else ''})" if n > 1 else ""
        raise DataShapeError(f"{_path(tuple(first['loc']))}: {first['msg']}{more}") from None


def split_of(set_name: str, conv: SetConversation) -> str:
    """The conversation's split: its own ``split``, else by a hash of set and id.

    Examples:
        >>> c = SetConversation(id="a", turns=[{"id": "t", "speaker": "u", "text": "x",
        ...     "timestamp": "2024-01-01T00:00:00"}], questions=[])
        >>> split_of("s", c) in SPLITS
        True
        >>> split_of("s", c.model_copy(update={"split": "held-out"}))
        'held-out'
    """
    if conv.split:
        return conv.split
    h = hashlib.sha256(f"{set_name}\0{conv.id}".encode()).digest()
    return "held-out" if int.from_bytes(h[:4], "big") / 2**32 < HELD_OUT_SHARE else "dev"


def to_loaded(
    data: RetrievalSet, name: str, *, date_prefix: bool = True, context_turns: int = 2
) -> LoadedSet:
    """Documents and scored questions of ``data``; unknown evidence counted."""
    counts: Counter[str] = Counter()
    convs = []
    seen_conv: set[str] = set()
    for ci, c in enumerate(data.conversations):
        if c.id in seen_conv:
            raise DataShapeError(f"conversations[{ci}].id: {c.id!r} is used twice")
        seen_conv.add(c.id)
        turns: list[Doc] = []
        ids: set[str] = set()
        for ti, t in enumerate(c.turns):
            if t.id in ids:
                raise DataShapeError(
                    f"conversations[{ci}].turns[{ti}].id: {t.id!r} is used twice in "
                    f"conversation {c.id!r}"
                )
            ids.add(t.id)
            text = f"{t.speaker}: {t.text}" if t.speaker else t.text
            if date_prefix:
                text = f"[{t.timestamp:%d %B %Y, %H:%M}] {text}"
            meta = {"session": t.session, "speaker": t.speaker}
            turns.append(Doc(t.id, text, (t.id,), meta))
        if context_turns:
            turns = _with_context(turns, context_turns)
        questions = []
        for q in c.questions:
            known = [e for e in dict.fromkeys(q.evidence) if e in ids]
            counts["evidence_unknown"] += len(dict.fromkeys(q.evidence)) - len(known)
            if not known:
                counts["questions_without_evidence"] += 1
                continue
            questions.append(Question(q.question, q.category, frozenset(known), q.answer))
        convs.append(Conv(c.id, split_of(name, c), turns, questions))
    if data.scope == "set":
        convs = _pooled(convs)
    return LoadedSet(name, data.language, convs, counts)


def _pooled(convs: list[Conv]) -> list[Conv]:
    """One conversation per split holding every turn and question of it."""
    out = []
    for split in SPLITS:
        part = [c for c in convs if c.split == split]
        if not part:
            continue
        seen: set[str] = set()
        for c in part:
            for d in c.turns:
                if d.key in seen:
                    raise DataShapeError(
                        f"conversations[{convs.index(c)}].turns: id {d.key!r} is used in "
                        "another conversation too (scope 'set' needs ids unique in the set)"
                    )
                seen.add(d.key)
        turns = [d for c in part for d in c.turns]
        questions = [q for c in part for q in c.questions]
        out.append(Conv(f"{split} ({len(part)} conversations)", split, turns, questions))
    return out


def _with_context(turns: list[Doc], n: int) -> list[Doc]:
    out = []
    for i, d in enumerate(turns):
        near = [
            turns[j].text
            for j in range(max(0, i - n), min(len(turns), i + n + 1))
            if j != i and turns[j].meta["session"] == d.meta["session"]
        ]
        out.append(Doc(d.key, d.text, d.dia_ids, d.meta, "\n".join(near)))
    return out


_LOCOMO_DATE = "%I:%M %p on %d %B, %Y"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _locomo_time(value: str) -> str:
    try:
        return datetime.strptime(value.strip(), _LOCOMO_DATE).isoformat()
    except ValueError:
        return value  # left for validation to name


def from_locomo(raw: list[Any], counts: Counter[str] | None = None) -> dict[str, Any]:
    """LoCoMo's samples as a retrieval set (plain JSON, validated afterwards).

    Shared photos' captions are appended to their turn; malformed evidence ids
    are repaired (``"D:1:4"``), lists in one string split (``"D8:6; D9:17"``),
    and both counted in ``counts``; category 5 (no answer in the conversation)
    is left out. Every conversation's split is left to :func:`split_of`.

    Examples:
        >>> s = from_locomo([{"sample_id": "x", "conversation": {
        ...     "session_1_date_time": "1:00 pm on 8 May, 2023",
        ...     "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]},
        ...     "qa": [{"question": "q?", "evidence": ["D:1:1"], "category": 4}]}])
        >>> s["conversations"][0]["turns"][0]["timestamp"]
        '2023-05-08T13:00:00'
        >>> q = s["conversations"][0]["questions"][0]
        >>> q["evidence"], q["category"]
        (['D1:1'], 'single-hop')
    """
    counts = Counter() if counts is None else counts
    convs = []
    for i, sample in enumerate(raw):
        conv = sample.get("conversation") or {}
        sessions = sorted(
            (int(k.split("_")[1]), k)
            for k, v in conv.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        turns = []
        for num, key in sessions:
            stamp = _locomo_time(str(conv.get(f"{key}_date_time", "")))
            for t in conv[key]:
                text = str(t.get("text", ""))
                if t.get("blip_caption"):
                    text += f" [shares a photo: {t['blip_caption']}]"
                turn = {"id": t.get("dia_id"), "speaker": t.get("speaker"), "text": text}
                turns.append({**turn, "timestamp": stamp, "session": num})
        questions = []
        for q in sample.get("qa") or []:
            if q.get("category") not in LOCOMO_CATEGORIES:
                continue
            questions.append(
                {
                    "question": q.get("question"),
                    "evidence": _locomo_ids(q.get("evidence", []), counts),
                    "category": LOCOMO_CATEGORIES[q["category"]],
                    "answer": str(q.get("answer", "")),
                }
            )
        convs.append(
            {"id": str(sample.get("sample_id", i)), "turns": turns, "questions": questions}
        )
    return {"name": "locomo", "language": "en", "conversations": convs}


def _locomo_ids(raw: Any, counts: Counter[str]) -> list[str]:
    out: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        parts = [p.strip() for p in re.split(r"[;,]", str(item)) if p.strip()]
        if len(parts) > 1:
            counts["evidence_split"] += 1
        for p in parts:
            fixed = re.sub(r"^D:?(\d+):(\d+)$", r"D\1:\2", p.replace(" ", ""))
            if fixed != p:
                counts["evidence_repaired"] += 1
            out.append(fixed)  # ids still naming no turn are counted when loaded
    return out


def load_set(path: Path, *, date_prefix: bool = True, context_turns: int = 2) -> LoadedSet:
    """Read a retrieval set (or a LoCoMo file) from ``path``.

    Raises:
        DataShapeError: not JSON, or not of the documented shape (the message
            names the first wrong field and its path).
    """
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataShapeError(f"{path}: not a readable JSON file ({e})") from None
    counts: Counter[str] = Counter()
    if isinstance(raw, list) and raw and isinstance(raw[0], dict) and "conversation" in raw[0]:
        raw = from_locomo(raw, counts)
    data = validate(raw)
    name = data.name or Path(path).stem
    loaded = to_loaded(data, name, date_prefix=date_prefix, context_turns=context_turns)
    loaded.counts.update(counts)
    return loaded
