"""LangMem's short-term memory: long threads folded into a running summary
within a token budget (``summarize_messages``, ``asummarize_messages``,
``SummarizationNode``, ``RunningSummary``, ``SummarizationResult``), with
LangMem's names, arguments and return shapes, and one body for sync and async.

It follows LangMem's rule (the oldest messages, at least
``max_tokens_before_summary`` tokens of them, are summarized once the rest
fits beside the summary in ``max_tokens``). What differs, on purpose:

* **The output stays within ``max_tokens``.** With a running summary, new
  messages are summarized once they fill what the summary leaves of
  ``max_tokens`` (LangMem waits until they reach ``max_tokens`` on their own,
  so what it returns passes ``max_tokens`` by the summary's size). An explicit
  ``max_tokens_before_summary`` is followed as given.
* **The newest user message is never summarized.** LangMem folds it into the
  summary when only the whole thread reaches the threshold, and the model is
  then sent a summary with no question to answer.
* **A tool call is never cut from its results.** The summarized part is
  extended over every tool result that follows it, so the messages left never
  start with an orphan ``ToolMessage`` (which providers reject).
* **A summary whose last message is gone still resumes.** When the thread no
  longer holds the last summarized message (it was removed or edited),
  summarizing resumes after the last message the summary covers; LangMem
  starts over and raises on the first summarized id.
* The default token counter is the package's (``cl100k_base``, counting each
  message's text plus a few tokens of overhead).

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> msgs = [HumanMessage("x " * 40, id="1"), AIMessage("y " * 40, id="2"),
    ...         HumanMessage("what next?", id="3")]
    >>> model = ScriptedExtractionModel([AIMessage("They talked about x and y.")])
    >>> out = summarize_messages(msgs, running_summary=None, model=model, max_tokens=60,
    ...                          max_summary_tokens=20)
    >>> out.running_summary.summary, [m.id for m in out.messages][1:]
    ('They talked about x and y.', ['3'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import LanguageModelLike
from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.prompts.chat import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.store.base import BaseStore

from ..engine import Call, Operation, run_async, run_sync
from ..errors import ConfigurationError, InvalidValueError
from ..model_calls.tokens import token_counter as text_counter
from ..model_calls.usage import TokenUsage, UsageRecorder, recorded
from .running_summaries import RunningSummary, SummaryPlace

__all__ = [
    "DEFAULT_EXISTING_SUMMARY_PROMPT",
    "DEFAULT_FINAL_SUMMARY_PROMPT",
    "DEFAULT_INITIAL_SUMMARY_PROMPT",
    "RunningSummary",
    "SummarizationNode",
    "SummarizationResult",
    "asummarize_messages",
    "count_tokens",
    "summarize_messages",
]

TokenCounter = Callable[[Sequence[BaseMessage]], int]

DEFAULT_INITIAL_SUMMARY_PROMPT = ChatPromptTemplate.from_messages(
    [("placeholder", "{messages}"), ("user", "Create a summary of the conversation above:")]
)
DEFAULT_EXISTING_SUMMARY_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("placeholder", "{messages}"),
        (
            "user",
            "This is summary of the conversation so far: {existing_summary}\n\n"
            "Extend this summary by taking into account the new messages above:",
        ),
    ]
)
DEFAULT_FINAL_SUMMARY_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("placeholder", "{system_message}"),
        ("system", "Summary of the conversation so far: {summary}"),
        ("placeholder", "{messages}"),
    ]
)


@dataclass
class SummarizationResult:
    """The messages to send to the model, the running summary (None when
    nothing has been summarized yet), and what summarizing cost (``usage``:
    no calls when nothing was summarized; see
    :mod:`langmem_ext.model_calls.usage`)."""

    messages: list[AnyMessage]
    running_summary: RunningSummary | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)


def count_tokens(messages: Sequence[BaseMessage]) -> int:
    """The package's token count of ``messages`` (text plus 4 per message)."""
    count = text_counter()
    return sum(count(m.text if isinstance(m.text, str) else str(m.content)) + 4 for m in messages)


