"""LangMem's memory manager and thread extractor, on trustcall where the model
server accepts it and on one plain call where it does not: the structured-output
strategy reflection uses too (:mod:`langmem_ext.model_calls.calls`).

:func:`create_memory_manager` and :func:`create_thread_extractor` have
LangMem's names, signatures and return shapes (``ExtractedMemory(id,
content)`` tuples; a schema instance). Two call shapes:

``"trustcall"``
    trustcall's ``create_extractor`` (as LangMem does): JSON-patch updates of
    existing memories and validation repair. It binds tools with
    ``tool_choice="any"``, which llama.cpp's server, LM Studio and others reject.
``"tool"`` / ``"json"``
    One call per step: a *named* tool (``manage_memories``), or a JSON object
    in the reply, listing new and updated memories (each validated against its
    schema) and deletions; invalid output is asked for again once, with a short
    note of what was wrong.

``method="auto"`` (default) uses trustcall with hosted providers and the
one-call shape with OpenAI-compatible servers at another address (llama.cpp,
LM Studio, Ollama, vLLM: they reject ``tool_choice="any"``, and small models
there rarely call a tool nobody named, so trustcall's first call would quietly
extract nothing). When a server rejects trustcall's tool shape
(``NotImplementedError``, or an HTTP 400/404/422/500/501 that is not a context
overflow), the manager switches to ``"tool"`` for good, logged once; a server
that rejects tools altogether moves on to ``"json"``. A reply cut off at the
output cap (``max_tokens``) is asked again for fewer, shorter memories; every
call has a time limit (``timeout``) and runs without the caller's callbacks.

Examples:
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> from langchain_core.messages import AIMessage
    >>> reply = AIMessage("", tool_calls=[{"name": "manage_memories", "id": "c1",
    ...     "args": {"memories": [{"kind": "Memory", "content": {"content": "Likes tea"}}]}}])
    >>> manager = create_memory_manager(ScriptedExtractionModel([reply]), method="tool")
    >>> [m.content.content for m in manager.invoke({"messages": [("user", "I like tea")]})]
    ['Likes tea']
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, ValidationError

from ..agents.reflection.screen import examples_in, is_example
from ..engine import Operation, run_async, run_sync
from ..errors import ConfigurationError, ExtractionError, InvalidValueError
from ..model_calls.calls import (
    MalformedOutput,
    ModelCalls,
    OnModelCalls,
    Shape,
    decode,
)
from ..model_calls.replies import cut
from ..model_calls.usage import TokenUsage, WithUsage
from .schemas import (
    MEMORY_INSTRUCTIONS,
    TOOL_NAME,
    ExtractedMemory,
    Memory,
    Method,
    RemoveDoc,
    SummarizeThread,
    conversation,
    refuse_empty,
    rejects_tool_shape,
)

__all__ = [
    "ExtractedMemory",
    "Memory",
    "MemoryManager",
    "RemoveDoc",
    "SummarizeThread",
    "create_memory_manager",
    "rejects_tool_shape",
]

logger = logging.getLogger("langmem_ext.agents.reflection")


class _Existing(NamedTuple):
    id: str
    kind: str
    content: Any


class MemoryManager(OnModelCalls, Runnable[dict[str, Any], list[ExtractedMemory]]):
    """LangMem's memory manager (see :func:`create_memory_manager`)."""

    def __init__(
        self,
        model: str | BaseChatModel,
        *,
        schemas: Sequence[type[BaseModel]] = (Memory,),
        instructions: str = MEMORY_INSTRUCTIONS,
        enable_inserts: bool = True,
        enable_updates: bool = True,
        enable_deletes: bool = False,
        method: Method = "auto",
        max_tokens: int | None = None,
        timeout: float | None = None,
        purpose: str = "memory_manager",
    ) -> None:
        if method not in ("auto", "trustcall", "tool", "json"):
            raise ConfigurationError(
                f"unknown method {method!r}; use 'auto', 'trustcall', 'tool' or 'json'"
            )
        if not any((enable_inserts, enable_updates, enable_deletes)):
            raise ConfigurationError(
                "enable at least one of enable_inserts, enable_updates and enable_deletes"
            )
        self.schemas = tuple(schemas or (Memory,))
        for s in self.schemas:
            if not (isinstance(s, type) and issubclass(s, BaseModel)):
                raise ConfigurationError(f"schemas must be pydantic models, got {s!r}")
        self.by_name = {s.__name__: s for s in self.schemas}
        self.instructions = instructions
        self.enable_inserts = enable_inserts
        self.enable_updates = enable_updates
        self.enable_deletes = enable_deletes
        self.method = method
        self._calls = ModelCalls(
            model,
            method=method,
            shapes=("trustcall", "tool", "json"),
            max_tokens=max_tokens,
            timeout=timeout,
            name=TOOL_NAME,
            purpose=purpose,
        )

    @property
    def shape(self) -> Shape:
        """The call shape the next step uses (see the module docs)."""
        return self._calls.shape

    @shape.setter
    def shape(self, value: Shape) -> None:
        self._calls.shape = value

    @functools.cached_property
    def examples(self) -> frozenset[str]:
        """The example texts of the instructions and schemas (a memory equal to
        one is the model copying the request: dropped, as in reflection)."""
        return examples_in(
            self.instructions, *(json.dumps(s.model_json_schema()) for s in self.schemas)
        )

    # -- the Runnable faces ------------------------------------------------------------

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[ExtractedMemory]:
        """Memories from ``{"messages", "existing"?, "max_steps"?}``: a list
        (LangMem's shape) whose ``usage`` is the run's
        :class:`~langmem_ext.model_calls.usage.TokenUsage`."""
        usage = TokenUsage()
        got = run_sync(self.steps(input, config, usage), None)  # type: ignore[arg-type]
        return WithUsage(got, usage)

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[ExtractedMemory]:
        """Async :meth:`invoke`."""
        usage = TokenUsage()
        got = await run_async(self.steps(input, config, usage), None)  # type: ignore[arg-type]
        return WithUsage(got, usage)

    async def __call__(
        self, messages: Sequence[AnyMessage], existing: Sequence[Any] | None = None
    ) -> list[ExtractedMemory]:
        """LangMem's ``await manager(messages, existing)``."""
        payload: dict[str, Any] = {"messages": messages}
        if existing is not None:
            payload["existing"] = existing
        return await self.ainvoke(payload)

    # -- one body for both ----------------------------------------------------------------

    def steps(
        self,
        input: dict[str, Any],
        config: RunnableConfig | None = None,
        usage: TokenUsage | None = None,
    ) -> Operation[list[ExtractedMemory]]:
        """The manager as an operation: each model call is a :class:`Call`
        (their tokens added to ``usage``)."""
        if not isinstance(input, dict) or "messages" not in input:
            raise ConfigurationError(
                "a memory manager takes {'messages': [...], 'existing'?: [...], "
                f"'max_steps'?: int}}, got {type(input).__name__}"
            )
        max_steps = input.get("max_steps") or 1
        existing = self._existing(input.get("existing"))
        external = {e.id for e in existing}
        results: dict[str, BaseModel] = {}
        current = list(existing)
        transcript = conversation(input["messages"])
        for _ in range(max_steps):
            got = yield from self._one_step(transcript, current, usage)
            if got is None:
                break
            for mid, memory in got.items():
                if not isinstance(memory, RemoveDoc):
                    refuse_empty(mid, memory)  # as every writer of the engine refuses it
            results.update(got)
            current = [
                _Existing(i, type(v).__name__, v)
                for i, v in {**{e.id: e.content for e in existing}, **results}.items()
                if not isinstance(v, RemoveDoc)
            ]
            if not got:
                break
        for e in existing:
            results.setdefault(e.id, e.content)
        return [
            ExtractedMemory(i, v)
            for i, v in results.items()
            if not (isinstance(v, RemoveDoc) and i not in external)
        ]

    def _one_step(
        self, transcript: str, existing: list[_Existing], usage: TokenUsage | None
    ) -> Operation[dict[str, BaseModel] | None]:
        while True:
            try:
                if self.shape == "trustcall":
                    return (yield from self._trustcall(transcript, existing, usage))
                return (yield from self._plain(transcript, existing, usage))
            except Exception as e:
                if not self._calls.fall_back(e):
                    raise

    # -- trustcall ----------------------------------------------------------------------

    def _trustcall(
        self, transcript: str, existing: list[_Existing], usage: TokenUsage | None
    ) -> Operation[dict[str, BaseModel] | None]:
        from trustcall import create_extractor

        def extractor() -> Any:
            return create_extractor(
                self.model,
                tools=list(self.schemas),
                enable_inserts=self.enable_inserts,
                enable_updates=self.enable_updates,
                enable_deletes=self.enable_deletes,
                existing_schema_policy=False,
            )

        payload = {
            "messages": self._prompt(transcript, None),
            "existing": [(e.id, e.kind, _plain_content(e.content)) for e in existing],
        }
        response = yield self._calls.call(extractor, payload, usage)
        out: dict[str, BaseModel] = {}
        for r, meta in zip(response["responses"], response["response_metadata"], strict=False):
            if type(r).__name__ == "RemoveDoc":
                out[r.json_doc_id] = RemoveDoc(json_doc_id=r.json_doc_id)
            else:
                out[meta.get("json_doc_id") or str(uuid.uuid4())] = r
        return out

    # -- one plain call ------------------------------------------------------------------

    def _prompt(self, transcript: str, shape_note: str | None) -> list[dict[str, str]]:
        session = f"<session>\n{transcript}\n</session>"
        user = (
            f"{self.instructions}\n\nEnrich, prune, and organize memories based on any new "
            "information. If an existing memory is incorrect or outdated, update it based on "
            f"the new information. Avoid duplicate extractions.\n\n{session}"
        )
        if shape_note:
            user += f"\n\n{shape_note}"
        return [
            {"role": "system", "content": "You are a memory subroutine for an AI."},
            {"role": "user", "content": user},
        ]

    def _shape_note(self, existing: list[_Existing], json_mode: bool) -> str:
        kinds = ", ".join(
            f"{name} {json.dumps(s.model_json_schema().get('properties', {}))}"
            for name, s in self.by_name.items()
        )
        allowed = [
            x
            for x, on in (
                ("add new memories (id null)", self.enable_inserts),
                ("update existing ones (their id)", self.enable_updates),
                ("delete existing ones (ids in 'delete')", self.enable_deletes),
            )
            if on
        ]
        known = (
            "\n".join(
                json.dumps({"id": e.id, "kind": e.kind, "content": _plain_content(e.content)})
                for e in existing
            )
            or "(none)"
        )
        how = (
            'Answer with one JSON object and nothing else: {"memories": [{"id": str|null, '
            '"kind": str, "content": object}], "delete": [str]}.'
            if json_mode
            else f"Call {TOOL_NAME} once with every change."
        )
        return (
            f"Existing memories:\n{known}\n\nMemory kinds and their fields: {kinds}\n"
            f"You may {', '.join(allowed)}. {how}"
        )

    def _tool(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": "Record new memories, updates of existing ones, and deletions.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "memories": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": ["string", "null"]},
                                    "kind": {"type": "string", "enum": list(self.by_name)},
                                    "content": {"type": "object"},
                                },
                                "required": ["kind", "content"],
                            },
                        },
                        "delete": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["memories"],
                },
            },
        }

    def _plain(
        self, transcript: str, existing: list[_Existing], usage: TokenUsage | None
    ) -> Operation[dict[str, BaseModel] | None]:
        json_mode = self.shape == "json"
        tool = None if json_mode else self._tool()
        note = self._shape_note(existing, json_mode)
        feedback: str | None = None
        for _ in range(2):
            prompt = self._prompt(transcript, note + (f"\n\n{feedback}" if feedback else ""))
            reply = yield self._calls.call(lambda: self._calls.bound(tool), prompt, usage)
            try:
                return self._read(reply, existing)
            except ValueError as e:
                # Say what was wrong, briefly: quoting a broken reply back could
                # overflow a small model's context.
                if isinstance(e, MalformedOutput) and e.truncated:
                    feedback = (
                        "Your previous answer was cut off at the output limit. Answer again "
                        "with fewer memories, each a few words long."
                    )
                else:
                    feedback = f"Your previous answer was invalid: {cut(e, 300)}. Answer again."
                logger.warning("invalid memory manager output, asking again: %s", cut(e, 160))
        raise ExtractionError(
            f"the model's memory changes were invalid twice ({feedback}); nothing was changed",
        )

    def _read(self, reply: Any, existing: list[_Existing]) -> dict[str, BaseModel]:
        raw = decode(reply, TOOL_NAME, max_tokens=self._calls.max_tokens)
        if not isinstance(raw, dict) or not isinstance(raw.get("memories"), list):
            raise InvalidValueError("expected an object with a 'memories' list")
        known = {e.id for e in existing}
        out: dict[str, BaseModel] = {}
        for n, item in enumerate(raw.get("memories") or [], 1):
            if not isinstance(item, dict):
                raise InvalidValueError(f"memory {n} is not an object")
            kind = item.get("kind") or (
                next(iter(self.by_name)) if len(self.by_name) == 1 else None
            )
            schema = self.by_name.get(kind)  # type: ignore[arg-type]
            if schema is None:
                raise InvalidValueError(
                    f"memory {n}: unknown kind {kind!r}; use {list(self.by_name)}"
                )
            content = item.get("content")
            if isinstance(content, str) and "content" in schema.model_fields:
                content = {"content": content}
            try:
                value = schema.model_validate(content)
            except ValidationError as e:
                raise InvalidValueError(f"memory {n}: {e.errors()[0]['msg']}") from None
            texts = [v for v in value.model_dump().values() if isinstance(v, str)]
            if any(is_example(t, self.examples) for t in texts):
                # The model copied the request's example text, not the user.
                logger.warning("dropped a memory that is example text: %s", cut(texts, 160))
                continue
            mid = item.get("id")
            if mid and mid in known:
                if self.enable_updates:
                    out[mid] = value
                else:
                    logger.info("dropped an update of %s: updates are disabled", mid)
            elif self.enable_inserts:
                if mid:
                    logger.info("memory id %r is not an existing memory; adding it as new", mid)
                out[str(uuid.uuid4())] = value
        for mid in raw.get("delete") or []:
            if not self.enable_deletes:
                logger.info("dropped a deletion of %s: deletes are disabled", mid)
            elif mid in known:
                out[mid] = RemoveDoc(json_doc_id=mid)
            else:
                logger.warning("the model asked to delete unknown memory %r; ignored", mid)
        return out

    # -- inputs ----------------------------------------------------------------------------

    def _existing(self, existing: Any) -> list[_Existing]:
        """LangMem's three shapes: strings; ``(id, value)``; ``(id, kind, value)``."""
        if existing is None:
            return []
        out: list[_Existing] = []
        first = self.schemas[0]
        for e in existing:
            if isinstance(e, str):
                out.append(_Existing(str(uuid.uuid4()), first.__name__, first(content=e)))
            elif isinstance(e, tuple | list) and len(e) == 3:
                out.append(_Existing(str(e[0]), str(e[1]), e[2]))
            elif isinstance(e, tuple | list) and len(e) == 2:
                kind = type(e[1]).__name__ if isinstance(e[1], BaseModel) else "__any__"
                out.append(_Existing(str(e[0]), kind, e[1]))
            else:
                raise ConfigurationError(
                    "existing memories are strings, (id, value) or (id, kind, value) "
                    f"tuples; got {e!r}"
                )
        return out


