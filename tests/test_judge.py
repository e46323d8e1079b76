"""A judge model rates stored explanations: five whole numbers per answer from the real
embedded model (its reply held to the schema by a llama.cpp grammar), or a stored failure
with the reply; a judging killed mid-way and run again loses and duplicates nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.runs import run
from engine.core.scoring import rescore
from engine.exam.dataset import ensure_sample
from engine.models.scripted import ScriptedModel
from engine.ratings.judge import SCHEMA, judge_messages, parse_ratings
from engine.ratings.perspectives import KEYS
from engine.store.store import Store
from engine.types import Explained

JUDGE = "explanation-judge@smollm2"


def reasons(request) -> str:
    letter = "BCDAE"[request.number % 5]
    return f"答案：{letter}\n解析：本题考查药物的作用机制，{letter}项的说法正确，其余选项错误。"


def explained_run(store: Store, scripted_pool, limit: int = 5) -> int:
    """A generate run whose explanations a judge can rate (the answering model is scripted:
    these tests are about the judge)."""
    pool = scripted_pool(ScriptedModel("student-model", replies=reasons))
    done = run(
        store, "exam", ensure_sample(store), {"model": "student-model", "limit": limit}, pool=pool
    )
    return int(done["run_id"])


def judged(store: Store, run_id: int) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for r in store.rated_rows([run_id], "explanation-judge"):
        assert r["scorer"] == JUDGE
        key = (r["item_key"], r["key"])
        assert key not in {(k, kk) for k, v in out.items() for kk in v}, f"duplicated {key}"
        out.setdefault(r["item_key"], {})[r["key"]] = r["value"]
    return out


def test_reading_a_judges_reply():
    assert parse_ratings(
        '答：{"well_formed": 4, "support": 5, "correctness": 2, "validity": 3, "novelty": 1}'
    ) == dict(zip(KEYS, [4, 5, 2, 3, 1], strict=True))
    assert (
        parse_ratings(
            '{"well_formed": 4, "support": 9, "correctness": 2, "validity": 3, "novelty": 1}'
        )
        is None
    )
    assert (
        parse_ratings(
            '{"well_formed": true, "support": 5, "correctness": 2, "validity": 3, "novelty": 1}'
        )
        is None
    )
    lines = "Well formed: 5\nSupport - 4\nCorrectness: 3/5\nValidity: 2\nNovelty: 1"
    assert parse_ratings(lines) == dict(zip(KEYS, [5, 4, 3, 2, 1], strict=True))
    assert parse_ratings("Support: 4, Validity: 2") is None
    assert parse_ratings("") is None
    assert SCHEMA["required"] == list(KEYS)


def _reply(**values: object) -> str:
    return json.dumps({**dict(zip(KEYS, [4, 4, 3, 3, 2], strict=True)), **values})


FIVE = "Well-formed: {}\nSupport: 4\nCorrectness: 3\nValidity: 3\nNovelty: 2"
FOUR = {k: 3 for k in KEYS[:4]}


@pytest.mark.parametrize(
    "reply",
    [
        _reply(well_formed=-1),
        _reply(support=3.5),
        _reply(novelty=-2.5),
        FIVE.format("-3"),
        FIVE.format("3.5"),
        FIVE.format("6"),
        FIVE.format("4/10"),
        FIVE.format("four"),
        FIVE.format("4 out of 10"),
        FIVE.format("4 / 10"),
        FIVE.format("4 (out of 10)"),  # another scale, in brackets or further on
        FIVE.format("4 points out of 10"),
        FIVE.format("4 (8/10)"),
        FIVE.format("4 (3/5 would be generous)"),  # another number after the value
        FIVE.format("4 (3 would be generous)"),
        FIVE.format("4, maybe 3"),
        FIVE.format("4 out of 5, or 2"),
        FIVE.format("4. Item 12 is unclear"),
        FIVE.format("4 to 5"),  # a range or a choice is not one rating
        FIVE.format("4 or 5"),
        FIVE.format("4 - 5"),
        FIVE.format("4 ± 1"),
        FIVE.format("４"),  # another script's digit
        FIVE.format("4") + "\nWell-formed: 2",  # one perspective rated twice
        json.dumps({**FOUR, "reason": "novelty: 2"}),  # a number in the reason is no rating
        _reply(well_formed=6, reason="well-formed 2"),
        _reply(support="4"),
        _reply(support="4/5"),
        _reply(support="four"),
        _reply(support=True),
        _reply(support=None),
        _reply(support={"value": 4}),
        _reply(support=[4]),
        json.dumps({"ratings": json.loads(_reply())}),  # nested: not the schema's fields
        _reply().replace('"support": 4', '"support": 1e0'),
        _reply().replace('"support": 4', '"support": 4.0'),
        _reply().replace('"support": 4', '"support": NaN'),
        _reply()[:-1] + ', "support": 2}',  # a key given twice
        "Support: -4\nWell-formed: 4\nCorrectness: 3\nValidity: 3\nNovelty: 2",
        "I would say novelty: 2, support: 4 … but cannot rate the rest.",
    ],
)
def test_a_reply_off_the_schema_is_not_parsed(reply):
    assert parse_ratings(reply) is None, reply


@pytest.mark.parametrize(
    "reply",
    [
        "```json\n" + _reply() + "\n```",
        "Here are my ratings:\n" + _reply(reason="Clear; novelty 1.") + "\nThanks.",
        "**Well-formed**: 4\n**Support**: 4\nCorrectness: 3.\n- Validity = 3/5\n5. Novelty: 2",
        FIVE.format("4 out of 5 (fluent)"),
    ],
)
def test_a_reply_on_the_schema_still_parses(reply):
    assert parse_ratings(reply) == dict(zip(KEYS, [4, 4, 3, 3, 2], strict=True))


def test_a_reply_not_parsed_is_stored_as_such_with_no_score(store, scripted_pool):
    run_id = explained_run(store, scripted_pool, limit=2)
    pool = scripted_pool(ScriptedModel("judge-model", replies=lambda r: _reply(support=-1)))
    rescore(store, run_id, ["explanation-judge"], pool=pool, options={"judge": "judge-model"})
    rows = [r for r in store.rated_rows([run_id]) if r["scorer"] == "explanation-judge@judge-model"]
    assert {r["key"]: r["value"] for r in rows if r["key"] in KEYS} == dict.fromkeys(KEYS)
    parsed = [r for r in rows if r["key"] == "parsed"]
    assert len(parsed) == 2 and all(not r["value"] and '"support": -1' in r["explanation"]
                                    for r in parsed)  # fmt: skip


def test_the_prompt_follows_the_questions_language():
    zh = Explained("题目？", (("A", "甲"), ("B", "乙")), "B", "A", "因为甲。", "参考。", "zh")
    en = Explained("Which?", (("A", "x"),), "A", "A", "Because x.", language="fr")
    assert (
        "考生解释" in judge_messages(zh)[1]["content"]
        and "well_formed" in judge_messages(zh)[0]["content"]
    )
    assert "Candidate's explanation" in judge_messages(en)[1]["content"]
    assert "Reference explanation" not in judge_messages(en)[1]["content"]  # none given


@pytest.mark.slow
def test_a_real_judge_gives_five_ratings_per_answer_and_resumes(store, scripted_pool, chat_model):
    run_id = explained_run(store, scripted_pool, limit=3)  # two judged, then the one left
    before = store.run(run_id)["summary"]
    first = rescore(store, run_id, ["explanation-judge"], options={"judge": "smollm2"}, limit=2)
    assert first.scored == {JUDGE: 2} and first.skipped == {JUDGE: 0}
    again = rescore(store, run_id, ["explanation-judge"], options={"judge": "smollm2"})
    assert again.scored == {JUDGE: 1} and again.skipped == {JUDGE: 2}
    found = judged(store, run_id)
    assert len(found) == 3
    for values in found.values():
        assert set(values) == {*KEYS, "parsed"}
        if values["parsed"]:
            assert all(isinstance(values[k], int) and 1 <= values[k] <= 5 for k in KEYS)
        else:  # a failure is stored as such, never as made-up ratings
            assert all(values[k] is None for k in KEYS)
    replies = [r["explanation"] for r in store.rated_rows([run_id]) if r["key"] == "parsed"]
    assert all(replies)  # the judge's own reply is kept with its ratings
    assert store.answers(run_id)[0]["scores"].keys().isdisjoint(KEYS)  # apart from the run's
    assert {k: v for k, v in store.run(run_id)["summary"].items() if k != "by_type"} == {
        k: v for k, v in before.items() if k != "by_type"
    }


def test_a_judge_needs_a_model_and_a_person_scorer_is_not_computed(store, scripted_pool):
    run_id = explained_run(store, scripted_pool, limit=1)
    runner = CliRunner()
    out = runner.invoke(
        cli, ["--db", store.path, "rescore", str(run_id), "--scorer", "explanation-judge"]
    )
    assert out.exit_code == 1 and "needs --judge" in out.output and "Traceback" not in out.output
    out = runner.invoke(
        cli, ["--db", store.path, "rescore", str(run_id), "--scorer", "explanation-rating"]
    )
    assert out.exit_code == 1 and "medexam rate" in out.output


# One slot: the answers are judged one after the other, so that some are stored before the
# kill (with several slots they are judged together and all come at the end).
JUDGE_SCRIPT = """
import sys
from engine.models.load import LoadSettings
from engine.models.pool import default_pool
from engine.core.scoring import rescore
from engine.store.store import Store
rescore(Store(sys.argv[1]), int(sys.argv[2]), ["explanation-judge"], options={"judge": "smollm2"},
        pool=default_pool().lending(LoadSettings(slots=1)),
        progress=lambda p: print("scored", p.done, flush=True))
