"""Scoring an extraction model on a small set of conversations.

The set (``eval_set.json`` beside this module, or your own file of the same
shape) holds short threads of two users. Each turn lists the facts the user's
own words give, the traps that must not be stored (what the assistant said,
small talk) and the corrections of earlier facts. :func:`evaluate` reflects
every turn of every thread through the real pipeline (a
:class:`~langmem_ext.agents.reflection.ReflectionExecutor` writing to a fresh
in-memory :class:`~langmem_ext.SQLiteStore`) and scores what was stored:

``right``
    expected facts found among the user's active facts at the end;
``lost``
    expected facts not found (not extracted, dropped, or wrongly retired);
``noise``
    active facts that match no expected or acceptable fact (``copies``: those
    that repeat an assistant statement or small talk listed as a trap);
``corrections``
    corrections applied: the old fact retired by the fact that corrects it;
``wrong supersessions``
    facts that should have stayed but were retired;
``screened out``
    candidates reflection dropped before storing them (copies of the
    assistant, paragraphs, repeats; see :mod:`.screen`); each is kept with
    the screen's reason (``CaseScore.screened``), so a report says which screen
    dropped each trap, and which dropped a real fact;
``dates right / wrong``
    for the expected facts that say when they began to hold (``valid_at``: a
    date and its precision, or null for "no date"), whether the stored fact
    that matches it has that ``valid_at`` at that precision (a fact not
    stored is neither).

A set may split its cases into halves (``"split": "dev"`` or ``"heldout"``):
tune on ``dev``, report both (``load_cases(split=...)``). A turn's ``"at"``
(ISO 8601) becomes its messages' ``timestamp``: what "last month" is read
against.

A stored fact matches a pattern (a list of alternatives) when every word of one
alternative starts a word of the fact, case-insensitively: ``"10 km"`` matches
"Runs 10 km twice a week", ``"cat"`` matches "Has two cats".

Two scripted models need no server: ``"oracle"`` answers each turn with the
expected facts (the pipeline's ceiling) and ``"naive"`` makes the mistakes
small local models make (assistant sentences as facts, a paragraph five times,
plural categories, one invented slot for every fact of a category, corrections
without the replaced id, the user's small talk and pasted lines as facts, a
statement and the user's question in one item).

Examples:
    >>> report = evaluate(scripted_model("oracle"), embed=None)
    >>> report.totals()["right"] == report.totals()["expected"], report.totals()["noise"]
    (True, 0)
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langmem_ext.agents.reflection.executor import ReflectionExecutor
from langmem_ext.agents.reflection.extract import FactExtractor
from langmem_ext.agents.reflection.reflect import ReflectionSettings
from langmem_ext.engine import MemoryContext, MemoryEngine
from langmem_ext.errors import ExtractionError

__all__ = [
    "EVAL_DATES",
    "EVAL_GENERAL",
    "EVAL_SET",
    "CaseScore",
    "EvalCase",
    "EvalReport",
    "EvalTurn",
    "ExpectedFact",
    "evaluate",
    "load_cases",
    "scripted_model",
]

logger = logging.getLogger("langmem_ext.agents.reflection")

#: The evaluation set shipped with the package.
EVAL_SET = Path(__file__).with_name("eval_set.json")
#: The larger set: pasted text, small talk, questions and corrections in
#: several languages, dated statements; a dev half and a held-out half.
EVAL_GENERAL = Path(__file__).with_name("eval_general.json")
#: Dated turns in several languages (dates resolved right / wrong).
EVAL_DATES = Path(__file__).with_name("eval_dates.json")


@dataclass(frozen=True)
class ExpectedFact:
    """A fact the user's words give; ``retires`` matches the earlier fact it corrects."""

    content: str
    category: str
    match: tuple[str, ...]
    retires: tuple[str, ...] = ()
    subject: str | None = None
    predicate: str | None = None
    #: When it began to hold: ``{"date": "2026-02-01", "precision": "month"}``,
    #: None for "no date" (it must stay unknown), :data:`UNDATED` when the set
    #: does not say (not scored).
    valid_at: dict[str, str] | str | None = "unscored"


