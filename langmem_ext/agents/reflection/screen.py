"""Screening extracted facts against the turn they came from.

A small model reading a conversation often files the assistant's words as
facts about the user, pastes a whole paragraph as one "fact", or repeats one
item several times in a reply. The user's own words are the evidence, so each
candidate of a reply is screened before it is stored:

Where a candidate came from is decided by meaning when reflection has an
embedder for it (:mod:`.meaning`, the offline multilingual one by default),
so the screens work in any language, and by words otherwise:

* **copies of the assistant** are dropped: a fact closer in meaning to one of
  the assistant's sentences than to any of the user's own (by
  :data:`~.meaning.ASSISTANT_MARGIN`), or, by words, when more than
  :data:`COPY_OVERLAP` of its content words (words outside :data:`STOPWORDS`,
  case-folded) occur in the assistant's messages of the turn, and more of
  them occur there than in the user's messages. "Lives in Berlin", after the
  user said "I live in Berlin" and the assistant talked about Berlin, has 1
  of 2 words from the assistant and 1 from the user: kept. "Berlin is the
  capital of Germany" has 3 of 3 from the assistant, 1 from the user:
  dropped. So is "Nursing in a children's hospital must be rewarding" (4 of 4
  against 2 of 4), a sentence of the assistant's built around the user's words;
* **text the user pasted** is dropped (reason ``pasted_text``): house rules,
  an email, meeting notes or a poem in the user's message are not facts about
  the user. The message's structure tells them apart
  (:func:`~.meaning.split_user_text`: long quotes, fenced blocks, lists,
  verse); a fact closer to a pasted line than to the user's own sentences (by
  :data:`~.meaning.PASTE_MARGIN`), or mostly made of pasted words, is dropped;
* **questions** are cut off: a fact holding a statement and a question
  ("Lives in Denver. Any good hiking near the city?") keeps the statement; a
  fact that is only a question is dropped (``not_from_user``);
* **paragraphs** are dropped: more than :data:`MAX_FACT_SENTENCES` sentences
  or more than :data:`MAX_FACT_CHARS` characters;
* **repeats** collapse: facts of one reply with the same content (case and
  white space folded) are kept once, with the highest confidence given;
* **invented first-person lines** are dropped: a fact written in the first
  person ("I'm looking forward to…") none of whose content words the user
  said is the model speaking, not a fact about the user (reason
  ``not_from_user``; "I live in Lyon" after the user said so is kept);
* **small talk** is dropped: a "fact" that means greetings, thanks or
  goodbyes ("Cheers mate, that did the trick!", "Danke dir, bis später!":
  :meth:`~.meaning.Meaning.small_talk`), or is made only of the words of
  :data:`SMALL_TALK`, says nothing about the user (reason ``small_talk``);
* **example text** is dropped: a fact equal to an example the prompt or its
  schema gives (:func:`examples_in`), or holding an unfilled placeholder
  such as ``<city>``, is the model copying the request, not the user.

A correction the model did not tie to the fact it corrects is tied by
meaning (:func:`meaning_corrections`): the known fact closest to the new
one, clearly closer than any other and about the same thing
(:data:`~.meaning.SAME_SLOT`), is replaced when there is evidence of a
change: the model filed the new fact as a correction, or the user's own
words name the old fact's value ("relocated from Manchester", "ya no estoy en
Telefónica"). A ``replaces`` the model gave for a fact unrelated in meaning
(below :data:`REPLACES_FLOOR`) is cleared. Without an embedder the user's
words are the only evidence (:func:`named_corrections`: "quit the bakery",
"isn't a lawyer any more", "not Berlin", "moved from Paris").

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
    >>> pasted = [HumanMessage('Can you check my note? "The tap leaks and the fan '
    ...                        'is broken since Monday." I rent a flat in Leeds.')]
    >>> kept, dropped = screen([FactCandidate("The tap leaks", "context", 0.9),
    ...                         FactCandidate("Rents a flat in Leeds. Is it ok?", "context", 0.9)],
    ...                        pasted)
    >>> [f.content for f in kept], [d.reason for d in dropped]
    (['Rents a flat in Leeds.'], ['pasted_text'])
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
from ...model_calls.replies import LOG_CHARS, cut
from .meaning import SAME_SLOT, Meaning, TurnText, statement_part, turn_text

__all__ = [
    "COPY_OVERLAP",
    "LOG_CHARS",
    "MAX_FACT_CHARS",
    "MAX_FACT_SENTENCES",
    "REPLACES_FLOOR",
    "SLOT_MARGIN",
    "STOPWORDS",
    "DroppedFact",
    "changed_words",
    "copy_ratio",
    "cut",
    "examples_in",
    "meaning_corrections",
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
#: A ``replaces`` the model gave is kept only for a known fact at least this
#: close in meaning to the new one (unrelated facts are about 0.8 apart with
#: the default embedder; a fact and its correction 0.87 and closer).
REPLACES_FLOOR = 0.8
#: The known fact a correction replaces must be closer to it than the next
#: closest known fact by this much.
SLOT_MARGIN = 0.02

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
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_QUESTION_MARK = re.compile(r"\?\W*$|^\W*¿")
_FIRST_PERSON = re.compile(r"^\W*(i|i'm|i've|i'll|i'd|my|me|we|we're|our)\b", re.I)


def _copies(content: str, source: set[str], user: set[str]) -> bool:
    words = _words(content)
    if not words:
        return False
    share = len(words & source) / len(words)
    return share > COPY_OVERLAP and len(words & source) > len(words & user)


def _own(turns: Sequence[BaseMessage]) -> str:
    """The user's own text of ``turns`` (pasted text left out)."""
    return "\n".join(turn_text(turns).own)


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
    return not (_words(content) & _words(_own(turns)))


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
    return len(words & {w[:STEM] for w in _words(_own(turns))}) / len(words)