def _steps(
    messages: Sequence[AnyMessage],
    running_summary: RunningSummary | None,
    model: LanguageModelLike,
    max_tokens: int,
    max_tokens_before_summary: int | None,
    max_summary_tokens: int,
    token_counter: TokenCounter,
    prompts: tuple[ChatPromptTemplate, ChatPromptTemplate, ChatPromptTemplate],
) -> Operation[SummarizationResult]:
    initial, existing, final = prompts
    if max_summary_tokens >= max_tokens:
        raise ConfigurationError("`max_summary_tokens` must be less than `max_tokens`.")
    threshold = max_tokens if max_tokens_before_summary is None else max_tokens_before_summary
    msgs = list(messages)
    system = msgs.pop(0) if msgs and isinstance(msgs[0], SystemMessage) else None
    if not msgs:
        return SummarizationResult(messages=list(messages), running_summary=running_summary)
    # What is left after the cut must fit beside the summary and the system message.
    remaining_room = max_tokens - max_summary_tokens
    if system is not None:
        remaining_room -= token_counter([system])
    start = _first_new(msgs, running_summary)
    new = msgs[start:]
    _check_ids(new, running_summary)
    if running_summary is not None and max_tokens_before_summary is None:
        # The summary is sent too: the new messages may only fill what it
        # leaves of max_tokens (LangMem lets them reach max_tokens on their
        # own, so the output passes max_tokens by the summary's size).
        summary_msg = final.invoke(
            {"system_message": [], "summary": running_summary.summary, "messages": []}
        )
        threshold -= token_counter(summary_msg.to_messages())
    cut = _cut(new, threshold, remaining_room, token_counter)
    summary = running_summary
    usage = TokenUsage()
    if cut:
        part = new[:cut]
        room = max_tokens
        if running_summary is not None:
            room -= token_counter([SystemMessage(content=running_summary.summary)])
        shown = _fit(part, room, token_counter)
        if running_summary is not None:
            prompt = existing.invoke(
                {"messages": shown, "existing_summary": running_summary.summary}
            )
        else:
            prompt = initial.invoke({"messages": shown})
        # The caller's callbacks stay (a graph streams the summary as before);
        # the recorder counts its tokens beside them.
        recorder = UsageRecorder("summarization")
        reply = yield Call(
            lambda: model.invoke(prompt.to_messages(), recorded(recorder)),
            lambda: model.ainvoke(prompt.to_messages(), recorded(recorder)),
        )
        usage = recorder.usage
        text = reply.content if isinstance(reply, BaseMessage) else str(reply)
        summary = RunningSummary(
            summary=text if isinstance(text, str) else str(text),
            summarized_message_ids=(
                (running_summary.summarized_message_ids if running_summary else set())
                | {str(m.id) for m in part}
            ),
            last_summarized_message_id=str(part[-1].id),
        )
        new = new[cut:]
    if summary is None:
        return SummarizationResult(messages=list(messages), running_summary=None)
    # A system message that already carries the summary (a node that rewrote
    # the thread) is not repeated.
    repeat = system is not None and not (
        running_summary is not None and running_summary.summary in str(system.content)
    )
    out = final.invoke(
        {
            "system_message": [system] if repeat else [],
            "summary": summary.summary,
            "messages": new,
        }
    )
    return SummarizationResult(
        messages=list(out.to_messages()),  # type: ignore[arg-type]
        running_summary=summary,
        usage=usage,
    )


def _check_ids(new: list[AnyMessage], running: RunningSummary | None) -> None:
    done = running.summarized_message_ids if running is not None else set()
    for m in new:
        if m.id is None:
            raise InvalidValueError(
                "Messages are required to have ID field (the running summary tracks "
                "them by id): give each message an id, as LangGraph's add_messages does."
            )
        if m.id in done:
            raise InvalidValueError(
                f"Message with ID {m.id} has already been summarized: pass the thread's "
                "messages once each, with the running summary of that thread."
            )