#: ``ExpectedFact.valid_at`` of a fact whose date is not scored.
UNDATED = "unscored"


@dataclass(frozen=True)
class EvalTurn:
    """One turn: its messages (``(role, text)``), expected facts, acceptable
    extras and traps."""

    messages: tuple[tuple[str, str], ...]
    facts: tuple[ExpectedFact, ...]
    also: tuple[str, ...] = ()
    not_facts: tuple[str, ...] = ()
    #: When it was said (ISO 8601), None: now.
    at: str | None = None
    language: str = "en"
    #: What the turn tests ("paste", "small_talk", "correction"...).
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvalCase:
    """One thread of one user, reflected turn by turn; ``split``: ``"dev"``
    or ``"heldout"`` (None in a set without halves)."""

    id: str
    user: str
    turns: tuple[EvalTurn, ...]
    split: str | None = None


def load_cases(path: str | Path | None = None, *, split: str | None = None) -> list[EvalCase]:
    """The cases of an evaluation file (default: :data:`EVAL_SET`); ``split``:
    only the cases of that half (``"dev"``, ``"heldout"``; None: all).

    Raises:
        ValueError: the file is not an evaluation set, or has no case in
            ``split`` (the message says where).
    """
    data = json.loads(Path(path or EVAL_SET).read_text(encoding="utf-8"))
    cases = []
    try:
        for c in data["cases"]:
            if split is not None and c.get("split") != split:
                continue
            turns = tuple(
                EvalTurn(
                    messages=tuple((role, text) for role, text in t["messages"]),
                    facts=tuple(
                        ExpectedFact(
                            content=f["content"],
                            category=f["category"],
                            match=tuple(f["match"]),
                            retires=tuple(f.get("retires", ())),
                            subject=f.get("subject"),
                            predicate=f.get("predicate"),
                            valid_at=f.get("valid_at", UNDATED),
                        )
                        for f in t["facts"]
                    ),
                    also=tuple(t.get("also", ())),
                    not_facts=tuple(t.get("not_facts", ())),
                    at=t.get("at"),
                    language=t.get("language", "en"),
                    kinds=tuple(t.get("kinds", ())),
                )
                for t in c["turns"]
            )
            cases.append(EvalCase(c["id"], c["user"], turns, c.get("split")))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path or EVAL_SET} is not an evaluation set: {e!r}") from e
    if split is not None and not cases:
        raise ValueError(f"{path or EVAL_SET} has no case in split {split!r}")
    return cases


def matches(text: str, pattern: Sequence[str]) -> bool:
    """Whether ``text`` matches one alternative of ``pattern`` (see the module)."""
    words = re.findall(r"\w+", text.casefold())
    return any(
        all(any(w.startswith(need) for w in words) for need in re.findall(r"\w+", alt.casefold()))
        for alt in pattern
    )


# -- scores ------------------------------------------------------------------------


@dataclass
class CaseScore:
    """The score of one case (see the module docstring for each measure)."""

    case: str
    turns: int = 0
    expected: int = 0
    right: int = 0
    lost: list[str] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)
    copies: int = 0
    corrections: int = 0
    applied: int = 0
    wrong_supersessions: list[str] = field(default_factory=list)
    screened_out: int = 0
    model_calls: int = 0
    failed_turns: int = 0
    seconds: float = 0.0
    #: (candidate, screen's reason, what it is: "trap", "fact" or "other")
    screened: list[tuple[str, str, str]] = field(default_factory=list)
    dates: int = 0
    dates_right: int = 0
    #: "fact: stored <label>, expected <label>" for each date resolved wrong
    dates_wrong: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_calls: int = 0


_MEASURES = (
    "turns",
    "expected",
    "right",
    "lost",
    "noise",
    "copies",
    "corrections",
    "applied",
    "wrong_supersessions",
    "screened_out",
    "model_calls",
    "failed_turns",
    "dates",
    "dates_right",
    "dates_wrong",
    "input_tokens",
    "output_tokens",
    "estimated_calls",
)


