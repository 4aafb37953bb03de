"""What both LangMem-style tool factories share: the arguments they check when
the tool is made, and the caller's environment a call runs in."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from ..engine import MemoryEngine, shown
from ..errors import ConfigurationError, MissingIdentifierError

__all__ = ["check_common", "tool_env"]


def check_common(
    name: Any, instructions: Any, store: Any, strict: Any, default_tenant: Any
) -> None:
    """Arguments both tool factories share, checked when the tool is made."""
    if not isinstance(name, str) or not name.strip() or any(ord(c) < 32 for c in name):
        raise ConfigurationError(
            f"name must be a tool name such as 'manage_memory', got {shown(name)}"
        )
    if not isinstance(instructions, str):
        raise ConfigurationError(f"instructions must be text, got {shown(instructions)}")
    if store is not None and not isinstance(store, BaseStore):
        raise ConfigurationError(f"store must be a LangGraph BaseStore, got {type(store).__name__}")
    if not isinstance(strict, bool):
        raise ConfigurationError(f"strict must be True or False, got {shown(strict)}")
    if default_tenant is not None and (not isinstance(default_tenant, str) or not default_tenant):
        raise ConfigurationError(
            f"default_tenant must be a non-empty string or None, got {shown(default_tenant)}"
        )


def tool_env(engine: MemoryEngine, config: RunnableConfig) -> Any:
    """The caller's environment; a caller without a user is a configuration
    problem for a tool (not the model's to fix)."""
    env = engine.env(config)
    try:
        env.ctx.own_space()
    except MissingIdentifierError as e:
        raise ConfigurationError(str(e), key="user_id") from None
    return env
