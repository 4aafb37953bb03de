"""The end-to-end LoCoMo harness (answers graded by a judge) offline, on a small
made-up conversation, with scripted answer and judge models: grading and
metrics on made-up cases, errata, the cache that resumes a run, tokens per
question and per reflected turn on both stores, and every kind of bad input."""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.messages import AIMessage
from langmem_ext_dev.bench.locomo_errata import ErrataError, load_errata, parse_errata
from langmem_ext_dev.bench.locomo_qa import JUDGE_PROMPT, QAConfig, run_qa
from langmem_ext_dev.bench.locomo_scores import bleu1, parse_verdict, token_f1
from typer.testing import CliRunner

from langmem_ext.cli.app import app
from langmem_ext.testing.chat import ScriptedExtractionModel
from tests.reflection.openai_server import LocalChatServer

SAMPLE = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:00 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten named Pixel!"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Cute! I started pottery classes."},
            ],
            "session_2_date_time": "2:00 pm on 9 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My pottery vase won a prize."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "I moved to Lisbon last week."},
            ],
        },
        "observation": {
            "session_1_observation": {
                "Ana": [["Ana adopted a kitten called Pixel.", "D1:1"]],
                "Ben": [["Ben started pottery classes.", "D1:2"]],
            },
            "session_2_observation": {"Ana": [["Ana moved to Lisbon.", "D2:2"]]},
        },
        "qa": [
            {
                "question": "What is the name of Ana's kitten?",
                "answer": "Pixel",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What hobby did Ben start?",
                "answer": "Pottery",
                "evidence": ["D1:2"],
                "category": 1,
            },
            {"question": "Unanswerable?", "evidence": [], "category": 5},
            {
                "question": "Where does Ana live?",
                "answer": "Porto",  # the key is wrong: the conversation says Lisbon
                "evidence": ["D2:2"],
                "category": 4,
            },
        ],
    }
]

#: The scripted answerer's answers, by the question's first words.
ANSWERS = {"What is the name": "Pixel", "What hobby": "Skiing", "Where does": "Lisbon"}


def answer(messages) -> str:
    question = str(messages[-1].content).rsplit("Question: ", 1)[1]
    return next(a for start, a in ANSWERS.items() if question.startswith(start))


def judge(messages) -> str:
    """A judge that calls an answer CORRECT when it contains the gold answer."""
    text = str(messages[-1].content)
    gold = re.search(r"Gold answer: (.*)", text).group(1).strip()
    got = re.search(r"Generated answer: (.*)", text).group(1).strip()
    label = "CORRECT" if gold.lower() in got.lower() else "WRONG"
    return f'Compared the two.\n{{"label": "{label}"}}'


def scripted(fn, n: int = 60) -> ScriptedExtractionModel:
    return ScriptedExtractionModel([fn] * n)


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(SAMPLE))
    return path


def config(data, tmp_path, **kw):
    kw.setdefault("answer_model", scripted(answer))
    kw.setdefault("judge_model", scripted(judge))
    return QAConfig(
        data=data,
        cache=tmp_path / "emb.db",
        qa_cache=tmp_path / "qa.db",
        answer_label="scripted-answer",
        judge_label="scripted-judge",
        **kw,
    )


def by_question(result) -> dict[str, dict]:
    return {q["question"]: q for q in result["questions"]}


# -- the scores on made-up cases -----------------------------------------------------------


def test_token_f1_and_bleu1_on_made_up_cases():
    assert token_f1("Pixel", "Pixel") == 1.0
    assert token_f1("Skiing", "Pottery") == 0.0
    # sets of tokens: {a, kitten, named, pixel} against {pixel}: P 1/4, R 1 -> 0.4
    assert token_f1("A kitten named Pixel.", "Pixel") == pytest.approx(0.4)
    assert bleu1("Pixel", "Pixel") == 1.0
    # 1 of 4 tokens matches, the answer is longer than the gold: no brevity penalty
    assert bleu1("a kitten named Pixel", "Pixel") == pytest.approx(0.25)
    # 1 token against 2: precision 1, brevity penalty e^(1 - 2/1)
    assert bleu1("May", "7 May") == pytest.approx(0.36788, abs=1e-5)


def test_verdicts_are_read_strictly():
    assert parse_verdict('{"label": "CORRECT"}') == "CORRECT"
    assert parse_verdict('reason\n{"label": "wrong"}') == "WRONG"
    assert parse_verdict("It is the same date. CORRECT") == "CORRECT"
    assert parse_verdict("CORRECT or WRONG, hard to say") is None
    assert parse_verdict("I think so") is None
    assert parse_verdict("") is None