@dataclass
class EvalReport:
    """Scores of every case; :meth:`totals` sums them, :meth:`table` prints them."""

    model: str
    cases: list[CaseScore] = field(default_factory=list)

    def totals(self) -> dict[str, Any]:
        """Sums over the cases (lists counted), seconds, calls and tokens per
        turn (``estimated_calls``: calls whose server reported no usage, counted
        by estimate; see :mod:`langmem_ext.model_calls.usage`)."""
        out: dict[str, Any] = {}
        for name in _MEASURES:
            values = [getattr(c, name) for c in self.cases]
            out[name] = sum(len(v) if isinstance(v, list) else v for v in values)
        out["seconds"] = round(sum(c.seconds for c in self.cases), 1)
        turns = max(1, out["turns"])
        out["calls_per_turn"] = round(out["model_calls"] / turns, 2)
        out["input_tokens_per_turn"] = round(out["input_tokens"] / turns, 1)
        out["output_tokens_per_turn"] = round(out["output_tokens"] / turns, 1)
        return out

    def screens(self) -> dict[str, dict[str, int]]:
        """How many candidates each screen dropped, by what they were: a trap
        (noise kept out), an expected fact (a real fact lost to a screen) or
        other (an invented line, a repeat...)."""
        out: dict[str, dict[str, int]] = {}
        for c in self.cases:
            for _, reason, kind in c.screened:
                row = out.setdefault(reason, {"trap": 0, "fact": 0, "other": 0})
                row[kind] += 1
        return dict(sorted(out.items()))

    def table(self, details: bool = True) -> str:
        """A Markdown table: one row per case (``details``) and the total."""
        head = (
            "| case | facts right | facts lost | noise stored (copies) | corrections applied "
            "| wrong supersessions | screened out | model calls / turns | failed turns |"
        )
        rows = [head, "|" + "---|" * 9]

        def row(name: str, s: dict[str, Any]) -> str:
            return (
                f"| {name} | {s['right']}/{s['expected']} | {s['lost']} | {s['noise']} "
                f"({s['copies']}) | {s['applied']}/{s['corrections']} "
                f"| {s['wrong_supersessions']} | {s['screened_out']} "
                f"| {s['model_calls']}/{s['turns']} "
                f"| {s['failed_turns']} |"
            )

        if details:
            for c in self.cases:
                rows.append(row(c.case, EvalReport(self.model, [c]).totals()))
        rows.append(row(f"**total** ({self.model})", self.totals()))
        return "\n".join(rows)

    def problems(self) -> list[str]:
        """One line per lost fact, noise fact and wrong supersession."""
        out = []
        for c in self.cases:
            out += [f"{c.case}: lost {x!r}" for x in c.lost]
            out += [f"{c.case}: noise {x!r}" for x in c.noise]
            out += [f"{c.case}: wrongly retired {x!r}" for x in c.wrong_supersessions]
            out += [f"{c.case}: date {x}" for x in c.dates_wrong]
            out += [
                f"{c.case}: screen {reason} dropped a real fact {text!r}"
                for text, reason, kind in c.screened
                if kind == "fact"
            ]
        return out


# -- running ------------------------------------------------------------------------


def _message(role: str, text: str, id: str, at: str | None = None) -> BaseMessage:
    stamp = {"timestamp": at} if at else {}
    if role == "user":
        return HumanMessage(text, id=id, additional_kwargs=stamp)
    if role == "assistant":
        return AIMessage(text, id=id, additional_kwargs=stamp)
    raise ValueError(f"unknown role {role!r}; use 'user' or 'assistant'")


def _store(embed: Any) -> Any:
    from langmem_ext.stores import SQLiteStore

    if embed is None:
        return SQLiteStore()
    return SQLiteStore(index={"embed": embed, "fields": ["content"]})


