"""A re-ranker made from any chat model, for users without a re-ranking model.

``chat_reranker(model)`` returns a function ``(query, texts) -> scores`` that
the stores take as ``index={"rerank": ...}``. It is *listwise*: one call shows
the model the question and the numbered candidates and asks for their numbers
from most to least useful, through a named tool (``rank``) or JSON output
where a server cannot call tools (the extraction's call strategy). Scores fall
from 1.0 for the first number given; candidates the model leaves out follow
in the store's order below every ranked one.

Cost: one call per search with a query, whose prompt holds every candidate
(cut to ``max_chars`` characters each), so about ``N × max_chars / 4`` input
tokens for ``N`` candidates and a few output tokens per candidate. Failures
(an error, a time-out, an answer that is not a list of candidate numbers)
raise, and the store then keeps its own order with one logged warning.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> call = {"name": "rank", "args": {"order": [2, 1]}, "id": "r1"}
    >>> rerank = chat_reranker(ScriptedExtractionModel([AIMessage("", tool_calls=[call])]))
    >>> rerank("what does Ada drink?", ["Ada lives in Paris", "Ada drinks tea"])
    [0.5, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from ..engine import Operation, run_async, run_sync
from ..errors import ConfigurationError
from ..model_calls.calls import MalformedOutput, ModelCalls, decode
from ..model_calls.usage import TokenUsage

__all__ = ["ChatReranker", "chat_reranker"]

_TOOL = {
    "type": "function",
    "function": {
        "name": "rank",
        "description": "Give the candidates' numbers from most to least useful.",
        "parameters": {
            "type": "object",
            "properties": {"order": {"type": "array", "items": {"type": "integer"}}},
            "required": ["order"],
        },
    },
}
_SYSTEM = (
    "You rank memories for a question. Read the question and the numbered "
    "candidates, and give the numbers of the candidates from most to least useful "
    "for answering it; leave out the ones of no use."
)


class ChatReranker:
    """``(query, texts) -> scores`` from a chat model; ``acall`` is its async twin."""

    def __init__(
        self,
        model: str | BaseChatModel,
        *,
        max_chars: int = 300,
        max_tokens: int | None = 256,
        timeout: float | None = 30.0,
    ) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 20:
            raise ConfigurationError(
                f"max_chars must be a whole number of at least 20, got {max_chars!r}"
            )
        self.max_chars = max_chars
        self._calls = ModelCalls(
            model,
            method="auto",
            shapes=("tool", "json"),
            max_tokens=max_tokens,
            timeout=timeout,
            name="rank",
            purpose="rerank",
            # A hung model holds at most this many threads, however many searches call it.
            workers=4,
        )

    @property
    def calls(self) -> int:
        """Model calls made so far."""
        return self._calls.calls

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every call made so far (see
        :mod:`langmem_ext.model_calls.usage`)."""
        return self._calls.usage

    def _steps(self, query: str, texts: list[str]) -> Operation[list[float]]:
        listing = "\n".join(
            f"{n}. {' '.join(t.split())[: self.max_chars]}" for n, t in enumerate(texts, 1)
        )
        ask = f"Question: {query}\n\nCandidates:\n{listing}"

        def prompt(shape: str) -> list[Any]:
            tail = (
                '\n\nAnswer with one JSON object and nothing else: {"order": [numbers]}.'
                if shape == "json"
                else "\n\nCall rank with the numbers."
            )
            return [SystemMessage(_SYSTEM), HumanMessage(ask + tail)]

        reply, _ = yield from self._calls.ask(_TOOL, prompt)
        raw = decode(reply, "rank", max_tokens=self._calls.max_tokens)
        order = raw.get("order") if isinstance(raw, dict) else raw
        if not isinstance(order, list) or not order:
            raise MalformedOutput(f"expected a list of candidate numbers, got {raw!r:.200}")
        seen: list[int] = []
        for n in order:
            number = isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(texts)
            if number and n - 1 not in seen:
                seen.append(n - 1)
        if not seen:
            raise MalformedOutput(f"no candidate number in the answer {order!r:.200}")
        scores = [0.0] * len(texts)
        for rank, i in enumerate(seen):
            scores[i] = 1.0 - rank / len(texts)
        left = [i for i in range(len(texts)) if i not in seen]
        for rank, i in enumerate(left):  # below every ranked one, store order kept
            scores[i] = -(rank + 1) / len(texts)
        return scores

    def __call__(self, query: str, texts: list[str]) -> list[float]:
        return run_sync(self._steps(query, texts), None)  # type: ignore[arg-type]

    async def acall(self, query: str, texts: list[str]) -> list[float]:
        """Async :meth:`__call__`."""
        return await run_async(self._steps(query, texts), None)  # type: ignore[arg-type]


def chat_reranker(
    model: str | BaseChatModel,
    *,
    max_chars: int = 300,
    max_tokens: int | None = 256,
    timeout: float | None = 30.0,
    asynchronous: bool = False,
) -> Callable[[str, list[str]], list[float] | Coroutine[Any, Any, list[float]]]:
    """A listwise re-ranker for ``index={"rerank": ...}`` from a chat model
    (see the module).

    Args:
        model: a chat model or a ``"provider:model"`` string.
        max_chars: each candidate is cut to this many characters in the prompt.
        max_tokens: output cap of the call.
        timeout: seconds the call may take (the store's ``rerank_timeout``
            applies too).
        asynchronous: return the ``async`` function (for async stores, so the
            call does not take a worker thread).
    """
    ranker = ChatReranker(model, max_chars=max_chars, max_tokens=max_tokens, timeout=timeout)
    return ranker.acall if asynchronous else ranker