def small_talk(content: str) -> bool:
    """Whether ``content`` is only greetings, thanks or goodbyes.

    Examples:
        >>> small_talk("Thanks, that's all for today!"), small_talk("Thanks to Ada, loves jazz")
        (True, False)
    """
    words = _words(content)
    return bool(words) and words <= SMALL_TALK


def user_statements(turns: Sequence[BaseMessage], meaning: Meaning | None = None) -> list[str]:
    """The user's sentences of ``turns`` that could hold a fact: not a
    question, not small talk (by its words, or by ``meaning`` when given:
    "Thanks a ton, legend!").

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> user_statements([HumanMessage("Thanks! I'm vegetarian. Where should I eat?"),
        ...                  AIMessage("Try the market.")])
        ["I'm vegetarian."]
        >>> user_statements([HumanMessage("Quick question: what's the capital of Australia?")])
        []
    """
    return [
        s
        for s in turn_text(turns).statements
        if _words(s)
        and not small_talk(s)
        and not (meaning is not None and s in meaning.vectors and meaning.small_talk(s))
    ]


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
    """A candidate screened out: ``reason`` is ``assistant_copy``,
    ``pasted_text``, ``too_long``, ``example_text``, ``not_from_user``,
    ``small_talk`` or ``repeat``."""

    content: str
    reason: str


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
    assistant, user = _words(_said(turns, "ai")), _words(_own(turns))
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
    meaning: Meaning | None = None,
) -> tuple[list[FactCandidate], list[DroppedFact]]:
    """The facts of one reply worth storing, and the ones dropped (see the
    module); ``examples``: the request's example texts (:func:`examples_in`);
    ``feedback``: what the request said was wrong with the previous answer (a
    fact mostly made of its words is the model copying it: ``example_text``);
    ``users_lines_only``: the request showed the user's lines alone, so a fact
    less than half made of the user's words (:func:`user_share`) is the model
    answering the user, not reporting them (``not_from_user``), unless it
    restates one of the user's statements in meaning (a paraphrase or a
    translation: :meth:`~.meaning.Meaning.said_by_user`); ``meaning``: the
    vectors of the turn and of the facts (:func:`~.meaning.meaning_call`),
    None to screen by words only."""
    text = turn_text(turns)
    said_by_user = _words("\n".join(text.own))
    pasted = _words("\n".join(text.pasted))
    # The package's own words only: the excerpt after ": '" is the model's answer.
    told = _words(_EXCERPT.split(feedback or "", maxsplit=1)[0])
    kept: dict[str, FactCandidate] = {}
    dropped: list[DroppedFact] = []
    for f in facts:
        reason = None
        statement = _statement(f.content, turns, text, meaning)
        if statement:
            # The model put the user's question in the same item as a fact.
            logger.info("thread %s: kept the statement of %r", thread_id, cut(f.content))
            f = replace(f, content=statement)
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
            or (users_lines_only and _answering(f.content, turns, text, meaning))
        ):
            reason = "not_from_user"
        elif small_talk(f.content) or (meaning is not None and meaning.small_talk(f.content)):
            reason = "small_talk"
        else:
            reason = _source(f.content, turns, text, meaning, pasted, said_by_user)
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


def _statement(
    content: str, turns: Sequence[BaseMessage], text: TurnText, meaning: Meaning | None
) -> str | None:
    """The statement of a fact that holds a question too, None when there is
    none or nothing to cut: its sentences that are not questions, else the
    clause before the question of a one-sentence item when the user said it
    (its words or its meaning)."""
    parts = [s.strip() for s in _SENTENCES.split(content.strip()) if s.strip()]
    plain = [s for s in parts if not _QUESTION_MARK.search(s)]
    if len(plain) == len(parts):
        return None
    if plain:
        return " ".join(plain)
    clause = statement_part(content)
    return clause if clause and _supported(clause, turns, text, meaning) else None


