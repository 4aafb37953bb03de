"""Finding the dates in a text: tokens, each language's date words, and the
checks every candidate passes before and after dateparser reads it.

:func:`scan` walks the runs of date words of a text (words dateparser's locale
data or :mod:`._when_words` know, numbers, years), longest first, and returns
what :func:`_read` accepts. :mod:`.when` turns those into one :class:`~.when.When`.
No I/O; dateparser is imported at the first call.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cache
from typing import Any, Literal

from . import _when_words as words

__all__ = ["ORDER", "Found", "Precision", "floor", "guess", "period_end", "scan", "tokens"]

Precision = Literal["day", "week", "month", "year"]
#: Finest first.
ORDER: dict[str, int] = {"day": 0, "week": 1, "month": 2, "year": 3}

_NAMES = frozenset({"month", "month_abbr", "weekday", "weekday_abbr"})
_MAX_SPAN = 7  # tokens in one date expression ("the day before yesterday at 5 pm")


@dataclass(frozen=True)
class Token:
    """A word, number or date-shaped group of characters of the text."""

    text: str  # case-folded
    start: int
    end: int
    shape: str  # "word", "number", "year", "ordinal", "dotted", "numdate", "time", "other"


# Compiled at the first text read, not when the reflection package is imported.
_TOKEN = (
    r"(?P<year>\d{4})(?=\s*[-–—]\s*\d{4}(?!\d))"  # 2019 of "2019-2021"
    r"|(?P<numdate>\d{1,4}(?:[./-]\d{1,4}){1,2})(?![\d./-]*\d)"
    r"|(?P<time>\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?)?|\d{1,2}\s?[ap]\.?m\.?(?!\w)|\d{1,2}h(?:\d{2})?)(?!\w)"
    r"|(?P<dotted>\d{1,2}\.)(?![\d\w])"
    r"|(?P<ordinal>\d{1,2}(?:st|nd|rd|th|er|ère|e|º|ª|o))(?!\w)"
    r"|(?P<digits>\d+)(?![\w])"
    r"|(?P<word>[^\W\d_]+(?:-[^\W\d_]+)*['’]?)"
    r"|(?P<other>\w+)"
)

_BREAK = re.compile(r"[.;:!?\n]")  # sentence punctuation between two tokens


def tokens(text: str) -> list[Token]:
    """The words of ``text`` (NFC-normalized by the caller: offsets are in it)."""
    out = []
    for m in _compiled(_TOKEN).finditer(text):
        kind = m.lastgroup or "other"
        t = m.group().casefold().replace("’", "'")
        if kind == "digits":
            kind = "year" if len(t) == 4 else "number"
        elif kind == "numdate" and _numdate(t) is None:
            kind = "other"  # "2.0", "3.5", "12/03", "03/04/2021": not sure dates
        out.append(Token(t, m.start(), m.end(), kind))
    return out


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _numdate(t: str) -> date | None:
    # ISO (2021-04-03), day first with dots or dashes (3.5.2021): one reading.
    # Slashes: the US read month first, most others day first; only a field
    # above 12 tells which.
    parts = re.split(r"[./-]", t)
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    a, b, c = (int(p) for p in parts)
    try:
        if len(parts[0]) == 4 and "/" not in t:
            return date(a, b, c)
        if len(parts[2]) != 4:
            return None
        if "/" not in t:
            return date(c, b, a)
        if a > 12 >= b:
            return date(c, b, a)
        if b > 12 >= a:
            return date(c, a, b)
        return date(c, a, a) if a == b else None
    except ValueError:
        return None


@dataclass(frozen=True)
class _Vocab:
    lang: str
    words: frozenset[str]  # every word that may be part of a date
    glue: frozenset[str]  # may start a date's words, never end them
    months: Mapping[str, int]
    full_months: frozenset[str]
    weekdays: Mapping[str, int]
    full_weekdays: frozenset[str]
    units: frozenset[str]  # day week fortnight month year
    bad_units: frozenset[str]  # hour minute second decade century: never here
    numbers: Mapping[str, str]  # number words -> digits
    ampm: frozenset[str]
    relative: re.Pattern[str] | None  # "yesterday", "last month", "el mes pasado"
    direction: re.Pattern[str] | None  # "ago", "hace", "il y a", "in"


def _split(phrase: str) -> list[str]:
    return [t.text for t in tokens(unicodedata.normalize("NFC", phrase))]


def _phrases(items: Iterable[str]) -> re.Pattern[str] | None:
    alts = sorted({" ".join(_split(p)) for p in items if _split(p)}, key=len, reverse=True)
    if not alts:
        return None
    return re.compile(r"(?<![\w'])(?:" + "|".join(map(re.escape, alts)) + r")(?![\w'])")


@cache
def _vocab(lang: str) -> _Vocab:
    from dateparser.languages.loader import default_loader

    info: dict[str, Any] = default_loader.get_locale(lang).info

    def listed(*keys: str) -> list[str]:
        return [str(w) for k in keys for w in info.get(k) or ()]

    month_keys = (
        "january february march april may june july august september october november december"
    ).split()
    day_keys = "monday tuesday wednesday thursday friday saturday sunday".split()
    months = {w: i + 1 for i, k in enumerate(month_keys) for w in map(_fold, listed(k))}
    weekdays = {w: i for i, k in enumerate(day_keys) for w in map(_fold, listed(k))}
    # The longest name of a month is its name, and so is any of 5 letters or
    # more ("setiembre", "segunda"); the others are abbreviations ("sept").
    full_months = frozenset(w for w in months if len(w) >= 5) | frozenset(
        max(map(_fold, listed(k)), key=len) for k in month_keys if listed(k)
    )
    full_days = frozenset(w for w in weekdays if len(w) >= 5) | frozenset(
        max(map(_fold, listed(k)), key=len) for k in day_keys if listed(k)
    )
    bad = ("hour", "minute", "second", "decade", "century")
    relative = [
        p
        for key, phrases in (info.get("relative-type") or {}).items()
        if not any(b in key for b in bad) and key != "0 second ago"
        for p in phrases
        if _fold(p) != "till date"
    ]
    # Phrases dateparser rewrites into relative ones ("last night" ->
    # "yesterday night", "tonight" -> "today night") are relative too.
    said = _phrases(relative)
    relative += [
        k
        for item in info.get("simplifications") or ()
        for k, v in item.items()
        if said and re.fullmatch(r"[^\W\d_]+(?: [^\W\d_]+)*", k) and said.search(_fold(str(v)))
    ]
    numbers = {
        _fold(k): v
        for item in info.get("simplifications") or ()
        for k, v in item.items()
        if re.fullmatch(r"[^\W\d_]+", k) and re.fullmatch(r"\d+", str(v))
    }
    numbers.update(words.NUMBER_WORDS.get(lang, {}))
    ampm = frozenset(map(_fold, listed("am", "pm")))
    dayparts = listed("morning", "afternoon", "evening", "night", "early_morning")
    direction = listed("ago", "in")
    every = [
        *months,
        *weekdays,
        *numbers,
        *ampm,
        *words.GLUE.get(lang, ()),
        *(w for p in [*relative, *direction, *dayparts] for w in _split(p)),
        *(w for p in listed("day", "week", "fortnight", "month", "year") for w in _split(p)),
        *(w for p in listed(*bad) for w in _split(p)),
        *(w for p in listed("skip", "pertain") for w in _split(p)),
    ]
    return _Vocab(
        lang=lang,
        words=frozenset(every),
        glue=frozenset(words.GLUE.get(lang, ()))
        | frozenset(w for p in listed("skip", "pertain") for w in _split(p)),
        months=months,
        full_months=full_months,
        weekdays=weekdays,
        full_weekdays=full_days,
        units=frozenset(
            w for p in listed("day", "week", "fortnight", "month", "year") for w in _split(p)
        ),
        bad_units=frozenset(w for p in listed(*bad) for w in _split(p)),
        numbers=numbers,
        ampm=ampm,
        relative=_phrases(relative),
        direction=_phrases(direction),
    )


def _fold(s: str) -> str:
    return unicodedata.normalize("NFC", s).casefold().replace("’", "'")


def guess(tokens: list[Token], langs: tuple[str, ...], *, given: bool) -> tuple[str, ...]:
    """The languages to read the text in, in order: the caller's (``given``);
    else those whose common words the text uses most, all when it uses none."""
    if given or len(langs) == 1:
        return langs
    counts = {lang: sum(t.text in words.STOPWORDS.get(lang, ()) for t in tokens) for lang in langs}
    best = max(counts.values())
    return tuple(lang for lang in langs if counts[lang] == best) if best else langs


@dataclass(frozen=True)
class Found:
    """A date expression :func:`scan` accepted, not yet rounded or combined."""

    first: int  # token indexes
    last: int
    start: int  # character offsets in the text
    end: int
    day: date  # the day the words name (not yet rounded to the precision)
    precision: Precision
    underspecified: bool  # no year and no "last"/"next": read as the most recent
    duration: bool = False  # "drei Jahren": only after "seit"/"depuis"/"desde hace"
    core: int = -1  # offset of the first word after the date's articles


def scan(text: str, tokens: list[Token], lang: str, base: datetime) -> list[Found]:
    """The date expressions of ``text`` in ``lang``, left to right, none
    overlapping; ``base`` is the speaker's wall-clock time (naive)."""
    v = _vocab(lang)
    known = [t.text in v.words if t.shape == "word" else t.shape != "other" for t in tokens]
    # dateparser's filler words ("and", "just", "about") never start a date.
    filler = v.glue - words.GLUE.get(lang, frozenset())
    found: list[Found] = []
    i = 0
    while i < len(tokens):
        if not known[i] or (tokens[i].shape == "word" and tokens[i].text in filler):
            i += 1
            continue
        # The longest run of date words from here, within one sentence.
        j = i
        while (
            j + 1 < len(tokens)
            and j + 1 - i < _MAX_SPAN
            and known[j + 1]
            and not _BREAK.search(text, tokens[j].end, tokens[j + 1].start)
        ):
            j += 1
        hit = None
        for last in range(j, i - 1, -1):
            if tokens[last].text in v.glue and tokens[last].shape == "word":
                continue
            hit = _read(text, tokens, i, last, v, base)
            if hit is not None:
                break
        if hit is None:
            i += 1
        else:
            found.append(hit)
            i = hit.last + 1
    return found


