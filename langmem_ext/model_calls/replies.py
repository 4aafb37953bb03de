"""Reading a model's reply as the requested object, one way for every
extraction (:mod:`.calls` makes the calls).

A reply is the named tool's arguments, else JSON in the text (:func:`decode`).
It counts as cut off (:func:`cut_off`) when the server says so, when it used
the whole output cap, or when its JSON stops before it closes; a server that
reports ``finish_reason="tool_calls"`` for a cut-off call is not believed.

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

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ..errors import LangmemError

__all__ = [
    "LOG_CHARS",
    "MalformedOutput",
    "cut",
    "cut_off",
    "decode",
    "json_in",
    "short",
    "unclosed",
]

#: Model output quoted in a log line or in feedback to the model is cut to
#: this many characters (a broken reply can be tens of kilobytes).
LOG_CHARS = 200


def cut(text: object, n: int = LOG_CHARS) -> str:
    """``text`` (``str()`` of anything) cut to ``n`` characters with a marker.

    Examples:
        >>> cut("x" * 500, 20)
        'xxxxxxxxxxxxxxxxxxxx… [480 more characters]'
    """
    s = text if isinstance(text, str) else str(text)
    if len(s) <= n:
        return s
    return f"{s[:n]}… [{len(s) - n} more characters]"


class MalformedOutput(LangmemError, ValueError):
    """The model's reply is not the requested object (bad JSON, no tool call
    and no JSON text). ``truncated`` is True when the reply was cut off.

    A ``ValueError`` too, as before it joined the package's error tree."""

    code = "MALFORMED_OUTPUT"

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        # In ``details`` too, so a pickled copy (executors) keeps it.
        super().__init__(message, truncated=truncated)
        self.truncated = truncated


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
