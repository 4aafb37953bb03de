"""The commands that run the development tools (``langmem-ext eval-extraction``,
``langmem-ext bench``): those tools are not in the library's wheel; from a checkout
``pip install -e ./dev`` installs them, and these commands say so when missing."""

from __future__ import annotations

import importlib
import json
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer
from rich.console import Console


def dev_module(name: str) -> ModuleType:
    """``langmem_ext_dev.<name>``, or a one-line error saying how to install it."""
    try:
        return importlib.import_module(f"langmem_ext_dev.{name}")
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("langmem_ext_dev"):
            raise
        typer.echo(
            "langmem-ext: this command runs the development tools, which are not part of "
            "the library: from a checkout of langmem-ext, pip install -e ./dev",
            err=True,
        )
        raise typer.Exit(2) from None


def eval_extraction(
    model: Annotated[
        str,
        typer.Option(
            help="'oracle' or 'naive' (scripted, no server), a 'provider:model' string, "
            "or the model name to send to --base-url."
        ),
    ] = "oracle",
    base_url: Annotated[
        str | None,
        typer.Option(help="An OpenAI-compatible server, e.g. http://127.0.0.1:8765/v1."),
    ] = None,
    method: Annotated[str, typer.Option(help="Call shape: auto, tool or json.")] = "auto",
    data: Annotated[
        Path | None,
        typer.Option(
            help="An evaluation set (JSON): a file, or 'general' or 'dates' for the larger "
            "sets beside the built-in one; default: the built-in one."
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(help="Only the cases of this half of the set: 'dev' or 'heldout'."),
    ] = None,
    embed: Annotated[
        str,
        typer.Option(
            help="The store's embedder and screening's: 'local' or 'none' (keyword search "
            "and screening by words only)."
        ),
    ] = "local",
    timeout: Annotated[float, typer.Option(help="Seconds per model call.")] = 120.0,
    max_tokens: Annotated[int, typer.Option(help="Output cap of each model call.")] = 1024,
    context_tokens: Annotated[
        int, typer.Option(help="The model's context size (a local server's n_ctx).")
    ] = 8192,
    out: Annotated[Path | None, typer.Option(help="Write the scores to this JSON file.")] = None,
) -> None:
    """Reflect every turn of the evaluation set with a model and print what it
    stored: facts right, facts lost, noise stored, corrections applied, wrong
    supersessions, model calls and tokens per turn.

    Example: langmem-ext eval-extraction --model local --base-url http://127.0.0.1:8765/v1
    """
    from ..agents.reflection.extract import FactExtractor
    from ..agents.reflection.reflect import ReflectionSettings

    ev = dev_module("evaluate")
    evaluate, load_cases, scripted_model = ev.evaluate, ev.load_cases, ev.scripted_model
    console = Console(soft_wrap=True)
    named = {"general": ev.EVAL_GENERAL, "dates": ev.EVAL_DATES}
    if data is not None and str(data) in named:
        data = named[str(data)]
    try:
        cases = load_cases(data, split=split)
    except (OSError, ValueError) as e:
        raise typer.BadParameter(str(e)) from e
    if method not in ("auto", "tool", "json"):
        raise typer.BadParameter(f"--method must be auto, tool or json, got {method!r}")
    try:
        settings = ReflectionSettings(
            backoff=0.1,
            context_tokens=context_tokens,
            embeddings=None if embed == "none" else "local",
        )
    except ValueError as e:
        raise typer.BadParameter(str(e)) from e
    limits = {"max_tokens": max_tokens, "timeout": timeout}
    if base_url:
        from langchain_openai import ChatOpenAI
        from pydantic import SecretStr

        chat = ChatOpenAI(
            model=model,
            base_url=base_url,
            api_key=SecretStr("local"),
            temperature=0,
            timeout=timeout,
            max_retries=0,  # extraction retries on its own
        )
        extractor = FactExtractor(chat, method=method, **limits)  # type: ignore[arg-type]
    elif model in ("oracle", "naive"):
        scripted = scripted_model(model, cases)
        extractor = FactExtractor(scripted, method=method, **limits)  # type: ignore[arg-type]
    else:
        extractor = FactExtractor(model, method=method, **limits)  # type: ignore[arg-type]

    def progress(score: object) -> None:
        s = asdict(score)  # type: ignore[call-overload]
        console.print(
            f"{s['case']}: {s['right']}/{s['expected']} right, {len(s['noise'])} noise, "
            f"{s['model_calls']} calls, {s['input_tokens']} + {s['output_tokens']} tokens, "
            f"{s['seconds']:.1f} s",
            highlight=False,
        )

    report = evaluate(
        extractor,
        cases=cases,
        settings=settings,
        embed=None if embed == "none" else embed,
        label=model,
        on_case=progress,
    )
    console.print(report.table(), highlight=False, markup=False)
    for line in report.problems():
        console.print(f"  {line}", highlight=False, markup=False)
    totals = report.totals()
    estimated = (
        f" (estimated for {totals['estimated_calls']} of {totals['model_calls']} calls: "
        "the server reported no usage)"
        if totals["estimated_calls"]
        else ""
    )
    console.print(
        f"{totals['calls_per_turn']} model calls per turn; tokens per turn: "
        f"{totals['input_tokens_per_turn']} in, {totals['output_tokens_per_turn']} out"
        f"{estimated}; {totals['seconds']} s",
        highlight=False,
    )
    if totals["dates"]:
        console.print(
            f"dates: {totals['dates_right']} right, {totals['dates_wrong']} wrong "
            f"of {totals['dates']} facts stored with an expected date",
            highlight=False,
        )
    for reason, kinds in report.screens().items():
        console.print(
            f"screen {reason}: dropped {kinds['trap']} traps, {kinds['fact']} real facts, "
            f"{kinds['other']} other",
            highlight=False,
        )
    if out is not None:
        payload = {
            "model": report.model,
            "totals": totals,
            "screens": report.screens(),
            "cases": [asdict(c) for c in report.cases],
        }
        out.write_text(json.dumps(payload, indent=2))
        console.print(f"wrote {out}")
