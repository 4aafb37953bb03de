"""Words around dates that the date parser's own data does not give, per language.

:mod:`.when` takes month and weekday names, units, "ago"/"in" words and
relative expressions ("last month", "el mes pasado") from dateparser's locale
data. What it needs beyond those is here, for the languages it knows how to
read a range or a "since" in (English, German, Spanish, French, Portuguese,
Italian, Dutch); other languages dateparser supports still give point dates.

Every pattern is matched against case-folded text. ``*_BEFORE`` patterns end
with ``$``: they are matched against the text just before a date.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

__all__ = [
    "FROM_BEFORE",
    "FUTURE",
    "GLUE",
    "HABITUAL_BEFORE",
    "LOST_START_BEFORE",
    "NOT_INTRODUCING",
    "NUMBER_WORDS",
    "OF",
    "ORDINAL_DAY",
    "PERIOD_BEFORE",
    "RANGE_BETWEEN",
    "RECURRING",
    "SINCE_BEFORE",
    "STOPWORDS",
    "UNTIL_BEFORE",
    "WEEKDAY_NEEDS_GLUE",
    "Patterns",
]


class Patterns(Mapping[str, "re.Pattern[str]"]):
    """Regular expressions by language, each compiled at its first use: the
    module is imported with the reflection package, the patterns are needed
    only when a date is read."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self._sources = dict(sources)
        self._compiled: dict[str, re.Pattern[str]] = {}

    def __getitem__(self, lang: str) -> re.Pattern[str]:
        pattern = self._compiled.get(lang)
        if pattern is None:
            pattern = self._compiled[lang] = re.compile(self._sources[lang])
        return pattern

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


def _before(pattern: str) -> str:
    return rf"(?:^|[^\w'’])(?P<cue>{pattern})\s*$"


#: Articles and prepositions a date may start with ("on the 3rd", "am 3.",
#: "el lunes"); they may begin a date's words, never end them.
GLUE: dict[str, frozenset[str]] = {
    "en": frozenset("on the in of at by from".split()),
    "de": frozenset("am im in an dem den der des vom zum zur ab um".split()),
    "es": frozenset("el la en del de día".split()),
    "fr": frozenset("le la l' en dans du de au".split()),
    "pt": frozenset("o a no na em do da de dia".split()),
    "it": frozenset("il lo la l' a in di del della".split()),
    "nl": frozenset("op in de het van".split()),
}

#: Of :data:`GLUE`, the words that do not make a month, weekday or year
#: alone a date ("the May Day parade", "of the May"): articles, "of", "at".
NOT_INTRODUCING: dict[str, frozenset[str]] = {
    "en": frozenset("the of at".split()),
    "de": frozenset("der des den dem".split()),
}

#: Number words dateparser's data lacks for these languages ("hace dos
#: semanas"); read as digits before parsing. German, French and English
#: number words are in dateparser's data.
NUMBER_WORDS: dict[str, dict[str, str]] = {
    "es": dict(
        zip(
            "dos tres cuatro cinco seis siete ocho nueve diez once doce".split(),
            map(str, range(2, 13)),
            strict=True,
        )
    ),
    "pt": dict(
        w.split(":")
        for w in "dois:2 duas:2 três:3 tres:3 quatro:4 cinco:5 seis:6 sete:7 oito:8 nove:9"
        " dez:10 onze:11 doze:12".split()
    ),
    "it": dict(
        zip(
            "due tre quattro cinque sei sette otto nove dieci undici dodici".split(),
            map(str, range(2, 13)),
            strict=True,
        )
    ),
    "nl": dict(
        zip(
            "twee drie vier vijf zes zeven acht negen tien elf twaalf".split(),
            map(str, range(2, 13)),
            strict=True,
        )
    ),
}

