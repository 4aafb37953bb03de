"""Dates users state, resolved against the turn's time: a table of sentences in
seven languages with fixed reference times and the exact dates, precisions and
ranges expected; words that must never be dates; month, year and leap-day
boundaries; the turn's time from messages and config; the parser's date
against the model's; and the cost per call and of the import."""

from __future__ import annotations

import subprocess
import sys
import time
import unicodedata
from datetime import date, datetime, timedelta, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langmem_ext.agents.reflection.when import (
    When,
    reconcile,
    resolve_when,
    turn_time,
)
from langmem_ext.errors import InvalidValueError

UTC = timezone.utc
TUE = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)  # a Tuesday


def at(*args: int, tz: timezone = UTC) -> datetime:
    return datetime(*args, tzinfo=tz)


def D(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


# fmt: off
# (text, languages, reference, start, end, precision, flags)
# start/end: ISO dates (the first day of the period) or None; flags: "open"
# (still holds), "future", "end-year"/"end-month"/... (the end's precision).
DATED = [
    # English
    ("I moved to Munich last month", None, TUE, "2026-02-01", None, "month", ""),
    ("Yesterday I had a cold", None, TUE, "2026-03-09", None, "day", ""),
    ("On the 3rd I went out with Clara", None, TUE, "2026-03-03", None, "day", ""),
    ("I have lived here since 2019", None, TUE, "2019-01-01", None, "year", "open"),
    ("On Monday I met Clara", None, TUE, "2026-03-09", None, "day", ""),
    ("In January I started a pottery course", None, TUE, "2026-01-01", None, "month", ""),
    ("Two weeks ago I quit my job", None, TUE, "2026-02-23", None, "week", ""),
    ("I will move to Lisbon next month", None, TUE, "2026-04-01", None, "month", "future"),
    ("I worked there from 2019 to 2021", None, TUE, "2019-01-01", "2021-01-01", "year", "end-year"),
    ("I lived in Paris until 2021", None, TUE, None, "2021-01-01", "year", "end-year"),
    ("We are going to Rome next week", None, TUE, "2026-03-16", None, "week", "future"),
    ("My daughter was born on 29 February 2024", None, TUE, "2024-02-29", None, "day", ""),
    ("I got married on 3 May 2021", None, TUE, "2021-05-03", None, "day", ""),
    ("We adopted our dog in March 2024", None, TUE, "2024-03-01", None, "month", ""),
    ("A year ago I started running", None, TUE, "2025-01-01", None, "year", ""),
    ("Last year, in May, we moved", None, TUE, "2025-05-01", None, "month", ""),
    ("I quit last Friday", None, TUE, "2026-03-06", None, "day", ""),
    ("I started a new job this month", None, TUE, "2026-03-01", None, "month", ""),
    ("Today I adopted a cat", None, TUE, "2026-03-10", None, "day", ""),
    ("I had a fight with my sister last night", None, TUE, "2026-03-09", None, "day", ""),
    ("The day before yesterday I ran 10 km", None, TUE, "2026-03-08", None, "day", ""),
    ("I signed the lease on 2021-04-03", None, TUE, "2021-04-03", None, "day", ""),
    ("Between 2019 and 2021 I lived in Rome", None, TUE, "2019-01-01", "2021-01-01", "year", ""),
    ("I lived there 2019-2021", None, TUE, "2019-01-01", "2021-01-01", "year", ""),
    ("From January to February I was ill", None, TUE, "2026-01-01", "2026-02-01", "month", ""),
    ("I have been vegan since the 3rd", None, TUE, "2026-03-03", None, "day", "open"),
    ("We met on May 3, 2021", None, TUE, "2021-05-03", None, "day", ""),
    ("I moved here 2 years ago", None, TUE, "2024-01-01", None, "year", ""),
    ("I'm staying in Berlin until next month", None, TUE, None, "2026-04-01", "month", "future"),
    ("In 2 weeks I start my new job", None, TUE, "2026-03-23", None, "week", "future"),
    ("Since Monday I have a cold", None, TUE, "2026-03-09", None, "day", "open"),
    ("From 1 May to 10 May I was away", None, TUE, "2025-05-01", "2025-05-10", "day", "end-day"),
    ("I was born on the 4th of July 1990", None, TUE, "1990-07-04", None, "day", ""),
    ("Born 25.12.1990", None, TUE, "1990-12-25", None, "day", ""),  # dotted: day first
    ("Born 12/25/1990", None, TUE, "1990-12-25", None, "day", ""),  # 25 is no month
    ("It happened on Tuesday the 3rd", None, TUE, "2026-03-03", None, "day", ""),
    # the tense is not read (only "will", "going to", ...): last March, as documented
    ("On 12 March I have an exam", None, TUE, "2025-03-12", None, "day", ""),
    # German
    ("Ich bin letzten Monat nach München gezogen", None, TUE, "2026-02-01", None, "month", ""),
    ("Seit 2019 wohne ich in Berlin", None, TUE, "2019-01-01", None, "year", "open"),
    ("Gestern war ich beim Arzt", None, TUE, "2026-03-09", None, "day", ""),
    ("Ich wohne seit drei Jahren in Hamburg", None, TUE, "2023-01-01", None, "year", "open"),
    ("Vor zwei Wochen habe ich gekündigt", None, TUE, "2026-02-23", None, "week", ""),
    ("Am 3. Mai 2021 habe ich geheiratet", None, TUE, "2021-05-03", None, "day", ""),
    ("Im Januar habe ich angefangen", None, TUE, "2026-01-01", None, "month", ""),
    ("Von 2019 bis 2021 lebte ich in Wien", None, TUE, "2019-01-01", "2021-01-01", "year", ""),
    ("Nächsten Monat ziehe ich nach Lissabon", None, TUE, "2026-04-01", None, "month", "future"),
    ("Am Montag habe ich Clara getroffen", None, TUE, "2026-03-09", None, "day", ""),
    ("Seit 2019 wohne ich hier", None, TUE, "2019-01-01", None, "year", "open"),  # not "hier"=fr
    ("Ich habe bis 2020 in Bonn gewohnt", None, TUE, None, "2020-01-01", "year", "end-year"),
    # Spanish
    ("Desde el lunes estoy enfermo", None, TUE, "2026-03-09", None, "day", "open"),
    ("Desde 2019 hasta 2021 viví en Lima", None, TUE, "2019-01-01", "2021-01-01", "year", ""),
    ("Ayer fui al médico", None, TUE, "2026-03-09", None, "day", ""),
    ("El mes pasado me mudé a Madrid", None, TUE, "2026-02-01", None, "month", ""),
    ("Vivo en Sevilla desde 2019", None, TUE, "2019-01-01", None, "year", "open"),
    ("Hace dos semanas dejé mi trabajo", None, TUE, "2026-02-23", None, "week", ""),
    ("Desde hace tres años estudio alemán", None, TUE, "2023-01-01", None, "year", "open"),
    ("En enero empecé un curso", None, TUE, "2026-01-01", None, "month", ""),
    ("Me casé el 3 de mayo de 2021", None, TUE, "2021-05-03", None, "day", ""),
    ("El próximo mes me mudo a Lisboa", None, TUE, "2026-04-01", None, "month", "future"),
    ("Trabajé allí de 2019 a 2021", None, TUE, "2019-01-01", "2021-01-01", "year", ""),
    # French
    ("Le mois dernier j'ai déménagé à Lyon", None, TUE, "2026-02-01", None, "month", ""),
    ("J'habite à Paris depuis 2019", None, TUE, "2019-01-01", None, "year", "open"),
    ("Hier, j'ai vu Clara", None, TUE, "2026-03-09", None, "day", ""),
    ("Il y a deux semaines, j'ai démissionné", None, TUE, "2026-02-23", None, "week", ""),
    ("En janvier j'ai commencé le piano", None, TUE, "2026-01-01", None, "month", ""),
    ("Je me suis marié le 3 mai 2021", None, TUE, "2021-05-03", None, "day", ""),
    ("Je travaille ici depuis trois ans", None, TUE, "2023-01-01", None, "year", "open"),
    ("L'année dernière j'ai arrêté de fumer", None, TUE, "2025-01-01", None, "year", ""),
    ("J'ai vécu à Lyon jusqu'en 2020", None, TUE, None, "2020-01-01", "year", "end-year"),
    ("Depuis lundi je suis malade", None, TUE, "2026-03-09", None, "day", "open"),
    ("Aujourd'hui j'ai commencé", None, TUE, "2026-03-10", None, "day", ""),
    # Portuguese
    ("Mudei-me para Lisboa no mês passado", None, TUE, "2026-02-01", None, "month", ""),
    ("Moro no Porto desde 2019", None, TUE, "2019-01-01", None, "year", "open"),
    ("Ontem fui ao cinema", None, TUE, "2026-03-09", None, "day", ""),
    ("Há duas semanas deixei o emprego", None, TUE, "2026-02-23", None, "week", ""),
    ("Morei em Lisboa até 2020", None, TUE, None, "2020-01-01", "year", "end-year"),
    # Italian
    ("Mi sono trasferito a Roma il mese scorso", None, TUE, "2026-02-01", None, "month", ""),
    ("Vivo a Milano dal 2019", None, TUE, "2019-01-01", None, "year", "open"),
    ("Ieri sono andato al mare", None, TUE, "2026-03-09", None, "day", ""),
    ("Due settimane fa ho lasciato il lavoro", None, TUE, "2026-02-23", None, "week", ""),
    ("Dal 2019 al 2021 ho vissuto a Roma", None, TUE, "2019-01-01", "2021-01-01", "year", ""),
    # Dutch
    ("Ik ben vorige maand verhuisd", None, TUE, "2026-02-01", None, "month", ""),
    ("Twee weken geleden ben ik gestopt", None, TUE, "2026-02-23", None, "week", ""),
    ("Ik woon hier sinds drie jaar", None, TUE, "2023-01-01", None, "year", "open"),
    # the caller's languages
    ("hier", ["fr"], TUE, "2026-03-09", None, "day", ""),
    ("gestern", ["de"], TUE, "2026-03-09", None, "day", ""),
    # boundaries: year rollover, leap day, month ends, the current month
    ("last month", None, at(2026, 1, 5, 9), "2025-12-01", None, "month", ""),
    ("in December", None, at(2026, 1, 5, 9), "2025-12-01", None, "month", ""),
    ("next month", None, at(2025, 12, 20, 9), "2026-01-01", None, "month", "future"),
    ("yesterday", None, at(2026, 1, 1, 0, 30), "2025-12-31", None, "day", ""),
    ("last year", None, at(2026, 1, 1, 0, 30), "2025-01-01", None, "year", ""),
    ("on the 29th", None, at(2024, 3, 5, 12), "2024-02-29", None, "day", ""),
    ("on the 31st", None, at(2026, 4, 10, 12), "2026-03-31", None, "day", ""),
    ("on the 20th", None, at(2026, 1, 5, 12), "2025-12-20", None, "day", ""),
    ("a year ago", None, at(2024, 2, 29, 12), "2023-01-01", None, "year", ""),
    ("in January", None, at(2026, 1, 15, 12), "2026-01-01", None, "month", ""),
    ("in March", None, at(2026, 2, 15, 12), "2025-03-01", None, "month", ""),
    ("last week", None, at(2026, 1, 1, 12), "2025-12-22", None, "week", ""),
    # the speaker's calendar: 01:00 in UTC+2 is still the 9th in UTC
    ("yesterday", None, at(2026, 3, 10, 1, tz=timezone(timedelta(hours=2))), "2026-03-09", None, "day", ""),  # noqa: E501
    ("today", None, at(2026, 3, 10, 23, 30, tz=timezone(timedelta(hours=-5))), "2026-03-10", None, "day", ""),  # noqa: E501
]
# fmt: on

UNDATED = [
    "I have 3 cats",
    "I live in room 12",
    "We upgraded to version 2.0",
    "I ran 5 km",
    "I drank 3.5 liters of water",
    "Let's meet at 5pm",
    "Call me in 5 minutes",
    "May I ask you something?",
    "March on!",
    "The sun is out",
    "I sat on the chair",
    "Jan is my brother",
    "J'ai sept chats",
    "For the second time I failed",
    "Now I live in Munich",
    "I walk 2000 steps a day",
    "I run 3 days a week",
    "I was in Paris for two weeks",
    "One day I will climb Everest",
    "Every Monday I swim",
    "Los lunes voy al gimnasio",
    "Le lundi je fais du sport",
    "I was born in 1850",
    "We moved on 03/04/2021",  # day and month can be read both ways
    "It is the 3rd time I ask",
    "My 3rd child is called Ben",
    "I live on the 3rd floor",
    "I will start a course in January",  # which January?
    "I'll see her on Monday",
    "I love the music of the 90s",
    "The last decade was hard",
    "I have worked at Acme since March 2024 and moved in 2020",  # two dates
    "In the last month I've been sick a lot",  # a stretch, not a date
    "From March to May I was in Peru",  # May before March: not sure which year
    "Ich wohne hier",
    "Sunday roast is my favourite meal",  # a weekday as a noun's modifier
    "Black Friday deals are great",
    "I'm a big fan of the May Day parade",
    "My birthday is in April",  # every year
    "Mon anniversaire est le 3 mai",
    "4th of July is my favourite holiday",
    "Mein Auto ist von 2015",  # made then, bought when?
    "I drive a 2015 Toyota",
    "My PIN is 2019",
    "The last month of the year is December",
    "I was in Japan from 3 to 10 May",  # the 10th is where it ended
    "Du 3 au 10 mai j'étais en vacances",
    "On February 30th",
    "I moved on 31 April",
    "Is pregnant, due in June",
    "Lundi prochain je pars",  # "next Monday": not the last one
    "El lunes que viene empiezo",
    "I've been a vegetarian for 10 years",  # how long, not since when
    "I work Monday to Friday",
    "Until recently I lived in Oslo",
    "I stayed until 5pm",
    "Nothing about time here at all.",
    "",
]

BOUNDARY_UNDATED = [
    ("on the 31st", at(2026, 5, 5, 12)),  # April has no 31st, May's is ahead
    ("on the 29th", at(2026, 3, 5, 12)),  # February 2026 has no 29th
    ("on the 31st", TUE),  # March's is ahead, February has none
]


@pytest.mark.parametrize(("text", "langs", "ref", "start", "end", "precision", "flags"), DATED)
def test_dated(text, langs, ref, start, end, precision, flags):
    w = resolve_when(text, ref, languages=langs)
    assert w is not None, text
    got = (
        w.start.date().isoformat() if w.start else None,
        w.end.date().isoformat() if w.end else None,
        w.precision,
    )
    assert got == (start, end, precision), (text, w)
    assert w.open_ended == ("open" in flags)
    assert w.future == ("future" in flags)
    for dt in (w.start, w.end):
        assert dt is None or (dt.tzinfo is UTC and dt.time() == datetime.min.time())
    if end is not None and "end-" in flags:
        assert w.end_precision == flags.split("end-")[1]
    assert w.phrase and w.phrase in text and w.source == "text"


@pytest.mark.parametrize("text", UNDATED)
def test_words_that_are_no_date(text):
    assert resolve_when(text, TUE) is None


@pytest.mark.parametrize(("text", "ref"), BOUNDARY_UNDATED)
def test_a_day_of_the_month_the_last_months_lack_stays_unknown(text, ref):
    assert resolve_when(text, ref) is None


def test_the_table_is_large_and_covers_seven_languages():
    langs = {resolve_when(t, r, languages=lg).language for t, lg, r, *_ in DATED}
    assert len(DATED) + len(UNDATED) + len(BOUNDARY_UNDATED) >= 100
    assert {"en", "de", "es", "fr", "pt", "it", "nl"} <= langs


def test_languages_decide_what_a_word_means():
    # German "hier" is "here"; French "hier" is "yesterday".
    assert resolve_when("hier", TUE, languages=["de"]) is None
    assert resolve_when("hier", TUE, languages=["fr"]).start == D("2026-03-09")
    assert resolve_when("Ich wohne hier", TUE) is None


def test_monday_said_on_a_monday_is_a_week_before():
    # dateparser's reading, kept: a weekday is the last one before the turn's day
    # (one would say "today"); "this Monday" is the turn's day.
    mon = at(2026, 3, 9, 12)
    assert resolve_when("on Monday", mon).start == D("2026-03-02")
    assert resolve_when("last Monday", mon).start == D("2026-03-02")
    assert resolve_when("this Monday", mon).start == D("2026-03-09")
    assert resolve_when("on Sunday", mon).start == D("2026-03-08")


def test_decomposed_accents_keep_the_phrase_in_place():
    text = unicodedata.normalize("NFD", "Nach München bin ich vor zwei Wochen gezogen")
    w = resolve_when(text, TUE, languages=["de"])
    assert (w.phrase, w.start) == ("vor zwei Wochen", D("2026-02-23"))


def test_the_label_shows_the_precision():
    assert resolve_when("two weeks ago", TUE).label() == "2026-W09"
    assert resolve_when("from 2019 to 2021", TUE).label() == "2019..2021"
    assert resolve_when("seit 2019", TUE).label() == "2019.."


def test_a_naive_reference_is_refused_by_name():
    with pytest.raises(InvalidValueError, match="reference must be timezone-aware"):
        resolve_when("yesterday", datetime(2026, 3, 10))
    with pytest.raises(InvalidValueError, match="reference must be a datetime"):
        resolve_when("yesterday", date(2026, 3, 10))  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="text must be a string"):
        resolve_when(None, TUE)  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="unknown to the date parser"):
        resolve_when("yesterday", TUE, languages=["xx"])
    with pytest.raises(InvalidValueError, match="list of language codes"):
        resolve_when("yesterday", TUE, languages="en")