def evaluate(
    model: BaseChatModel | FactExtractor | str,
    *,
    cases: Sequence[EvalCase] | None = None,
    settings: ReflectionSettings | None = None,
    embed: Any = "local",
    label: str | None = None,
    on_case: Callable[[CaseScore], None] | None = None,
) -> EvalReport:
    """Reflect every case turn by turn with ``model`` and score what was stored.

    Args:
        model: a chat model, a ``"provider:model"`` string or a :class:`FactExtractor`
            (kept across cases, as an application keeps it).
        cases: default :func:`load_cases`.
        settings: reflection settings (default ones, with a short backoff).
        embed: the store's embedder and screening's (``"local"`` by default,
            as in an application); None for keyword search, text similarity
            and screening by words only.
        label: the model's name in the report.
        on_case: called with each case's score as soon as it is known.
    """
    extractor = model if isinstance(model, FactExtractor) else FactExtractor(model)
    settings = settings or ReflectionSettings(backoff=0.1, embeddings=embed)
    name = label or _label(extractor)
    report = EvalReport(name)
    for case in load_cases() if cases is None else cases:
        score = _run_case(extractor, case, settings, embed)
        report.cases.append(score)
        if on_case is not None:
            on_case(score)
    return report


def _label(extractor: FactExtractor) -> str:
    model = getattr(extractor._calls, "_model", None)
    if isinstance(model, str):
        return model
    return str(getattr(model, "model_name", None) or getattr(model, "_llm_type", "model"))


@dataclass
class _Stored:
    id: str
    turn: int
    content: str


def _run_case(
    extractor: FactExtractor, case: EvalCase, settings: ReflectionSettings, embed: Any
) -> CaseScore:
    engine = MemoryEngine(_store(embed))
    ctx = MemoryContext("eval", user_id=case.user)
    config: RunnableConfig = {"configurable": {"memory_context": ctx, "thread_id": case.id}}
    score = CaseScore(case.id)
    started = time.perf_counter()
    stored: dict[str, _Stored] = {}
    retired: list[str] = []
    messages: list[BaseMessage] = []
    with ReflectionExecutor(extractor, engine=engine, delay=0, settings=settings) as executor:
        for n, turn in enumerate(case.turns):
            messages += [
                _message(role, text, f"{case.id}-{n}-{i}", turn.at)
                for i, (role, text) in enumerate(turn.messages)
            ]
            before = extractor.calls
            spent = (extractor.usage.input_tokens, extractor.usage.output_tokens)
            spent_estimated = extractor.usage.estimated_calls
            try:
                result = executor.reflect(messages, config)
            except ExtractionError as e:
                logger.warning("eval %s turn %d: %s", case.id, n + 1, e)
                score.failed_turns += 1
            else:
                stored.update({f.id: _Stored(f.id, n, f.content) for f in result.added})
                retired += [*result.superseded, *result.removed]
                score.screened_out += len(result.dropped)
                score.screened += [
                    (d.content, d.reason, _kind(d.content, turn)) for d in result.dropped
                ]
            score.model_calls += extractor.calls - before
            # The extractor's totals count failed turns' calls too (a result
            # exists only for a turn that succeeded).
            score.input_tokens += extractor.usage.input_tokens - spent[0]
            score.output_tokens += extractor.usage.output_tokens - spent[1]
            score.estimated_calls += extractor.usage.estimated_calls - spent_estimated
            score.turns += 1
    facts = engine.get_profile(ctx).facts
    active = {f.id: f.content for f in facts}
    winners = {sid: getattr(engine.get(ctx, sid), "superseded_by", None) for sid in retired}
    _score(case, score, stored, active, winners)
    _score_dates(case, score, facts)
    score.seconds = round(time.perf_counter() - started, 2)
    engine.close()
    return score