#: Common words of each language, to guess which language a text is in when
#: the caller does not say (dateparser reads "hier" as French "yesterday"
#: in a German sentence otherwise). Words several languages share count for
#: each of them.
STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        "i i' my me the and was is are have has had we you he she it of to with for this"
        " that will at on from since ago last next yesterday moved live lives work works"
        " started born".split()
    ),
    "de": frozenset(
        "ich bin habe hatte war wir mein meine meinen und der die das dem den nicht ist"
        " seit nach mit vor gestern letzten letzte letztes wohne im am zum zur bis ein"
        " eine einem arbeite umgezogen geboren".split()
    ),
    "es": frozenset(
        "yo me mi mis el los las y que desde hace ayer pasado pasada fui estoy soy vivo"
        " con por para un una del al hasta mudé trabajo nací".split()
    ),
    "fr": frozenset(
        "je j' ai suis mon ma mes le les et est depuis il y hier dernier dernière avec"
        " pour nous du au une dans jusqu' à déménagé habite travaille".split()
    ),
    "pt": frozenset(
        "eu meu minha o os as e que não em no na desde há ontem passado passada com"
        " para um uma do da ao até mudei moro trabalho nasci".split()
    ),
    "it": frozenset(
        "io mio mia il lo gli e che sono ho ieri scorso scorsa fa con per un una del"
        " della dal dalla al fino mi ci abito lavoro trasferito nato nata".split()
    ),
    "nl": frozenset(
        "ik mijn het een en is ben heb gisteren vorige vorig geleden sinds met voor"
        " van op tot naar woon werk verhuisd".split()
    ),
}

#: "since": the fact still holds (``open_ended``). "desde hace", "seit" and
#: "depuis" also take a bare duration ("seit drei Jahren"): the start is
#: that long before the turn.
SINCE_BEFORE = Patterns(
    {
        "en": _before(r"(?:ever\s+)?since"),
        "de": _before(r"seit|seitdem"),
        "es": _before(r"desde"),
        "fr": _before(r"depuis"),
        "pt": _before(r"desde"),
        "it": _before(r"da|dal|dalla|dall['’]|dai|dagli|sin\s+da|fin\s+da"),
        "nl": _before(r"sinds|vanaf"),
    }
)

#: "until": the fact stopped holding then (``end``).
UNTIL_BEFORE = Patterns(
    {
        "en": _before(r"until|till|'til"),
        "de": _before(r"bis|bis\s+zum|bis\s+zur"),
        "es": _before(r"hasta"),
        "fr": _before(r"jusqu['’]\s*(?:à|au|en)|jusqu['’]"),
        "pt": _before(r"até"),
        "it": _before(r"fino\s+(?:a|al|alla|all['’])|fino"),
        "nl": _before(r"tot|tot\s+en\s+met"),
    }
)

#: Words that may open a range ("from 2019 to 2021", "entre 2019 y 2021").
FROM_BEFORE = Patterns(
    {
        "en": _before(r"from|between"),
        "de": _before(r"von|vom|zwischen|ab"),
        "es": _before(r"de|desde|entre"),
        "fr": _before(r"de|du|depuis|entre"),
        "pt": _before(r"de|desde|entre|do|da"),
        "it": _before(r"da|dal|dalla|tra|fra"),
        "nl": _before(r"van|vanaf|tussen"),
    }
)

#: The second date of a range whose first could not be read ("from 3 to 10
#: May", "del 3 al 10 de mayo"): not a date of its own.
LOST_START_BEFORE = Patterns(
    {
        "en": _before(r"to|through|thru|-|–|—"),
        "de": _before(r"-|–|—"),
        "es": _before(r"al|-|–|—"),
        "fr": _before(r"au|-|–|—"),
        "pt": _before(r"ao|-|–|—"),
        "it": _before(r"al|alla|-|–|—"),
        "nl": _before(r"-|–|—"),
    }
)

#: The whole text between the two dates of a range.
RANGE_BETWEEN = Patterns(
    {
        "en": r"^\s*(?:to|until|till|through|thru|and|-|–|—)\s*(?:the\s+)?$",
        "de": r"^\s*(?:bis|bis\s+zum|bis\s+zur|und|-|–|—)\s*$",
        "es": r"^\s*(?:a|al|hasta|y|-|–|—)\s*(?:el\s+|la\s+)?$",
        "fr": r"^\s*(?:à|au|jusqu['’]\s*(?:à|au|en)|et|-|–|—)\s*(?:la\s+|le\s+)?$",
        "pt": r"^\s*(?:a|ao|à|até|e|-|–|—)\s*(?:o\s+|a\s+)?$",
        "it": r"^\s*(?:a|al|alla|all['’]|e|-|–|—)\s*$",
        "nl": r"^\s*(?:tot|en|-|–|—)\s*$",
    }
)

#: A weekday that happens every week ("every Monday", "los lunes", "le
#: lundi", "il lunedì") is a habit, not a date.
HABITUAL_BEFORE = Patterns(
    {
        "en": _before(r"every|each"),
        "de": _before(r"jeden|jede|jedes|immer"),
        "es": _before(r"cada|los|las|todos\s+los|todas\s+las"),
        "fr": _before(r"chaque|tous\s+les|le"),
        "pt": _before(r"cada|toda|todas\s+as|todos\s+os|às|aos|as|os"),
        "it": _before(r"ogni|il|tutti\s+i|i"),
        "nl": _before(r"elke|iedere|ieder"),
    }
)