def _read(
    text: str, tokens: list[Token], first: int, last: int, v: _Vocab, base: datetime
) -> Found | None:
    span = tokens[first : last + 1]
    s, e = span[0].start, span[-1].end
    phrase = " ".join(t.text for t in span)
    before = text[max(0, s - 40) : s].casefold()
    lang = v.lang

    ordinal = words.ORDINAL_DAY.get(lang)
    m = ordinal.match(phrase) if ordinal else None
    if m:
        nxt = tokens[last + 1] if last + 1 < len(tokens) else None
        ends = nxt is None or bool(_BREAK.search(text, e, nxt.start) or "," in text[e : nxt.start])
        if not ends and (nxt is None or nxt.text not in words.STOPWORDS.get(lang, ())):
            return None  # "the 3rd floor", "the 3rd time"
        if nxt is not None and not ends and nxt.text in v.glue:
            return None  # "the 3rd of them"
        day = _day_of_month(int(m.group(1)), base.date())
        return None if day is None else Found(first, last, s, e, day, "day", True)

    numdates = [t for t in span if t.shape == "numdate"]
    if numdates:
        rest = [t for t in span if t.shape != "numdate"]
        if len(numdates) > 1 or any(t.shape != "time" and t.text not in v.glue for t in rest):
            return None
        day = _numdate(numdates[0].text)
        return None if day is None else Found(first, last, s, e, day, "day", False)

    # What the words are, before asking the parser.
    def near(k: int, kinds: set[str]) -> bool:
        for d in (-1, 1, -2, 2):
            n = k + d
            if not 0 <= n < len(span):
                continue
            if abs(d) == 2 and span[k + d // 2].text not in v.glue:
                continue
            if _kind(span[n], v) in kinds:
                return True
        return False

    kinds = [_kind(t, v) for t in span]
    if "bad_unit" in kinds:
        return None  # hours, minutes, decades, centuries
    numeric = {"number", "ordinal", "dotted"}
    outside = [tokens[n] for n in (first - 1, last + 1) if 0 <= n < len(tokens)]
    if (kinds[0] in ("month", "month_abbr") or kinds[-1] in ("month", "month_abbr")) and any(
        _kind(t, v) in numeric for t in outside
    ):
        return None  # "February 30th": the day was left out because it is no day
    for k, kind in enumerate(kinds):
        if kind == "number" and not near(k, {"month", "month_abbr", "unit", "ampm"}):
            return None  # a number that is a quantity or an hour, not a date
        if kind == "month_abbr" and not near(k, {"number", "ordinal", "dotted", "year"}):
            return None  # "sept" (seven), "mar" (sea), "jan"
        if kind == "weekday_abbr" and not near(k, {"number", "ordinal", "dotted"}):
            return None  # "sun", "sat", "wed", "sex"
        if (
            kind == "weekday"
            and lang in words.WEEKDAY_NEEDS_GLUE
            and not near(k, {"number", "ordinal", "dotted"})
            and not (v.relative and v.relative.search(phrase))
            and not _introduced(text, span[k], v)
        ):
            return None  # "Sunday roast", "Black Friday"
        # A month or a year alone must follow a preposition or article ("in
        # May", "im Mai", "en mayo", "since 2019") or be in a range of years:
        # "may I ask", "March on", "I walk 2000 steps" are no dates.
        if (
            kind == "month"
            and not near(k, {"number", "ordinal", "dotted", "year"})
            and not _introduced(text, span[k], v)
        ):
            return None
        if (
            kind == "year"
            and not near(k, {"month", "month_abbr", "number", "ordinal", "dotted"})
            and not _introduced(text, span[k], v)
        ):
            return None
    has = set(kinds)
    units = "unit" in has
    rel = v.relative.search(phrase) if v.relative else None
    relative = rel is not None
    if rel is not None:
        after = phrase[rel.end() :].split()
        if last + 1 < len(tokens) and not _BREAK.search(text, e, tokens[last + 1].start):
            after.append(tokens[last + 1].text)
        if after and after[0] in words.OF.get(lang, ()):
            return None  # "the last month of the year"
    # "ago", "in", "hace" count with a unit only: "in January" is no "in 2 weeks".
    direction = units and bool(v.direction and v.direction.search(phrase))
    years = [int(t.text) for t in span if t.shape == "year"]
    duration = units and not relative and not direction and not (has & {"month", "weekday"})
    if duration and "number" not in has:
        return None  # "week", "month" alone
    anchored = (
        relative
        or (direction and units)
        or duration
        or bool(years)
        or bool(has & {"month", "month_abbr", "weekday", "weekday_abbr"})
    )
    if not anchored:
        return None
    # The words before the date, with the date's own articles ("le lundi").
    core = next((k for k, t in enumerate(span) if t.text not in v.glue), 0)
    lead = before + text[s : span[core].start].casefold()
    habitual = words.HABITUAL_BEFORE.get(lang)
    if has & {"weekday", "weekday_abbr"} and habitual and habitual.search(lead):
        return None  # "every Monday", "los lunes"
    period_before = words.PERIOD_BEFORE.get(lang)
    if (relative or direction) and period_before and period_before.search(lead):
        return None  # "for the last month", "in the past two weeks"

    data = _parse(_parse_text(text, span, v), lang, base)
    if data is None:
        return None
    when, period, parts = data
    if period in ("time", "part_of_day"):
        # A time of day dates nothing by itself; with a day it is that day.
        if not (relative or has & {"weekday", "month"} or years):
            return None
        period = "day"
    if period not in ORDER:
        return None  # quarters
    if parts == ("day",) or ("month" in parts and not (relative or direction) and not has & _NAMES):
        return None  # the parser read a bare number as a day or a month
    named_months = {v.months[t.text] for t in span if _kind(t, v) in ("month", "month_abbr")}
    named_days = {v.weekdays[t.text] for t in span if _kind(t, v) in ("weekday", "weekday_abbr")}
    if len(named_months) > 1 or (named_months and when.month not in named_months):
        return None
    if named_days and (len(named_days) > 1 or period != "day" or when.weekday() not in named_days):
        return None
    if years and (len(set(years)) > 1 or when.year != years[0]):
        return None
    underspecified = not (years or relative or direction or duration)
    future = words.FUTURE.get(lang)
    if underspecified and future and future.search(text.casefold()):
        return None  # "I will start in January": which January?
    recurring = words.RECURRING.get(lang)
    if underspecified and recurring and recurring.search(text.casefold()):
        return None  # "my birthday is on 3 May": every year
    precision: Precision = period  # type: ignore[assignment]
    return Found(first, last, s, e, when, precision, underspecified, duration, span[core].start)


def _kind(t: Token, v: _Vocab) -> str:
    if t.shape in ("year", "ordinal", "dotted", "numdate", "time", "other"):
        return t.shape
    w = t.text
    if t.shape == "number" or w in v.numbers:
        return "number"
    if w in v.months:
        return "month" if w in v.full_months else "month_abbr"
    if w in v.weekdays:
        return "weekday" if w in v.full_weekdays else "weekday_abbr"
    if w in v.bad_units:
        return "bad_unit"
    if w in v.units:
        return "unit"
    if w in v.ampm:
        return "ampm"
    return "word"


def _introduced(text: str, t: Token, v: _Vocab) -> bool:
    # Preceded by a preposition or article, a "since"/"until"/"from", a range's
    # connector ("to", "bis"), or in a range of years ("2019-2021").
    lang = v.lang
    prev = text[max(0, t.start - 24) : t.start].casefold()
    if t.shape == "year" and (
        re.search(r"\d{4}\s*[-–—]\s*$", prev) or re.match(r"\s*[-–—]\s*\d{4}", text[t.end :])
    ):
        return True
    m = re.search(r"([^\W\d_]+'?)\s*$", prev)
    if m is None:
        return False
    w = m.group(1)
    connector = words.RANGE_BETWEEN.get(lang)
    introducing = words.GLUE.get(lang, frozenset()) - words.NOT_INTRODUCING.get(lang, frozenset())
    if w in introducing or (connector and connector.match(f" {w} ")):
        return True
    cues = (words.SINCE_BEFORE, words.UNTIL_BEFORE, words.FROM_BEFORE)
    return any(c.get(lang) is not None and c[lang].search(prev) for c in cues)


def _parse_text(text: str, span: list[Token], v: _Vocab) -> str:
    # The original words, with number words dateparser's data lacks as digits.
    out = []
    for k, t in enumerate(span):
        if k:
            out.append(text[span[k - 1].end : t.start])
        missing = words.NUMBER_WORDS.get(v.lang, {})
        out.append(missing.get(t.text, text[t.start : t.end]))
    return "".join(out)


def _parse(s: str, lang: str, base: datetime) -> tuple[date, str, tuple[str, ...]] | None:
    from dateparser.date import DateDataParser

    settings = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "PREFER_DAY_OF_MONTH": "first",
        "RETURN_TIME_AS_PERIOD": True,
        "TIMEZONE": "UTC",
        "RETURN_AS_TIMEZONE_AWARE": False,
        # Not epoch numbers ("1700000000") nor digits read as a time ("1230").
        "PARSERS": ["relative-time", "absolute-time"],
    }
    try:
        data = DateDataParser(languages=[lang], settings=settings).get_date_data(s)
    except (ValueError, OverflowError, TypeError):
        return None
    if data.date_obj is None:
        return None
    return data.date_obj.date(), str(data.period), tuple(data.parts or ())


def _day_of_month(d: int, today: date) -> date | None:
    # "the 3rd": this month's if not after today, else last month's; a day
    # neither month has ("the 31st" on 5 May) is not guessed.
    if d < 1 or d > 31:
        return None
    first = today.replace(day=1)
    for month_start in (first, (first - timedelta(days=1)).replace(day=1)):
        try:
            day = month_start.replace(day=d)
        except ValueError:
            continue
        if day <= today:
            return day
    return None


def floor(d: date, precision: str) -> date:
    """The first day of the period (a week starts on Monday) ``d`` is in."""
    if precision == "week":
        return d - timedelta(days=d.weekday())
    if precision == "month":
        return d.replace(day=1)
    if precision == "year":
        return d.replace(month=1, day=1)
    return d


def period_end(d: date, precision: str) -> date:
    """The first day after the period that starts on ``d``."""
    if precision == "day":
        return d + timedelta(days=1)
    if precision == "week":
        return d + timedelta(days=7)
    if precision == "month":
        return (d.replace(day=28) + timedelta(days=4)).replace(day=1)
    return d.replace(year=d.year + 1)
