"""Profiles: two people on one database keep their sessions, cards, due lists, statistics and
exports apart; the default profile needs no choice."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import ensure_sample
from engine.exam.person import ExamSitting, missed_items, person_runs
from engine.french.dataset import ensure_sample as ensure_french
from engine.french.person import FrenchSitting
from engine.review import ProfileError, add_profile, due_cards, profiles, resolve, stats


def take(store, dataset, answers, profile=None):
    session = ExamSitting(store, dataset, limit=len(answers), profile=profile)
    for letter in answers:
        session.next_question()
        session.answer(letter)
    session.finish()
    return session


def test_two_people_keep_their_data_apart(store):
    dataset = ensure_sample(store)
    qs = store.items(dataset)[:2]
    wrong = next(x for x in "ABCDE" if x != qs[0]["answer"])
    take(store, dataset, [wrong, qs[1]["answer"]])  # the default profile
    kim = take(store, dataset, [qs[0]["answer"], None], profile="kim")  # created on use
    assert profiles(store) == ["default", "kim"] and kim.profile == "kim"

    assert [c.item_key for c in due_cards(store)] == [qs[0]["id"]]
    assert [c.item_key for c in due_cards(store, "kim")] == [qs[1]["id"]]
    assert missed_items(store, dataset, "default") == [qs[0]["id"]]
    assert missed_items(store, dataset, "kim") == [qs[1]["id"]]
    assert missed_items(store, dataset) == [qs[1]["id"]]  # the latest answer of anyone
    assert [r["id"] for r in person_runs(store, dataset, "kim")] == [kim.run_id]
    assert stats(store)["reviews"] == 2 and stats(store, "kim")["reviews"] == 2
    assert stats(store, "nobody")["cards"] == 0


def test_french_sessions_and_resumes_keep_their_profile(store):
    dataset = ensure_french(store)["dataset"]
    session = FrenchSitting(store, dataset, limit=2, profile="léa")
    session.answer("a")
    resumed = FrenchSitting.resume(store, session.run_id)
    assert resumed.profile == "léa"
    resumed.answer("b")
    assert len(due_cards(store, "léa")) + stats(store, "léa")["learned"] == 2
    assert due_cards(store) == []


def test_profile_names(store):
    assert resolve(store, None) == resolve(store, "  ") == "default"
    with pytest.raises(ProfileError, match="no profile named 'sam'"):
        resolve(store, "sam")
    assert add_profile(store, " sam ") == "sam" and add_profile(store, "sam") == "sam"
    with pytest.raises(ProfileError, match="cannot name a profile"):
        add_profile(store, "a/b")


def test_profiles_from_the_command_line(db_path):
    def medexam(*args, input=None):
        return CliRunner().invoke(cli, ["--db", db_path, *args], input=input)

    first = ["exam", "take", "--limit", "1", "--in-order"]
    assert medexam(*first, "--profile", "kim", input="s\n").exit_code == 0
    assert medexam(*first, input="s\n").exit_code == 0
    assert medexam(*first, "--profile", "kim", input="s\n").exit_code == 0
    rows = json.loads(medexam("review", "profiles", "--json").output)
    assert rows == [
        {"profile": "default", "cards": 1, "due": 1},
        {"profile": "kim", "cards": 1, "due": 1},
    ]
    kim = json.loads(medexam("review", "--profile", "kim", "stats", "--json").output)
    assert kim["profile"] == "kim" and kim["reviews"] == 2
    assert json.loads(medexam("review", "stats", "--json").output)["reviews"] == 1
    assert medexam("french", "sample").exit_code == 0
    french = ["french", "take", "--dataset", "frenchmedmcqa-sample", "--limit", "1", "--in-order"]
    assert medexam(*french, "--profile", "kim", input="A\n").exit_code == 0
    kim = json.loads(medexam("review", "due", "--profile", "kim", "--json").output)
    assert kim["count"] == 2 and set(kim["by_activity"]) == {"exam", "french"}
    added = medexam("review", "profiles", "--add", "ana")
    assert added.exit_code == 0 and "ana" in added.output
