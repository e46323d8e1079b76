"""The Train screen, driven: the kind picker switches the form (a reader's encoder and
retriever, a doctor's base model and LoRA rank) and the data it trains on (French data
sets, golden sets), a reader offered the training split to train on and the dev split to
pick its best epoch; a doctor's training on bad dialogues is refused with a message and
leaves nothing running; a real reader (the embedded MiniLM) trained for two steps on the
shipped French sample ends finished in the list with its loss curve, and is evaluated."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from engine.consult.cases.cases import ensure_sample as ensure_cases
from engine.french.dataset import ensure_sample as ensure_french
from engine.train import records
from engine.train.records import all_trainings
from gui.consult.training import DialoguePicker
from gui.testing import close_message_boxes, idle, message_boxes
from gui.widgets.common import DatasetPicker

pytestmark = pytest.mark.gui
LONG = 120_000


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def golden_set(window, name: str) -> None:
    """A golden set of one consultation run that consulted no case (stopped at once)."""
    store = window.ctx.store
    run = store.start_run("consult", ensure_cases(store), "oracle-direct", {"golden": name})
    store.finish_run(run, {}, "cancelled")
    window.ctx.notify_runs()


def refused(qtbot, window, screen, words: str) -> None:
    """Train is pressed: a message saying ``words`` shows, and nothing is left running."""
    click(qtbot, screen.start)
    qtbot.waitUntil(lambda: bool(message_boxes()) and screen.job is None, timeout=LONG)
    texts = close_message_boxes()
    assert len(texts) == 1 and words in texts[0], texts
    assert words in screen.state.text()
    qtbot.waitUntil(lambda: idle(window), timeout=LONG)
    assert screen.start.isEnabled() and not screen.progress.stop.isEnabled()
    assert all_trainings(window.ctx.store) == [] and screen.table.rowCount() == 0


def test_the_kind_picker_switches_the_form_and_the_data(qtbot, window):
    store = window.ctx.store
    ensure_french(store)
    window.ctx.notify_data()
    golden_set(window, "golden-a")
    t = window.go("train")
    assert set(t.form.kinds) >= {"french-reader", "doctor"}
    reader = t.form.choose("french-reader")
    assert {"encoder", "retriever", "corpus", "dev", "epochs"} <= set(reader.fields)
    assert not {"base", "rank"} & set(reader.fields)
    assert reader.fields["encoder"].isVisible() and reader.fields["encoder"].text() == "minilm"
    assert isinstance(reader.data, DatasetPicker) and reader.data.activity == "french"
    assert reader.data.combo.findData("frenchmedmcqa-sample") >= 0
    assert t.evaluate_on() is t.evaluate_pickers["french"]

    doctor = t.form.choose("doctor")
    assert doctor.isVisible() and not reader.isVisible()
    assert doctor.fields["base"].isVisible() and doctor.fields["base"].currentData() == "smollm2"
    assert doctor.fields["rank"].isVisible() and doctor.fields["rank"].value() == 8
    assert "encoder" not in doctor.fields and "retriever" not in doctor.fields
    assert isinstance(doctor.data, DialoguePicker) and doctor.data.names() == ["golden-a"]
    assert "golden dialogues" in t.form.note.text()
    assert t.evaluate_on() is t.evaluate_pickers["consult"]
    assert t.evaluate_pickers["consult"].isVisible()
    assert not t.evaluate_pickers["french"].isVisible()
    # the other training settings, under "More settings"
    assert not doctor.fields["max_steps"].isVisible()
    click(qtbot, t.form.more)
    assert doctor.fields["max_steps"].isVisible() and doctor.fields["learning_rate"].isVisible()
    given = doctor.settings()
    assert given["base"] == "smollm2" and given["rank"] == 8
    assert given["learning_rate"] == pytest.approx(3e-4) and given["max_steps"] is None

    # a finished doctor in the list: no dev score, evaluated on consultation cases
    tid = records.start(store, "doc", "doctor", "golden-a", {}, {"base": "smollm2"}, "CPU", 4)
    records.finish(store, tid, "finished", {"artefact": "doc", "final_loss": 1.25})
    t.form.choose("french-reader")
    t.reload()
    t.table.selectRow(0)
    cells = [t.table.item(0, j).text() for j in range(t.table.columnCount())]
    assert cells[1:4] == ["doctor", "doc", "finished"] and cells[5:7] == ["—", "1.250"]
    assert t.evaluate_on() is t.evaluate_pickers["consult"]


def test_a_reader_trains_on_the_train_split_and_picks_on_dev(qtbot, window):
    store = window.ctx.store
    t = window.go("train")
    reader = t.form.choose("french-reader")
    items = store.items(ensure_french(store)["dataset"])
    for split in ("dev", "test", "train"):  # the dev split first by name
        store.add_dataset(f"fm-{split}", "french", items)
    window.ctx.notify_data()
    assert reader.data.name == "fm-train"
    assert reader.fields["dev"].currentData() == "fm-dev"
    assert reader.settings()["dev"] == "fm-dev"
    # what the person chooses stays chosen
    reader.data.select("fm-test")
    reader.data.combo.activated.emit(reader.data.combo.currentIndex())
    store.add_dataset("more-train", "french", items)
    window.ctx.notify_data()
    assert reader.data.name == "fm-test"


def test_stop_while_a_training_is_prepared(qtbot, window):
    ensure_french(window.ctx.store)
    window.ctx.notify_data()
    t = window.go("train")
    t.form.choose("french-reader").name.setText("stopped")
    click(qtbot, t.start)
    click(qtbot, t.progress.stop)  # at once: while the encoder loads and the data is encoded
    qtbot.waitUntil(lambda: t.job is None, timeout=LONG)
    assert not message_boxes(), close_message_boxes()
    assert t.state.text() == "Stopped before the training started: nothing was recorded."
    assert all_trainings(window.ctx.store) == []


def test_a_doctor_on_bad_dialogues_is_refused(qtbot, window, tmp_path):
    t = window.go("train")
    doctor = t.form.choose("doctor")
    assert doctor.data.name is None  # no golden set yet
    refused(qtbot, window, t, "build a golden set first")

    golden_set(window, "empty")
    assert doctor.data.name == "empty"
    refused(qtbot, window, t, "holds no finished consultation")

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    doctor.data.add_file(str(bad))
    assert doctor.data.name == str(bad) and doctor.data.names() == ["empty", str(bad)]
    refused(qtbot, window, t, "not a chat dialogue")


def test_a_reader_trains_to_the_end_and_is_evaluated(qtbot, window, home):
    ensure_french(window.ctx.store)
    window.ctx.notify_data()
    t = window.go("train")
    page = t.form.choose("french-reader")
    page.data.select("frenchmedmcqa-sample")
    # 8 questions, 2 held out to score the epoch, 6 in batches of 4: two steps
    for name, value in (("epochs", 1), ("limit", 8), ("batch_size", 4), ("max_length", 48),
                        ("max_steps", 2), ("dev_fraction", 0.25)):  # fmt: skip
        page.fields[name].setValue(value)
    page.name.setText("gui-reader")
    click(qtbot, t.start)
    assert t.job is not None and not t.start.isEnabled()
    qtbot.waitUntil(lambda: t.job is None, timeout=LONG)
    assert not message_boxes(), close_message_boxes()
    row = all_trainings(window.ctx.store)[0]
    assert row["kind"] == "french-reader" and row["status"] == "finished", row.get("error")
    assert row["step"] == row["n_steps"] == 2 and row["settings"]["max_steps"] == 2
    assert len(t.points) == 2 and t.curve.series.count() == 2
    assert [p.y() for p in t.curve.series.points()] == pytest.approx(
        [loss for _, loss in row["loss_curve"]], abs=1e-3
    )
    cells = [t.table.item(0, j).text() for j in range(t.table.columnCount())]
    assert cells[1:5] == ["french-reader", "gui-reader", "finished", "2/2"]
    assert cells[5].startswith("Hamming ")
    assert "finished" in t.state.text() and "dev Hamming" in t.state.text()
    assert (home / "trained" / "gui-reader").is_dir()

    t.table.selectRow(0)
    assert t.curve.series.count() == 2  # the stored curve of the chosen training
    picker = t.evaluate_on()
    assert picker is t.evaluate_pickers["french"]
    picker.reload(select="frenchmedmcqa-sample")
    click(qtbot, t.evaluate)
    qtbot.waitUntil(lambda: t.evaluation is None, timeout=LONG)
    assert not message_boxes(), close_message_boxes()
    assert t.result.text().startswith("Run ") and "Hamming" in t.result.text()
    run = window.ctx.store.runs("french")[0]
    assert run["status"] == "finished" and run["settings"].get("reader") == "gui-reader"
