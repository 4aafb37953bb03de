"""LangMem's ``create_thread_extractor``: one summary of a thread in a schema
of your own, made by a memory manager (:mod:`.managers`)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel

from ..errors import ExtractionError
from .managers import MemoryManager
from .schemas import ExtractedMemory, SummarizeThread

__all__ = ["create_thread_extractor"]


class _ThreadExtractor(Runnable[dict[str, Any], BaseModel]):
    def __init__(self, model: str | BaseChatModel, schema: type[BaseModel], instructions: str):
        self.manager = MemoryManager(
            model,
            schemas=(schema,),
            instructions=instructions,
            enable_updates=False,
            purpose="thread_extractor",
        )
        self.schema = schema

    def _result(self, memories: list[ExtractedMemory]) -> BaseModel:
        for m in memories:
            if isinstance(m.content, self.schema):
                return m.content
        raise ExtractionError(f"the model returned no {self.schema.__name__}")

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kw: Any
    ) -> BaseModel:
        return self._result(self.manager.invoke({"messages": input["messages"]}, config))

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kw: Any
    ) -> BaseModel:
        return self._result(await self.manager.ainvoke({"messages": input["messages"]}, config))


def create_thread_extractor(
    model: str | BaseChatModel,
    /,
    schema: type[BaseModel] | None = None,
    instructions: str = "You are tasked with summarizing the following conversation.",
) -> Runnable[dict[str, Any], BaseModel]:
    """LangMem's ``create_thread_extractor``: a conversation → one schema instance
    (default :class:`SummarizeThread`, a title and a summary).

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> from langmem_ext.testing.chat import ScriptedExtractionModel
        >>> reply = AIMessage("", tool_calls=[{"name": "manage_memories", "id": "c1",
        ...     "args": {"memories": [{"kind": "SummarizeThread",
        ...                            "content": {"title": "Reset", "summary": "..."}}]}}])
        >>> model = ScriptedExtractionModel([NotImplementedError("no any"), reply])
        >>> create_thread_extractor(model).invoke({"messages": [("user", "help")]}).title
        'Reset'
    """
    return _ThreadExtractor(model, schema or SummarizeThread, instructions)
