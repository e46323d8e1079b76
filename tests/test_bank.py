"""The question bank: pools by what a student did last, marks, notes and why missed, custom
blocks saved and taken again, difficulty from people's and models' answers, and where a
student stands per subject beside two models — each checked against a hand computation on
fixed answers; `exam take` with a block, marks and notes in the terminal."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.bank.blocks import Block, BlockError, choose, load_block, save_block, saved_blocks
from engine.bank.difficulty import difficulty
from engine.bank.notebook import NotebookError, entries, entry, mark, set_note, set_reason
from engine.bank.pools import PoolError, pool_keys, pool_sizes
from engine.bank.standing import standing
from engine.cli import cli
from engine.core.runs import run
from engine.core.scoring import Scored
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting
from engine.models.scripted import ScriptedModel

P = "default"


def gold(store, dataset):
    return {str(i["id"]): i["answer"] for i in store.items(dataset)}


def wrong(letter: str) -> str:
    return "A" if letter != "A" else "B"


def sit(store, dataset, plan: dict[str, str | None], **options) -> int:
    """A person's session answering ``plan`` (key → letter, None skips), in data set order."""
    session = ExamSitting(store, dataset, keys=list(plan), **options)
    while (item := session.next_question()) is not None:
        session.answer(plan[str(item["id"])])
    session.finish()
    return session.run_id


@pytest.fixture
def bank(store):
    """Two sessions: 01 wrong then right, 02 right, 03 skipped, 04 and 05 wrong."""
    ds = ensure_sample(store)
    g = gold(store, ds)
    sit(
        store,
        ds,
        {
            "sample-01": wrong(g["sample-01"]),
            "sample-02": g["sample-02"],
            "sample-03": None,
            "sample-04": wrong(g["sample-04"]),
        },
    )
    sit(store, ds, {"sample-01": g["sample-01"], "sample-05": wrong(g["sample-05"])})
    return store, ds, g


def test_pools_follow_the_latest_answer(bank):
    store, ds, _g = bank
    assert pool_keys(store, "exam", ds, P, "incorrect") == ["sample-04", "sample-05"]
    assert pool_keys(store, "exam", ds, P, "omitted") == ["sample-03"]
    assert pool_keys(store, "exam", ds, P, "correct") == ["sample-01", "sample-02"]
    assert pool_keys(store, "exam", ds, P, "unused") == [f"sample-{n:02d}" for n in range(6, 15)]
    assert pool_keys(store, "exam", ds, "someone-else", "unused") == pool_keys(
        store, "exam", ds, P, "all"
    )
    mark(store, P, "exam", ds, "sample-09")
    assert pool_keys(store, "exam", ds, P, "marked") == ["sample-09"]
    assert pool_sizes(store, "exam", ds, P) == {
        "all": 14,
        "unused": 9,
        "incorrect": 2,
        "omitted": 1,
        "marked": 1,
        "correct": 2,
    }
    with pytest.raises(PoolError, match="unknown pool 'wrong'"):
        pool_keys(store, "exam", ds, P, "wrong")


def test_questions_a_timed_session_never_reached_are_omitted(store):
    ds = ensure_sample(store)
    now = [0.0]
    session = ExamSitting(store, ds, limit=3, time_limit_s=60, clock=lambda: now[0])
    session.next_question()
    session.answer(gold(store, ds)["sample-01"])
    now[0] = 120.0  # time is up
    assert session.finish().status == "finished"
    assert pool_keys(store, "exam", ds, P, "omitted") == ["sample-02", "sample-03"]


def test_notebook_marks_notes_and_reasons_are_kept_apart_per_profile(bank):
    store, ds, _g = bank
    mark(store, P, "exam", ds, "sample-04")
    set_note(store, P, "exam", ds, "sample-04", "  bisphosphonates: a full glass of water  ")
    set_reason(store, P, "exam", ds, "sample-05", "misread")
    mark(store, "dr-li", "exam", ds, "sample-04")
    assert entry(store, P, ds, "sample-04").note == "bisphosphonates: a full glass of water"
    assert [e.item_key for e in entries(store, P, marked=True)] == ["sample-04"]
    assert [e.item_key for e in entries(store, P, search="GLASS")] == ["sample-04"]
    assert [e.item_key for e in entries(store, P, noted=True)] == ["sample-04"]
    mark(store, P, "exam", ds, "sample-04", on=False)
    assert entry(store, P, ds, "sample-04").note.startswith("bisphosphonates")  # kept
    assert entries(store, P, marked=True) == []
    with pytest.raises(NotebookError, match="unknown reason 'lazy'"):
        set_reason(store, P, "exam", ds, "sample-05", "lazy")


