"""Training kinds belong to the activities they serve: an activity's descriptor names the
modules that register its kinds (``trainings_from``), which live in its own package, and the
shared training (its CLI, its evaluation runs, the Train screen's lines) says a kind's
measures and evaluates what it made as the kind declares, whatever its activity."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from engine.activities import Activity
from engine.cli import cli
from engine.registry import register, unregister
from engine.store.store import Store
from engine.train import records
from engine.train.evaluate import evaluation
from engine.train.kinds import get_kind, kinds


@pytest.fixture
def toy_activity() -> Iterator[str]:
    """An activity of the test's own, bringing one training kind (``tests/toy_training.py``)."""
    toy = Activity("toy-train", "Toy", "right", "item", trainings_from=("toy_training",))
    register("activity", toy)
    yield "toy-trainer"
    unregister("activity", toy.id)
    unregister("training", "toy-trainer")
    sys.modules.pop("toy_training", None)  # the next test's registers it again


def finished(store: Store, kind: str) -> int:
    """A finished training of ``kind`` whose one epoch scored 50 and 75 on its dev set."""
    tid = records.start(store, "t1", kind, "toy-set", {}, {}, "CPU", 2)
    epoch = {"epoch": 1, "n": 4, "right": 50.0, "close": 75.0, "loss": 0.5, "score": 50.0}
    records.update(store, tid, evals=[epoch], step=2)
    records.finish(store, tid, "finished", {"artefact": "t1", "best": epoch, "path": "p"})
    return tid


def test_medexams_kinds_live_in_their_activities_packages():
    found = kinds()
    assert list(found)[:4] == ["french-reader", "doctor", "french-writer", "french-seq2seq"]
    for kind in found.values():
        for part in (kind.settings, kind.prepare, kind.evaluation):
            assert part is not None and part.module.startswith(f"engine.{kind.activity}."), part


def test_a_kinds_measures_in_words():
    reader = get_kind("french-reader")
    assert reader.said({"hamming": 40, "emr": 10.04, "n": 3}) == "Hamming 40.0, EMR 10.0"
    assert reader.said({"hamming": 40, "emr": 10.04}, 2, "  ") == "Hamming 40.00  EMR 10.04"
    assert reader.said({"hamming": 40, "emr": 10}, first=True) == "Hamming 40.0"
    assert reader.said({"loss": 1.0}) == ""


def test_an_activity_brings_its_training_kinds(toy_activity, store):
    kind = kinds()[toy_activity]
    assert kind.activity == "toy-train" and list(kinds())[-1] == toy_activity
    tid = finished(store, toy_activity)
    row, activity_id, settings = evaluation(store, tid)
    assert row["id"] == tid and (activity_id, settings) == ("toy-train", {"model": "toy:t1"})


def test_the_cli_says_a_kinds_own_measures(toy_activity, db_path):
    store = Store(db_path)
    tid = finished(store, toy_activity)
    store.close()
    shown = CliRunner().invoke(cli, ["--db", db_path, "train", "show", str(tid)])
    assert shown.exit_code == 0, shown.output
    assert "epoch 1: Right 50.00  Close 75.00 (n=4)" in shown.output
    listed = CliRunner().invoke(cli, ["--db", db_path, "train", "list"])
    assert listed.exit_code == 0, listed.output
    line = next(x for x in listed.output.splitlines() if x.strip().startswith(str(tid)))
    assert "toy-trainer" in line and " 50.0 " in line


@pytest.mark.gui
def test_the_train_screen_says_a_kinds_own_measures(toy_activity):
    from gui.widgets.qt_train import dev_score, evaluated_text

    kind = kinds()[toy_activity]
    summary = {"run_id": 3, "status": "finished", "n": 2, "right": 50.0, "close": 75.0}
    assert evaluated_text(summary, kind) == "Run 3 finished: Right 50.0, Close 75.0 on 2 items"
    row = {"kind": toy_activity, "result": {"best": {"right": 50.0, "close": 75.0}}}
    assert dev_score(row) == "Right 50.0"
    assert dev_score({"kind": "gone", "result": {}}) == "—"
