"""LangMem's memory shapes: the default ``Memory`` and ``SummarizeThread``
schemas, ``RemoveDoc`` deletions, ``ExtractedMemory`` results, the default
manager instructions, and how a conversation is shown to a manager.

Examples:
    >>> ExtractedMemory("m1", Memory(content="Likes tea")).content.content
    'Likes tea'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from langchain_core.messages import convert_to_messages
from langchain_core.messages.utils import merge_message_runs
from pydantic import BaseModel, Field

from ..engine import shown
from ..errors import InvalidValueError
from ..model_calls.calls import rejects_tool_shape

__all__ = [
    "MEMORY_INSTRUCTIONS",
    "TOOL_NAME",
    "ExtractedMemory",
    "Memory",
    "Method",
    "RemoveDoc",
    "SummarizeThread",
    "conversation",
    "is_empty",
    "refuse_empty",
    "rejects_tool_shape",
]

Method = Literal["auto", "trustcall", "tool", "json"]
TOOL_NAME = "manage_memories"


class Memory(BaseModel):
    """Call this tool once for each new memory you want to record. Use multi-tool
    calling to record multiple new memories."""

    content: str = Field(
        description="The memory as a well-written, standalone episode/fact/note/preference/etc."
        " Refer to the user's instructions for more information the preferred memory organization."
    )


class SummarizeThread(BaseModel):
    """A conversation's title and summary (:func:`create_thread_extractor`'s default)."""

    title: str
    summary: str


class RemoveDoc(BaseModel):
    """A deletion of the memory ``json_doc_id`` (trustcall's shape, so results of
    either call shape read the same)."""

    json_doc_id: str


class ExtractedMemory(NamedTuple):
    """One memory a manager produced: its id and content (a schema instance, or
    :class:`RemoveDoc`)."""

    id: str
    content: BaseModel


def conversation(messages: Sequence[Any]) -> str:
    """The messages as LangMem renders them for its managers."""
    msgs = merge_message_runs(convert_to_messages(list(messages)))
    return "\n\n".join(m.pretty_repr() for m in msgs)


MEMORY_INSTRUCTIONS = """You are a long-term memory manager maintaining a core store of \
semantic, procedural, and episodic memory. These memories power a life-long learning \
agent's core predictive model.

What should the agent learn from this interaction about the user, itself, or how it \
should act? Reflect on the input trajectory and current memories (if any).

1. **Extract & Contextualize**: identify essential facts, relationships, preferences, \
reasoning procedures, and context; caveat uncertain information.
2. **Compare & Update**: attend to novel information that deviates from existing \
memories; consolidate and compress redundant memories; remove incorrect or redundant \
memories while keeping internal consistency.
3. **Synthesize & Reason**: what can you conclude about the user, the agent ("I"), or \
the environment?

Record memory content exactly as you'd want to recall it. Prefer dense, complete \
memories over overlapping ones; nothing worth remembering forgotten, nothing false \
remembered."""


def is_empty(content: Any) -> bool:
    """Whether a memory's content says nothing: None, blank text, or an object
    or list holding only such values (``{}``, ``{"content": " "}``,
    ``{"topic": None, "tags": []}``). Numbers and booleans say something.

    Examples:
        >>> is_empty({"content": " "}), is_empty(Memory(content="")), is_empty({"n": 0})
        (True, True, False)
    """
    todo = [content.model_dump(mode="json") if isinstance(content, BaseModel) else content]
    while todo:  # a loop, not recursion: a deeply nested value cannot overflow the stack
        value = todo.pop()
        if isinstance(value, str):
            if value.strip():
                return False
        elif isinstance(value, dict):
            todo += value.values()
        elif isinstance(value, list | tuple):
            todo += value
        elif value is not None:
            return False
    return True


def refuse_empty(id: str, content: Any) -> None:
    """Raise :class:`~langmem_ext.errors.InvalidValueError` (``INVALID_VALUE``,
    as the engine's writers do) when ``content`` :func:`is_empty`."""
    if is_empty(content):
        given = content.model_dump(mode="json") if isinstance(content, BaseModel) else content
        raise InvalidValueError(
            f"memory {id!r} would have empty content ({shown(given)}); "
            "a memory must say something. Nothing was changed: run the manager again, or "
            "let it delete the memory (enable_deletes=True) rather than empty it"
        )
