"""LoCoMo loading and scoring: documents, questions, evidence ids, recall@k.

The data file is read from the path the user gives; nothing of it is copied.
Pure functions, no store.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "Conversation",
    "Doc",
    "Question",
    "load_locomo",
    "normalize_evidence",
    "recall_at_k",
]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_ID = re.compile(r"^D(\d+):(\d+)$")


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
    category: int
    evidence: frozenset[str]
    answer: str = ""  # the gold answer (LoCoMo's key)
    index: int = -1  # position in the sample's ``qa`` list (errata name questions by it)


@dataclass
class Conversation:
    sample_id: str
    turns: list[Doc]
    observations: list[Doc]
    questions: list[Question]  # categories 1-4 with evidence (recall is scored on them)
    qa: list[Question] = field(default_factory=list)  # every question of categories 1-4
    position: int = 0  # index in the data file
    speakers: tuple[str, str] = ("", "")


def normalize_evidence(raw: Any, known: set[str], counts: Counter[str]) -> list[str]:
    """Clean one question's evidence list; ``counts`` records what was fixed.

    ``"D8:6; D9:17"`` → two ids; ``"D:11:26"`` → ``"D11:26"``; ids that stay
    malformed or name no dialog turn are dropped and counted.

    Examples:
        >>> c = Counter()
        >>> normalize_evidence(["D1:3", "D8:6; D9:17", "D:1:4", "D", "D9:99"],
        ...                    {"D1:3", "D8:6", "D9:17", "D1:4"}, c)
        ['D1:3', 'D8:6', 'D9:17', 'D1:4']
        >>> sorted(c.items())
        [('dropped_malformed', 1), ('dropped_unknown', 1), ('repaired', 1), ('split', 1)]
    """
    out: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        parts = [p.strip() for p in re.split(r"[;,]", str(item)) if p.strip()]
        if len(parts) > 1:
            counts["split"] += 1
        for p in parts:
            if not _ID.match(p):
                fixed = re.sub(r"^D:?(\d+):(\d+)$", r"D\1:\2", p.replace(" ", ""))
                if _ID.match(fixed):
                    counts["repaired"] += 1
                    p = fixed
                else:
                    counts["dropped_malformed"] += 1
                    continue
            if p not in known:
                counts["dropped_unknown"] += 1
                continue
            if p not in out:
                out.append(p)
    return out


def load_locomo(
    path: Path, *, date_prefix: bool = True, captions: bool = True, context_turns: int = 2
) -> tuple[list[Conversation], Counter[str]]:
    """Read a LoCoMo file into conversations of turn and observation documents.

    Turn text is ``"[{session date}] {speaker}: {text}"`` (the date when
    ``date_prefix``), plus ``" [shares a photo: {caption}]"`` when ``captions``.
    A turn's ``context`` holds the texts of up to ``context_turns`` turns before
    and after it in the same session. Questions of categories 1–4 only (5 has
    no answer in the conversation): ``questions`` those with evidence ids
    (recall is scored on them), ``qa`` all of them (answers are graded on them).
    """
    data = json.loads(Path(path).read_text())
    counts: Counter[str] = Counter()
    convs: list[Conversation] = []
    for position, sample in enumerate(data):
        conv = sample["conversation"]
        turns: list[Doc] = []
        sessions = sorted(
            (int(k.split("_")[1]), k)
            for k, v in conv.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        for num, key in sessions:
            date = conv.get(f"{key}_date_time", "")
            for t in conv[key]:
                text = f"{t['speaker']}: {t['text']}"
                if captions and t.get("blip_caption"):
                    text += f" [shares a photo: {t['blip_caption']}]"
                if date_prefix and date:
                    text = f"[{date}] {text}"
                meta = {"session": num, "date": date, "speaker": t["speaker"]}
                turns.append(Doc(t["dia_id"], text, (t["dia_id"],), meta))
        if context_turns:
            turns = _with_context(turns, context_turns)
        known = {d.key for d in turns}
        observations: list[Doc] = []
        for skey, by_speaker in (sample.get("observation") or {}).items():
            num = int(re.findall(r"\d+", skey)[0])
            date = conv.get(f"session_{num}_date_time", "")
            for speaker, facts in by_speaker.items():
                for fact, ids in facts:
                    dia = normalize_evidence(ids, known, Counter())
                    if not dia:
                        counts["observations_without_ids"] += 1
                        continue
                    text = f"[{date}] {fact}" if date_prefix and date else fact
                    key = f"obs-{num}-{len(observations)}"
                    meta = {"session": num, "speaker": speaker}
                    observations.append(Doc(key, text, tuple(dia), meta))
        questions, qa = [], []
        for index, q in enumerate(sample["qa"]):
            if q.get("category") not in CATEGORIES:
                continue
            ev = normalize_evidence(q.get("evidence", []), known, counts)
            question = Question(
                q["question"], q["category"], frozenset(ev), str(q.get("answer", "")), index
            )
            qa.append(question)
            if not ev:
                counts["questions_without_evidence"] += 1
                continue
            questions.append(question)
        convs.append(
            Conversation(
                sample.get("sample_id", str(len(convs))),
                turns,
                observations,
                questions,
                qa,
                position,
                (str(conv.get("speaker_a", "")), str(conv.get("speaker_b", ""))),
            )
        )
    return convs, counts


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


def recall_at_k(results: list[tuple[str, ...]], evidence: frozenset[str], k: int) -> float:
    """Share of the evidence turns found within the first ``k`` retrieved turns.

    Each result carries the dialog ids it covers; a result with n ids uses n of
    the k (one that does not fit ends the list).

    Examples:
        >>> recall_at_k([("D1:1",), ("D1:2", "D1:3"), ("D1:4",)], frozenset({"D1:3", "D1:4"}), 3)
        0.5
    """
    seen: set[str] = set()
    used = 0
    for ids in results:
        if used + len(ids) > k:
            break
        used += len(ids)
        seen.update(ids)
    return len(seen & evidence) / len(evidence)
