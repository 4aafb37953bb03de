"""Offline stand-ins for the hosted models LangMem's examples name.

Both packages get the same stand-ins, so a difference in the table is a
difference of the package, not of the model. ``install()`` puts them where
the examples reach models: ``init_chat_model`` / ``init_embeddings`` (which
``"anthropic:…"`` and ``"openai:…"`` strings go through, in LangChain,
LangGraph, LangMem and langmem_ext alike) and ``ChatOpenAI`` /
``OpenAIEmbeddings`` constructed directly.

The chat stand-in answers like a cooperative tool-calling model: with tools
bound it calls one (the one ``tool_choice`` names; else a search tool for a
question, else the first tool), its arguments filled from the tool's JSON
schema with the last user message; after a tool result, or with no tools, it
answers in text. The embedding stand-in hashes words, so text sharing words
is near.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict

_DIMS = {"text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


def _last_user_text(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return _text(message)
    return _text(messages[-1]) if messages else ""


def _resolve(schema: dict, defs: dict) -> dict:
    while "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _fill(schema: dict, text: str, defs: dict, required: bool = True) -> Any:
    schema = _resolve(schema, defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, defs).get("type") != "null"]
            return _fill(options[0], text, defs, required) if options else None
    if "allOf" in schema:
        return _fill(schema["allOf"][0], text, defs, required)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if kind == "string":
        return text
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        n = schema.get("minItems", 1)
        return [_fill(schema.get("items", {}), text, defs) for _ in range(n)]
    props = schema.get("properties", {})
    needed = set(schema.get("required", []))
    out: dict[str, Any] = {}
    for name, prop in props.items():
        if name in needed:
            out[name] = _fill(prop, text, defs)
        elif _plain_string(prop, defs) and not name.endswith("id"):
            out[name] = text  # an optional text field: what the user said
    return out


def _plain_string(schema: dict, defs: dict) -> bool:
    schema = _resolve(schema, defs)
    options = schema.get("anyOf", [schema])
    kinds = [_resolve(o, defs) for o in options]
    return any(k.get("type") == "string" and "format" not in k and "enum" not in k for k in kinds)


class StandInChat(BaseChatModel):
    """A cooperative offline chat model (see the module docstring)."""

    model_config = ConfigDict(extra="allow")
    model: str = "stand-in"

    @property
    def _llm_type(self) -> str:
        return "stand-in"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        # A binding, as hosted models return: trustcall reaches ``.bound``.
        converted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=converted, tool_choice=tool_choice, **kwargs)

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return count_tokens_approximately(messages)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._answer(messages, kwargs.get("tools") or [], kwargs.get("tool_choice"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _answer(self, messages: list[BaseMessage], tools: list[dict], choice: Any) -> AIMessage:
        text = _last_user_text(messages)
        if isinstance(choice, dict):
            choice = choice.get("function", {}).get("name") or choice.get("name")
        forced = choice not in (None, "auto", "none", False)
        if not tools or choice == "none":
            return AIMessage(f"Noted: {text[:300]}")
        if messages and isinstance(messages[-1], ToolMessage) and not forced:
            return AIMessage(f"Done. {_text(messages[-1])[:300]}")
        tool = self._pick(tools, choice, text)
        fn = tool["function"]
        params = fn.get("parameters", {})
        args = _fill(params, text, params.get("$defs", {}))
        digest = hashlib.sha1(f"{fn['name']}{text}{len(messages)}".encode()).hexdigest()[:12]
        return AIMessage(
            "", tool_calls=[{"name": fn["name"], "args": args, "id": f"call_{digest}"}]
        )

    def _pick(self, tools: list[dict], choice: Any, text: str) -> dict:
        by_name = {t["function"]["name"]: t for t in tools}
        if isinstance(choice, str) and choice in by_name:
            return by_name[choice]
        if text.rstrip().endswith("?"):
            for name, tool in by_name.items():
                if "search" in name.lower():
                    return tool
        # trustcall offers PatchDoc/RemoveDoc beside the schemas: a new memory
        # is the cooperative answer.
        for name, tool in by_name.items():
            if not name.startswith(("Patch", "Remove")) and "search" not in name.lower():
                return tool
        return tools[0]


class StandInEmbeddings(Embeddings):
    """Hashed bag of words, unit length."""

    def __init__(self, dims: int = 1536, **_: Any) -> None:
        self.dims = dims

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            vec[h % self.dims] += 1.0 if (h >> 64) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def init_chat_model(model: Any = None, **kwargs: Any) -> StandInChat:
    return StandInChat(model=str(model or "stand-in"))


def init_embeddings(model: str, **kwargs: Any) -> StandInEmbeddings:
    name = model.split(":", 1)[-1]
    return StandInEmbeddings(_DIMS.get(name, 1536))


def install(setattr: Callable[[Any, str, Any], None] = setattr) -> None:
    """Put the stand-ins where examples and both packages look models up.

    ``setattr`` may be pytest's ``monkeypatch.setattr``, to undo it after a test.
    """
    import langchain.chat_models
    import langchain.chat_models.base
    import langchain.embeddings
    import langchain.embeddings.base
    import langchain_openai
    import langgraph.store.base.embed

    for module in (langchain.chat_models, langchain.chat_models.base):
        setattr(module, "init_chat_model", init_chat_model)
    for module in (langchain.embeddings, langchain.embeddings.base):
        setattr(module, "init_embeddings", init_embeddings)
    # LangGraph looks init_embeddings up once and caches it.
    setattr(langgraph.store.base.embed, "_get_init_embeddings", lambda: init_embeddings)

    class ChatOpenAI(StandInChat):
        pass

    class OpenAIEmbeddings(StandInEmbeddings):
        def __init__(self, model: str = "text-embedding-3-small", **kwargs: Any) -> None:
            super().__init__(_DIMS.get(model, 1536))

    setattr(langchain_openai, "ChatOpenAI", ChatOpenAI)
    setattr(langchain_openai, "OpenAIEmbeddings", OpenAIEmbeddings)