def test_the_judge_prompt_states_the_protocol():
    text = JUDGE_PROMPT.format(question="Q?", gold="G", answer="A")
    for needed in ("CORRECT", "WRONG", "generous", "same date", '"label"'):
        assert needed in text
    assert text.endswith("Never name both labels in the JSON.")


# -- the harness -------------------------------------------------------------------------------


def test_answers_are_graded_and_scored_per_category(data, tmp_path):
    result = run_qa(config(data, tmp_path))
    [row] = result["rows"]
    q = by_question(result)
    assert set(q) == {
        "What is the name of Ana's kitten?",
        "What hobby did Ben start?",
        "Where does Ana live?",
    }  # category 5 is left out
    assert q["What is the name of Ana's kitten?"]["verdict"] == "CORRECT"
    assert q["What hobby did Ben start?"]["verdict"] == "WRONG"  # a wrong answer graded WRONG
    assert q["Where does Ana live?"]["verdict"] == "WRONG"  # right, but the key says Porto
    assert row["system"] == "turns (SQLiteStore)"
    assert row["overall"]["J"] == pytest.approx(1 / 3)
    assert row["overall"]["F1"] == pytest.approx(1 / 3)
    assert row["overall"]["BLEU-1"] == pytest.approx(1 / 3)
    assert row["by_category"]["single-hop"]["J"] == pytest.approx(0.5)
    assert row["by_category"]["multi-hop"]["J"] == 0.0
    assert row["overall"]["failed"] == 0
    # 4 turns, k=10: every question sees the whole (tiny) conversation
    assert all(x["retrieved"] == 4 for x in result["questions"])
    assert row["search_ms_p50"] > 0 and row["answer_s_p95"] >= row["answer_s_p50"] > 0
    assert row["context_tokens_per_question"] > 20
    tokens = row["tokens_per_question"]
    assert tokens["answer_in"] > row["context_tokens_per_question"]  # instructions + context
    assert tokens["answer_out"] > 0 and tokens["judge_in"] > 0 and tokens["judge_out"] > 0
    assert tokens["estimated_calls"] == 6  # scripted models report no usage: 3 answers, 3 grades


def test_an_errata_correction_changes_a_grade_and_the_cache_reuses_the_answers(data, tmp_path):
    first = run_qa(config(data, tmp_path))
    assert first["rows"][0]["overall"]["J"] == pytest.approx(1 / 3)
    errata = tmp_path / "errors_conv_0.json"
    entries = [
        {
            "question_id": "locomo_0_qa3",
            "question": "Where does Ana live?",
            "golden_answer": "Porto",
            "category": 4,
            "error_type": "HALLUCINATION",
            "correct_answer": "Lisbon",
        },
        {  # only the evidence was wrong: the answer stays
            "question_id": "locomo_0_qa0",
            "question": "What is the name of Ana's kitten?",
            "golden_answer": "Pixel",
            "error_type": "WRONG_CITATION",
            "correct_answer": "Pixel",
        },
        {  # names a question the data does not have there: not applied
            "question_id": "locomo_0_qa1",
            "question": "Something else?",
            "golden_answer": "x",
            "error_type": "AMBIGUOUS",
            "correct_answer": "y",
        },
    ]
    errata.write_text(json.dumps(entries))
    answerer, grader = scripted(answer), scripted(judge)
    second = run_qa(
        config(
            data, tmp_path, errata=load_errata(errata), answer_model=answerer, judge_model=grader
        )
    )
    q = by_question(second)
    assert q["Where does Ana live?"]["gold"] == "Lisbon"
    assert q["Where does Ana live?"]["verdict"] == "CORRECT"
    assert second["rows"][0]["overall"]["J"] == pytest.approx(2 / 3)
    assert second["errata"]["citation_only"] == {"WRONG_CITATION": 1}
    assert second["errata"]["not_matching"] == ["locomo_0_qa1"]
    assert [a["question_id"] for a in second["errata"]["applied"]] == ["locomo_0_qa3"]
    # The answers came from the cache; only the corrected question was graded again.
    assert answerer.calls == 0 and grader.calls == 1


