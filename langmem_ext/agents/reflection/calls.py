"""One structured-output strategy for every extraction: reflection's
:class:`~.extract.FactExtractor` and the LangMem-style memory managers.

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

Replies are read one way: the named tool's arguments, else JSON in the text
(:func:`decode`). A reply counts as cut off (:func:`cut_off`) when the server
says so, when it used the whole output cap, or when its JSON stops before it
closes; a server that reports ``finish_reason="tool_calls"`` for a cut-off
call is not believed.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> reply = AIMessage('{"facts": [{"content": "Likes te',
    ...                   response_metadata={"finish_reason": "stop"})
    >>> cut_off(reply, max_tokens=512)
    True
    >>> decode(AIMessage('Sure: {"facts": []}'), "extract_facts")
    {'facts': []}
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from ...engine.requests import Call, Operation
from .screen import cut

__all__ = [
    "ContextOverflow",
    "MalformedOutput",
    "ModelCalls",
    "OnModelCalls",
    "Shape",
    "classify",
    "cut_off",
    "decode",
    "json_in",
    "local_server",
    "rejects_tool_shape",
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


class MalformedOutput(ValueError):
    """The model's reply is not the requested object (bad JSON, no tool call
    and no JSON text). ``truncated`` is True when the reply was cut off."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


class ContextOverflow(RuntimeError):
    """The prompt does not fit the model's context window (send fewer turns)."""


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


