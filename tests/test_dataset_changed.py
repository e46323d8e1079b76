"""A data set replaced by other items (``import … --replace``) is told apart from the one a
run answered: each run stores its data set's fingerprint (of its items' keys and contents), so
a run on the old items is neither reused nor counted finished by an experiment (its cell is
played again), nor resumed, and a report says which runs answered items their data set no
longer holds instead of reading them against the new ones. The model is scripted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlite_utils

from engine.core.progress import Cancel
from engine.core.runs import RunError, run
from engine.exam.dataset import import_file, sample_path
from engine.experiments import records
from engine.experiments.plan import make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.models.scripted import ScriptedModel
from engine.reports import build_report
from engine.reports.layouts import RunData
from engine.store.migrations import MIGRATIONS, migrate
from engine.store.store import Store, items_fingerprint


@pytest.fixture
def catalog(home: Path) -> Path:
    (home / "models.json").write_text(json.dumps({"scripted": {"backend": "scripted"}}))
    return home


def _banks(tmp_path: Path, same_keys: bool) -> tuple[Path, Path]:
    """Two banks of three questions each: other questions, under the first's keys or not."""
    items = json.loads(sample_path().read_text(encoding="utf-8"))
    first, second = items[:3], items[3:6]
    if same_keys:
        second = [{**b, "id": a["id"]} for a, b in zip(first, second, strict=True)]
    paths = tmp_path / "a.json", tmp_path / "b.json"
    for path, bank in zip(paths, (first, second), strict=True):
        path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    return paths


def _keys(store: Store, run_id: int) -> set[str]:
    return {str(a["item_key"]) for a in store.answers(run_id)}


@pytest.mark.parametrize("same_keys", [True, False])
def test_an_experiment_plays_again_a_cell_whose_data_set_was_replaced(
    store, scripted_pool, catalog, tmp_path, same_keys
):
    a, b = _banks(tmp_path, same_keys)
    import_file(store, a, name="dz")
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B"))
    plan = make_plan(store, "compare-models", ["scripted"], "dz")
    experiment_id, _ = open_experiment(store, plan)
    old = run_experiment(store, experiment_id, pool=pool)["played"][0]
    assert make_plan(store, "compare-models", ["scripted"], "dz").cells[0].own["id"] == old
    other = make_plan(store, "explaincpe-table8", ["scripted"], "dz")  # reuses it: same settings
    assert old in [c.reuse for c in other.cells]

    import_file(store, b, name="dz", replace=True)

    again = make_plan(store, "compare-models", ["scripted"], "dz")
    assert again.experiment_id == experiment_id
    assert again.cells[0].own is None and again.cells[0].reuse is None
    assert len(again.to_play()) == 1
    other = make_plan(store, "explaincpe-table8", ["scripted"], "dz")
    assert old not in [c.reuse for c in other.cells]
    found = records.get(store, experiment_id)
    assert found["cells"][0]["status"] == records.CHANGED and found["status"] != "finished"

    played = run_experiment(store, experiment_id, pool=pool)

    new = played["played"][0]
    assert played["status"] == "finished" and new != old
    assert records.get(store, experiment_id)["cells"][0]["run_id"] == new
    assert _keys(store, new) == {str(i["id"]) for i in store.items("dz")}
    assert store.run(old)["n_done"] == 3  # the old run stays as it was
    assert run_experiment(store, experiment_id, pool=pool)["played"] == []


def test_a_run_on_items_its_data_set_no_longer_holds_is_not_resumed(store, scripted_pool, tmp_path):
    a, b = _banks(tmp_path, same_keys=True)
    import_file(store, a, name="dz")
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B"))
    stopped = Cancel()
    stopped.set()
    cut = run(store, "exam", "dz", {"model": "scripted"}, pool=pool, cancel=stopped)["run_id"]
    import_file(store, b, name="dz", replace=True)

    with pytest.raises(RunError, match=f"run {cut} was played on items data set 'dz' no longer"):
        run(store, "exam", None, {}, resume=cut, pool=pool)

    import_file(store, a, name="dz", replace=True)  # the same items again: it goes on
    assert run(store, "exam", None, {}, resume=cut, pool=pool)["status"] == "finished"


def test_a_report_says_which_runs_answered_items_their_data_set_no_longer_holds(
    store, scripted_pool, tmp_path
):
    a, b = _banks(tmp_path, same_keys=True)
    import_file(store, a, name="dz")
    pool = scripted_pool(ScriptedModel("scripted", replies="答案：B"))
    old = run(store, "exam", "dz", {"model": "scripted"}, pool=pool)["run_id"]
    import_file(store, b, name="dz", replace=True)
    new = run(store, "exam", "dz", {"model": "scripted", "shots": 1}, pool=pool)["run_id"]

    report = build_report(store, [old, new])

    said = f"The data set of run(s) #{old} (dz) no longer holds the items they answered"
    assert any(said in note for note in report["overview"]["notes"])
    section = report["sections"][0]
    assert any(said in note for note in section["tables"][0]["notes"])
    assert section["comparisons"] == []  # the same keys, other questions: never paired
    assert RunData(store, store.run(old)).items == {}
    assert not RunData(store, store.run(new)).changed
    assert build_report(store, [new])["overview"]["notes"] == []


def test_runs_stored_before_fingerprints_are_taken_as_of_their_data_set_as_it_is(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    migrate(db, MIGRATIONS[:12])
    db["datasets"].insert({"id": 1, "name": "dz", "activity": "exam", "n_items": 1})
    db["items"].insert({"dataset_id": 1, "key": "q1", "position": 0, "data": '{"id": "q1"}'})
    db["runs"].insert({"id": 7, "activity": "exam", "dataset": "dz", "status": "finished"})
    db.close()

    store = Store(path)
    try:
        assert store.dataset("dz")["fingerprint"] == items_fingerprint([("q1", '{"id": "q1"}')])
        assert not store.items_changed(store.run(7))
        store.add_dataset("dz", "exam", [{"id": "q1", "question": "another"}], replace=True)
        assert store.items_changed(store.run(7))
    finally:
        store.close()