def test_an_interrupted_run_continues_where_it_stopped(data, tmp_path):
    # Ctrl-C during the third answer.
    interrupted = ScriptedExtractionModel([answer, answer, KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt):
        run_qa(config(data, tmp_path, answer_model=interrupted))
    answerer = scripted(answer)
    result = run_qa(config(data, tmp_path, answer_model=answerer))
    assert answerer.calls == 1  # only the question not answered before
    assert result["rows"][0]["overall"]["J"] == pytest.approx(1 / 3)
    assert sum(1 for q in result["questions"] if q.get("cached")) == 2


def test_full_context_answers_from_the_whole_conversation(data, tmp_path):
    result = run_qa(config(data, tmp_path, doc_sets=(), full_context=True))
    [row] = result["rows"]
    assert row["system"] == "full context"
    assert row["search_ms_p50"] is None  # nothing searched
    assert all(q["retrieved"] == 4 and q["search_seconds"] is None for q in result["questions"])


@pytest.mark.parametrize("backends", [("sqlite", "postgres")])
def test_facts_rows_report_tokens_per_reflected_turn_on_both_stores(data, tmp_path, backends):
    result = run_qa(config(data, tmp_path, doc_sets=("facts",), backends=backends))
    rows = {r["backend"]: r for r in result["rows"]}
    assert set(rows) == {"SQLiteStore", "PostgresStore"}
    for row in rows.values():
        ref = row["reflection"]
        assert ref["turns"] == 4 and ref["model_calls"] == 4 and ref["failed_sessions"] == 0
        assert ref["estimated_calls"] == 4  # the scripted extractor reports no usage
        assert ref["input_tokens_per_turn"] > ref["output_tokens_per_turn"] > 0
        assert ref["stored"] == 3
        q = {x["question"]: x for x in result["questions"] if x["system"] == row["system"]}
        assert q["What is the name of Ana's kitten?"]["verdict"] == "CORRECT"
        assert row["tokens_per_question"]["answer_in"] > 0


# -- bad input ---------------------------------------------------------------------------------


def test_failures_are_counted_never_correct_and_the_run_goes_on(data, tmp_path):
    def flaky(messages) -> object:
        question = str(messages[-1].content).rsplit("Question: ", 1)[1]
        if question.startswith("What is the name"):
            return ConnectionError("connection refused")
        if question.startswith("What hobby"):
            return "I'm sorry, but I can't help with that."
        return "Lisbon"

    def undecided(messages) -> str:
        return "Hard to say: CORRECT or WRONG."

    result = run_qa(
        config(data, tmp_path, answer_model=scripted(flaky), judge_model=scripted(undecided))
    )
    q = by_question(result)
    assert q["What is the name of Ana's kitten?"]["failed"].startswith("answer: the call failed")
    assert "connection refused" in q["What is the name of Ana's kitten?"]["failed"]
    assert q["What hobby did Ben start?"]["failed"].startswith("answer: the model refused")
    assert q["Where does Ana live?"]["failed"].startswith(
        "judge: answered neither CORRECT nor WRONG"
    )
    [row] = result["rows"]
    assert row["overall"]["failed"] == 3 and row["overall"]["J"] == 0.0
    assert row["failures"]["count"] == {
        "answer: the call failed": 1,
        "answer: the model refused": 1,
        "judge: answered neither CORRECT nor WRONG": 1,
    }
    # Failures are not cached: the next run asks again (and here succeeds).
    again = run_qa(config(data, tmp_path))
    assert again["rows"][0]["overall"]["failed"] == 0


def test_errata_of_another_shape_are_refused_with_what_was_expected(tmp_path):
    with pytest.raises(ErrataError, match="JSON list of corrections"):
        parse_errata({"question": "x"})
    with pytest.raises(ErrataError, match="has no golden_answer"):
        parse_errata(
            [
                {
                    "question_id": "locomo_0_qa1",
                    "question": "q",
                    "error_type": "X",
                    "correct_answer": "y",
                }
            ]
        )
    with pytest.raises(ErrataError, match="is not locomo_<sample>_qa<n>"):
        parse_errata(
            [
                {
                    "question_id": "q1",
                    "question": "q",
                    "golden_answer": "a",
                    "error_type": "X",
                    "correct_answer": "y",
                }
            ]
        )
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(ErrataError, match="is not JSON"):
        load_errata(bad)
    # A dict of lists (one per conversation) is read too.
    entry = {
        "question_id": "locomo_2_qa4",
        "question": "q",
        "golden_answer": "a",
        "error_type": "TEMPORAL_ERROR",
        "correct_answer": "b",
    }
    assert set(parse_errata({"conv-41": [entry]}).corrections) == {(2, 4)}


# -- the command -------------------------------------------------------------------------------


def _server_step(body: dict) -> object:
    text = body["messages"][-1]["content"]
    if "Gold answer:" in text:
        gold = re.search(r"Gold answer: (.*)", text).group(1).strip()
        got = re.search(r"Generated answer: (.*)", text).group(1).strip()
        return {"label": "CORRECT" if gold.lower() in got.lower() else "WRONG"}
    return answer([AIMessage(text)])


def test_command_answers_with_a_local_server_as_answerer_and_judge(data, tmp_path):
    out = tmp_path / "out"
    with LocalChatServer([_server_step] * 20, raw_text=True) as server:
        args = ["bench", "locomo", "--data", str(data), "--out", str(out)]
        args += ["--answer-model", "local", "--base-url", server.base_url, "--concurrency", "2"]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "turns (SQLiteStore)" in result.output and "0.333" in result.output
    saved = json.loads((out / "locomo-qa.json").read_text())
    [row] = saved["rows"]
    assert row["overall"]["J"] == pytest.approx(1 / 3)
    # The server reports 1 prompt and 1 completion token per call: no estimate.
    assert row["tokens_per_question"] == {
        "answer_in": 1.0,
        "answer_out": 1.0,
        "judge_in": 1.0,
        "judge_out": 1.0,
        "estimated_calls": 0,
    }
    assert saved["settings"]["judge_model"] == f"local@{server.base_url}"
    assert (out / "locomo-qa-cache.db").exists()


def test_command_with_an_unreachable_server_reports_every_question_failed(data, tmp_path):
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(data), "--out", str(out), "--answer-model", "m"]
    args += ["--base-url", "http://127.0.0.1:9/v1", "--timeout", "5"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "failed questions (counted as not correct): answer: the call failed: 3" in result.output
    row = json.loads((out / "locomo-qa.json").read_text())["rows"][0]
    assert row["overall"]["J"] == 0.0 and row["overall"]["failed"] == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--answer-model", "nope:model"], "--answer-model 'nope:model'"),
        (
            ["--answer-model", "m", "--base-url", "http://x/v1", "--errata", "missing.json"],
            "cannot read the errata file",
        ),
        (
            ["--answer-model", "m", "--base-url", "http://x/v1", "--docs", "episodes"],
            "unknown document sets",
        ),
        (
            ["--answer-model", "m", "--base-url", "http://x/v1", "--conversations", "conv-99"],
            "no conversation ['conv-99']",
        ),
        (["--conversations", "conv-x"], "naming conversations needs --answer-model"),
        (
            ["--answer-model", "m", "--base-url", "http://x/v1", "--context-tokens", "100"],
            "--context-tokens at least 512",
        ),
    ],
)
def test_command_refuses_bad_options_before_any_work(data, tmp_path, extra, message):
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(data), "--out", str(out), *extra]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not out.exists()  # nothing was run