def test_a_block_by_pool_subject_and_count_saved_and_taken_again(bank):
    store, ds, _g = bank
    # 药品知识题 questions: 01 02 04 05 08 09 11 12; unused among them: 08 09 11 12
    block = Block("exam", ds, pool="unused", subjects=("药品知识题",), count=3, seed=5, minutes=10)
    keys = choose(store, block, P)
    assert len(keys) == 3 and set(keys) <= {"sample-08", "sample-09", "sample-11", "sample-12"}
    assert choose(store, block, P) == keys  # the seed fixes the draw
    save_block(store, P, "drugs", block)
    again = load_block(store, P, "drugs")
    assert again == block and again.mode == "timed" and list(saved_blocks(store, P)) == ["drugs"]
    assert choose(
        store, Block("exam", ds, pool="incorrect", subjects=("药品知识题", "情景分析题")), P
    ) == ["sample-04", "sample-05"]
    with pytest.raises(BlockError, match="no question"):
        choose(store, Block("exam", ds, pool="omitted", subjects=("药品知识题",)), P)
    with pytest.raises(BlockError, match="no saved block 'none'"):
        load_block(store, P, "none")


def model_run(store, scripted_pool, ds, name: str, letters: dict[str, str]) -> int:
    pool = scripted_pool(ScriptedModel(name, replies=lambda r: "A"))
    found = run(store, "exam", ds, {"model": name, "method": "generate", "limit": 14}, pool=pool)
    # the scripted model answered A everywhere; give it the fixed letters wanted
    for a in store.answers(found["run_id"]):
        chosen = letters.get(a["item_key"], "A")
        store.add_answer(
            found["run_id"],
            a["item_key"],
            response=chosen,
            chosen=chosen,
            gold=a["gold"],
            scores=[Scored("exam.letter", 1, {"correct": chosen == a["gold"]})],
            position=a["position"],
        )
    return int(found["run_id"])


def test_difficulty_and_where_the_student_stands_beside_two_models(bank, scripted_pool):
    store, ds, g = bank
    everything_right = dict(g)
    model_run(store, scripted_pool, ds, "model-right", everything_right)
    model_run(store, scripted_pool, ds, "model-wrong", {k: wrong(v) for k, v in g.items()})
    levels = difficulty(store, ds)
    # sample-04: person wrong once, one model right, one wrong -> 1 of 3
    assert (levels["sample-04"].people, levels["sample-04"].people_right) == (1, 0)
    assert (levels["sample-04"].models, levels["sample-04"].models_right) == (2, 1)
    assert levels["sample-04"].level == "hard"
    assert levels["sample-14"].n == 2 and levels["sample-14"].level is None  # too few answers
    set_reason(store, P, "exam", ds, "sample-04", "knowledge")
    found = standing(store, P, "exam")
    assert (found.answered, found.right) == (5, 2) and found.score == 40.0
    drugs = next(s for s in found.subjects if s.subject == "药品知识题")
    # the student's latest: 01 right, 02 right, 04 wrong, 05 wrong -> 2 of 4
    assert (drugs.n, drugs.right, drugs.score) == (4, 2, 50.0)
    assert drugs.models == {"model-right": 100.0, "model-wrong": 0.0}
    scene = next(s for s in found.subjects if s.subject == "情景分析题")
    assert (scene.n, scene.right) == (1, 0)  # sample-03, skipped
    assert [t["score"] for t in found.trend] == [25.0, 50.0]
    assert found.reasons == {"knowledge": 1}
    assert found.models == ["model-right", "model-wrong"]


def test_exam_take_with_a_block_marks_and_notes_in_the_terminal(bank):
    store, ds, g = bank
    runner = CliRunner()
    args = [
        "--db",
        store.path,
        "exam",
        "take",
        "--dataset",
        ds,
        "--pool",
        "incorrect",
        "--in-order",
        "--save-block",
        "again",
    ]
    typed = f"m\nn\nwater!\n{wrong(g['sample-04'])}\nwk\n{g['sample-05']}\n"
    out = runner.invoke(cli, args, input=typed)
    assert out.exit_code == 0, out.output
    assert "(1/2)" in out.output and "(2/2)" in out.output and "marked" in out.output
    noted = entry(store, P, ds, "sample-04")
    assert noted.marked and noted.note == "water!" and noted.reason == "knowledge"
    assert pool_keys(store, "exam", ds, P, "incorrect") == ["sample-04"]
    shown = runner.invoke(cli, ["--db", store.path, "notes", "--marked"])
    assert (
        "sample-04" in shown.output and "water!" in shown.output and "Knowledge gap" in shown.output
    )
    stats = json.loads(runner.invoke(cli, ["--db", store.path, "stats", "--json"]).stdout)
    assert stats["answered"] == 5 and stats["reasons"] == {"knowledge": 1}
    again = runner.invoke(
        cli, ["--db", store.path, "exam", "take", "--block", "again"], input="q\n"
    )
    assert "(1/1)" in again.output  # the saved block: the incorrect pool, now one question


