"""Tokens per question and per reflected turn of the LoCoMo answer harness, on
both stores, offline: the table of docs/compare.md ("Tokens").

    python benchmarks/locomo_tokens.py --data path/to/locomo10.json \\
        --conversations conv-26 --out bench-results/tokens

It runs ``langmem-ext bench locomo``'s harness (``langmem_ext_dev.bench.locomo_qa``)
with scripted models in place of the answer, judge and extraction models: the
answerer replies with the gold answer, the judge with one sentence and
``{"label": "CORRECT"}``, and reflection stores LoCoMo's own observations of the
turns in each window (``--facts-window``, 10 by default). Scripted models report
no usage, so every count is the harness's ``cl100k_base`` estimate of the real
prompts: the prompts are the ones a real model would read; only the replies (and
so the output tokens) are not a real model's. PostgreSQL runs as an embedded
server started for the run. The embedding cache (``--out``/embeddings.db) makes a
second run fast.

Nothing here is part of the product; the figures are in docs/compare.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from langmem_ext_dev.bench.locomo_qa import QAConfig, run_qa

from langmem_ext.testing.chat import ScriptedExtractionModel


def _golds(data: Path) -> dict[str, str]:
    return {
        q["question"]: str(q.get("answer", ""))
        for conv in json.loads(data.read_text())
        for q in conv["qa"]
    }


def scripted_models(data: Path, n: int) -> tuple[ScriptedExtractionModel, ScriptedExtractionModel]:
    """An answerer that replies with the gold answer, a judge that says CORRECT."""
    golds = _golds(data)

    def answer(messages: list[BaseMessage]) -> str:
        question = str(messages[-1].content).rsplit("Question: ", 1)[1].strip()
        return golds.get(question) or "Not mentioned in the memories."

    def judge(messages: list[BaseMessage]) -> str:
        return 'The generated answer names the same thing as the gold answer.\n{"label": "CORRECT"}'

    return ScriptedExtractionModel([answer] * n), ScriptedExtractionModel([judge] * n)


def table(result: dict[str, Any]) -> str:
    lines = [
        "| memories | store | context tokens / question | answer model input / question "
        "| judge input / question | reflection input + output / turn |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        t = row["tokens_per_question"]
        ref = row.get("reflection")
        per_turn = (
            f"{ref['input_tokens_per_turn']:.0f} + {ref['output_tokens_per_turn']:.0f}"
            if ref
            else "-"
        )
        lines.append(
            f"| {row['system']} | {row['backend'] or '-'} "
            f"| {row['context_tokens_per_question']:,.0f} | {t['answer_in']:,.0f} "
            f"| {t['judge_in']:,.0f} | {per_turn} |"
        )
    for row in result["rows"]:
        ref = row.get("reflection")
        if ref:
            lines.append(
                f"\n{row['system']}: {ref['model_calls']} reflection calls for "
                f"{ref['turns']} turns, {ref['stored']} facts stored"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="LoCoMo JSON file")
    p.add_argument("--conversations", default="conv-26", help="sample ids, comma-separated")
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--docs", default="turns,facts")
    p.add_argument("--facts-window", type=int, default=10)
    p.add_argument("--full-context", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--out", type=Path, default=Path("bench-results/tokens"))
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    answerer, judge = scripted_models(args.data, 100_000)
    cfg = QAConfig(
        data=args.data,
        backends=tuple(args.backends.split(",")),
        doc_sets=tuple(args.docs.split(",")),
        cache=args.out / "embeddings.db",
        selected=tuple(args.conversations.split(",")),
        facts_window=args.facts_window,
        answer_model=answerer,
        judge_model=judge,
        answer_label="scripted: the gold answer",
        judge_label="scripted: CORRECT",
        full_context=args.full_context,
        qa_cache=None,  # nothing kept: every prompt is built and counted again
    )
    result = run_qa(cfg)
    print(table(result))
    (args.out / "locomo-tokens.json").write_text(
        json.dumps({"rows": result["rows"], "settings": result.get("settings")}, indent=2)
    )


if __name__ == "__main__":
    main()
