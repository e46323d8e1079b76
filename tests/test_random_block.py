"""Blocks drawn at random: `exam take` and `french take` draw their questions at random, in
a random order, by default; the seed is stored on the person's run and `--seed` takes the
same block again; `--in-order` takes the questions in file order."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from engine.bank.blocks import block_items, draw, stored_block
from engine.cli import cli
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting, session_result
from engine.french.dataset import ensure_sample as french_sample
from engine.french.person import FrenchSitting

SEED = re.compile(r"drawn at random \(seed (\d+):")


def take(db_path: str, *args: str, typed: str = "q\n"):
    result = CliRunner().invoke(cli, ["--db", db_path, *args], input=typed)
    assert result.exit_code == 0, result.output
    return result


def asked(db_path: str) -> list[list[str] | None]:
    """The question keys of every person exam run, in the order they were asked."""
    from engine.store.store import Store

    store = Store(db_path)
    try:
        runs = sorted(store.runs("exam"), key=lambda r: r["id"])
        return [r["settings"]["keys"] for r in runs if r["runner"] == "person"]
    finally:
        store.close()


def test_two_exam_take_draws_differ_and_seed_repeats_one(db_path):
    first = take(db_path, "exam", "take", "--limit", "5")
    second = take(db_path, "exam", "take", "--limit", "5")
    seed = int(SEED.search(first.output).group(1))
    assert int(SEED.search(second.output).group(1)) != seed
    one, two = asked(db_path)
    assert len(one) == len(two) == 5 and one != two  # 14 questions: 2002 blocks of 5
    again = take(db_path, "exam", "take", "--limit", "5", "--seed", str(seed))
    assert f"seed {seed}:" in again.output
    assert asked(db_path)[-1] == one  # the same questions in the same order


def test_the_seed_is_stored_on_the_run_and_in_its_result(db_path):
    out = take(db_path, "exam", "take", "--limit", "3", "--seed", "41", "--json", typed="s\n" * 3)
    result = json.loads(out.stdout)
    assert result["seed"] == 41 and result["n"] == 3
    from engine.store.store import Store

    store = Store(db_path)
    try:
        settings = store.run(result["run_id"])["settings"]
        assert settings["seed"] == 41 and settings["order"] == "random"
        every = [str(i["id"]) for i in store.items("explaincpe-sample")]
        assert settings["keys"] == draw(every, 3, 41)
    finally:
        store.close()


def test_in_order_takes_the_first_questions_of_the_file(db_path):
    out = take(db_path, "exam", "take", "--limit", "3", "--in-order")
    assert "3 questions in file order" in out.output
    assert asked(db_path) == [None]  # no keys: the first 3, as before
    both = CliRunner().invoke(
        cli, ["--db", db_path, "exam", "take", "--in-order", "--seed", "3"], input="q\n"
    )
    assert both.exit_code == 2 and "exclude each other" in both.output


def test_french_take_draws_at_random_and_repeats_with_the_seed(store):
    ds = french_sample(store)["dataset"]
    base = ["--db", store.path, "french", "take", "--dataset", ds, "--limit", "3"]
    runner = CliRunner()
    first = runner.invoke(cli, [*base, "--seed", "5"], input="q\n")
    again = runner.invoke(cli, [*base, "--seed", "5"], input="q\n")
    other = runner.invoke(cli, base, input="q\n")
    assert first.exit_code == again.exit_code == other.exit_code == 0, first.output
    assert "3 questions drawn at random (seed 5:" in first.output
    runs = sorted(
        (r for r in store.runs("french") if r["runner"] == "person"), key=lambda r: r["id"]
    )
    keys = [r["settings"]["keys"] for r in runs]
    assert keys[0] == keys[1] and len(keys[0]) == 3
    assert runs[2]["settings"]["seed"] not in (None, 5)


def test_a_random_session_is_scored_and_resumed_in_the_order_asked(store):
    dataset = ensure_sample(store)
    # Timed: the questions left when it is handed in count wrong, so they are missed.
    session = ExamSitting(store, dataset, limit=4, seed=11, time_limit_s=600)
    order = [str(q["id"]) for q in session.questions]
    assert order == draw([str(i["id"]) for i in store.items(dataset)], 4, 11)
    assert order != sorted(order)  # not the file's order
    session.answer(session.next_question()["answer"])
    result = session.finish()
    assert result.n == 4 and result.seed == 11
    assert session_result(store, session.run_id).missed == order[1:]  # read back in order

    ds = french_sample(store)["dataset"]
    french = FrenchSitting(store, ds, limit=3, seed=2)
    asked_order = [i["id"] for i in french.items]
    french.answer("A", position=1)
    french.finish()
    resumed = FrenchSitting.resume(store, french.run_id)
    assert [i["id"] for i in resumed.items] == asked_order and resumed.position == 0


def test_block_items_without_a_seed_keep_the_file_order():
    items = [{"id": i} for i in range(10)]
    first, settings = block_items(items, None, 3)
    assert [i["id"] for i in first] == [0, 1, 2] and settings["order"] == "file"
    assert stored_block(items, settings) == first
    drawn, settings = block_items(items, ["1", "4", "7", "9"], None, 3)
    assert sorted(i["id"] for i in drawn) == [1, 4, 7, 9]
    assert stored_block(items, settings) == drawn