# -- reading replies ---------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def json_in(text: str) -> Any:
    """The JSON value in a reply's text (code fences and chatter around it allowed).

    Raises:
        MalformedOutput: no JSON, or JSON that does not parse (``truncated``
            when it stops before it closes).
    """
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start = min((i for i in (body.find("{"), body.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise MalformedOutput(f"the reply holds no JSON (and no tool call): {short(text)}")
    try:
        value, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as e:
        raise MalformedOutput(
            f"invalid JSON in the reply ({e.msg} at character {e.pos} of {len(body) - start}): "
            f"{short(text)}",
            truncated=unclosed(body[start:]),
        ) from e
    return value


def unclosed(text: Any) -> bool:
    """Whether ``text`` is JSON that stops before it closes: an open string,
    object or list at its end (what a cut-off answer looks like), as opposed
    to JSON that is wrong in the middle.

    Examples:
        >>> unclosed('{"facts": [{"content": "Likes'), unclosed('{"a": 1,}'), unclosed("")
        (True, False, True)
    """
    if not isinstance(text, str):
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0 or not text.strip()


def _output_tokens(reply: BaseMessage) -> int | None:
    usage = getattr(reply, "usage_metadata", None) or {}
    if usage.get("output_tokens"):
        return int(usage["output_tokens"])
    meta = getattr(reply, "response_metadata", None) or {}
    tokens = (meta.get("token_usage") or meta.get("usage") or {}).get("completion_tokens")
    return int(tokens) if isinstance(tokens, int) else None


def cut_off(reply: BaseMessage, max_tokens: int | None = None, tool: str | None = None) -> bool:
    """Whether ``reply`` was cut off at the output cap. The server's word
    (OpenAI's ``finish_reason="length"``, Anthropic's ``stop_reason=
    "max_tokens"``, Ollama's ``done_reason="length"``) is not needed: the
    whole cap used, or a tool call or JSON text that stops before it closes,
    count too (llama.cpp's server says ``"tool_calls"`` for a cut-off call).

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> cut_off(AIMessage("", usage_metadata={"input_tokens": 9, "output_tokens": 512,
        ...                                       "total_tokens": 521}), max_tokens=512)
        True
        >>> cut_off(AIMessage('{"facts": []}'), max_tokens=512)
        False
    """
    meta = getattr(reply, "response_metadata", None) or {}
    if (
        meta.get("finish_reason") == "length"
        or meta.get("done_reason") == "length"
        or meta.get("stop_reason") == "max_tokens"
    ):
        return True
    used = _output_tokens(reply)
    if max_tokens is not None and used is not None and used >= max_tokens:
        return True
    if isinstance(reply, AIMessage):
        named = [tc for tc in reply.tool_calls if tc["name"] == tool]
        if named:
            # Empty arguments: the call stopped before its first field.
            return not any(tc["args"] for tc in named)
        for bad in reply.invalid_tool_calls:
            if bad.get("name") in (tool, None) and unclosed(bad.get("args")):
                return True
        if reply.tool_calls:
            return False
    text = reply.text if isinstance(reply.text, str) else str(reply.content)
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    return start >= 0 and unclosed(text[start:])


def decode(reply: BaseMessage, tool: str, *, max_tokens: int | None = None) -> Any:
    """The object in a reply: the ``tool`` call's arguments, else JSON in the text.

    Raises:
        MalformedOutput: no usable object (its message quotes at most a short
            excerpt of the reply; ``truncated`` when it was cut off).
    """
    truncated = cut_off(reply, max_tokens, tool)
    if isinstance(reply, AIMessage):
        for tc in reply.tool_calls:
            if tc["name"] == tool:
                if not tc["args"]:
                    raise MalformedOutput("the tool call has no arguments", truncated=truncated)
                return tc["args"]
        for bad in reply.invalid_tool_calls:
            if bad.get("name") in (tool, None):
                raise MalformedOutput(
                    f"the tool call's arguments are not valid JSON "
                    f"({_json_error(bad.get('args'))}): {short(bad.get('args'))}",
                    truncated=truncated,
                )
    text = reply.text if isinstance(reply.text, str) else str(reply.content)
    try:
        return json_in(text)
    except MalformedOutput as e:
        e.truncated = e.truncated or truncated
        raise


def _json_error(text: Any) -> str:
    if not isinstance(text, str):
        return "not a string"
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return f"{e.msg} at character {e.pos} of {len(text)}"
    return "unreadable"


def short(value: Any, n: int = 120) -> str:
    """``repr(value)`` cut to ``n`` characters (broken answers are never quoted whole)."""
    return cut(repr(value), n)


# -- making calls ----------------------------------------------------------------------------


# Extraction runs on its own: the caller's callbacks (a graph's message
# streaming, tracing handlers) would stream the call and show its output. An
# explicit empty config is not enough: a bound model merges in the running
# graph's config from a context variable, so calls also run in a context
# where that variable is cleared (see _fresh_context).
def _isolated(name: str) -> RunnableConfig:
    return {"callbacks": [], "tags": [], "metadata": {}, "configurable": {}, "run_name": name}


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

    Examples:
        >>> calls = ModelCalls("openai:gpt-4o-mini", method="auto", shapes=("tool", "json"))
        >>> calls.shape, calls.calls
        ('tool', 0)
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
    ) -> None:
        self._model = model
        self.method = method
        self.shapes: tuple[Shape, ...] = tuple(shapes)
        self._shape: Shape | None = None if method == "auto" else method  # type: ignore[assignment]
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.name = name
        self.calls = 0
        self._lock = threading.Lock()

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
        self, tool: dict[str, Any] | None, prompt: Callable[[Shape], Any]
    ) -> Operation[tuple[Any, int]]:
        """One answer, as an operation: ``prompt(shape)`` sent with the model
        bound for the current shape, moving on to the next shape when the
        server rejects this one. Returns the reply and the calls made."""
        made = 0
        while True:
            made += 1
            payload = prompt(self.shape)
            try:
                return (yield self.call(lambda: self.bound(tool), payload)), made
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

    def call(self, runnable: Callable[[], Any], payload: Any) -> Call:
        """One counted, isolated call with a time limit of the runnable
        ``runnable()`` makes (binding is part of the call: a model that cannot
        bind tools fails the call), as a :class:`~langmem_ext.engine.requests.Call`
        run by either driver."""
        config = _isolated(self.name)

        def sync() -> Any:
            self._count()
            bound = runnable()
            context = _fresh_context()
            if self.timeout is None:
                return context.run(bound.invoke, payload, config=config)
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
                raise TimeoutError(f"{self.name} call took over {self.timeout:g} s")
            if "error" in box:
                raise box["error"]
            return box["reply"]

        async def async_() -> Any:
            self._count()
            request = runnable().ainvoke(payload, config=config)
            # A task copies the context it is created in.
            task = _fresh_context().run(asyncio.get_running_loop().create_task, request)
            try:
                return await asyncio.wait_for(task, self.timeout)
            except asyncio.TimeoutError as e:
                raise TimeoutError(f"{self.name} call took over {self.timeout:g} s") from e

        return Call(sync, async_)

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
    def max_tokens(self) -> int | None:
        """Output cap of each call (None: the model's own setting)."""
        return self._calls.max_tokens

    @property
    def timeout(self) -> float | None:
        """Seconds each call may take (None: no limit)."""
        return self._calls.timeout
