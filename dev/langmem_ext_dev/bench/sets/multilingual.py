# ruff: noqa: E501  (the conversations are data: one turn a line)
"""The ``multilingual-sessions`` retrieval set: written for this project.

Multi-session chats between a user and an assistant in German, Spanish and
French (two conversations each), a few weeks apart, with facts that change
between sessions. Questions in the conversation's language, plus some in
English about a German, Spanish or French conversation (category
``cross-lingual``). Two of the six conversations are held out (``split``):
no tuning decision may look at them.

``python -m langmem_ext_dev.bench.sets.multilingual`` rewrites
``multilingual_sessions.json`` beside this file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# (conversation id, language, split, sessions, questions)
# sessions: [(ISO date, [(speaker, text), ...]), ...]; a turn's id is
# "<conv>-s<session>-t<turn>", both counted from 1.
# questions: (question, ["s<session>-t<turn>", ...], category)
CONVERSATIONS: list[tuple[str, str, str, list[Any], list[Any]]] = [
    (
        "de-1",
        "de",
        "dev",
        [
            (
                "2024-02-03T18:20:00",
                [
                    (
                        "user",
                        "Hallo! Ich ziehe im April von Köln nach Leipzig, wegen einer neuen Stelle.",
                    ),
                    ("assistant", "Glückwunsch! Was für eine Stelle ist es denn?"),
                    (
                        "user",
                        "Ich werde Laborleiterin bei einem Biotech-Startup, das Enzyme für Waschmittel entwickelt.",
                    ),
                    ("assistant", "Spannend. Brauchst du Hilfe bei der Wohnungssuche?"),
                    (
                        "user",
                        "Ja, ich suche eine Dreizimmerwohnung in Plagwitz, höchstens 1.100 Euro warm.",
                    ),
                    (
                        "user",
                        "Mein Kater Moritz kommt natürlich mit, er ist schon vierzehn Jahre alt.",
                    ),
                ],
            ),
            (
                "2024-03-10T09:05:00",
                [
                    (
                        "user",
                        "Neuigkeiten: Wir haben die Wohnung in Plagwitz nicht bekommen, aber eine in Lindenau.",
                    ),
                    ("assistant", "Schön! Wie ist die neue Wohnung?"),
                    (
                        "user",
                        "Dritter Stock ohne Aufzug, Altbau, 1.050 Euro warm, mit einem kleinen Balkon zum Hof.",
                    ),
                    (
                        "user",
                        "Der Umzug ist am 13. April, meine Schwester Jana hilft mit ihrem Transporter.",
                    ),
                    ("assistant", "Soll ich dir eine Checkliste für den Umzug machen?"),
                    (
                        "user",
                        "Gern, und denk daran, dass ich den Strom bei den Stadtwerken anmelden muss.",
                    ),
                ],
            ),
            (
                "2024-05-02T20:40:00",
                [
                    (
                        "user",
                        "Moritz war krank, er hatte eine Nierenentzündung, ist aber jetzt wieder fit.",
                    ),
                    (
                        "assistant",
                        "Das tut mir leid, gut dass es ihm besser geht. Hast du eine Tierärztin gefunden?",
                    ),
                    (
                        "user",
                        "Ja, Dr. Özdemir in der Karl-Heine-Straße, sehr geduldig mit alten Katzen.",
                    ),
                    (
                        "user",
                        "Im Labor läuft es gut, wir haben eine Protease gefunden, die bei 20 Grad noch arbeitet.",
                    ),
                    (
                        "user",
                        "Am Wochenende fange ich mit Rudern auf dem Karl-Heine-Kanal an, ein Kollege hat mich überredet.",
                    ),
                ],
            ),
            (
                "2024-06-15T11:00:00",
                [
                    (
                        "user",
                        "Kleine Änderung: Ich rudere nicht mehr, mein Rücken macht das nicht mit. Jetzt gehe ich schwimmen.",
                    ),
                    ("assistant", "Schwimmen ist schonender. Welches Bad?"),
                    ("user", "Die Schwimmhalle Nord, dienstags und freitags vor der Arbeit."),
                    (
                        "user",
                        "Außerdem plane ich im August eine Woche Urlaub an der Ostsee, in Warnemünde.",
                    ),
                ],
            ),
        ],
        [
            ("Wohin zieht die Nutzerin im April?", ["s1-t1"], "single-hop"),
            (
                "In welchem Stadtteil liegt die Wohnung, die sie schließlich bekommen hat?",
                ["s2-t1"],
                "update",
            ),
            ("Wie viel kostet die neue Wohnung warm?", ["s2-t3"], "single-hop"),
            ("Wer hilft beim Umzug und womit?", ["s2-t4"], "single-hop"),
            ("Wie heißt die Tierärztin von Moritz?", ["s3-t3"], "single-hop"),
            (
                "Welchen Sport macht sie jetzt, nachdem sie mit dem Rudern aufgehört hat?",
                ["s4-t1", "s3-t5"],
                "update",
            ),
            (
                "Was entwickelt das Startup und was hat das Labor gefunden?",
                ["s1-t3", "s3-t4"],
                "multi-hop",
            ),
            (
                "How old is the user's cat and what illness did it have?",
                ["s1-t6", "s3-t1"],
                "cross-lingual",
            ),
            ("When is the moving day?", ["s2-t4"], "cross-lingual"),
        ],
    ),
    (
        "de-2",
        "de",
        "held-out",
        [
            (
                "2024-01-08T07:30:00",
                [
                    (
                        "user",
                        "Ich bereite mich auf den Berlin-Marathon im September vor, mein erster Marathon.",
                    ),
                    ("assistant", "Großartig! Wie viele Kilometer läufst du im Moment pro Woche?"),
                    ("user", "Etwa 35 Kilometer, verteilt auf vier Läufe."),
                    ("user", "Mein Ziel ist eine Zeit unter vier Stunden."),
                    (
                        "assistant",
                        "Das ist realistisch, wenn du langsam auf 60 Kilometer steigerst.",
                    ),
                ],
            ),
            (
                "2024-03-19T19:15:00",
                [
                    (
                        "user",
                        "Ich habe mir am Knöchel eine Sehnenreizung geholt und pausiere zwei Wochen.",
                    ),
                    ("assistant", "Gute Entscheidung. Gehst du zur Physiotherapie?"),
                    (
                        "user",
                        "Ja, zu Herrn Lindqvist, er hat mir Übungen mit dem Theraband gegeben.",
                    ),
                    (
                        "user",
                        "Meine neuen Laufschuhe sind Brooks Ghost 15, die alten hatten 900 Kilometer drauf.",
                    ),
                ],
            ),
            (
                "2024-06-02T21:00:00",
                [
                    ("user", "Ich habe den Halbmarathon in Potsdam in 1:52 geschafft!"),
                    (
                        "assistant",
                        "Super Zeit! Das spricht für knapp unter vier Stunden im Marathon.",
                    ),
                    (
                        "user",
                        "Ich esse jetzt vor langen Läufen Haferbrei mit Banane, das vertrage ich am besten.",
                    ),
                    (
                        "user",
                        "Meine Freundin Selin will beim Marathon an Kilometer 30 mit Wasser stehen.",
                    ),
                ],
            ),
            (
                "2024-08-20T06:45:00",
                [
                    (
                        "user",
                        "Planänderung: Ich habe mein Ziel auf 3:50 verschärft, das Training lief so gut.",
                    ),
                    (
                        "user",
                        "Mein längster Lauf war am Sonntag, 32 Kilometer an der Havel entlang.",
                    ),
                    ("assistant", "Dann ist jetzt Zeit fürs Tapering, drei Wochen vor dem Rennen."),
                ],
            ),
        ],
        [
            ("Für welchen Marathon trainiert der Nutzer?", ["s1-t1"], "single-hop"),
            ("Welche Zielzeit hat er jetzt für den Marathon?", ["s4-t1", "s1-t4"], "update"),
            ("Welche Verletzung hatte er im März?", ["s2-t1"], "single-hop"),
            ("Wie heißt sein Physiotherapeut?", ["s2-t3"], "single-hop"),
            ("In welcher Zeit lief er den Halbmarathon in Potsdam?", ["s3-t1"], "single-hop"),
            ("Was isst er vor langen Läufen?", ["s3-t3"], "single-hop"),
            ("Wo steht Selin während des Rennens?", ["s3-t4"], "single-hop"),
            ("Which running shoes does the user wear now?", ["s2-t4"], "cross-lingual"),
            ("How far was the longest training run and where?", ["s4-t2"], "cross-lingual"),
        ],
    ),
    (
        "es-1",
        "es",
        "dev",
        [
            (
                "2024-04-11T16:00:00",
                [
                    (
                        "user",
                        "Hola, estoy organizando la boda de mi hermano Diego en Granada, será el 21 de septiembre.",
                    ),
                    ("assistant", "¡Qué bonito! ¿En qué te puedo ayudar?"),
                    (
                        "user",
                        "Soy la encargada del banquete: unas 120 personas en un carmen del Albaicín.",
                    ),
                    (
                        "user",
                        "La novia, Lucía, es celíaca, así que el menú tiene que ser sin gluten.",
                    ),
                    ("assistant", "Anotado. ¿Ya tenéis empresa de catering?"),
                    ("user", "Estamos entre Catering Alhambra y La Alacena de Rocío."),
                ],
            ),
            (
                "2024-05-20T12:30:00",
                [
                    (
                        "user",
                        "Al final elegimos La Alacena de Rocío, su menú degustación sin gluten nos encantó.",
                    ),
                    ("user", "El presupuesto del banquete es de 9.500 euros en total."),
                    ("assistant", "¿Y la música? ¿Habrá banda o DJ?"),
                    (
                        "user",
                        "Un grupo de flamenco para el cóctel y luego un DJ que se llama Nacho Beat.",
                    ),
                ],
            ),
            (
                "2024-07-02T22:10:00",
                [
                    (
                        "user",
                        "Cambio de planes: ahora seremos 140 invitados, los primos de Argentina sí vienen.",
                    ),
                    ("assistant", "Habrá que avisar al catering del número nuevo."),
                    (
                        "user",
                        "Ya lo hice. También reservé 30 habitaciones en el Hotel Casa Morisca para los de fuera.",
                    ),
                    (
                        "user",
                        "Yo voy a leer un poema de Lorca en la ceremonia, estoy un poco nerviosa.",
                    ),
                ],
            ),
        ],
        [
            ("¿Cuándo es la boda de Diego?", ["s1-t1"], "single-hop"),
            ("¿Cuántos invitados habrá finalmente?", ["s3-t1", "s1-t3"], "update"),
            ("¿Qué catering eligieron?", ["s2-t1"], "single-hop"),
            ("¿Por qué el menú tiene que ser sin gluten?", ["s1-t4"], "single-hop"),
            ("¿Cuál es el presupuesto del banquete?", ["s2-t2"], "single-hop"),
            ("¿Qué música habrá en la boda?", ["s2-t4"], "single-hop"),
            ("¿Dónde se alojan los invitados de fuera?", ["s3-t3"], "single-hop"),
            ("Which poet's work will the user read at the ceremony?", ["s3-t4"], "cross-lingual"),
        ],
    ),
    (
        "es-2",
        "es",
        "dev",
        [
            (
                "2024-02-14T10:00:00",
                [
                    (
                        "user",
                        "Quiero aprender a programar en Python para automatizar informes en mi trabajo de contable.",
                    ),
                    ("assistant", "Buena idea. ¿Qué tipo de informes haces?"),
                    (
                        "user",
                        "Conciliaciones bancarias mensuales en Excel, me llevan dos días cada mes.",
                    ),
                    ("assistant", "Con pandas y openpyxl eso se puede automatizar bastante."),
                    (
                        "user",
                        "Trabajo en una cooperativa agrícola en Jaén, sobre todo aceite de oliva.",
                    ),
                ],
            ),
            (
                "2024-03-25T19:45:00",
                [
                    (
                        "user",
                        "Ya terminé el curso gratuito de la universidad, el de 'Python para todos'.",
                    ),
                    (
                        "user",
                        "Mi primer script lee los extractos del banco en CSV y marca los movimientos sin cuadrar.",
                    ),
                    ("assistant", "¡Muy bien! ¿Qué problemas has tenido?"),
                    ("user", "Las fechas: el banco usa día/mes/año y pandas lo leía al revés."),
                ],
            ),
            (
                "2024-06-10T08:15:00",
                [
                    ("user", "La conciliación ahora me lleva tres horas en vez de dos días."),
                    (
                        "user",
                        "Mi jefa, Carmen, quiere que enseñe el script a las otras dos contables.",
                    ),
                    ("assistant", "Podrías preparar una pequeña guía paso a paso."),
                    (
                        "user",
                        "Además me apunté a un máster online de análisis de datos que empieza en octubre.",
                    ),
                ],
            ),
        ],
        [
            ("¿Qué quiere automatizar el usuario con Python?", ["s1-t1", "s1-t3"], "multi-hop"),
            ("¿En qué tipo de empresa trabaja?", ["s1-t5"], "single-hop"),
            ("¿Qué curso terminó?", ["s2-t1"], "single-hop"),
            ("¿Qué problema tuvo con las fechas?", ["s2-t4"], "single-hop"),
            ("¿Cuánto tarda ahora la conciliación?", ["s3-t1", "s1-t3"], "update"),
            ("¿Quién es Carmen y qué le pidió?", ["s3-t2"], "single-hop"),
            ("When does the data analysis master's degree start?", ["s3-t4"], "cross-lingual"),
        ],
    ),
    (
        "fr-1",
        "fr",
        "dev",
        [
            (
                "2024-01-22T14:00:00",
                [
                    (
                        "user",
                        "Bonjour ! Je rénove une vieille longère en Bretagne, près de Quimper.",
                    ),
                    ("assistant", "Quel beau projet. Par quoi commencez-vous ?"),
                    (
                        "user",
                        "Par la toiture : l'ardoise est à refaire entièrement, le devis est de 28 000 euros.",
                    ),
                    ("user", "Le couvreur s'appelle Yann Le Goff, il commence en mars."),
                    ("assistant", "Avez-vous prévu l'isolation en même temps ?"),
                    ("user", "Oui, en fibre de bois, pour le confort d'été."),
                ],
            ),
            (
                "2024-04-05T17:30:00",
                [
                    (
                        "user",
                        "La toiture est finie, avec deux semaines de retard à cause de la pluie.",
                    ),
                    (
                        "user",
                        "Maintenant j'attaque la cuisine : je veux un poêle à bois et un plan de travail en chêne.",
                    ),
                    ("assistant", "Pour le poêle, pensez à vérifier le conduit avec un ramoneur."),
                    (
                        "user",
                        "J'ai trouvé un poêle d'occasion, une marque danoise, Morsø, pour 900 euros.",
                    ),
                ],
            ),
            (
                "2024-06-18T09:50:00",
                [
                    (
                        "user",
                        "Finalement je ne garde pas le poêle Morsø, le conduit était trop étroit ; j'ai pris un insert Invicta.",
                    ),
                    (
                        "user",
                        "Ma fille Maëlle vient passer l'été pour m'aider à peindre les volets en bleu.",
                    ),
                    ("assistant", "Quel bleu avez-vous choisi ?"),
                    ("user", "Un bleu de Bretagne assez foncé, la référence RAL 5011."),
                ],
            ),
        ],
        [
            ("Où se trouve la longère ?", ["s1-t1"], "single-hop"),
            ("Combien coûte la réfection de la toiture ?", ["s1-t3"], "single-hop"),
            ("Qui est le couvreur ?", ["s1-t4"], "single-hop"),
            (
                "Quel appareil de chauffage a finalement été installé dans la cuisine ?",
                ["s3-t1", "s2-t4"],
                "update",
            ),
            ("Pourquoi la toiture a-t-elle pris du retard ?", ["s2-t1"], "single-hop"),
            ("Quel isolant a été choisi et pourquoi ?", ["s1-t6"], "single-hop"),
            (
                "Qui aide à peindre les volets et de quelle couleur ?",
                ["s3-t2", "s3-t4"],
                "multi-hop",
            ),
            ("What wood is the kitchen worktop made of?", ["s2-t2"], "cross-lingual"),
        ],
    ),
    (
        "fr-2",
        "fr",
        "held-out",
        [
            (
                "2024-03-03T20:00:00",
                [
                    (
                        "user",
                        "Je prépare un voyage de trois semaines au Japon en octobre avec mon compagnon Karim.",
                    ),
                    ("assistant", "Super ! Quelles villes voulez-vous voir ?"),
                    (
                        "user",
                        "Tokyo, Kyoto, et peut-être Kanazawa. Karim veut absolument voir un match de sumo.",
                    ),
                    ("user", "Je suis végétarienne, j'ai peur de ne pas trouver quoi manger."),
                    ("assistant", "La cuisine shōjin ryōri des temples est entièrement végétale."),
                ],
            ),
            (
                "2024-05-12T13:20:00",
                [
                    ("user", "Les billets sont pris : départ de Lyon le 4 octobre, retour le 25."),
                    (
                        "user",
                        "On a acheté le JR Pass de 14 jours pour la deuxième partie du voyage.",
                    ),
                    ("assistant", "Et pour le sumo ? Le tournoi de Tokyo a lieu en septembre."),
                    (
                        "user",
                        "Zut, alors Karim se contentera d'un entraînement matinal dans une écurie de sumo.",
                    ),
                ],
            ),
            (
                "2024-09-01T18:40:00",
                [
                    ("user", "On a remplacé Kanazawa par Hiroshima et l'île de Miyajima."),
                    (
                        "user",
                        "À Kyoto on dort dans un ryokan à Gion, le Ryokan Shiraume, deux nuits.",
                    ),
                    (
                        "user",
                        "J'apprends un peu de japonais avec une appli depuis juin, je sais commander un thé.",
                    ),
                ],
            ),
        ],
        [
            ("Avec qui l'utilisatrice part-elle au Japon ?", ["s1-t1"], "single-hop"),
            ("Quelles villes vont-ils finalement visiter ?", ["s1-t3", "s3-t1"], "update"),
            ("Quel est son régime alimentaire ?", ["s1-t4"], "single-hop"),
            ("Quelles sont les dates du voyage ?", ["s2-t1"], "single-hop"),
            ("Quel pass de train ont-ils acheté ?", ["s2-t2"], "single-hop"),
            ("Que fera Karim pour voir du sumo ?", ["s2-t4", "s1-t3"], "multi-hop"),
            ("Where do they stay in Kyoto?", ["s3-t2"], "cross-lingual"),
        ],
    ),
]


def build() -> dict[str, Any]:
    """The set in the retrieval-set shape (see ``retrieval_data``)."""
    convs = []
    for cid, lang, split, sessions, questions in CONVERSATIONS:
        turns = []
        for s, (date, lines) in enumerate(sessions, 1):
            for t, (speaker, text) in enumerate(lines, 1):
                minute = int(date[14:16]) + t  # one minute apart
                stamp = f"{date[:14]}{minute:02d}{date[16:]}" if minute < 60 else date
                turns.append(
                    {
                        "id": f"{cid}-s{s}-t{t}",
                        "speaker": speaker,
                        "text": text,
                        "timestamp": stamp,
                        "session": s,
                    }
                )
        qs = [
            {"question": q, "evidence": [f"{cid}-{e}" for e in ev], "category": cat}
            for q, ev, cat in questions
        ]
        convs.append({"id": cid, "split": split, "language": lang, "turns": turns, "questions": qs})
    return {
        "name": "multilingual-sessions",
        "language": "de, es, fr",
        "description": "Multi-session user/assistant chats in German, Spanish and French with "
        "facts that change between sessions; questions in the chat's language and in "
        "English. Written for this project.",
        "source": "written for langmem-ext",
        "license": "same as the project",
        "scope": "set",
        "conversations": convs,
    }


if __name__ == "__main__":
    out = Path(__file__).with_name("multilingual_sessions.json")
    out.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
