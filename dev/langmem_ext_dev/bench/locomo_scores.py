"""Scoring an answer against LoCoMo's gold answer: the judge's verdict, token
F1 and BLEU-1, as the mem0 paper's harness computes them, so the figures sit
beside the published ones. Pure functions, no model.

* **Token F1** (mem0's harness): the answer and the gold answer lowercased,
  ``.``, ``,``, ``!`` and ``?`` turned into spaces, split on whitespace; F1
  of the two *sets* of tokens.
* **BLEU-1**: nltk's ``sentence_bleu`` with weights (1, 0, 0, 0) and
  smoothing method 1, which for unigrams is the clipped unigram precision
  times the brevity penalty, and 0 when no token matches. Tokens are the
  lowercased words and punctuation marks (a regular expression close to
  nltk's ``word_tokenize``, which needs a download).
* **Verdict**: the judge's ``{"label": "CORRECT"|"WRONG"}``, or a last line
  naming exactly one of the two words; anything else is no verdict.

Examples:
    >>> round(token_f1("She adopted a kitten named Pixel.", "Pixel"), 3)
    0.286
    >>> bleu1("Pixel", "Pixel"), bleu1("a dog", "Pixel")
    (1.0, 0.0)
    >>> parse_verdict('{"label": "WRONG"}'), parse_verdict("CORRECT or WRONG?")
    ('WRONG', None)
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

__all__ = ["answer_problem", "bleu1", "parse_verdict", "token_f1"]


def _simple_tokens(text: str) -> set[str]:
    return set(re.sub(r"[.,!?]", " ", str(text).lower()).split())


def token_f1(answer: str, gold: str) -> float:
    """F1 of the token sets of ``answer`` and ``gold`` (see the module).

    Examples:
        >>> token_f1("7 May 2023", "7 May, 2023"), token_f1("", "x")
        (1.0, 0.0)
    """
    a, g = _simple_tokens(answer), _simple_tokens(gold)
    common = len(a & g)
    if not a or not g or not common:
        return 0.0
    precision, recall = common / len(a), common / len(g)
    return 2 * precision * recall / (precision + recall)


_WORDS = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def _bleu_tokens(text: str) -> list[str]:
    return _WORDS.findall(str(text).lower())


def bleu1(answer: str, gold: str) -> float:
    """Sentence BLEU-1 of ``answer`` against ``gold`` (see the module).

    Examples:
        >>> round(bleu1("the cat sat", "the cat"), 3), round(bleu1("cat", "the cat"), 3)
        (0.667, 0.368)
    """
    hyp, ref = _bleu_tokens(answer), _bleu_tokens(gold)
    if not hyp or not ref:
        return 0.0
    ref_counts = Counter(ref)
    matched = sum(min(n, ref_counts[t]) for t, n in Counter(hyp).items())
    if not matched:
        return 0.0
    brevity = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return brevity * matched / len(hyp)


_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def parse_verdict(reply: str) -> str | None:
    """``"CORRECT"``, ``"WRONG"`` or None (no clear verdict): the ``label`` of
    a JSON object in the reply, else the one label word its last line names.

    Examples:
        >>> parse_verdict('Same date.\\n{"label": "CORRECT"}')
        'CORRECT'
        >>> parse_verdict("The answer names another city. WRONG"), parse_verdict("Maybe")
        ('WRONG', None)
    """
    text = str(reply or "").strip()
    for match in re.finditer(r"\{[^{}]*\}", text):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        label = obj.get("label") if isinstance(obj, dict) else None
        if isinstance(label, str) and label.strip().upper() in ("CORRECT", "WRONG"):
            return label.strip().upper()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    found = set(_LABEL.findall(lines[-1].upper()))
    return found.pop() if len(found) == 1 else None


_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry,|i cannot (help|assist|answer)|i can'?t (help|assist)"
    r"|as an ai\b|i'?m (unable|not able) to (help|assist))",
    re.I,
)


def answer_problem(answer: str) -> str | None:
    """Why an answer is no answer (it then counts as failed, never as
    correct): empty, no letter or digit, or a refusal; None for an answer
    to grade. "I don't know" is an answer (the judge grades it).

    Examples:
        >>> answer_problem("  "), answer_problem("?!"), answer_problem("I'm sorry, I can't help.")
        ('empty answer', 'no words in the answer', 'the model refused')
        >>> answer_problem("7 May 2023") is None
        True
    """
    text = str(answer or "").strip()
    if not text:
        return "empty answer"
    if not re.search(r"\w", text):
        return "no words in the answer"
    if _REFUSAL.search(text):
        return "the model refused"
    return None