# -- the turn's time ---------------------------------------------------------------


def test_turn_time_reads_the_users_message_time_first():
    user = HumanMessage("I moved", additional_kwargs={"timestamp": "2026-03-10T15:00:00Z"})
    bot = AIMessage("Nice!", response_metadata={"created_at": 1773158400})  # an hour later
    assert turn_time([user, bot]) == D("2026-03-10T15:00:00")
    assert turn_time([HumanMessage("hi"), bot]) == D("2026-03-10T16:00:00")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 3, 10, 15, tzinfo=UTC), "2026-03-10T15:00:00+00:00"),
        (datetime(2026, 3, 10, 15), "2026-03-10T15:00:00+00:00"),  # naive: UTC
        (date(2026, 3, 10), "2026-03-10T00:00:00+00:00"),
        (1773154800, "2026-03-10T15:00:00+00:00"),
        (1773154800000, "2026-03-10T15:00:00+00:00"),  # milliseconds
        ("1773154800", "2026-03-10T15:00:00+00:00"),
        ("2026-03-10T17:00:00+02:00", "2026-03-10T17:00:00+02:00"),  # its offset kept
        ("2026-03-10", "2026-03-10T00:00:00+00:00"),
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00+00:00"),  # LoCoMo's session dates
    ],
)
def test_turn_time_reads_datetimes_dates_epochs_and_text(value, expected):
    assert turn_time([{"role": "user", "timestamp": value}]).isoformat() == expected


