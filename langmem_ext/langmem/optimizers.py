"""LangMem's procedural memory: an agent's prompts improved from conversations
and feedback (``create_prompt_optimizer``, ``create_multi_prompt_optimizer``),
with LangMem's names, inputs and return shapes, asked through the extraction's
call strategy (a named tool, JSON where a server cannot call tools).

Kinds (``kind=``):

``"prompt_memory"``
    one call: the prompt, the trajectories and their feedback in, the new prompt out.
``"metaprompt"``
    reflect first (what the trajectories show about the prompt, up to
    ``config["max_reflection_steps"]`` notes), then rewrite.
``"gradient"`` (default)
    critique first (which parts of the prompt caused what went wrong, and
    what to change), then apply only that critique.

What differs from LangMem, on purpose:

* **The original prompt is never lost**: an answer without a usable new
  prompt (empty, not text, cut off) returns the prompt unchanged with one
  logged warning; a model error is raised, and the caller still has its prompt.
* **The multi-prompt optimizer changes only the prompts the trajectories
  concern**: one call picks them (by name, among those given); the others come
  back exactly as they were given.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> call = {"name": "update_prompt", "args": {"new_prompt": "Answer in French."}, "id": "u"}
    >>> opt = create_prompt_optimizer(ScriptedExtractionModel([AIMessage("", tool_calls=[call])]),
    ...                               kind="prompt_memory")
    >>> opt.invoke({"trajectories": "user: bonjour -> feedback: reply in French",
    ...             "prompt": "You are helpful."})
    'Answer in French.'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage, convert_to_messages
from langchain_core.runnables import Runnable, RunnableConfig
from typing_extensions import Required, TypedDict

from ..engine import Operation, run_async, run_sync
from ..errors import ConfigurationError
from ..model_calls.calls import MalformedOutput, ModelCalls, decode
from ..model_calls.usage import TokenUsage

__all__ = [
    "MultiPromptOptimizer",
    "Prompt",
    "PromptOptimizer",
    "create_multi_prompt_optimizer",
    "create_prompt_optimizer",
]

logger = logging.getLogger("langmem_ext.langmem")

Kind = Literal["gradient", "metaprompt", "prompt_memory"]
KINDS = ("gradient", "metaprompt", "prompt_memory")


class Prompt(TypedDict, total=False):
    """LangMem's structured prompt: ``name`` and ``prompt`` required."""

    name: Required[str]
    prompt: Required[str]
    update_instructions: str | None
    when_to_update: str | None


def _tool(name: str, description: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": fields, "required": list(fields)},
        },
    }


_UPDATE = _tool(
    "update_prompt",
    "Give the improved prompt (the whole text), or the current one when it needs no change.",
    {"new_prompt": {"type": "string"}},
)
_THINK = _tool(
    "critique",
    "Say what the trajectories show about the prompt and what to change.",
    {"analysis": {"type": "string"}},
)
_PICK = _tool(
    "select_prompts",
    "Name the prompts the trajectories show a need to change.",
    {"names": {"type": "array", "items": {"type": "string"}}},
)