def test_french_practice_takes_a_block_and_marks_in_the_terminal(store):
    from engine.french.dataset import ensure_sample as french_sample

    ds = french_sample(store)["dataset"]
    runner = CliRunner()
    base = ["--db", store.path, "french", "take", "--dataset", ds]
    first = runner.invoke(cli, [*base, "--limit", "1", "--in-order"], input="D\n")  # sample-01
    assert first.exit_code == 0, first.output
    assert pool_keys(store, "french", ds, P, "incorrect") == ["sample-01"]
    out = runner.invoke(cli, [*base, "--pool", "incorrect"], input="m\nn\nNAPQI\nA + B + C\n")
    assert out.exit_code == 0, out.output
    assert "Question 1/1" in out.output
    noted = entry(store, P, ds, "sample-01")
    assert noted.marked and noted.note == "NAPQI" and noted.activity == "french"
    assert pool_keys(store, "french", ds, P, "correct") == ["sample-01"]


def test_the_review_queue_takes_the_misses_of_one_reason_and_shows_the_note(bank):
    store, ds, g = bank
    set_reason(store, P, "exam", ds, "sample-04", "knowledge")
    set_note(store, P, "exam", ds, "sample-04", "alendronate: a full glass of water")
    set_reason(store, P, "exam", ds, "sample-05", "misread")
    out = CliRunner().invoke(
        cli, ["--db", store.path, "review", "--why", "knowledge"], input=f"{g['sample-04']}\n\nq\n"
    )
    assert out.exit_code == 0, out.output
    assert out.output.count("(card ") == 1 and "you missed it before: knowledge gap" in out.output
    assert "your note: alendronate: a full glass of water" in out.output
    question = store.items_by_key(ds)["sample-04"]["question"]
    assert question in out.output


@pytest.mark.slow
def test_a_consultation_case_is_marked_and_noted_and_logged(store, chat_model):
    from engine.consult.cases.cases import ensure_sample as cases_sample
    from engine.consult.practice_log import consult_log

    cases = cases_sample(store)
    typed = "/mark\n/note think of the appendix\nWhere does it hurt?\n\nB\n"
    out = CliRunner().invoke(
        cli,
        ["--db", store.path, "consult", "chat", "--case", "sample-01", "--max-turns", "2"],
        input=typed,
    )
    assert out.exit_code == 0, out.output
    assert "(case marked)" in out.output and "(note kept)" in out.output
    noted = entry(store, P, cases, "sample-01")
    assert noted.marked and noted.note == "think of the appendix" and noted.activity == "consult"
    log = consult_log(store, P)
    (seen,) = log["cases"]
    assert seen["case"] == "sample-01" and seen["correct"] and seen["facts"] > 0
    assert sum(m["times"] for m in log["most_missed"]) <= seen["facts"] - seen["elicited"]
    said = CliRunner().invoke(cli, ["--db", store.path, "stats", "--activity", "consult"])
    assert said.exit_code == 0, said.output
    assert said.output.startswith("1 consultations, 1 right\n")
    assert f"sample-01: right, {seen['elicited']}/{seen['facts']} facts" in said.output


def test_stats_of_an_activity_without_subjects_is_said_its_own_way(store):
    runner = CliRunner()
    said = runner.invoke(cli, ["--db", store.path, "stats", "--activity", "consult"])
    assert said.exit_code == 0 and said.output == "0 consultations, 0 right\n", said.output
    shown = runner.invoke(cli, ["--db", store.path, "stats", "--activity", "consult", "--json"])
    assert json.loads(shown.output) == {"cases": [], "right": 0, "most_missed": []}
    assert "no exam questions yet" in runner.invoke(cli, ["--db", store.path, "stats"]).output
    bad = runner.invoke(cli, ["--db", store.path, "stats", "--activity", "chess"])
    assert bad.exit_code == 1 and bad.output.startswith("Error: unknown activity 'chess'")