def test_turn_time_falls_back_to_the_session_then_now():
    now = at(2026, 1, 1)
    msgs = [HumanMessage("hi", additional_kwargs={"timestamp": "not a time"})]
    session = {"configurable": {"session_date": "2023-05-08"}}
    thread = {"configurable": {"user_id": "ada"}, "metadata": {"thread_date": 1773154800}}
    assert turn_time(msgs, session, now) == D("2023-05-08")
    assert turn_time(msgs, thread, now) == D("2026-03-10T15:00:00")
    assert turn_time(msgs, {"configurable": {"session_date": "yesterday"}}, now) == now
    for bad in ("2023", 2023, True, float("nan"), "garbage", 10**20):
        assert turn_time([{"role": "user", "timestamp": bad}], None, now) == now
    assert turn_time([], None, None).tzinfo is not None
    with pytest.raises(InvalidValueError, match="now must be timezone-aware"):
        turn_time([], None, datetime(2026, 1, 1))


def test_the_turns_offset_decides_yesterday():
    said = "I moved yesterday"
    msg = HumanMessage(said, additional_kwargs={"created_at": "2026-03-10T01:00+02:00"})
    assert resolve_when(said, turn_time([msg])).start == D("2026-03-09")


# -- the parser and the model ------------------------------------------------------