def _first_new(msgs: list[AnyMessage], running: RunningSummary | None) -> int:
    """Where the messages the summary does not cover start."""
    if running is None:
        return 0
    last = running.last_summarized_message_id
    ids = [m.id for m in msgs]
    if last is not None and last in ids:
        return ids.index(last) + 1
    # A summary without the last id (LangMem's older shape): after the last
    # message it covers.
    covered = [i for i, m in enumerate(msgs) if m.id in running.summarized_message_ids]
    return covered[-1] + 1 if covered else 0


def _cut(new: list[AnyMessage], threshold: int, room: int, count: TokenCounter) -> int:
    """How many of ``new`` to summarize: the shortest prefix of at least
    ``threshold`` tokens after which the rest fits in ``room`` (LangMem's
    rule), extended over the tool results that answer its last calls, and
    never reaching the newest user message."""
    total = count(new)
    used = 0
    # The newest user message and what follows it are what the model answers:
    # never folded into the summary.
    asks = [i for i, m in enumerate(new) if isinstance(m, HumanMessage)]
    cap = asks[-1] if asks else len(new)
    for i, m in enumerate(new):
        used += count([m])
        if used >= threshold and total - used <= room:
            n = i + 1
            while n < len(new) and isinstance(new[n], ToolMessage):
                n += 1  # a call is never cut from its results
            return min(n, cap)
    return 0


def _fit(part: list[AnyMessage], room: int, count: TokenCounter) -> list[AnyMessage]:
    """The messages the summarizing model is shown: the newest of ``part``
    within ``room`` tokens (the same model usually serves the app and the
    summary, so its window is the app's)."""
    if count(part) <= room:
        return part
    kept: list[AnyMessage] = trim_messages(  # type: ignore[assignment]
        part,
        max_tokens=room,
        token_counter=count,
        start_on="human",
        strategy="last",
        allow_partial=True,
    )
    return kept or part


def summarize_messages(
    messages: Sequence[AnyMessage],
    *,
    running_summary: RunningSummary | None,
    model: LanguageModelLike,
    max_tokens: int,
    max_tokens_before_summary: int | None = None,
    max_summary_tokens: int = 256,
    token_counter: TokenCounter = count_tokens,
    initial_summary_prompt: ChatPromptTemplate = DEFAULT_INITIAL_SUMMARY_PROMPT,
    existing_summary_prompt: ChatPromptTemplate = DEFAULT_EXISTING_SUMMARY_PROMPT,
    final_prompt: ChatPromptTemplate = DEFAULT_FINAL_SUMMARY_PROMPT,
) -> SummarizationResult:
    """Fold the oldest messages into a running summary once the new ones pass
    ``max_tokens_before_summary`` (default ``max_tokens``); see the module.

    Returns:
        :class:`SummarizationResult`: the messages to send (system message,
        the summary as a system message, the messages after it) and the
        running summary to keep in the state.

    Raises:
        ValueError: ``max_summary_tokens`` is not below ``max_tokens``, or a
            message has no id.
    """
    prompts = (initial_summary_prompt, existing_summary_prompt, final_prompt)
    steps = _steps(
        messages,
        running_summary,
        model,
        max_tokens,
        max_tokens_before_summary,
        max_summary_tokens,
        token_counter,
        prompts,
    )
    return run_sync(steps, None)  # type: ignore[arg-type]


