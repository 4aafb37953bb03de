"""What one background reflection runs, and how pending turns of a thread merge.

A :class:`Job` is the reflection of one (tenant, user space, thread) with the
messages not yet reflected. It runs in one of two ways:

* **model** jobs extract profile facts with a :class:`~.extract.FactExtractor`
  (:func:`~.reflect.reflect_steps`, one engine operation);
* **manager** jobs call a LangMem-style store manager (any ``Runnable`` with a
  ``namespace`` attribute, e.g. :func:`~langmem_ext.create_memory_store_manager`)
  with the payload, the store placed in the config as LangGraph does.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> a, b = HumanMessage("hi", id="1"), HumanMessage("there", id="2")
    >>> [m.id for m in merge_messages([a], [a, b])]
    ['1', '2']
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.store.base import BaseStore

from ..._langgraph import RUNTIME_KEY
from ...engine import MemoryContext, MemoryEngine, shown
from ...errors import InvalidValueError

# "No thread id given" — distinct from an explicit None, which means no thread.
UNSET: Any = object()

__all__ = ["Job", "as_current", "merge_messages", "messages_of", "store_config"]


@dataclass
class Job:
    """A pending reflection of one thread of one user."""

    key: tuple[Any, ...]
    kind: Literal["model", "manager"]
    thread_id: str
    messages: list[BaseMessage]
    due: float
    mode: Literal["thread", "loop"]
    config: RunnableConfig
    engine: MemoryEngine | None = None
    ctx: MemoryContext | None = None
    store: BaseStore | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    futures: list[Future[Any]] = field(default_factory=list)
    #: The event loop a ``loop`` job was submitted from (where it runs).
    loop: Any = None

    def absorb(self, earlier: Job) -> None:
        """Take over an earlier pending job of the same thread: its messages come
        first, and its callers get this job's result."""
        self.messages = merge_messages(earlier.messages, self.messages)
        self.futures = [*earlier.futures, *self.futures]
        self.loop = self.loop or earlier.loop

    def payload(self) -> dict[str, Any]:
        """What a manager is called with: the messages and the payload's other keys."""
        return {**self.extra, "messages": list(self.messages)}

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        for fut in self.futures:
            if fut.done():
                continue
            if error is None:
                fut.set_result(result)
            else:
                fut.set_exception(error)
        self.futures = []


def merge_messages(old: list[BaseMessage], new: list[BaseMessage]) -> list[BaseMessage]:
    """``old`` then what ``new`` adds: a graph state repeats earlier messages,
    a caller submitting turn by turn does not; both end up with each once."""
    seen = {m.id or id(m) for m in old}
    return [*old, *(m for m in new if (m.id or id(m)) not in seen)]


def messages_of(payload: Any) -> tuple[list[BaseMessage], dict[str, Any]]:
    """The messages of a payload (a list, or a state/dict with ``messages``) and
    the payload's other keys.

    Raises:
        InvalidValueError: the payload holds no list of messages.
    """
    extra: dict[str, Any] = {}
    if isinstance(payload, Mapping) and "messages" in payload:
        extra = {k: v for k, v in payload.items() if k != "messages"}
        payload = payload["messages"]
    elif hasattr(payload, "messages") and not isinstance(payload, Sequence):
        payload = payload.messages
    if not isinstance(payload, Sequence) or isinstance(payload, str | bytes):
        raise InvalidValueError(
            "submit() takes a list of messages or a state with 'messages', "
            f"got {type(payload).__name__}"
        )
    try:
        return list(convert_to_messages(payload)), extra
    except RecursionError:
        raise InvalidValueError("the messages are nested too deeply to be messages") from None
    except (TypeError, ValueError, NotImplementedError, AttributeError, KeyError) as e:
        # LangChain's conversion raises any of these for what is not a message.
        raise InvalidValueError(
            f"submit() takes chat messages (message objects, dicts with role and content, "
            f"or (role, text) pairs), got {shown(payload)}: {e}"
        ) from None


def store_config(config: RunnableConfig, store: BaseStore | None) -> RunnableConfig:
    """``config`` with ``store`` as the graph's store (what ``get_store()`` and
    tools without ``store=`` find), as LangGraph sets it for a node."""
    if store is None:
        return config
    from langgraph.runtime import Runtime

    conf = dict(config.get("configurable") or {})
    runtime = conf.get(RUNTIME_KEY)
    conf[RUNTIME_KEY] = (
        runtime.override(store=store) if runtime is not None else Runtime(store=store)
    )
    return {**config, "configurable": conf}


@contextlib.contextmanager
def as_current(config: RunnableConfig) -> Iterator[None]:
    """Run with ``config`` as the current runnable config (so ``get_config``
    and ``get_store`` answer as inside a graph node)."""
    token = var_child_runnable_config.set(config)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)
