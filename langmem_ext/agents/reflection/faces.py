"""How a :class:`~.executor.ReflectionExecutor` meets a graph: a node to add
after the agent, ``create_agent`` middleware, and direct runs.

Examples:
    >>> from langmem_ext.testing.chat import ScriptedExtractionModel
    >>> from langmem_ext.agents.reflection import ReflectionExecutor
    >>> ReflectionExecutor(ScriptedExtractionModel([])).as_node().name
    'reflect'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.store.base import BaseStore

from ..._langgraph import current_config
from .jobs import UNSET

__all__ = ["GraphFaces", "ReflectionMiddleware"]


class GraphFaces:
    """The graph faces of :class:`~.executor.ReflectionExecutor`."""

    if TYPE_CHECKING:  # what the executor provides

        def submit(self, *args: Any, **kwargs: Any) -> Any: ...

        async def asubmit(self, *args: Any, **kwargs: Any) -> Any: ...

        def _job(self, *args: Any) -> Any: ...

        def _run_sync(self, job: Any) -> Any: ...

        async def _run_async(self, job: Any) -> Any: ...

    # -- direct runs ------------------------------------------------------------------

    def reflect(
        self, payload: Any, config: RunnableConfig | None = None, *, store: BaseStore | None = None
    ) -> Any:
        """Reflect now, in this thread (no scheduling); raises on failure."""
        return self._run_sync(self._job(payload, config, store, 0, UNSET, "thread"))

    async def areflect(
        self, payload: Any, config: RunnableConfig | None = None, *, store: BaseStore | None = None
    ) -> Any:
        """Async :meth:`reflect`."""
        return await self._run_async(self._job(payload, config, store, 0, UNSET, "loop"))

    # -- graph faces --------------------------------------------------------------------

    def as_node(self) -> RunnableLambda:
        """A LangGraph node to add after the agent node: schedules a reflection
        of the state's messages and returns no update (the reply is not delayed).
        Sync graphs use the worker thread, async graphs the event loop."""

        def reflect_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            self.submit(state, config)
            return {}

        async def areflect_node(state: Any, config: RunnableConfig) -> dict[str, Any]:
            await self.asubmit(state, config)
            return {}

        return RunnableLambda(reflect_node, afunc=areflect_node, name="reflect")

    def middleware(self) -> Any:
        """Middleware for LangChain's ``create_agent``: reflects after each run."""
        return ReflectionMiddleware(self)


class ReflectionMiddleware(AgentMiddleware):
    """Schedules a reflection of the conversation when a ``create_agent`` run
    ends (``after_agent``); the reply is not delayed."""

    def __init__(self, executor: Any) -> None:
        super().__init__()
        self.executor = executor

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        store = getattr(runtime, "store", None)
        self.executor.submit(state["messages"], current_config(None), store=store)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        store = getattr(runtime, "store", None)
        await self.executor.asubmit(state["messages"], current_config(None), store=store)
        return None
