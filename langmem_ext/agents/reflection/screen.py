"""Screening extracted facts against the turn they came from.

A small model reading a conversation often files the assistant's words as
facts about the user, pastes a whole paragraph as one "fact", or repeats one
item several times in a reply. The user's own words are the evidence, so each
candidate of a reply is screened before it is stored:

* **copies of the assistant** are dropped: a fact is a copy when more than
  :data:`COPY_OVERLAP` of its content words (words outside :data:`STOPWORDS`,
  case-folded) occur in the assistant's messages of the turn, and more of
  them occur there than in the user's messages. "Lives in Berlin", after the
  user said "I live in Berlin" and the assistant talked about Berlin, has 1
  of 2 words from the assistant and 1 from the user: kept. "Berlin is the
  capital of Germany" has 3 of 3 from the assistant, 1 from the user:
  dropped. So is "Nursing in a children's hospital must be rewarding" (4 of 4
  against 2 of 4), a sentence of the assistant's built around the user's words;
* **paragraphs** are dropped: more than :data:`MAX_FACT_SENTENCES` sentences
  or more than :data:`MAX_FACT_CHARS` characters;
* **repeats** collapse: facts of one reply with the same content (case and
  white space folded) are kept once, with the highest confidence given;
* **invented first-person lines and questions** are dropped: a fact written
  in the first person ("I'm looking forward to…") none of whose content
  words the user said, or a question (any "?": "What's your favorite
  color?", "How about a picnic? I'd love to try it!"), is the
  model speaking, not a fact about the user (reason ``not_from_user``; "I
  live in Lyon" after the user said so is kept);
* **small talk** is dropped: a "fact" made only of greetings, thanks and
  goodbyes (:data:`SMALL_TALK`: "Thanks, that's all for today!") says nothing
  about the user (reason ``small_talk``);
* **example text** is dropped: a fact equal to an example the prompt or its
  schema gives (:func:`examples_in`), or holding an unfilled placeholder
  such as ``<city>``, is the model copying the request, not the user.

A correction the model did not tie to the fact it corrects is tied when the
user's own words are the evidence (:func:`named_corrections`): the user says
what no longer holds ("quit the bakery", "isn't a lawyer any more", "not
Berlin", "moved from Paris"), that word belongs to exactly one known fact,
and the new fact shares a word with it.

Each dropped candidate is logged (its text cut to :data:`LOG_CHARS`) and
returned with its reason, so a reflection reports it.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_ext.engine import FactCandidate
    >>> turn = [HumanMessage("I live in Berlin"),
    ...         AIMessage("Berlin has been the capital of Germany since 1990.")]
    >>> facts = [FactCandidate("Lives in Berlin", "context", 0.9),
    ...          FactCandidate("Berlin is the capital of Germany", "knowledge", 0.9),
    ...          FactCandidate("lives in  berlin", "context", 0.95)]
    >>> kept, dropped = screen(facts, turn)
    >>> [(f.content, f.confidence) for f in kept]
    [('Lives in Berlin', 0.95)]
    >>> [d.reason for d in dropped]
    ['assistant_copy', 'repeat']
    >>> copy_ratio("Berlin is the capital of Germany", turn), copy_ratio("Lives in Berlin", turn)
    (1.0, 0.0)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import BaseMessage

from ...engine import Fact, FactCandidate

__all__ = [
    "COPY_OVERLAP",
    "LOG_CHARS",
    "MAX_FACT_CHARS",
    "MAX_FACT_SENTENCES",
    "STOPWORDS",
    "DroppedFact",
    "changed_words",
    "copy_ratio",
    "cut",
    "examples_in",
    "named_corrections",
    "overlap",
    "screen",
    "user_share",
    "user_statements",
]

logger = logging.getLogger("langmem_ext.agents.reflection")

#: A fact is a copy of the assistant when *more than* this share of its content
#: words occur in the assistant's messages (and more of them there than in the
#: user's). One half: a two-word fact with one word from the assistant is kept,
#: anything mostly made of the assistant's words is not.
COPY_OVERLAP = 0.5
#: Words are compared by their first letters where a fact may inflect the
#: user's word ("prefer" → "prefers", "sleeping" → "sleeps").
STEM = 5
#: A fact is one statement: more sentences than this is a pasted paragraph.
MAX_FACT_SENTENCES = 2
#: ... and so is a fact longer than this many characters.
MAX_FACT_CHARS = 300
#: Model output quoted in a log line or in feedback to the model is cut to
#: this many characters (a broken reply can be tens of kilobytes).
LOG_CHARS = 200

#: Words that say nothing about what a fact is about (ignored by the copy test).
STOPWORDS = frozenset(
    """a an the and or but if so than then of in on at to for from by with as into over
    under about after before is are was were be been being am do does did has have had
    having it its this that these those there here i me my mine you your yours he him
    his she her hers we us our they them their what which who whom when where why how
    not no yes very just also too can could will would shall should may might must
    all any some each every more most such only own same s t m d ll re ve""".split()
)

#: Words of greetings, thanks and goodbyes: a "fact" made of nothing else
#: ("Thanks, that's all for today!") is small talk copied from the user.
SMALL_TALK = frozenset(
    """hi hello hey thanks thank thx cheers bye goodbye later soon see talk ok okay
    great good nice cool sure fine welcome please sorry today tonight tomorrow now
    morning afternoon evening night day again much lot everything anything nothing
    help helping helpful appreciate appreciated glad happy chat chatting""".split()
)

_WORD = re.compile(r"\w+")
# A stop after an initial ("George R. R. Martin") or a title ("Dr. Lee") ends
# no sentence: such facts were dropped as paragraphs.
_SENTENCE_END = re.compile(
    r"(?<!\b[A-Za-z])(?<!\b(?:Mr|Ms|Dr|St|Jr|Sr|vs))(?<!\b(?:Mrs|Rev))(?<!\bProf)"
    r"[.!?]+(?:\s+|$)"
)


# An example in a prompt or schema: a quoted text after "e.g." or in brackets.
_EXAMPLE = re.compile(r"""(?:e\.g\.,?|\()\s*(["'])([^"'\n]{2,120})\1""")
_PLACEHOLDER = re.compile(r"<[a-z][a-z _-]{0,30}>", re.I)
_TOKEN = re.compile(r"[\w']+")
# Words after which the user names what no longer holds.
_CHANGE_BEFORE = frozenset(
    "quit left leaving stopped not isn't aren't wasn't weren't don't doesn't longer "
    "instead former ex".split()
)
_EXCERPT = re.compile(r""":\s+['"]""")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
_FIRST_PERSON = re.compile(r"^\W*(i|i'm|i've|i'll|i'd|my|me|we|we're|our)\b", re.I)


def _copies(content: str, source: set[str], user: set[str]) -> bool:
    words = _words(content)
    if not words:
        return False
    share = len(words & source) / len(words)
    return share > COPY_OVERLAP and len(words & source) > len(words & user)


def invented(content: str, turns: Sequence[BaseMessage]) -> bool:
    """Whether ``content`` is a first-person line with no content word the user said.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> turn = [HumanMessage("Hello again, I live in Lyon")]
        >>> invented("I'm looking forward to it", turn), invented("I live in Lyon", turn)
        (True, False)
    """
    if not _FIRST_PERSON.match(content):
        return False
    return not (_words(content) & _words(_said(turns, "human")))


def user_share(content: str, turns: Sequence[BaseMessage]) -> float:
    """The share of ``content``'s content words the user said, a word's first
    :data:`STEM` letters standing for it ("prefers" is "prefer"); 1 for a fact
    with no content word.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> turn = [HumanMessage("I haven't slept well. What could I drink in the evening?")]
        >>> user_share("Has slept badly", turn), user_share("Best to drink water", turn)
        (0.5, 0.3333333333333333)
    """
    words = {w[:STEM] for w in _words(content)}
    if not words:
        return 1.0
    return len(words & {w[:STEM] for w in _words(_said(turns, "human"))}) / len(words)


def small_talk(content: str) -> bool:
    """Whether ``content`` is only greetings, thanks or goodbyes.

    Examples:
        >>> small_talk("Thanks, that's all for today!"), small_talk("Thanks to Ada, loves jazz")
        (True, False)
    """
    words = _words(content)
    return bool(words) and words <= SMALL_TALK


def user_statements(turns: Sequence[BaseMessage]) -> list[str]:
    """The user's sentences of ``turns`` that could hold a fact: not a
    question, not only small talk.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> user_statements([HumanMessage("Thanks! I'm vegetarian. Where should I eat?"),
        ...                  AIMessage("Try the market.")])
        ["I'm vegetarian."]
        >>> user_statements([HumanMessage("Quick question: what's the capital of Australia?")])
        []
    """
    out = []
    for line in _said(turns, "human").splitlines():
        for s in _SENTENCE_SPLIT.split(line.strip()):
            if s and not s.rstrip().endswith("?") and _words(s) and not small_talk(s):
                out.append(s)
    return out


def examples_in(*texts: str) -> frozenset[str]:
    """The example texts of a prompt or schema (quoted after "e.g." or in
    brackets), folded for comparison.

    Examples:
        >>> sorted(examples_in('one fact per item, third person ("Lives in <city>")',
        ...                    "What it is about, e.g. 'user'."))
        ['lives in <city>', 'user']
    """
    return frozenset(_fold(m.group(2)) for t in texts for m in _EXAMPLE.finditer(t))


def _fold(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".")


def is_example(content: str, examples: frozenset[str] = frozenset()) -> bool:
    """Whether ``content`` is example text: one of ``examples``, or holding an
    unfilled placeholder (``<city>``).

    Examples:
        >>> is_example("Lives in <city>"), is_example("Lives in Lyon", frozenset({"lives in lyon"}))
        (True, True)
    """
    return _fold(content) in examples or bool(_PLACEHOLDER.search(content))


@dataclass(frozen=True)
class DroppedFact:
    """A candidate screened out: ``reason`` is ``assistant_copy``, ``too_long``,
    ``example_text``, ``not_from_user``, ``small_talk`` or ``repeat``."""

    content: str
    reason: str


def cut(text: object, n: int = LOG_CHARS) -> str:
    """``text`` (``str()`` of anything) cut to ``n`` characters with a marker.

    Examples:
        >>> cut("x" * 500, 20)
        'xxxxxxxxxxxxxxxxxxxx… [480 more characters]'
    """
    s = text if isinstance(text, str) else str(text)
    if len(s) <= n:
        return s
    return f"{s[:n]}… [{len(s) - n} more characters]"


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in STOPWORDS}


def _said(turns: Sequence[BaseMessage], kind: str) -> str:
    return "\n".join(
        m.text if isinstance(m.text, str) else str(m.content) for m in turns if m.type == kind
    )


def overlap(content: str, turns: Sequence[BaseMessage]) -> tuple[float, float]:
    """The shares of ``content``'s content words found in the assistant's and
    in the user's messages of ``turns`` ((0, 0) when it has none)."""
    words = _words(content)
    if not words:
        return 0.0, 0.0
    assistant, user = _words(_said(turns, "ai")), _words(_said(turns, "human"))
    return len(words & assistant) / len(words), len(words & user) / len(words)


def copy_ratio(content: str, turns: Sequence[BaseMessage]) -> float:
    """How much ``content`` is a copy of the assistant's words: the share of
    its content words found in the assistant's messages, or 0 when at least as
    many are found in the user's."""
    from_assistant, from_user = overlap(content, turns)
    return from_assistant if from_assistant > from_user else 0.0


def sentences(text: str) -> int:
    """How many sentences ``text`` holds (a final one without a stop counts).

    Examples:
        >>> sentences("Loves fantasy. Favourite author: George R. R. Martin.")
        2
        >>> sentences("Saw Dr. Lee on Monday"), sentences("")
        (1, 0)
    """
    stripped = text.strip()
    if not stripped:
        return 0
    ends = list(_SENTENCE_END.finditer(stripped))
    return len(ends) + (0 if ends and ends[-1].end() == len(stripped) else 1)


def screen(
    facts: Sequence[FactCandidate],
    turns: Sequence[BaseMessage],
    *,
    thread_id: str = "?",
    examples: frozenset[str] = frozenset(),
    feedback: str | None = None,
    users_lines_only: bool = False,
) -> tuple[list[FactCandidate], list[DroppedFact]]:
    """The facts of one reply worth storing, and the ones dropped (see the
    module); ``examples``: the request's example texts (:func:`examples_in`);
    ``feedback``: what the request said was wrong with the previous answer (a
    fact mostly made of its words is the model copying it: ``example_text``);
    ``users_lines_only``: the request showed the user's lines alone, so a fact
    less than half made of the user's words (:func:`user_share`) is the model
    answering the user, not reporting them (``not_from_user``)."""
    said_by_user = _words(_said(turns, "human"))
    # The package's own words only: the excerpt after ": '" is the model's answer.
    told = _words(_EXCERPT.split(feedback or "", maxsplit=1)[0])
    kept: dict[str, FactCandidate] = {}
    dropped: list[DroppedFact] = []
    for f in facts:
        reason = None
        if len(f.content) > MAX_FACT_CHARS or sentences(f.content) > MAX_FACT_SENTENCES:
            reason = "too_long"
        elif (
            is_example(f.content, examples)
            or is_example(f.subject or "")
            or is_example(f.predicate or "")
        ) or (told and _copies(f.content, told, said_by_user)):
            reason = "example_text"
        elif (
            invented(f.content, turns)
            or "?" in f.content
            or (users_lines_only and user_share(f.content, turns) < 0.5)
        ):
            reason = "not_from_user"
        elif small_talk(f.content):
            reason = "small_talk"
        elif copy_ratio(f.content, turns) > COPY_OVERLAP:
            reason = "assistant_copy"
        if reason is not None:
            logger.warning(
                "thread %s: dropped an extracted fact (%s): %r", thread_id, reason, cut(f.content)
            )
            dropped.append(DroppedFact(f.content, reason))
            continue
        key = " ".join(f.content.casefold().split())
        if key in kept:
            first = kept[key]
            kept[key] = replace(first, confidence=max(first.confidence, f.confidence))
            logger.info("thread %s: collapsed a repeated fact: %r", thread_id, cut(f.content))
            dropped.append(DroppedFact(f.content, "repeat"))
            continue
        kept[key] = f
    return list(kept.values()), dropped


def changed_words(text: str) -> set[str]:
    """The words ``text`` says changed: up to four words after "quit", "left",
    "not", "no longer", "moved from"… and up to three before "any more".

    Examples:
        >>> sorted(changed_words("Clara isn't a lawyer any more, she works as a doctor"))
        ['lawyer']
        >>> sorted(changed_words("I moved to Munich")), sorted(changed_words("I quit the bakery"))
        ([], ['bakery'])
    """
    tokens = _TOKEN.findall(text.casefold())
    found: list[str] = []
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else ""
        if tok in _CHANGE_BEFORE or (tok == "from" and prev in ("moved", "switched")):
            found += tokens[i + 1 : i + 5]
        if tok == "anymore" or (tok == "more" and prev in ("any", "no")):
            found += tokens[max(0, i - 4) : i]
    return {t for t in found if t not in STOPWORDS and t not in _CHANGE_BEFORE}


def named_corrections(
    facts: Sequence[FactCandidate], shown: Sequence[Fact], turns: Sequence[BaseMessage]
) -> list[FactCandidate]:
    """``facts`` with ``replaces`` set where the user's words tie a new fact
    to the one known fact it changes (see the module); others unchanged.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langmem_ext.engine import Fact
        >>> old = Fact(id="f1", tenant_id="t", layer="user", layer_id="ada",
        ...            content="Works at a bakery")
        >>> turn = [HumanMessage("Update: I quit the bakery and now I work at a bookshop.")]
        >>> [f.replaces for f in named_corrections(
        ...     [FactCandidate("Works at a bookshop", "correction", 0.9)], [old], turn)]
        ['f1']
    """
    named = changed_words(_said(turns, "human"))
    if not shown or not named:
        return list(facts)
    out = []
    for f in facts:
        if f.replaces is None:
            new = _words(f.content)
            tied = [
                k
                for k in shown
                if _words(k.content) & named
                and _words(k.content) & new
                and _fold(k.content) != _fold(f.content)
            ]
            if len(tied) == 1:
                logger.info(
                    "%r replaces %r: the user names what changed",
                    cut(f.content),
                    cut(tied[0].content),
                )
                f = replace(f, replaces=tied[0].id)
        out.append(f)
    return out