"""


@pytest.mark.slow
def test_a_judging_killed_mid_way_goes_on_without_loss_or_duplicates(
    store, scripted_pool, tmp_path
):
    run_id = explained_run(store, scripted_pool)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-c", JUDGE_SCRIPT, store.path, str(run_id)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "scored 2" or time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = judged(store, run_id)
    assert 2 <= len(kept) < 5
    result = CliRunner().invoke(
        cli,
        [
            "--db",
            store.path,
            "rescore",
            str(run_id),
            "--scorer",
            "explanation-judge",
            "--judge",
            "smollm2",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{5 - len(kept)} answers scored" in result.output
    after = judged(store, run_id)
    assert len(after) == 5
    assert all(after[k] == v for k, v in kept.items())  # what was judged before is kept as it was


def test_stop_ends_every_judge_request_in_flight(store, scripted_pool):
    import threading

    from engine.core.progress import Cancel, Cancelled

    run_id = explained_run(store, scripted_pool, limit=5)
    judge = ScriptedModel("judge-model", replies=lambda r: _reply(), delay=30.0, concurrency=4)
    cancel = Cancel()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        rescore(store, run_id, ["explanation-judge"], pool=scripted_pool(judge),
                options={"judge": "judge-model"}, cancel=cancel)  # fmt: skip
    assert time.monotonic() - started < 5  # four requests were in flight, each cut short
    assert len(judge.requests) == 4 and not judge._waiting
    assert not [
        r for r in store.rated_rows([run_id]) if r["scorer"] == "explanation-judge@judge-model"
    ]