def _score(
    case: EvalCase,
    score: CaseScore,
    stored: dict[str, _Stored],
    active: dict[str, str],
    winners: dict[str, str | None],
) -> None:
    traps = [p for t in case.turns for p in t.not_facts]
    extras = [p for t in case.turns for p in t.also]
    # (turn, fact) of every expected fact, and which of them a later fact corrects
    expected = [(n, f) for n, t in enumerate(case.turns) for f in t.facts]
    corrected = {
        id(old)
        for n, old in expected
        for m, new in expected
        if m > n and new.retires and matches(old.content, new.retires)
    }
    final = [f for _, f in expected if id(f) not in corrected]
    gone = [f for _, f in expected if id(f) in corrected]
    found: set[int] = set()
    for content in active.values():
        if matches(content, traps):
            score.noise.append(content)
            score.copies += 1
            continue
        hits = [f for f in final if matches(content, f.match)]
        if hits:
            found.update(id(f) for f in hits)
        elif not any(matches(content, f.match) for f in gone) and not matches(content, extras):
            score.noise.append(content)
    score.expected = len(final)
    score.right = sum(id(f) in found for f in final)
    score.lost = [f.content for f in final if id(f) not in found]
    # A correction counts when the old facts stored before it are all retired,
    # each by a fact that says the new thing.
    ok_retired: set[str] = set()
    for m, new in expected:
        if not new.retires:
            continue
        old = [
            s
            for s in stored.values()
            if s.turn < m and matches(s.content, new.retires) and not matches(s.content, new.match)
        ]
        if not old:
            continue
        score.corrections += 1
        done = all(
            s.id not in active
            and (w := winners.get(s.id)) in stored
            and matches(stored[w].content, new.match)
            for s in old
        )
        score.applied += done
        if done:
            ok_retired.update(s.id for s in old)
    keep = [p for f in final for p in f.match] + extras
    for sid in winners:
        s = stored.get(sid)
        if s and sid not in ok_retired and matches(s.content, keep):
            score.wrong_supersessions.append(s.content)