def test_reconcile_keeps_the_parsers_date_and_reports_a_disagreement():
    text = resolve_when("I moved to Munich last month", TUE)
    assert reconcile(text, None, TUE) == (text, None)
    assert reconcile(text, "2026-02-14", TUE) == (text, None)  # the same month
    assert reconcile(text, "2026", TUE) == (text, None)  # agrees at the model's precision
    assert reconcile(text, "last month", TUE) == (text, None)
    when, note = reconcile(text, "2026-01", TUE)
    assert when is text and note is not None
    assert "2026-02" in note and "'2026-01'" in note and "kept the text's" in note
    when, note = reconcile(text, "sometime", TUE)
    assert when is text and note is not None and "could not be read" in note


def test_reconcile_uses_the_models_date_only_when_the_text_has_none():
    when, note = reconcile(None, "2026-01-15", TUE)
    assert (when.start, when.precision, when.source) == (D("2026-01-15"), "day", "model")
    assert note is None
    when, note = reconcile(None, "2025-11", TUE)
    assert (when.start, when.precision) == (D("2025-11-01"), "month")
    when, note = reconcile(None, "2026-03-01T09:30:00Z", TUE)
    assert (when.start, when.precision) == (D("2026-03-01"), "day")
    when, note = reconcile(None, "two weeks ago", TUE)
    assert (when.start, when.precision, when.source) == (D("2026-02-23"), "week", "model")
    assert reconcile(None, None, TUE) == (None, None)
    assert reconcile(None, "  ", TUE) == (None, None)
    for unreadable in ("soon", "1850", "2026-13-01", "may"):
        when, note = reconcile(None, unreadable, TUE)
        assert when is None and "could not be read" in note


