"""One structured-output strategy for every extraction: reflection's
:class:`~langmem_ext.agents.reflection.FactExtractor` and the LangMem-style memory managers.

A :class:`ModelCalls` owns one chat model and the call shape it is asked in:

``"trustcall"``
    trustcall's ``create_extractor`` (the managers only, with hosted models):
    JSON-patch updates and validation repair; it binds ``tool_choice="any"``,
    which llama.cpp's server, LM Studio and others reject.
``"tool"``
    a *named* tool choice, which local OpenAI-compatible servers accept.
``"json"``
    ``response_format={"type": "json_object"}`` on OpenAI-compatible models
    (plain text elsewhere), the JSON read from the reply.

``method="auto"`` starts with the first shape the caller allows (trustcall
only for models not served at another address) and moves on to the next one
*for good* when the server says it cannot serve the shape (:func:`classify`).
A prompt too long for the context raises :class:`ContextOverflow` (the caller
sends less); other errors are raised as they are. Every call has an output
cap and a time limit, and runs without the caller's callbacks (a graph
streamed with ``stream_mode="messages"`` does not show it).

Replies are read one way (:mod:`.replies`: the named tool's arguments, else
JSON in the text; cut-offs recognised without trusting ``finish_reason``);
those names are importable from here too.

Examples:
    >>> ModelCalls.__name__, decode.__module__
    ('ModelCalls', 'langmem_ext.model_calls.replies')
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from .._workers import Workers
from ..engine import Call, Operation
from ..errors import LangmemError
from .replies import MalformedOutput, cut, cut_off, decode, json_in, short, unclosed
from .usage import TokenUsage, UsageRecorder

__all__ = [
    "ContextOverflow",
    "MalformedOutput",
    "ModelCalls",
    "ModelTimeout",
    "OnModelCalls",
    "Shape",
    "classify",
    "cut_off",
    "decode",
    "json_in",
    "local_server",
    "rejects_tool_shape",
    "short",
    "unclosed",
]

logger = logging.getLogger("langmem_ext.agents.reflection")

Shape = Literal["trustcall", "tool", "json"]
Cause = Literal["context_overflow", "unsupported", "timeout", "error"]
# HTTP statuses with which servers reject a request shape they do not support.
_UNSUPPORTED_STATUS = frozenset({400, 404, 422, 500, 501})
_OVERFLOW = re.compile(
    r"context (length|window|size)|maximum context|context_length|n_ctx|too many tokens"
    r"|prompt is too long|input is too long|exceeds? the (context|model)|requested tokens",
    re.I,
)
_WORDS = {"trustcall": "trustcall's requests", "tool": "named-tool calls", "json": "JSON output"}
_TOOLISH = re.compile(r"tool|function|response_format|json_schema|grammar", re.I)


class ContextOverflow(LangmemError, RuntimeError):
    """The prompt does not fit the model's context window (send fewer turns).

    A ``RuntimeError`` too, as before it joined the package's error tree."""

    code = "CONTEXT_OVERFLOW"


class ModelTimeout(LangmemError, TimeoutError):
    """A model call took longer than its time limit. A ``TimeoutError`` (what
    :func:`classify` and callers catching timeouts look for); repeating the
    call may succeed."""

    code = "MODEL_TIMEOUT"
    retryable = True


def classify(error: BaseException) -> Cause:
    """Why a model call failed: ``"context_overflow"`` (the prompt is too long),
    ``"unsupported"`` (the model or server cannot call tools / give this
    output format), ``"timeout"``, or ``"error"`` (anything else: a server
    error, a rate limit, a network failure).

    Examples:
        >>> class ServerError(Exception):
        ...     status_code = 500
        >>> classify(ServerError("Requested tokens (5000) exceed context window of 4096"))
        'context_overflow'
        >>> classify(ServerError("tool_choice 'required' is not supported"))
        'unsupported'
        >>> classify(ServerError("internal error")), classify(TimeoutError())
        ('error', 'timeout')
    """
    text = f"{type(error).__name__}: {error} {getattr(error, 'body', '') or ''}"
    if _OVERFLOW.search(text):
        return "context_overflow"
    if isinstance(error, NotImplementedError):
        return "unsupported"
    if isinstance(error, TimeoutError) or "Timeout" in type(error).__name__:
        return "timeout"
    status = getattr(error, "status_code", None)
    if status in _UNSUPPORTED_STATUS and (status == 501 or _TOOLISH.search(str(error))):
        return "unsupported"
    return "error"


def rejects_tool_shape(error: BaseException) -> bool:
    """Whether ``error`` says the server does not support the request's tool
    shape (``tool_choice="any"``, tools at all), as opposed to any other failure:
    :func:`classify`'s ``"unsupported"``, or a bare server error with a status
    servers answer unsupported shapes with. A context overflow is an HTTP 400
    too, but no reason to change shape.

    Examples:
        >>> class E(Exception):
        ...     status_code = 500
        >>> rejects_tool_shape(E("Unsupported tool_choice")), rejects_tool_shape(ValueError())
        (True, False)
        >>> rejects_tool_shape(type("E4", (Exception,), {"status_code": 400})(
        ...     "This model's maximum context length is 4096 tokens"))
        False
    """
    cause = classify(error)
    return cause == "unsupported" or (
        cause == "error" and getattr(error, "status_code", None) in _UNSUPPORTED_STATUS
    )