def create_memory_manager(
    model: str | BaseChatModel,
    /,
    *,
    schemas: Sequence[type[BaseModel]] = (Memory,),
    instructions: str = MEMORY_INSTRUCTIONS,
    enable_inserts: bool = True,
    enable_updates: bool = True,
    enable_deletes: bool = False,
    method: Method = "auto",
    max_tokens: int | None = None,
    timeout: float | None = None,
) -> MemoryManager:
    """LangMem's ``create_memory_manager``: memories from a conversation.

    Args:
        model: a chat model or a ``"provider:model"`` string.
        schemas: pydantic models of the memories (default: ``Memory``, free text).
        instructions: how to extract and organise memories.
        enable_inserts: the model may add memories.
        enable_updates: the model may change memories.
        enable_deletes: the model may remove memories.
        method: ``"auto"`` (see the module docs), ``"trustcall"``, ``"tool"``
            or ``"json"``.
        max_tokens: output cap of each named-tool or JSON call (None: the
            model's own setting); a reply cut off there is asked again for
            fewer memories. Small local models: 512 to 1024.
        timeout: seconds each call may take (None: no limit).

    Returns:
        A runnable: ``invoke({"messages", "existing"?, "max_steps"?})`` (or
        ``await manager(messages, existing)``) returns ``ExtractedMemory(id,
        content)`` tuples.

    Examples:
        >>> from langchain_openai import ChatOpenAI
        >>> hosted = create_memory_manager(ChatOpenAI(model="gpt-4o-mini", api_key="sk-..."))
        >>> local = create_memory_manager(ChatOpenAI(
        ...     base_url="http://127.0.0.1:8080/v1", api_key="local", model="qwen"))
        >>> hosted.shape, local.shape
        ('trustcall', 'tool')
    """
    return MemoryManager(
        model,
        schemas=schemas,
        instructions=instructions,
        enable_inserts=enable_inserts,
        enable_updates=enable_updates,
        enable_deletes=enable_deletes,
        method=method,
        max_tokens=max_tokens,
        timeout=timeout,
    )


def _plain_content(content: Any) -> Any:
    return content.model_dump(mode="json") if isinstance(content, BaseModel) else content
