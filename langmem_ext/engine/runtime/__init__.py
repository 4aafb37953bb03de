"""How operations run: the sans-IO requests and their two runners
(:mod:`.requests`), the engine's settings and the store's capabilities
(:mod:`.config`), search planning (:mod:`.planning`), the per-call environment
(:mod:`.env`), the catalogue's declarations (:mod:`.catalogue`, worded by
:mod:`.wording`), metrics and the engine's machinery (:mod:`.engine_base`).

Examples:
    >>> from langgraph.store.base import GetOp, PutOp
    >>> from langmem_ext import SQLiteStore
    >>> from langmem_ext.engine import Batch, run_sync
    >>> def write_then_read():
    ...     yield Batch([PutOp(("a",), "k", {"content": "x"})])
    ...     [item] = yield Batch([GetOp(("a",), "k")])
    ...     return item.value["content"]
    >>> run_sync(write_then_read(), SQLiteStore())
    'x'
"""