def local_server(model: Any) -> bool:
    """An OpenAI-compatible chat model pointed at a server other than OpenAI's."""
    from langchain_openai.chat_models.base import BaseChatOpenAI

    if not isinstance(model, BaseChatOpenAI):
        return False
    base = str(getattr(model, "openai_api_base", None) or "")
    return bool(base) and "api.openai.com" not in base and "azure" not in base


# -- making calls ----------------------------------------------------------------------------


# Extraction runs on its own: the caller's callbacks (a graph's message
# streaming, tracing handlers) would stream the call and show its output. An
# explicit empty config is not enough: a bound model merges in the running
# graph's config from a context variable, so calls also run in a context
# where that variable is cleared (see _fresh_context).
# Our own usage recorder is the one callback the call carries.
def _isolated(name: str, recorder: UsageRecorder) -> RunnableConfig:
    return {
        "callbacks": [recorder],
        "tags": [],
        "metadata": {},
        "configurable": {},
        "run_name": name,
    }


def _fresh_context() -> contextvars.Context:
    """A copy of the current context without the running graph's config."""
    ctx = contextvars.copy_context()
    ctx.run(var_child_runnable_config.set, None)
    return ctx


class ModelCalls:
    """One chat model, the shape it is asked in, and the calls made so far.

    Args:
        model: a chat model, or a ``"provider:model"`` string (resolved with
            LangChain's ``init_chat_model`` at the first call).
        method: ``"auto"`` or one of ``shapes``.
        shapes: the shapes the caller can read, in the order ``"auto"`` tries them.
        max_tokens: output cap of each call (None: the model's own setting).
        timeout: seconds each call may take (None: no limit).
        name: the run name the calls carry.
        workers: run sync calls with a time limit on at most this many threads
            of this instance's own (None: a thread per call). A call past its
            time keeps its thread until it returns: with a bound, calls to a
            model that never answers hold at most ``workers`` threads, however
            many are made.
        purpose: what the calls are for, the ``purpose`` of their tokens in
            the ``memory.llm.tokens`` metric (default: ``name``); see
            :mod:`.usage`.

    Attributes:
        usage: the tokens of every call made so far (:class:`~.usage.TokenUsage`).

    Examples:
        >>> calls = ModelCalls("openai:gpt-4o-mini", method="auto", shapes=("tool", "json"))
        >>> calls.shape, calls.calls, calls.usage.total_tokens
        ('tool', 0, 0)
    """

    def __init__(
        self,
        model: str | BaseChatModel,
        *,
        method: str,
        shapes: Sequence[Shape],
        max_tokens: int | None = None,
        timeout: float | None = None,
        name: str = "extract",
        workers: int | None = None,
        purpose: str | None = None,
    ) -> None:
        self._model = model
        self.method = method
        self.shapes: tuple[Shape, ...] = tuple(shapes)
        self._shape: Shape | None = None if method == "auto" else method  # type: ignore[assignment]
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.name = name
        self.purpose = purpose or name
        self.calls = 0
        self.usage = TokenUsage()
        self._lock = threading.Lock()
        self._workers = None if workers is None else Workers(workers, f"langmem-ext-{name}")

    @property
    def model(self) -> BaseChatModel:
        """The chat model (a string is resolved on first use)."""
        with self._lock:
            if isinstance(self._model, str):
                from langchain.chat_models import init_chat_model

                self._model = init_chat_model(self._model)
            return self._model

    @property
    def shape(self) -> Shape:
        """The shape the next call uses."""
        if self._shape is None:
            usable = [s for s in self.shapes if s != "trustcall" or not local_server(self.model)]
            self._shape = usable[0] if usable else self.shapes[-1]
        return self._shape

    @shape.setter
    def shape(self, value: Shape) -> None:
        self._shape = value

    def fall_back(self, error: BaseException) -> bool:
        """After a failed call: True when the next shape should be tried (the
        server cannot serve this one; ``method="auto"`` only). Raises
        :class:`ContextOverflow` for a prompt too long; False: raise ``error``."""
        cause = classify(error)
        if cause == "context_overflow":
            raise ContextOverflow(
                f"the prompt does not fit the model's context: {cut(error)}"
            ) from error
        shape = self.shape
        # trustcall's tool_choice="any" is what such servers answer with a bare
        # server error; no other shape is left this lightly.
        rejected = rejects_tool_shape(error) if shape == "trustcall" else cause == "unsupported"
        later = self.shapes[self.shapes.index(shape) + 1 :] if shape in self.shapes else ()
        if self.method != "auto" or not rejected or not later:
            return False
        logger.warning(
            "the model server rejected %s (%s); extracting with %s from now on",
            _WORDS[shape],
            cut(repr(error)),
            _WORDS[later[0]],
        )
        self.shape = later[0]
        return True

    def ask(
        self,
        tool: dict[str, Any] | None,
        prompt: Callable[[Shape], Any],
        usage: TokenUsage | None = None,
    ) -> Operation[tuple[Any, int]]:
        """One answer, as an operation: ``prompt(shape)`` sent with the model
        bound for the current shape, moving on to the next shape when the
        server rejects this one. Returns the reply and the calls made; the
        tokens are added to ``usage`` too."""
        made = 0
        while True:
            made += 1
            payload = prompt(self.shape)
            try:
                return (yield self.call(lambda: self.bound(tool), payload, usage)), made
            except Exception as e:
                if not self.fall_back(e):
                    raise

    def bound(self, tool: dict[str, Any] | None) -> Any:
        """The model bound for the current shape (``tool``: its named tool),
        with the output cap and time limit."""
        model = self.model
        from langchain_openai.chat_models.base import BaseChatOpenAI

        caps: dict[str, Any] = {}
        if self.max_tokens is not None:
            if isinstance(model, BaseChatOpenAI):
                caps["max_tokens"] = self.max_tokens
                # ChatOpenAI sends the cap as max_completion_tokens, which
                # some local servers ignore: give them max_tokens as well.
                base = str(getattr(model, "openai_api_base", None) or "")
                if base and "api.openai.com" not in base:
                    caps["extra_body"] = {
                        **(getattr(model, "extra_body", None) or {}),
                        "max_tokens": self.max_tokens,
                    }
            elif "max_tokens" in type(model).model_fields:
                caps["max_tokens"] = self.max_tokens
        if self.timeout is not None and isinstance(model, BaseChatOpenAI):
            caps["timeout"] = self.timeout
        if self.shape == "tool" and tool is not None:
            return model.bind_tools([tool], tool_choice=tool["function"]["name"], **caps)
        if self.shape == "json" and isinstance(model, BaseChatOpenAI):
            caps["response_format"] = {"type": "json_object"}
        return model.bind(**caps) if caps else model

    def call(
        self, runnable: Callable[[], Any], payload: Any, usage: TokenUsage | None = None
    ) -> Call:
        """One counted, isolated call with a time limit of the runnable
        ``runnable()`` makes (binding is part of the call: a model that cannot
        bind tools fails the call), as a :class:`~langmem_ext.engine.runtime.requests.Call`
        run by either driver. Its tokens go to :attr:`usage` and ``usage``."""

        def sync() -> Any:
            self._count()
            recorder = UsageRecorder(self.purpose)
            try:
                return self._sync(runnable, payload, _isolated(self.name, recorder))
            finally:
                self._counted(recorder, usage)

        async def async_() -> Any:
            self._count()
            recorder = UsageRecorder(self.purpose)
            config = _isolated(self.name, recorder)
            request = runnable().ainvoke(payload, config=config)
            # A task copies the context it is created in.
            task = _fresh_context().run(asyncio.get_running_loop().create_task, request)
            try:
                return await asyncio.wait_for(task, self.timeout)
            except asyncio.TimeoutError as e:
                raise ModelTimeout(f"{self.name} call took over {self.timeout:g} s") from e
            finally:
                self._counted(recorder, usage)

        return Call(sync, async_)

    def _sync(self, runnable: Callable[[], Any], payload: Any, config: RunnableConfig) -> Any:
        bound = runnable()
        context = _fresh_context()
        if self.timeout is None:
            return context.run(bound.invoke, payload, config=config)
        if self._workers is not None:
            future = self._workers.submit(context.run, bound.invoke, payload, config)
            if not concurrent.futures.wait([future], self.timeout).done:
                future.cancel()  # still queued behind hung calls: it never runs
                raise ModelTimeout(f"{self.name} call took over {self.timeout:g} s")
            return future.result()
        # A thread of its own, so a call that never returns frees the
        # reflection worker after ``timeout`` (clients given the timeout
        # also drop the request itself; others finish in the background).
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["reply"] = context.run(bound.invoke, payload, config=config)
            except BaseException as e:
                box["error"] = e

        thread = threading.Thread(target=run, name=f"langmem-ext-{self.name}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            raise ModelTimeout(f"{self.name} call took over {self.timeout:g} s")
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def _counted(self, recorder: UsageRecorder, usage: TokenUsage | None) -> None:
        with self._lock:
            self.usage.add(recorder.usage)
        if usage is not None:
            usage.add(recorder.usage)

    def _count(self) -> None:
        with self._lock:
            self.calls += 1


class OnModelCalls:
    """What an extractor built on :class:`ModelCalls` shows of it."""

    _calls: ModelCalls

    @property
    def model(self) -> BaseChatModel:
        """The chat model (a ``"provider:model"`` string is resolved on first use)."""
        return self._calls.model

    @property
    def calls(self) -> int:
        """Model calls made so far (failed calls included)."""
        return self._calls.calls

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every call made so far (see :mod:`.usage`)."""
        return self._calls.usage

    @property
    def max_tokens(self) -> int | None:
        """Output cap of each call (None: the model's own setting)."""
        return self._calls.max_tokens

    @property
    def timeout(self) -> float | None:
        """Seconds each call may take (None: no limit)."""
        return self._calls.timeout
