"""LangMem's procedural and short-term memory, side by side with LangMem.

- **Model calls per prompt optimization**, for each kind (``prompt_memory``,
  ``gradient``, ``metaprompt``), one prompt and three prompts
  (``create_multi_prompt_optimizer``), on a counting offline stand-in model.
- **Tokens per turn of a summarized 200-message thread**: a 100-turn
  conversation (user messages of 20 to 120 words, answers of 40 to 160) run
  turn by turn through ``summarize_messages`` with ``max_tokens=1024``,
  ``max_summary_tokens=256``, the running summary carried over; what each turn
  sends to the model, against the whole thread.

Both packages get the same stand-in models and token counter
(``count_tokens_approximately``). LangMem comes from a checkout:

    python benchmarks/bench_langmem.py [--langmem PATH/TO/langmem]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langmem_ext_dev.compat.standin import StandInChat
from pydantic import Field

TRAJECTORIES = [
    (
        [
            {"role": "user", "content": "bonjour, peux-tu m'aider ?"},
            {"role": "assistant", "content": "Hello! How can I help?"},
        ],
        {"score": 0, "comment": "answer in the user's language"},
    )
]
PROMPTS = [
    {"name": "reply", "prompt": "You are a helpful assistant."},
    {"name": "search", "prompt": "Write a search query for the question."},
    {"name": "summary", "prompt": "Summarize the conversation."},
]


class Counting(StandInChat):
    """The stand-in, counting its calls; asked which prompts to change, it
    names the first (``reply``), as both packages' selection steps expect."""

    seen: list[int] = Field(default_factory=list)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.seen.append(1)
        return super()._generate(messages, stop, run_manager, **kw)

    def _answer(self, messages: Any, tools: list[dict], choice: Any) -> AIMessage:
        message = super()._answer(messages, tools, choice)
        for call in message.tool_calls:
            for key in ("names", "which"):
                if isinstance(call["args"].get(key), list):
                    call["args"][key] = [PROMPTS[0]["name"]]
        return message


def optimizer_calls(package: str) -> dict[str, tuple[Any, Any]]:
    """(calls for one prompt, calls for three prompts) per kind."""
    mod = importlib.import_module(package)
    out: dict[str, tuple[Any, Any]] = {}
    for kind in ("prompt_memory", "gradient", "metaprompt"):
        counts: list[Any] = []
        for multi in (False, True):
            model = Counting()
            try:
                if multi:
                    opt = mod.create_multi_prompt_optimizer(model, kind=kind)
                    opt.invoke({"trajectories": TRAJECTORIES, "prompts": PROMPTS})
                else:
                    opt = mod.create_prompt_optimizer(model, kind=kind)
                    opt.invoke({"trajectories": TRAJECTORIES, "prompt": PROMPTS[0]["prompt"]})
                counts.append(len(model.seen))
            except Exception as e:
                counts.append(f"error after {len(model.seen)} ({type(e).__name__})")
        out[kind] = (counts[0], counts[1])
    return out


class CountingSummaries(FakeListChatModel):
    """Answers every summary request with the same ~200-token text, counting."""

    seen: list[int] = Field(default_factory=list)

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.seen.append(1)
        return super()._call(*args, **kwargs)


def _thread() -> list[tuple[HumanMessage, AIMessage]]:
    turns = []
    for i in range(100):
        ask = " ".join(f"q{i}w{j}" for j in range(20 + (i * 37) % 101))
        answer = " ".join(f"a{i}w{j}" for j in range(40 + (i * 53) % 121))
        turns.append((HumanMessage(ask, id=f"h{i}"), AIMessage(answer, id=f"a{i}")))
    return turns


def summarized_tokens(package: str) -> dict[str, float]:
    summarize = importlib.import_module(f"{package}.short_term").summarize_messages
    summary_text = " ".join(f"s{j}" for j in range(150))  # about 200 tokens
    model = CountingSummaries(responses=[summary_text])
    count = count_tokens_approximately
    messages: list[Any] = []
    running = None
    sent, whole = [], []
    for ask, answer in _thread():
        messages.append(ask)
        result = summarize(
            messages,
            running_summary=running,
            model=model,
            max_tokens=1024,
            max_summary_tokens=256,
            token_counter=count,
        )
        running = result.running_summary
        sent.append(count(result.messages))
        whole.append(count(messages))
        messages.append(answer)
    return {
        "median": statistics.median(sent),
        "max": max(sent),
        "last": sent[-1],
        "whole_last": whole[-1],
        "total": sum(sent),
        "whole_total": sum(whole),
        "summary_calls": len(model.seen),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--langmem", type=Path, help="a LangMem checkout, to compare with")
    args = ap.parse_args()
    packages = ["langmem_ext"]
    if args.langmem:
        sys.path.insert(0, str(args.langmem.resolve() / "src"))
        packages.append("langmem")
    print("model calls per optimization (one prompt / three prompts)")
    rows = {p: optimizer_calls(p) for p in packages}
    print(f"  {'kind':<14}" + "".join(f"{p:>34}" for p in packages))
    for kind in ("prompt_memory", "gradient", "metaprompt"):
        cells = "".join(f"{f'{rows[p][kind][0]} / {rows[p][kind][1]}':>34}" for p in packages)
        print(f"  {kind:<14}{cells}")
    print("tokens sent per turn, 200-message thread (max_tokens 1024, summary 256)")
    for p in packages:
        t = summarized_tokens(p)
        print(
            f"  {p:<12} median {t['median']:6.0f}  max {t['max']:6.0f}  last turn {t['last']:6.0f}"
            f" (whole thread {t['whole_last']:6.0f})  all turns {t['total']:8.0f}"
            f" (whole threads {t['whole_total']:8.0f})  summary calls {t['summary_calls']}"
        )


if __name__ == "__main__":
    main()