async def asummarize_messages(
    messages: Sequence[AnyMessage],
    *,
    running_summary: RunningSummary | None,
    model: LanguageModelLike,
    max_tokens: int,
    max_tokens_before_summary: int | None = None,
    max_summary_tokens: int = 256,
    token_counter: TokenCounter = count_tokens,
    initial_summary_prompt: ChatPromptTemplate = DEFAULT_INITIAL_SUMMARY_PROMPT,
    existing_summary_prompt: ChatPromptTemplate = DEFAULT_EXISTING_SUMMARY_PROMPT,
    final_prompt: ChatPromptTemplate = DEFAULT_FINAL_SUMMARY_PROMPT,
) -> SummarizationResult:
    """Async :func:`summarize_messages`."""
    prompts = (initial_summary_prompt, existing_summary_prompt, final_prompt)
    steps = _steps(
        messages,
        running_summary,
        model,
        max_tokens,
        max_tokens_before_summary,
        max_summary_tokens,
        token_counter,
        prompts,
    )
    return await run_async(steps, None)  # type: ignore[arg-type]


class SummarizationNode(RunnableLambda):
    """LangMem's node (e.g. LangGraph's ``create_react_agent(pre_model_hook=...)``):
    reads ``state[input_messages_key]`` and ``state["context"]["running_summary"]``,
    returns ``{output_messages_key: messages, "context": {"running_summary": ...}}``.
    With ``output_messages_key`` equal to ``input_messages_key`` the thread itself
    is rewritten (all messages removed, then the summary and the newer ones).

    ``summaries_namespace=("summaries", "{user_id}")`` also keeps each thread's
    running summary in the store (``store=``, or the graph's), keyed by the
    run's ``thread_id``: a thread resumed where its state has no summary (another
    worker, no checkpointer) starts from the stored one.
    """

    def __init__(
        self,
        *,
        model: LanguageModelLike,
        max_tokens: int,
        max_tokens_before_summary: int | None = None,
        max_summary_tokens: int = 256,
        token_counter: TokenCounter = count_tokens,
        initial_summary_prompt: ChatPromptTemplate = DEFAULT_INITIAL_SUMMARY_PROMPT,
        existing_summary_prompt: ChatPromptTemplate = DEFAULT_EXISTING_SUMMARY_PROMPT,
        final_prompt: ChatPromptTemplate = DEFAULT_FINAL_SUMMARY_PROMPT,
        input_messages_key: str = "messages",
        output_messages_key: str = "summarized_messages",
        name: str = "summarization",
        summaries_namespace: Any = None,
        store: BaseStore | None = None,
    ) -> None:
        place = SummaryPlace(summaries_namespace, store) if summaries_namespace else None
        settings: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "max_tokens_before_summary": max_tokens_before_summary,
            "max_summary_tokens": max_summary_tokens,
            "token_counter": token_counter,
            "prompts": (initial_summary_prompt, existing_summary_prompt, final_prompt),
        }

        def steps(state: Any, config: Any) -> Operation[dict[str, Any]]:
            get = state.get if isinstance(state, dict) else lambda k, d=None: getattr(state, k, d)
            context = dict(get("context", None) or {})
            msgs = get(input_messages_key, None)
            if msgs is None:
                raise InvalidValueError(
                    f"Missing required field `{input_messages_key}` in the input: the node "
                    "reads the thread's messages there (input_messages_key)."
                )
            before = context.get("running_summary")
            if before is None and place is not None:
                before = yield from place.load(config)
            result = yield from _steps(msgs, before, **settings)
            update: dict[str, Any] = {output_messages_key: result.messages}
            if result.running_summary is not None:
                if place is not None and result.running_summary is not before:
                    yield from place.save(result.running_summary, config)
                update["context"] = {**context, "running_summary": result.running_summary}
                if input_messages_key == output_messages_key:
                    # Writing back to the thread: its messages are replaced by
                    # the summary and what follows it.
                    update[output_messages_key] = [
                        RemoveMessage(REMOVE_ALL_MESSAGES),
                        *result.messages,
                    ]
            return update

        def where() -> Any:
            return place.resolve_store() if place is not None else None

        def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            return run_sync(steps(state, config), where())

        async def anode(state: Any, config: RunnableConfig) -> dict[str, Any]:
            return await run_async(steps(state, config), where())

        super().__init__(node, afunc=anode, name=name)