def test_reconcile_compares_starts_with_starts_and_ends_with_ends():
    until = resolve_when("I lived in Paris until 2021", TUE)
    when, note = reconcile(until, "2015", TUE)
    assert when is until and "not the same kind" in note
    assert reconcile(until, "until 2021", TUE) == (until, None)  # the model's end agrees
    when, note = reconcile(until, "until 2019", TUE)
    assert when is until and "differ" in note
    since = resolve_when("since 2019", TUE)
    when, note = reconcile(since, "until 2021", TUE)
    assert when is since and "not the same kind" in note
    with pytest.raises(InvalidValueError, match="reference"):
        reconcile(until, "2021", datetime(2026, 1, 1))


def test_when_is_a_frozen_value():
    w = resolve_when("yesterday", TUE)
    assert isinstance(w, When) and hash(w) == hash(resolve_when("yesterday", TUE))
    with pytest.raises(AttributeError):
        w.start = None  # type: ignore[misc]


# -- cost ----------------------------------------------------------------------------


def test_time_per_call_on_1000_calls():
    texts = [t for t, *_ in DATED[:40]] + UNDATED[:10]
    resolve_when("warm up the parser's data", TUE)
    for lang in ("en", "de", "es", "fr", "pt", "it", "nl"):
        resolve_when("x", TUE, languages=[lang])
    calls = 1000
    began = time.perf_counter()
    for n in range(calls):
        resolve_when(texts[n % len(texts)], TUE)
    per_call = (time.perf_counter() - began) / calls * 1000
    began = time.perf_counter()
    for _ in range(calls):
        resolve_when("Lives in Berlin and works as a nurse", TUE)
    undated = (time.perf_counter() - began) / calls * 1000
    print(f"\nresolve_when: {per_call:.2f} ms per call (mixed), {undated:.3f} ms (no date words)")


def test_importing_the_module_does_not_import_the_date_parser():
    code = (
        "import sys, time; t = time.perf_counter();"
        "import langmem_ext.agents.reflection.when as w;"
        "assert 'dateparser' not in sys.modules, 'imported eagerly';"
        "t1 = time.perf_counter(); import dateparser.date, dateparser.search;"
        "t2 = time.perf_counter(); from datetime import datetime, timezone;"
        "w.resolve_when('last month', datetime(2026, 3, 10, tzinfo=timezone.utc));"
        "t3 = time.perf_counter();"
        "print(f'import of the reflection package (when.py in it): {(t1-t)*1000:.0f} ms;"
        " then dateparser: {(t2-t1)*1000:.0f} ms; first call: {(t3-t2)*1000:.0f} ms')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    print("\n" + out.stdout.strip())