def _trajectories(value: Any) -> str:
    """LangMem's trajectories (``[(messages, feedback)]`` or text) as text."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Sequence):
        raise ConfigurationError(
            "trajectories must be text or a list of (messages, feedback) pairs, "
            f"got {type(value).__name__}"
        )
    parts = []
    for n, t in enumerate(value, 1):
        messages, feedback = (
            (t[0], t[1] if len(t) > 1 else None) if isinstance(t, tuple | list) else (t, None)
        )
        lines = [
            f"{m.type}: {m.text if isinstance(m.text, str) else m.content}"
            for m in convert_to_messages(list(messages))
        ]
        said = json.dumps(feedback, ensure_ascii=False) if isinstance(feedback, dict) else feedback
        parts.append(f"<trajectory {n}>\n" + "\n".join(lines) + f"\nfeedback: {said or '(none)'}")
    return "\n\n".join(parts)


class _Asker:
    """One model asked through a named tool, or for JSON where it cannot call tools."""

    def __init__(self, model: str | BaseChatModel, config: dict[str, Any]) -> None:
        self.calls = ModelCalls(
            model,
            method="auto",
            shapes=("tool", "json"),
            max_tokens=config.get("max_tokens"),
            timeout=config.get("timeout"),
            name="optimize_prompt",
            purpose="optimizer",
        )

    def ask(self, tool: dict[str, Any], system: str, user: str) -> Operation[Any]:
        name = tool["function"]["name"]
        fields = ", ".join(tool["function"]["parameters"]["properties"])

        def prompt(shape: str) -> list[Any]:
            tail = (
                f"\n\nAnswer with one JSON object and nothing else, with: {fields}."
                if shape == "json"
                else f"\n\nCall {name}."
            )
            return [SystemMessage(system), HumanMessage(user + tail)]

        reply, _ = yield from self.calls.ask(tool, prompt)
        return decode(reply, name, max_tokens=self.calls.max_tokens)


_SYSTEM = (
    "You improve the system prompt of an AI assistant from conversations it had and the "
    "feedback they got. Keep what works; change only what the trajectories show a need "
    "for; keep the prompt's placeholders (such as {braces}) exactly."
)


def _improve(
    asker: _Asker, kind: str, config: dict[str, Any], prompt: Prompt, trajectories: str, others: str
) -> Operation[str]:
    """The new text of ``prompt`` (its old text when no usable answer came)."""
    old = prompt["prompt"]
    about = f"Current prompt ({prompt['name']}):\n<prompt>\n{old}\n</prompt>"
    if prompt.get("update_instructions"):
        about += f"\nHow to update it: {prompt['update_instructions']}"
    if others:
        about += (
            f"\n\nThe other prompts of the system, for context (do not rewrite them):\n{others}"
        )
    context = f"{about}\n\nTrajectories:\n{trajectories}"
    notes: list[str] = []
    if kind in ("gradient", "metaprompt"):
        # gradient: one critique; metaprompt: up to max_reflection_steps notes.
        rounds = 1 if kind == "gradient" else max(1, int(config.get("max_reflection_steps", 3)))
        ask = (
            "Which parts of the prompt caused what went wrong, and what exactly should change?"
            if kind == "gradient"
            else "Reflect on what these trajectories show about how the prompt should change."
        )
        for _ in range(rounds):
            so_far = f"\n\nYour notes so far:\n{notes[-1]}" if notes else ""
            got = yield from asker.ask(_THINK, _SYSTEM, f"{context}\n\n{ask}{so_far}")
            text = got.get("analysis") if isinstance(got, dict) else None
            if (
                not isinstance(text, str)
                or not text.strip()
                or (notes and text.strip() == notes[-1])
            ):
                break  # nothing new to add
            notes.append(text.strip())
    critique = f"\n\nWhat to change:\n{notes[-1]}" if notes else ""
    try:
        got = yield from asker.ask(
            _UPDATE, _SYSTEM, f"{context}{critique}\n\nGive the improved prompt."
        )
    except MalformedOutput as e:
        logger.warning(
            "no usable prompt in the answer (%s); prompt %r unchanged", e, prompt["name"]
        )
        return old
    new = got.get("new_prompt") if isinstance(got, dict) else None
    if not isinstance(new, str) or not new.strip():
        logger.warning("no usable prompt in the answer; prompt %r unchanged", prompt["name"])
        return old
    return new.strip()


def _as_prompt(value: Any) -> Prompt:
    if isinstance(value, str):
        return {"name": "prompt", "prompt": value}
    if isinstance(value, dict) and isinstance(value.get("prompt"), str):
        return {"name": str(value.get("name") or "prompt"), **value}  # type: ignore[typeddict-item]
    raise ConfigurationError(
        f"prompt must be text or a Prompt dict with 'name' and 'prompt', got {value!r:.80}"
    )


def _check(kind: Any, config: Any) -> dict[str, Any]:
    if kind not in KINDS:
        raise ConfigurationError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    if config is not None and not isinstance(config, dict):
        raise ConfigurationError(f"config must be a dict or None, got {type(config).__name__}")
    return dict(config or {})


def _trajectories_of(input: Any) -> str:
    if not isinstance(input, dict):
        raise ConfigurationError(
            f"an optimizer takes {{'trajectories': ..., 'prompt': ...}}, got {type(input).__name__}"
        )
    value = input.get("trajectories", input.get("sessions"))
    if value is None:
        raise ConfigurationError(
            "the input needs 'trajectories' (text or (messages, feedback) pairs)"
        )
    return _trajectories(value)


class PromptOptimizer(Runnable[dict[str, Any], str]):
    """LangMem's single-prompt optimizer (see :func:`create_prompt_optimizer`)."""

    def __init__(self, model: str | BaseChatModel, kind: str, config: dict[str, Any]) -> None:
        self.kind, self.config = kind, config
        self._asker = _Asker(model, config)

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every model call this optimizer made (see
        :mod:`langmem_ext.model_calls.usage`)."""
        return self._asker.calls.usage

    def _steps(self, input: dict[str, Any]) -> Operation[str]:
        trajectories = _trajectories_of(input)
        prompt = _as_prompt(input.get("prompt"))
        return (yield from _improve(self._asker, self.kind, self.config, prompt, trajectories, ""))

    def invoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kw: Any) -> str:
        """The improved prompt text."""
        return run_sync(self._steps(input), None)  # type: ignore[arg-type]

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kw: Any
    ) -> str:
        """Async :meth:`invoke`."""
        return await run_async(self._steps(input), None)  # type: ignore[arg-type]

    async def __call__(self, trajectories: Any, prompt: str | Prompt) -> str:
        """LangMem's shorthand: ``await optimizer(trajectories, prompt)``."""
        return await self.ainvoke({"trajectories": trajectories, "prompt": prompt})