def _supported(
    statement: str, turns: Sequence[BaseMessage], text: TurnText, meaning: Meaning | None
) -> bool:
    """Whether the user said ``statement`` (half its words, or its meaning)."""
    if user_share(statement, turns) >= 0.5:
        return True
    return meaning is not None and meaning.said_by_user(statement, text)


def _answering(
    content: str, turns: Sequence[BaseMessage], text: TurnText, meaning: Meaning | None
) -> bool:
    """Whether a fact of an answer to the user's lines alone is the model
    answering the user: less than half the user's words, and (by meaning)
    restating none of the user's statements."""
    if user_share(content, turns) >= 0.5:
        return False
    return meaning is None or not meaning.said_by_user(content, text)


def _source(
    content: str,
    turns: Sequence[BaseMessage],
    text: TurnText,
    meaning: Meaning | None,
    pasted: set[str],
    user: set[str],
) -> str | None:
    """``"pasted_text"`` or ``"assistant_copy"`` when the fact came from
    there (by meaning, else by words), None when it is the user's."""
    if meaning is not None:
        where, _ = meaning.source(content, text)
        if where == "pasted":
            return "pasted_text"
        if where == "assistant":
            return "assistant_copy"
    if pasted and _copies(content, pasted, user):
        return "pasted_text"
    if copy_ratio(content, turns) > COPY_OVERLAP:
        return "assistant_copy"
    return None


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


def _stems(text: str) -> set[str]:
    return {w[:STEM] for w in _words(text) if len(w) >= 4}


def meaning_corrections(
    facts: Sequence[FactCandidate],
    shown: Sequence[Fact],
    turns: Sequence[BaseMessage],
    meaning: Meaning,
) -> list[FactCandidate]:
    """``facts`` with ``replaces`` set, by meaning, where a new fact corrects
    a known one, and cleared where the model named a fact unrelated to it
    (see the module).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langmem_ext.engine import Fact
        >>> old = Fact(id="f1", tenant_id="t", layer="user", layer_id="ada",
        ...            content="Lives in Manchester")
        >>> dog = Fact(id="f2", tenant_id="t", layer="user", layer_id="ada",
        ...            content="Has a dog")
        >>> m = Meaning({"Lives in Bristol": [1, 0.1], "Lives in Manchester": [1, 0.3],
        ...              "Has a dog": [0, 1]})
        >>> turn = [HumanMessage("We relocated from Manchester to Bristol.")]
        >>> [f.replaces for f in meaning_corrections(
        ...     [FactCandidate("Lives in Bristol", "context", 0.9)], [old, dog], turn, m)]
        ['f1']
    """
    if not shown:
        return list(facts)
    # The user "names" a change in one sentence that holds a word of the old
    # value and a word of the new one ("relocated from Manchester to Bristol").
    # Both words somewhere in the turn is no evidence: "My vase won a prize."
    # next to "Pixel broke my mug." changes nothing about the kitten Pixel.
    # A word every sentence carries (a date stamp on each line) names nothing.
    sentences = [_stems(s) for line in _own(turns).splitlines() for s in _SENTENCES.split(line)]
    everywhere = set.intersection(*sentences) if len(sentences) > 1 else set()
    by_id = {k.id: k for k in shown}
    out = []
    for f in facts:
        if f.replaces is not None:
            old = by_id.get(f.replaces)
            if old is not None and meaning.sim(f.content, old.content) < REPLACES_FLOOR:
                logger.warning(
                    "%r was said to replace %r, which is about something else; "
                    "stored as a new fact",
                    cut(f.content),
                    cut(old.content),
                )
                f = replace(f, replaces=None)
            out.append(f)
            continue
        ranked = sorted(
            (
                (meaning.sim(f.content, k.content), k)
                for k in shown
                if _fold(k.content) != _fold(f.content)
            ),
            key=lambda x: -x[0],
        )
        if not ranked:
            out.append(f)
            continue
        best, old = ranked[0]
        clear = len(ranked) == 1 or best - ranked[1][0] >= SLOT_MARGIN
        was, now = _stems(old.content), _stems(f.content)
        gone, came = was - now - everywhere, now - was - everywhere
        named = any(gone & s and came & s for s in sentences)
        if best >= SAME_SLOT and clear and (f.category == "correction" or named):
            logger.info(
                "%r replaces %r: the same thing in meaning, and %s",
                cut(f.content),
                cut(old.content),
                "the user names the old value" if named else "the model filed a correction",
            )
            f = replace(f, replaces=old.id)
        out.append(f)
    return out