def _fold(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def _kind(content: str, turn: EvalTurn) -> str:
    """What a screened-out candidate was: ``"trap"`` (a trap, or the
    assistant's words), ``"fact"`` (an expected fact or an acceptable extra)
    or ``"other"``."""
    said = [_fold(text) for role, text in turn.messages if role == "assistant"]
    if matches(content, turn.not_facts) or any(_fold(content) in a for a in said):
        return "trap"
    if any(matches(content, f.match) for f in turn.facts) or matches(content, turn.also):
        return "fact"
    return "other"


def _label_of(value: dict[str, str] | None) -> str:
    return "no date" if value is None else f"{value['date']} ({value['precision']})"


def _stored_date(fact: Any) -> dict[str, str] | None:
    """A stored fact's ``valid_at`` as ``{"date", "precision"}`` (the
    precision from the label reflection kept in its provenance)."""
    if not fact.valid_at:
        return None
    label = str((fact.provenance.get("when") or {}).get("label") or "").split("..")[0]
    precision = (
        "year"
        if re.fullmatch(r"\d{4}", label)
        else "month"
        if re.fullmatch(r"\d{4}-\d{2}", label)
        else "week"
        if "-W" in label
        else "day"
    )
    return {"date": fact.valid_at[:10], "precision": precision}


def _score_dates(case: EvalCase, score: CaseScore, facts: Sequence[Any]) -> None:
    """Dates right / wrong of the expected facts that say when they began."""
    for turn in case.turns:
        for f in turn.facts:
            if f.valid_at == UNDATED:
                continue
            hits = [x for x in facts if matches(x.content, f.match)]
            if not hits:
                continue
            score.dates += 1
            want = f.valid_at if isinstance(f.valid_at, dict) else None
            got = [_stored_date(x) for x in hits]
            if want in got:
                score.dates_right += 1
            else:
                score.dates_wrong.append(
                    f"{f.content!r}: stored {', '.join(_label_of(g) for g in got)}, "
                    f"expected {_label_of(want)}"
                )


# -- scripted models ------------------------------------------------------------------


def _turn_of(prompt: str, cases: Sequence[EvalCase]) -> list[tuple[EvalCase, EvalTurn]]:
    """The turns whose user messages appear in the prompt's conversation."""
    said = prompt.split("Conversation", 1)[-1]
    return [
        (c, t)
        for c in cases
        for t in c.turns
        if any(role == "user" and text in said for role, text in t.messages)
    ]


def _known_ids(system: str) -> list[tuple[str, str]]:
    """``(id, content)`` of the known facts listed in the prompt."""
    return re.findall(r"id=(fact_[0-9a-f]+)\b[^\]\n]*\]\s*(?:\([^)\n]*\)\s*)?(.+)", system)


def _oracle(cases: Sequence[EvalCase]) -> Callable[[list[BaseMessage]], list[dict[str, Any]]]:
    def answer(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        system, prompt = str(messages[0].content), str(messages[-1].content)
        out: list[dict[str, Any]] = []
        for _, turn in _turn_of(prompt, cases):
            for f in turn.facts:
                item: dict[str, Any] = {
                    "content": f.content,
                    "category": f.category,
                    "confidence": 0.95,
                }
                if f.subject and f.predicate:
                    item |= {"subject": f.subject, "predicate": f.predicate}
                if f.retires:
                    old = [i for i, text in _known_ids(system) if matches(text, f.retires)]
                    item["replaces"] = old[0] if old else None
                out.append(item)
        return out

    return answer


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _user_sentences(turn: EvalTurn) -> list[str]:
    return [
        s.strip(' -"«»')
        for role, text in turn.messages
        if role == "user"
        for line in text.splitlines()
        for s in _SENTENCE.split(line)
        if s.strip(' -"«»')
    ]


def _naive(cases: Sequence[EvalCase]) -> Callable[[list[BaseMessage]], list[dict[str, Any]]]:
    def answer(messages: list[BaseMessage]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for _, turn in _turn_of(str(messages[-1].content), cases):
            said = _user_sentences(turn)
            questions = [s for s in said if s.endswith("?")]
            for n, f in enumerate(turn.facts):
                category = f.category + "s" if f.category == "preference" else f.category
                item = {
                    "content": f.content,
                    "category": category,
                    "confidence": 0.9,
                    # one slot per category: unrelated facts share it
                    "subject": "user",
                    "predicate": f.category,
                }
                if f.retires:
                    item["replaces"] = f.match[0]  # a value, not the id shown
                if n == 0 and questions:
                    # the user's question in the same item as their statement
                    item["content"] = f"{f.content}. {questions[0]}"
                out.append(item)
            # the user's small talk and the lines of a text they pasted, as facts
            out += [
                {"content": s, "category": "context", "confidence": 0.8}
                for s in said
                if matches(s, turn.not_facts) and not any(matches(s, f.match) for f in turn.facts)
            ]
            for role, text in turn.messages:
                if role != "assistant":
                    continue
                if len(text) > 200:
                    out += [{"content": text, "category": "context", "confidence": 0.9}] * 5
                else:
                    out += [
                        {"content": s, "category": "knowledge", "confidence": 0.9}
                        for s in _SENTENCE.split(text)
                        if s.strip()
                    ]
        return out

    return answer


def scripted_model(kind: str = "oracle", cases: Sequence[EvalCase] | None = None) -> BaseChatModel:
    """A scripted extraction model for the evaluation set: ``"oracle"`` (the
    expected facts, the pipeline's ceiling) or ``"naive"`` (a small model's
    mistakes, see the module docstring: also the user's small talk and the
    lines of a pasted text as facts, and a statement with the user's question
    in one item)."""
    from langmem_ext.testing.chat import ScriptedExtractionModel

    cases = load_cases() if cases is None else cases
    makers = {"oracle": _oracle, "naive": _naive}
    if kind not in makers:
        raise ValueError(f"unknown scripted model {kind!r}; use 'oracle' or 'naive'")
    # One script step per call; far more steps than the set has turns and retries.
    return ScriptedExtractionModel([makers[kind](cases)] * 10_000)
