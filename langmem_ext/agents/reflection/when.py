"""When a fact held, read from the words that state it.

A fact has two times: when it was recorded, and when it held in the world
("I moved to Munich last month"). This module reads the second from the
user's words, against the turn's own time (:func:`turn_time`: the message's
timestamp, else the session's date, else now), with the date parser
``dateparser``, so that the same words on the same day give the same date.
What the model says about the date is a fallback (:func:`reconcile`), and a
disagreement between the two is reported, never silent. Words that give no
sure date give ``None``: a wrong date is worse than an unknown one.

**The rule.** :func:`resolve_when` returns a :class:`When`. Its ``start``
(when the fact began to hold: ``valid_at``) and ``end`` (when it stopped:
``invalid_at``) are each the *first instant of the period the words name*,
at the ``precision`` the words give, as midnight UTC of that calendar date
(the calendar is the reference's own, in its UTC offset):

========== ================================= =================================
precision  words                             start
========== ================================= =================================
day        yesterday, on Monday, on the 3rd, that day
           3 May 2021, today
week       last week, two weeks ago          that week's Monday
month      last month, in January, März 2024 the 1st of that month
year       last year, since 2019, 2019       1 January of that year
========== ================================= =================================

The fact started somewhere in ``[start, start + one precision unit)``.
Dates without a year or a "last"/"next" ("in January", "on the 3rd") are the
most recent such date not after the turn's day (a weekday: before it, so
"on Monday" said on a Monday is a week before; "this Monday" is that day); in
a sentence about the future ("I will...", "lundi prochain") that reading is
likely wrong, so they stay unknown. Tense is not parsed otherwise: "On 12
March I have an exam" is last March. Dates after the turn that the words
make explicit ("next month", "in two weeks") are kept as plans
(``future=True``).

* "since 2019", "seit 2019", "desde hace dos años": ``start``, no ``end``,
  ``open_ended=True`` (it still holds);
* "until 2021": ``end`` only; "from 2019 to 2021", "zwischen 2019 und 2021",
  "2019-2021": both (``end`` is the first instant of 2021 at year precision:
  the fact stopped somewhere in 2021);
* several dates that name the same time ("last year, in May") give the
  finest; several that disagree, and are not a range, give ``None`` (pass the
  fact's own content, not a paragraph).

**What is never a date here.** A bare number or quantity ("I have 3 cats",
"room 12", "version 2.0", "5 km", "3.5"); a year or month alone without a
preposition ("I walk 2000 steps", "may I ask", "March on", "the May Day
parade"); an abbreviated name alone ("sun", "Sat", "jan", French "sept"); in
English, German, Spanish and Portuguese a weekday without its preposition
("Sunday roast", "Black Friday"); a time of day without a day ("at 5pm", "in
5 minutes"); "now" (it says the fact holds, not since when); a duration
without "ago" or "since" ("for two weeks", "one day", "3 days a week"); a
habit ("every Monday", "los lunes", "le lundi"); a stretch up to now ("for
the last month"); a noun ("the last month of the year"); a birthday or
holiday without a year (it recurs); "from 2015" alone ("a car from 2015":
made then, owned since when?) and the end of a range whose start cannot be
read ("from 3 to 10 May"); a day of the month without an article or ordinal
("on 3"), or one the last two months lack ("the 31st" on 5 May; "February
30th"); decades and centuries; numeric dates whose day and month read both
ways ("03/04/2021"; dotted and ISO dates are unambiguous); years outside
1900-2200. "today" *is* a date (the turn's day): when a turn is reflected
later, or a conversation is imported, it is the only place that day is
written down.

**Languages.** ``languages`` are dateparser's codes, tried in order. Without
them the text's language is guessed among :data:`DEFAULT_LANGUAGES` from its
common words (German "hier" is "here", French "hier" is "yesterday"); pass the
user's languages when known. Ranges, "since" and "until" are read in the
default languages; other languages dateparser knows give point dates.

Examples:
    >>> from datetime import datetime, timezone
    >>> turn = datetime(2026, 3, 10, 15, 0, tzinfo=timezone.utc)  # a Tuesday
    >>> w = resolve_when("I moved to Munich last month", turn)
    >>> w.start.date(), w.precision, w.phrase
    (datetime.date(2026, 2, 1), 'month', 'last month')
    >>> w = resolve_when("Ich wohne seit 2019 in Berlin", turn)
    >>> w.start.date(), w.end, w.open_ended, w.language
    (datetime.date(2019, 1, 1), None, True, 'de')
    >>> w = resolve_when("hace dos semanas empecé a correr", turn)
    >>> w.start.date(), w.precision  # the Monday of that week
    (datetime.date(2026, 2, 23), 'week')
    >>> resolve_when("on Monday I met Clara", turn).start.date()
    datetime.date(2026, 3, 9)
    >>> resolve_when("the 31st", datetime(2026, 4, 10, tzinfo=timezone.utc)).start.date()
    datetime.date(2026, 3, 31)
    >>> w = resolve_when("I will move to Lisbon next month", turn)
    >>> w.start.date(), w.future
    (datetime.date(2026, 4, 1), True)
    >>> [resolve_when(t, turn) for t in ("I have 3 cats", "may I ask", "at 5pm", "now")]
    [None, None, None, None]
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timezone
from typing import Any, Literal

from langmem_ext.errors import InvalidValueError

from . import _when_words as words
from ._when_read import ORDER, Found, Precision, floor, guess, period_end, scan, tokens

__all__ = [
    "DEFAULT_LANGUAGES",
    "MAX_YEAR",
    "MESSAGE_TIME_KEYS",
    "MIN_YEAR",
    "SESSION_TIME_KEYS",
    "Precision",
    "When",
    "reconcile",
    "resolve_when",
    "turn_time",
]


#: Tried in this order when the caller names no language.
DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "de", "es", "fr", "pt", "it", "nl")
#: Dates outside these years are not dates of a user's life: ``None``.
MIN_YEAR, MAX_YEAR = 1900, 2200
#: Keys of a message's ``additional_kwargs``, then its ``response_metadata``
#: (and a dict message's own keys, then its ``metadata``) that
#: :func:`turn_time` reads.
MESSAGE_TIME_KEYS: tuple[str, ...] = ("timestamp", "created_at", "sent_at", "time")
#: Keys of ``config["configurable"]``, then ``config["metadata"]`` (where
#: LangGraph's server puts a thread's metadata), that :func:`turn_time` reads.
SESSION_TIME_KEYS: tuple[str, ...] = ("turn_time", "session_date", "thread_date")


@dataclass(frozen=True)
class When:
    """When a fact held, as the words said it.

    Attributes:
        start: First instant (UTC midnight) of the period the fact began in,
            at ``precision``; ``None`` when the words give only an end.
        end: First instant of the period it stopped in (``end_precision``);
            ``None`` when unknown or still holding.
        precision: Of ``start`` (of ``end`` when there is no start).
        phrase: The words the date was read from ("since 2019").
        end_precision: Of ``end``; ``None`` without an end.
        open_ended: The words say it still holds ("since", "seit", "desde").
        future: The date lies after the turn (a plan: "next month").
        language: The language the words were read in.
        source: ``"text"`` (read by the date parser) or ``"model"`` (the
            model's date, used because the text gave none).
    """

    start: datetime | None
    end: datetime | None
    precision: Precision
    phrase: str
    end_precision: Precision | None = None
    open_ended: bool = False
    future: bool = False
    language: str | None = None
    source: Literal["text", "model"] = "text"

    def label(self) -> str:
        """The dates at their precision: ``"2026-02"``, ``"2019.."``, ``"2019..2021"``.

        Examples:
            >>> from datetime import datetime, timezone
            >>> t = datetime(2026, 3, 10, tzinfo=timezone.utc)
            >>> [resolve_when(s, t).label() for s in ("last month", "since 2019", "until 2021")]
            ['2026-02', '2019..', '..2021']
        """
        start = _label(self.start, self.precision) if self.start else ""
        if self.end is None:
            return f"{start}.." if self.open_ended else start
        return f"{start}..{_label(self.end, self.end_precision or self.precision)}"


# -- reading a text ----------------------------------------------------------------


def resolve_when(
    text: str, reference: datetime, *, languages: Sequence[str] | None = None
) -> When | None:
    """The time a short text (a fact, or the sentence it came from) states.

    Args:
        text: A fact's content or the user's sentence.
        reference: When the words were said (:func:`turn_time`); must be
            timezone-aware: "yesterday" depends on the speaker's day.
        languages: dateparser language codes, tried in order; default: guessed
            among :data:`DEFAULT_LANGUAGES`.

    Returns:
        The :class:`When`, or ``None`` when the text states no sure date (see
        the module for the rules and the words that are never dates).

    Raises:
        InvalidValueError: ``reference`` is naive or not a datetime, ``text``
            is not a string, or a language is unknown to dateparser.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
        >>> resolve_when("il y a deux semaines", t).start.date()
        datetime.date(2025, 12, 22)
        >>> w = resolve_when("from 2019 to 2021", t)
        >>> w.start.year, w.end.year, w.end_precision
        (2019, 2021, 'year')
        >>> resolve_when("I have 3 cats", t) is None
        True
    """
    ref = _aware(reference, "reference")
    if not isinstance(text, str):
        raise InvalidValueError(f"text must be a string, got {type(text).__name__}")
    langs = _languages(languages)
    text = unicodedata.normalize("NFC", text)  # the offsets of the tokens are in this text
    toks = tokens(text)
    if not toks:
        return None
    base = ref.replace(tzinfo=None)  # the speaker's wall clock: their calendar day
    for lang in guess(toks, langs, given=languages is not None):
        found = scan(text, toks, lang, base)
        if found:
            return _combine(text, found, lang, base)
    return None


def _languages(languages: Sequence[str] | None) -> tuple[str, ...]:
    if languages is None:
        return DEFAULT_LANGUAGES
    if isinstance(languages, str) or not all(isinstance(x, str) for x in languages):
        raise InvalidValueError(
            f"languages must be a list of language codes such as ['en', 'de'], got {languages!r}"
        )
    from dateparser.data.languages_info import language_order

    unknown = [x for x in languages if x not in language_order]
    if unknown:
        raise InvalidValueError(
            f"languages {unknown!r} are unknown to the date parser; use its codes "
            "('en', 'de', 'es', 'fr', 'pt', 'it', ...)"
        )
    return tuple(languages) or DEFAULT_LANGUAGES


def _instant(d: date) -> datetime:
    return datetime.combine(d, time(), tzinfo=timezone.utc)


def _combine(text: str, found: list[Found], lang: str, base: datetime) -> When | None:
    today = base.date()
    low = text.casefold()

    glue = words.GLUE.get(lang, frozenset())

    def cue(f: Found, table: Mapping[str, re.Pattern[str]], past_glue: bool = True) -> int | None:
        # The word before the date, past its articles ("desde el lunes").
        pattern = table.get(lang)
        if pattern is None:
            return None
        end = f.start
        while (
            past_glue
            and (w := re.search(r"([^\W\d_]+'?)\s*$", low[max(0, end - 20) : end]))
            and w.group(1) in glue
        ):
            end = max(0, end - 20) + w.start(1)
        m = pattern.search(low, max(0, end - 40), end)
        return None if m is None else m.start("cue")

    def dated(d: date) -> bool:
        return MIN_YEAR <= d.year <= MAX_YEAR

    if len(found) == 2:
        a, b = found
        between = low[a.end : b.core if b.core >= 0 else b.start]
        connector = words.RANGE_BETWEEN.get(lang)
        if connector and connector.match(between) and not (a.duration or b.duration):
            conj = re.search(r"\b(?:and|und|y|et|e|en)\b", between)
            opener = cue(a, words.FROM_BEFORE)
            if conj and (
                opener is None
                or not re.search(r"between|zwischen|entre|tra|fra|tussen", low[opener : a.start])
            ):
                return None
            start, end = floor(a.day, a.precision), floor(b.day, b.precision)
            if end < start or not (dated(start) and dated(end)):
                return None
            begin = a.start if opener is None else opener
            return When(
                start=_instant(start),
                end=_instant(end),
                precision=a.precision,
                end_precision=b.precision,
                phrase=text[begin : b.end].strip(),
                future=start > today,
                language=lang,
            )
    # One time, maybe named twice ("last year, in May"): the finest, if every
    # coarser one contains it.
    finest = min(found, key=lambda f: ORDER[f.precision])
    for f in found:
        lo = floor(f.day, f.precision)
        if not lo <= finest.day < period_end(lo, f.precision):
            return None
    since = [c for f in found if (c := cue(f, words.SINCE_BEFORE)) is not None]
    until = [c for f in found if (c := cue(f, words.UNTIL_BEFORE)) is not None]
    if since and until:
        return None
    if not (since or until) and any(
        cue(f, words.FROM_BEFORE) is not None
        or cue(f, words.LOST_START_BEFORE, past_glue=False) is not None
        for f in found
    ):
        # "a car from 2015" (made then, bought when?); "from 3 to 10 May"
        # (the 10th is where it ended).
        return None
    if any(f.duration for f in found) and not since:
        return None  # "for two weeks", "one day"
    d = floor(finest.day, finest.precision)
    if not dated(d):
        return None
    begin = min([*since, *until, finest.start])
    phrase = text[begin : finest.end].strip()
    if until:
        return When(
            start=None,
            end=_instant(d),
            precision=finest.precision,
            end_precision=finest.precision,
            phrase=phrase,
            future=d > today,
            language=lang,
        )
    return When(
        start=_instant(d),
        end=None,
        precision=finest.precision,
        phrase=phrase,
        open_ended=bool(since),
        future=d > today,
        language=lang,
    )


def _label(dt: datetime, precision: str) -> str:
    if precision == "year":
        return f"{dt.year:04d}"
    if precision == "month":
        return f"{dt.year:04d}-{dt.month:02d}"
    if precision == "week":
        y, w, _ = dt.isocalendar()
        return f"{y:04d}-W{w:02d}"
    return dt.date().isoformat()


def _aware(value: object, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidValueError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValueError(
            f"{name} must be timezone-aware (got naive {value.isoformat()}): "
            "pass e.g. datetime.now(timezone.utc), or .replace(tzinfo=timezone.utc)"
        )
    return value


# -- the turn's time ---------------------------------------------------------------


def turn_time(
    messages: Iterable[Any] | None,
    config: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> datetime:
    """The time the words of a turn were said: what "yesterday" is relative to.

    In order:

    1. a message's own time: the last user message that has one, else the
       last message that has one. Read from a message's keys
       :data:`MESSAGE_TIME_KEYS` (``"timestamp"``, ``"created_at"``,
       ``"sent_at"``, ``"time"``) in its ``additional_kwargs``, then its
       ``response_metadata``, (for dict messages) the dict itself and its
       ``"metadata"``;
    2. the session's date: :data:`SESSION_TIME_KEYS` (``"turn_time"``,
       ``"session_date"``, ``"thread_date"``) in ``config["configurable"]``,
       then in ``config["metadata"]`` (a LangGraph server puts the thread's
       metadata there);
    3. ``now`` (default: the current time, UTC).

    A value may be a ``datetime`` (naive is read as UTC), a ``date``
    (midnight UTC), epoch seconds (or milliseconds, above 10^11; below 10^8,
    1973, a number is no timestamp) as a number or digits, ISO 8601 text, or
    a written date and time ("1:56 pm on 8 May, 2023", read by the date
    parser; relative text such as "yesterday" is not a time). A value that
    cannot be read, or is outside 1900-2200, is skipped and the next source
    is used. The time keeps its UTC offset: the speaker's calendar decides
    which day "yesterday" was.

    Raises:
        InvalidValueError: ``now`` is naive.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from langchain_core.messages import HumanMessage
        >>> m = HumanMessage("I moved yesterday", additional_kwargs={"timestamp": 1773154800})
        >>> turn_time([m]).isoformat()
        '2026-03-10T15:00:00+00:00'
        >>> turn_time([HumanMessage("hi")], {"configurable": {"session_date": "2023-05-08"}})
        datetime.datetime(2023, 5, 8, 0, 0, tzinfo=datetime.timezone.utc)
        >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        >>> turn_time([HumanMessage("hi")], None, now) == now
        True
    """
    fallback = _aware(now, "now") if now is not None else datetime.now(timezone.utc)
    stamped = [(m, t) for m in messages or () if (t := _message_time(m)) is not None]
    users = [t for m, t in stamped if _is_user(m)]
    if users:
        return users[-1]
    if stamped:
        return stamped[-1][1]
    for section in ("configurable", "metadata"):
        values = (config or {}).get(section) or {}
        if isinstance(values, Mapping):
            for key in SESSION_TIME_KEYS:
                t = _time_of(values.get(key))
                if t is not None:
                    return t
    return fallback


def _message_time(m: Any) -> datetime | None:
    places: list[Any] = []
    if isinstance(m, Mapping):
        places = [m.get("additional_kwargs"), m.get("response_metadata"), m, m.get("metadata")]
    else:
        places = [getattr(m, "additional_kwargs", None), getattr(m, "response_metadata", None)]
    for place in places:
        if isinstance(place, Mapping):
            for key in MESSAGE_TIME_KEYS:
                t = _time_of(place.get(key))
                if t is not None:
                    return t
    return None


def _is_user(m: Any) -> bool:
    if isinstance(m, Mapping):
        return m.get("role") in ("user", "human") or m.get("type") == "human"
    return getattr(m, "type", None) == "human"


def _time_of(value: Any) -> datetime | None:
    t = _read_time(value)
    if t is None or not MIN_YEAR <= t.year <= MAX_YEAR:
        return None
    return t


def _read_time(value: Any) -> datetime | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value if value.utcoffset() is not None else value.replace(tzinfo=timezone.utc)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=timezone.utc)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", value):
        value = float(value)
    if isinstance(value, (int, float)):
        seconds = float(value)
        if not math.isfinite(seconds):
            return None
        if abs(seconds) >= 1e11:
            seconds /= 1000  # milliseconds (JavaScript's Date.now())
        if seconds < 1e8:
            return None  # before March 1973: a year or a count, not a timestamp
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    s = value.strip()
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s[-1:] in "zZ" else s)
        return t if t.utcoffset() is not None else t.replace(tzinfo=timezone.utc)
    except ValueError:
        pass
    return _written_time(s)


def _written_time(s: str) -> datetime | None:
    # A written absolute date ("1:56 pm on 8 May, 2023"). Relative text reads
    # differently against two bases: it names no time of its own.
    from dateparser.date import DateDataParser

    seen = []
    for base in (datetime(2001, 1, 1), datetime(2011, 7, 15, 12)):
        settings = {
            "RELATIVE_BASE": base,
            "TIMEZONE": "UTC",
            "RETURN_AS_TIMEZONE_AWARE": True,
            "REQUIRE_PARTS": ["day", "month", "year"],
            "PARSERS": ["absolute-time"],
        }
        try:
            data = DateDataParser(
                languages=list(DEFAULT_LANGUAGES), use_given_order=True, settings=settings
            ).get_date_data(s)
        except (ValueError, OverflowError, TypeError):
            return None
        seen.append(data.date_obj)
    if seen[0] is None or seen[0] != seen[1]:
        return None
    t: datetime = seen[0]
    return t if t.utcoffset() is not None else t.replace(tzinfo=timezone.utc)


# -- the parser and the model ------------------------------------------------------


def reconcile(
    parsed: When | None, model_value: str | None, reference: datetime
) -> tuple[When | None, str | None]:
    """The date to keep, from the parser's reading and the model's.

    The parser's reading wins. The model's date (ISO text: ``"2026"``,
    ``"2026-02"``, ``"2026-02-14"``, a full timestamp; or words such as "last
    month", read against ``reference``) is used only when the parser found
    none (its :attr:`When.source` is then ``"model"``). When both exist and
    differ, at the coarser of their two precisions (the model's ``"2026"``
    agrees with the text's February 2026), or when the model's date cannot be
    read, the note says so: log it and keep it with the fact.

    Returns:
        ``(when, note)``: the date to keep (or ``None``), and ``None`` or one
        line describing a disagreement.

    Raises:
        InvalidValueError: ``reference`` is naive.

    Examples:
        >>> from datetime import datetime, timezone
        >>> t = datetime(2026, 3, 10, tzinfo=timezone.utc)
        >>> text = resolve_when("I moved to Munich last month", t)
        >>> reconcile(text, "2026-02", t) == (text, None)
        True
        >>> when, note = reconcile(text, "2025-11-03", t)
        >>> when is text, note
        (True, "the text's date 2026-02 ('last month') and the model's '2025-11-03' (2025-11) differ; kept the text's")
        >>> when, note = reconcile(None, "2026-01-15", t)
        >>> when.label(), when.source, note
        ('2026-01-15', 'model', None)
    """  # noqa: E501
    ref = _aware(reference, "reference")
    given = model_value.strip() if isinstance(model_value, str) else ""
    model = _model_when(given, ref) if given else None
    if parsed is None:
        if given and model is None:
            return None, f"the model's date {given!r} could not be read; left unknown"
        return model, None
    if not given:
        return parsed, None
    if model is None:
        return parsed, (
            f"the model's date {given!r} could not be read; kept the text's {parsed.label()}"
        )
    # Like with like: two starts, or (from "until ...") two ends.
    if parsed.start is not None and model.start is not None:
        mine, theirs = (parsed.start, parsed.precision), (model.start, model.precision)
    elif parsed.start is None and model.start is None and parsed.end and model.end:
        mine = (parsed.end, parsed.end_precision or parsed.precision)
        theirs = (model.end, model.end_precision or model.precision)
    else:
        return parsed, (
            f"the text's date {parsed.label()} ({parsed.phrase!r}) and the model's {given!r} "
            f"({model.label()}) are not the same kind (a start, an end); kept the text's"
        )
    coarse = max(mine[1], theirs[1], key=ORDER.__getitem__)
    if floor(mine[0].date(), coarse) != floor(theirs[0].date(), coarse):
        return parsed, (
            f"the text's date {parsed.label()} ({parsed.phrase!r}) and the model's "
            f"{given!r} ({_label(theirs[0], coarse)}) differ; kept the text's"
        )
    return parsed, None


def _model_when(value: str, reference: datetime) -> When | None:
    m = re.fullmatch(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?", value)
    day: date | None = None
    precision: Precision = "day"
    try:
        if m:
            y, mo, d = m.group(1), m.group(2), m.group(3)
            day = date(int(y), int(mo or 1), int(d or 1))
            precision = "day" if d else "month" if mo else "year"
        else:
            t = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1:] in "zZ" else value)
            day = t.date()
    except ValueError:
        day = None
    if day is not None:
        if not MIN_YEAR <= day.year <= MAX_YEAR:
            return None
        today = reference.replace(tzinfo=None).date()
        return When(
            start=_instant(day),
            end=None,
            precision=precision,
            phrase=value,
            future=day > today,
            source="model",
        )
    when = resolve_when(value, reference)
    return None if when is None else replace(when, source="model")
