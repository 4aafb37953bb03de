"""``langmem-ext bench locomo --answer-model M``: the end-to-end LoCoMo harness
(answers graded by a judge), driven from the command line. The models and the
errata file are checked before any work; the run itself is
``langmem_ext_dev.bench.locomo_qa``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .dev import dev_module


def chat_model(model: str, base_url: str | None, timeout: float, option: str) -> Any:
    """A chat model from ``--answer-model`` and ``--base-url`` (temperature 0,
    as the published harnesses ask), or a one-line error before any work.

    >>> chat_model("qwen", "http://127.0.0.1:8765/v1", 60.0, "--answer-model").model_name
    'qwen'
    >>> try:
    ...     chat_model(" ", None, 60.0, "--judge-model")
    ... except Exception as e:
    ...     print(e)
    --judge-model is empty; give a model
    """
    if not model.strip():
        raise typer.BadParameter(f"{option} is empty; give a model")
    if base_url:
        from langchain_openai import ChatOpenAI
        from pydantic import SecretStr

        key = os.environ.get("OPENAI_API_KEY") or "none"
        return ChatOpenAI(
            model=model,
            base_url=base_url,
            api_key=SecretStr(key),
            temperature=0,
            timeout=timeout,
            max_retries=0,  # an unreachable server fails the question at once
        )
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(model, temperature=0)
    except Exception as e:
        raise typer.BadParameter(
            f"{option} {model!r}: {str(e).splitlines()[0]} Give a LangChain model string "
            "such as openai:gpt-4o-mini (with the provider's API key set), or the model "
            "name with --base-url."
        ) from None


def run_qa_command(
    *,
    data: Path,
    out: Path,
    backends: tuple[str, ...],
    doc_sets: tuple[str, ...],
    first: int,
    named: tuple[str, ...],
    answer_model: str,
    judge_model: str | None,
    base_url: str | None,
    judge_base_url: str | None,
    reflect_model: str | None,
    context_tokens: int,
    full_context: bool,
    errata: Path | None,
    k: int,
    concurrency: int,
    timeout: float,
    questions: int,
    rerank: tuple[str, ...],
    facts_window: int,
    options: dict[str, Any],
) -> None:
    """Check everything, run the harness, print and write the figures."""
    qa = dev_module("bench.locomo_qa")
    errata_mod = dev_module("bench.locomo_errata")
    if k < 1 or concurrency < 1 or timeout <= 0 or context_tokens < 512:
        raise typer.BadParameter(
            "--k and --concurrency must be at least 1, --timeout above 0, "
            "--context-tokens at least 512"
        )
    unknown = [d for d in doc_sets if d not in qa.QA_DOC_SETS]
    if unknown:
        raise typer.BadParameter(f"unknown document sets {unknown}; choose from {qa.QA_DOC_SETS}")
    loaded = None
    if errata is not None:
        try:
            loaded = errata_mod.load_errata(errata)
        except errata_mod.ErrataError as e:
            raise typer.BadParameter(str(e)) from None
    judge_url = judge_base_url or base_url
    answerer = chat_model(answer_model, base_url, timeout, "--answer-model")
    judge_name = judge_model or answer_model
    judge = chat_model(judge_name, judge_url, timeout, "--judge-model")
    reflector = (
        chat_model(reflect_model, base_url, timeout, "--reflect-model") if reflect_model else None
    )
    if named:
        lo = dev_module("bench.locomo_data")
        try:
            convs, _ = lo.load_locomo(data)
            qa.select_conversations(convs, None, named)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    cfg = qa.QAConfig(
        data=data,
        backends=backends,
        doc_sets=doc_sets,
        cache=out / "embeddings.db",
        conversations=first or None,
        selected=named,
        questions=questions or None,
        rerank=rerank,
        facts_window=facts_window,
        answer_model=answerer,
        judge_model=judge,
        answer_label=f"{answer_model}@{base_url}" if base_url else answer_model,
        judge_label=f"{judge_name}@{judge_url}" if judge_url else judge_name,
        reflect_model=reflector,
        reflect_label=(
            (f"{reflect_model}@{base_url}" if base_url else reflect_model)
            if reflect_model
            else "scripted (LoCoMo's observations)"
        ),
        reflect_context_tokens=context_tokens,
        full_context=full_context,
        errata=loaded,
        concurrency=concurrency,
        qa_cache=out / "locomo-qa-cache.db",
        k=k,
        timeout=timeout,
        **options,
    )
    console = Console()
    with Progress(console=console, transient=True) as progress:
        result = qa.run_qa(cfg, progress)
    print_qa(console, result)
    for path in qa.write_qa_outputs(result, out):
        console.print(f"wrote {path}")


def _n(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_qa(console: Console, result: dict[str, Any]) -> None:
    """The figures of a run: one row per system, then reflection, failures, errata."""
    s = result["settings"]
    table = Table(
        title=f"LoCoMo answers, categories 1-4: answered by {s['answer_model']}, graded by "
        f"{s['judge_model']} (k={s['k']})"
    )
    cats = ("multi-hop", "temporal", "open-domain", "single-hop")
    cols = ("system", "questions", "J", "F1", "BLEU-1", "failed", *(f"{c} J" for c in cats))
    cols += ("search ms p50/p95", "answer s p50/p95", "context tok/q", "answer tok/q in/out")
    cols += ("judge tok/q in/out",)
    for col in cols:
        table.add_column(col, justify="left" if col == "system" else "right")
    for r in result["rows"]:
        o, by, t = r["overall"], r["by_category"], r["tokens_per_question"]
        table.add_row(
            r["system"],
            str(o["questions"]),
            f"{o['J']:.3f}",
            f"{o['F1']:.3f}",
            f"{o['BLEU-1']:.3f}",
            str(o["failed"]),
            *(f"{by[c]['J']:.3f}" if c in by else "-" for c in cats),
            f"{_n(r['search_ms_p50'], 1)}/{_n(r['search_ms_p95'], 1)}",
            f"{_n(r['answer_s_p50'], 2)}/{_n(r['answer_s_p95'], 2)}",
            _n(r["context_tokens_per_question"]),
            f"{t['answer_in']:.0f}/{t['answer_out']:.0f}",
            f"{t['judge_in']:.0f}/{t['judge_out']:.0f}",
        )
    console.print(table)
    for r in result["rows"]:
        est = r["tokens_per_question"]["estimated_calls"]
        if est:
            console.print(
                f"{r['system']}: {est} model calls reported no usage; their tokens are "
                "estimates (cl100k_base)",
                highlight=False,
            )
        ref = r.get("reflection")
        if ref:
            estimated = " (estimated)" if ref["estimated_calls"] else ""
            console.print(
                f"reflection ({r['system']}, {s['reflect_model']}): {ref['turns']} turns in "
                f"{ref['model_calls']} model calls, {ref['input_tokens_per_turn']:.0f} input + "
                f"{ref['output_tokens_per_turn']:.0f} output tokens per turn{estimated}; "
                f"{ref['stored']} facts stored, {ref['failed_sessions']} sessions failed; "
                f"{ref['reflect_seconds']:.0f} s",
                highlight=False,
            )
        failures = r["failures"]["count"]
        if failures:
            shown = ", ".join(f"{why}: {n}" for why, n in sorted(failures.items()))
            example = next(iter(r["failures"]["example"].values()))
            console.print(
                f"{r['system']}: failed questions (counted as not correct): {shown}; "
                f"e.g. {example}",
                highlight=False,
                markup=False,
            )
    errata = result.get("errata") or {}
    if errata:
        kinds: dict[str, int] = {}
        for a in errata["applied"]:
            kinds[a["error_type"]] = kinds.get(a["error_type"], 0) + 1
        console.print(
            f"errata {errata['file']}: {len(errata['applied'])} answers corrected in this run "
            f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or 'none'}); "
            f"{sum(errata['citation_only'].values())} citation-only entries change no answer; "
            f"{len(errata['not_matching'])} entries do not match the data",
            highlight=False,
        )
    console.print(
        f"questions: {result['rows'][0]['overall']['questions'] if result['rows'] else 0} in "
        f"{len(result['conversations'])} conversations; wall time {result['seconds']:.0f} s",
        highlight=False,
    )