class MultiPromptOptimizer(Runnable[dict[str, Any], list[Prompt]]):
    """LangMem's multi-prompt optimizer (see :func:`create_multi_prompt_optimizer`)."""

    def __init__(self, model: str | BaseChatModel, kind: str, config: dict[str, Any]) -> None:
        self.kind, self.config = kind, config
        self._asker = _Asker(model, config)

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every model call this optimizer made (see
        :mod:`langmem_ext.model_calls.usage`)."""
        return self._asker.calls.usage

    def _steps(self, input: dict[str, Any]) -> Operation[list[Prompt]]:
        trajectories = _trajectories_of(input)
        raw = input.get("prompts")
        if not isinstance(raw, list) or not raw:
            raise ConfigurationError("the input needs 'prompts': a non-empty list of Prompt dicts")
        prompts = [_as_prompt(p) for p in raw]
        listing = "\n".join(
            f"- {p['name']}: {p['prompt'][:300]}"
            + (f" (when to update: {p['when_to_update']})" if p.get("when_to_update") else "")
            for p in prompts
        )
        got = yield from self._asker.ask(
            _PICK,
            _SYSTEM,
            f"Prompts:\n{listing}\n\nTrajectories:\n{trajectories}\n\n"
            "Which prompts do these trajectories show a need to change? Name none if none.",
        )
        names = got.get("names") if isinstance(got, dict) else None
        chosen = {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
        out: list[Prompt] = []
        for given, p in zip(raw, prompts, strict=True):
            if p["name"] not in chosen:
                out.append(given if isinstance(given, dict) else p)  # type: ignore[arg-type]
                continue
            others = "\n".join(f"- {o['name']}: {o['prompt'][:300]}" for o in prompts if o is not p)
            new = yield from _improve(self._asker, self.kind, self.config, p, trajectories, others)
            out.append({**(given if isinstance(given, dict) else p), "prompt": new})
        return out

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kw: Any
    ) -> list[Prompt]:
        """All the prompts, the concerned ones improved."""
        return run_sync(self._steps(input), None)  # type: ignore[arg-type]

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kw: Any
    ) -> list[Prompt]:
        """Async :meth:`invoke`."""
        return await run_async(self._steps(input), None)  # type: ignore[arg-type]

    async def __call__(self, trajectories: Any, prompts: list[Prompt]) -> list[Prompt]:
        """LangMem's shorthand: ``await optimizer(trajectories, prompts)``."""
        return await self.ainvoke({"trajectories": trajectories, "prompts": prompts})


def create_prompt_optimizer(
    model: str | BaseChatModel, /, *, kind: Kind = "gradient", config: dict[str, Any] | None = None
) -> PromptOptimizer:
    """LangMem's ``create_prompt_optimizer``: ``invoke({"trajectories", "prompt"})``
    returns the improved prompt text (see the module for the kinds).

    Args:
        model: a chat model or a ``"provider:model"`` string.
        kind: ``"gradient"``, ``"metaprompt"`` or ``"prompt_memory"``.
        config: ``max_reflection_steps`` (metaprompt), ``max_tokens``, ``timeout``.
    """
    return PromptOptimizer(model, kind, _check(kind, config))


def create_multi_prompt_optimizer(
    model: str | BaseChatModel, /, *, kind: Kind = "gradient", config: dict[str, Any] | None = None
) -> MultiPromptOptimizer:
    """LangMem's ``create_multi_prompt_optimizer``: ``invoke({"trajectories",
    "prompts"})`` returns every prompt, only those the trajectories concern improved.
    """
    return MultiPromptOptimizer(model, kind, _check(kind, config))