#: "for the last month", "in the past two weeks": a stretch of time up to
#: the turn, not when something happened.
PERIOD_BEFORE = Patterns(
    {
        "en": _before(r"(?:for|over|during|within|throughout)(?:\s+the)?|in\s+the"),
    }
)

#: "the last month of the year", "la semana pasada del curso": a noun, not
#: a date relative to the turn.
OF: dict[str, frozenset[str]] = {
    "en": frozenset({"of"}),
    "de": frozenset({"des", "der", "von"}),
    "es": frozenset({"de", "del"}),
    "fr": frozenset({"de", "du", "des"}),
    "pt": frozenset({"de", "do", "da"}),
    "it": frozenset({"di", "del", "della"}),
    "nl": frozenset({"van"}),
}

#: Days that come back every year. A date without a year beside one ("my
#: birthday is on 3 May") says when it recurs, not when a fact began.
RECURRING = Patterns(
    {
        "en": r"\b(?:birthday|anniversary|name\s*day|holiday)s?\b",
        "de": r"(?:geburtstag|jahrestag|namenstag|feiertag)",
        "es": r"\b(?:cumpleaños|aniversario|santo|festivo)\b",
        "fr": r"\b(?:anniversaire|fête|férié)s?\b",
        "pt": r"\b(?:aniversário|aniversario)s?\b",
        "it": r"\b(?:compleanno|anniversario|onomastico)\b",
        "nl": r"(?:verjaardag|jubileum|trouwdag)",
    }
)

#: Languages where a weekday on its own needs its preposition or article
#: ("on Monday", "am Montag", "el lunes", "na segunda"): "Sunday roast",
#: "Black Friday" are not dates. French, Italian and Dutch name the day bare.
WEEKDAY_NEEDS_GLUE = frozenset({"en", "de", "es", "pt"})

#: A sentence about the future. A date without a year or a "last"/"next"
#: ("in January", "on Monday", "on the 3rd") is read as the most recent one;
#: in a sentence about the future that reading is likely wrong, so the date
#: stays unknown.
FUTURE = Patterns(
    {
        "en": (
            r"\b(?:will|won't|shall|going\s+to|gonna|plan(?:s|ning)?\s+to|due|coming|upcoming)\b"
            r"|'ll\b"
        ),
        "de": r"\b(?:werde|wirst|wird|werden|werdet|nächst\w*|kommend\w*)\b",
        "es": (
            r"\b(?:voy|vas|va|vamos|vais|van)\s+a\b|\w+(?:aré|arás|ará|aremos|arán)\b"
            r"|\bpróxim[oa]s?\b|\bque\s+viene\b|\bsiguiente\b"
        ),
        "fr": (
            r"\b(?:vais|vas|va|allons|allez|vont)\b|\w+(?:erai|eras|era|erons|eront)\b"
            r"|\bprochaine?s?\b"
        ),
        "pt": r"\b(?:vou|vais|vai|vamos|vão)\b|\w+(?:arei|ará|aremos|arão)\b|\bpróxim[oa]s?\b",
        "it": r"\b(?:andrò|farò|sarò)\b|\w+(?:erò|irò|erà|irà|eremo)\b|\bprossim[oa]\b",
        "nl": r"\b(?:zal|zul|zult|zullen|ga|gaat|gaan|volgende|komende)\b",
    }
)

#: A day of the month alone ("on the 3rd", "am 3.", "el 3", "le 1er"); the
#: group is the day. An ordinal suffix or an article is required: a bare
#: number is never a date.
ORDINAL_DAY = Patterns(
    {
        "en": r"^(?:on\s+)?the\s+(\d{1,2})(?:st|nd|rd|th)$",
        "de": r"^(?:am|dem|den|zum|vom)\s+(\d{1,2})\.$",
        "es": r"^(?:el\s+)(?:día\s+)?(\d{1,2})$",
        "fr": r"^(?:le|du|au)\s+(\d{1,2})(?:er)?$",
        "pt": r"^(?:no\s+|o\s+)?dia\s+(\d{1,2})$",
        "it": r"^(?:il|l['’])\s*(\d{1,2})$",
        "nl": r"^(?:op\s+)?de\s+(\d{1,2})(?:e|ste|de)$",
    }
)