def test_command_counts_garbage_answers_and_an_unreachable_judge_as_failed(data, tmp_path):
    """Over HTTP: an empty answer, an answer of no words, and a judge server
    that cannot be reached fail their questions (reported, J 0) and the run
    goes on to the end; the answer that was fine is kept, so the next run,
    with a judge that answers, asks the answerer again only for the garbage."""
    fixed: list[bool] = []

    def garbage(body: dict) -> object:
        if fixed:
            return _server_step(body)
        question = body["messages"][-1]["content"].rsplit("Question: ", 1)[1]
        if question.startswith("What is the name"):
            return ""
        if question.startswith("What hobby"):
            return "?!"
        return "Lisbon"

    out = tmp_path / "out"
    with LocalChatServer([garbage] * 20, raw_text=True) as server:
        base = ["bench", "locomo", "--data", str(data), "--out", str(out)]
        base += ["--answer-model", "m", "--base-url", server.base_url, "--timeout", "5"]
        args = [*base, "--judge-base-url", "http://127.0.0.1:9/v1"]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
        asked = len(server.requests)
        assert result.exit_code == 0, result.output
        assert asked == 3  # every question was asked: the run went on past each failure
        saved = json.loads((out / "locomo-qa.json").read_text())
        [row] = saved["rows"]
        assert row["overall"]["J"] == 0.0 and row["overall"]["failed"] == 3
        assert row["failures"]["count"] == {
            "answer: empty answer": 1,
            "answer: no words in the answer": 1,
            "judge: the call failed": 1,
        }
        q = by_question(saved)
        assert q["Where does Ana live?"]["answer"] == "Lisbon"  # answered, never graded
        assert q["Where does Ana live?"]["verdict"] is None
        assert "failed questions (counted as not correct)" in " ".join(result.output.split())

        # The judge is reachable, the answerer answers: only what failed is asked again.
        fixed.append(True)
        result = CliRunner().invoke(app, base, env={"COLUMNS": "300"})
        bodies = [b["messages"][-1]["content"] for b in server.requests[asked:]]
    assert result.exit_code == 0, result.output
    assert sum("Gold answer:" not in b for b in bodies) == 2  # the two garbage answers
    assert sum("Gold answer:" in b for b in bodies) == 3  # every question graded
    row = json.loads((out / "locomo-qa.json").read_text())["rows"][0]
    assert row["overall"]["failed"] == 0 and row["overall"]["J"] == pytest.approx(1 / 3)


def test_command_counts_a_judge_label_that_is_neither_as_failed(data, tmp_path):
    def unsure(body: dict) -> object:
        text = body["messages"][-1]["content"]
        if "Gold answer:" in text:
            return '{"label": "MAYBE"}'  # valid JSON, but no verdict
        return _server_step(body)

    out = tmp_path / "out"
    with LocalChatServer([unsure] * 10, raw_text=True) as server:
        args = ["bench", "locomo", "--data", str(data), "--out", str(out)]
        args += ["--answer-model", "m", "--base-url", server.base_url]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    row = json.loads((out / "locomo-qa.json").read_text())["rows"][0]
    assert row["overall"]["J"] == 0.0 and row["overall"]["failed"] == 3  # never correct
    assert row["failures"]["count"] == {"judge: answered neither CORRECT nor WRONG": 3}


def test_command_refuses_errata_of_another_shape_before_any_model_call(data, tmp_path):
    errata = tmp_path / "errata.json"
    # The shape of another file: a mapping of question to answer, not corrections.
    errata.write_text(json.dumps({"What is the name of Ana's kitten?": "Pixel"}))
    out = tmp_path / "out"
    with LocalChatServer([_server_step] * 10, raw_text=True) as server:
        args = ["bench", "locomo", "--data", str(data), "--out", str(out)]
        args += ["--answer-model", "m", "--base-url", server.base_url, "--errata", str(errata)]
        result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
        asked = len(server.requests)
    assert result.exit_code == 2, result.output
    assert "errata" in result.output and "corrections" in " ".join(result.output.split())
    assert asked == 0 and not out.exists()  # nothing was run


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--answer-model", "openai:gpt-4o-mini", "--judge-model", "nope:model"],
            "--judge-model 'nope:model'",
        ),
        (["--answer-model", " "], "--answer-model is empty"),
    ],
)
def test_command_refuses_a_bad_judge_or_empty_model_before_any_work(data, tmp_path, extra, message):
    out = tmp_path / "out"
    args = ["bench", "locomo", "--data", str(data), "--out", str(out), *extra]
    # A key is set, so the answer model string itself is fine: the judge's is not.
    env = {"COLUMNS": "300", "OPENAI_API_KEY": "sk-test-not-used"}
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not out.exists()


def test_the_tokens_script_prints_the_table_of_the_docs(data, tmp_path):
    # benchmarks/locomo_tokens.py makes the "Tokens" table of docs/compare.md:
    # scripted models (the answerer replies with the gold answer), tokens
    # estimated from the real prompts, a row per document set and store.
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "locomo_tokens.py"
    out = tmp_path / "tokens"
    args = [sys.executable, str(script), "--data", str(data), "--conversations", "conv-x"]
    args += ["--backends", "sqlite", "--facts-window", "2", "--out", str(out)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = [line.split("|")[1:-1] for line in run.stdout.splitlines() if line.startswith("| ")]
    assert [r[0].strip() for r in rows[1:]] == [
        "turns (SQLiteStore)",
        "facts (SQLiteStore)",
        "full context",
    ]
    saved = {r["system"]: r for r in json.loads((out / "locomo-tokens.json").read_text())["rows"]}
    for row in saved.values():
        assert row["overall"]["J"] == 1.0  # the scripted answers are the gold ones
        t = row["tokens_per_question"]
        assert t["answer_in"] > row["context_tokens_per_question"] > 0 and t["judge_in"] > 0
    ref = saved["facts (SQLiteStore)"]["reflection"]
    assert ref["turns"] == 4 and ref["model_calls"] == 2  # windows of 2 turns
    assert "facts (SQLiteStore): 2 reflection calls for 4 turns" in run.stdout
