"""The Consultation screen, driven end to end: a person interviews the simulated patient
(the reply streams), ends the consultation and answers the task, then sees the facts
revealed and the metrics; and a model doctor consults the model patient, the transcript
shown live. The model is the real embedded one."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.activities import metric_label
from engine.consult.cases.agentclinic import convert_record
from engine.consult.cases.cases import save_cases
from engine.consult.scoring.metrics import uncovered_facts
from gui.testing import close_message_boxes

pytestmark = [pytest.mark.gui, pytest.mark.usefixtures("chat_model")]
LONG = 300_000


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def result_text(panel) -> str:
    """Every word on the person's result page: its labels and its tables' cells."""
    from PySide6.QtWidgets import QLabel

    page = panel.results
    words = [label.text() for label in page.findChildren(QLabel)]
    model = panel.part.result_card.facts
    for r in range(model.rowCount()):
        for c in range(model.columnCount()):
            words.append(str(model.index(r, c).data() or ""))
    return "\n".join(words)


def test_person_consults_the_patient_and_answers(qtbot, window):
    p = window.go("consult").person
    p.dataset.select("cases-sample")
    p.part.case_list.setCurrentRow(0)
    case = p.part.case_list.currentItem().data(Qt.ItemDataRole.UserRole)
    assert "The patient says" in p.part.brief.text()
    p.part.max_turns.setValue(2)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.session is not None and p.part.ask_button.isEnabled(), timeout=LONG)
    assert case.initial_request.split(",")[0] in p.part.chat.toPlainText()
    assert p.part.left_label.text() == "2 question(s) left"

    p.part.ask_line.setText("Where exactly is the pain?")
    click(qtbot, p.part.ask_button)
    assert p.busy and p.part.turns[-2] == {"role": "doctor", "text": "Where exactly is the pain?"}
    qtbot.waitUntil(lambda: p.part.reply_job is None and not p.busy, timeout=LONG)
    roles = [t["role"] for t in p.session.turns]
    assert roles == ["patient", "doctor", "patient"]
    reply = p.session.turns[-1]["text"]
    assert reply and reply.split()[0] in p.part.chat.toPlainText()
    assert p.part.left_label.text() == "1 question(s) left"

    click(qtbot, p.part.to_task_button)
    assert p.part.side.currentIndex() == 1
    assert p.part.left_label.text() == "Now give your answer"  # no questions left to count
    assert p.options.isVisibleTo(p) and len(p.options.buttons) == 5
    p.options.toggle(case.task.answer)
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.stack.currentWidget() is p.results, timeout=LONG)
    assert "Right diagnosis" in p.part.result_card.verdict.text()
    told = uncovered_facts(case, window.ctx.store.turns(window.ctx.store.runs("consult")[0]["id"]))
    title = f"Facts the patient told you: {len(told)} of {len(case.facts)} (1 question asked)"
    assert p.part.result_card.facts_title.text() == title
    assert [f["key"] for f in p.part.result_card.facts.rows[: len(told)]] == [
        f["key"] for f in told
    ]
    assert len(p.part.result_card.facts.rows) == len(case.facts)
    shown = result_text(p)
    assert "Topics you covered" not in shown and "coverage" not in shown.lower()
    labels = [label for label, _value in p.part.result_card.metrics]
    assert metric_label("doctor_recall", "consult") in labels  # the engine's honest label
    assert "ROUGE-1" in p.part.result_card.overlap.text()

    run = window.ctx.store.runs("consult")[0]
    assert run["runner"] == "person" and run["status"] == "finished"
    assert run["summary"]["accuracy"] == 100.0
    assert len(window.ctx.store.turns(run["id"])) == 3

    p.back_to_setup()  # Another patient
    assert p.stack.currentWidget() is p.setup and p.start_button.isEnabled()


def test_model_doctor_against_model_patient_shows_the_transcript(qtbot, window):
    m = window.go("consult").models
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    m.dataset.select("cases-sample")
    m.doctor.setCurrentIndex(m.doctor.findData("model"))
    m.doctor_model.setCurrentIndex(m.doctor_model.findData("smollm2"))
    m.fields["patient"].setCurrentIndex(m.fields["patient"].findData("smollm2"))
    m.fields["max_turns"].setValue(1)
    m.limit.setValue(1)
    click(qtbot, m.run_button)
    qtbot.waitUntil(lambda: len(m.turns) >= 1, timeout=LONG)  # live, before the end
    qtbot.waitUntil(lambda: m.job is None, timeout=LONG)
    run = window.ctx.store.runs("consult")[0]
    assert run["runner"] == "model" and run["status"] == "finished", run.get("error")
    stored = window.ctx.store.turns(run["id"])
    assert [t["text"] for t in stored] == [t["text"] for t in m.turns]
    assert "Doctor" in m.transcript.toPlainText() and "Patient" in m.transcript.toPlainText()
    assert f"Run #{run['id']} finished" in m.summary.text()
    assert "answered" in m.case_label.text()


def test_model_vs_model_with_two_different_models(qtbot, window, base_model):
    """Doctor smollm2 and patient gemma3-270m (the solver is the doctor's model): the run
    leases both from the pool at once and finishes."""
    m = window.go("consult").models
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    m.dataset.select("cases-sample")
    m.doctor.setCurrentIndex(m.doctor.findData("model"))
    m.doctor_model.setCurrentIndex(m.doctor_model.findData("smollm2"))
    m.fields["patient"].setCurrentIndex(m.fields["patient"].findData("gemma3-270m"))
    m.fields["max_turns"].setValue(1)
    m.limit.setValue(1)
    click(qtbot, m.run_button)
    qtbot.waitUntil(lambda: m.job is None, timeout=LONG)
    run = window.ctx.store.runs("consult")[0]
    assert run["status"] == "finished", run.get("error")
    settings = run["settings"]
    assert (settings["doctor"], settings["patient"]) == ("smollm2", "gemma3-270m")
    assert settings["solver"] == "smollm2"
    patient_turns = [t for t in window.ctx.store.turns(run["id"]) if t["role"] == "patient"]
    assert len(patient_turns) >= 2  # the opening request and a reply from gemma3-270m
    assert not close_message_boxes()


def test_two_cases_at_once_show_turns_live_and_progress_per_turn(qtbot, window):
    """With "At once" 2 each case's turns come from its own thread; the transcript follows
    one case live and the progress says which case and turn."""
    records = [
        {
            "Patient_Actor": {"Demographics": "35-year-old woman", "Symptoms": "Double vision"},
            "Correct_Diagnosis": "Myasthenia gravis",
        },
        {
            "Patient_Actor": {"Demographics": "60-year-old man", "Symptoms": "Chest pain"},
            "Correct_Diagnosis": "Myocardial infarction",
        },
    ]
    cases = [convert_record(r, f"c{i}") for i, r in enumerate(records, 1)]
    save_cases(window.ctx.store, "two", cases)
    window.ctx.notify_data()
    m = window.go("consult").models
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    m.dataset.select("two")
    m.doctor.setCurrentIndex(m.doctor.findData("oracle-direct"))
    m.fields["patient"].setCurrentIndex(m.fields["patient"].findData("smollm2"))
    m.fields["patient_mode"].setCurrentIndex(m.fields["patient_mode"].findData("grounded"))
    m.limit.setValue(0)
    assert m.at_once.isVisibleTo(m)
    m.at_once.setValue(2)
    click(qtbot, m.run_button)
    messages = []
    m.job.signals.progress.connect(lambda p: messages.append(p.message))
    watched = []
    qtbot.waitUntil(lambda: watched.append(m.case_key) or m.job is None, timeout=LONG)
    run = window.ctx.store.runs("consult")[0]
    assert run["status"] == "finished", run.get("error")
    assert run["settings"]["concurrency"] == 2
    assert {"case 1/2, turn 1", "case 2/2, turn 1"} <= set(messages)
    shown = [k for k in watched if k]
    assert shown, "no case was shown live"
    stored = window.ctx.store.turns(run["id"], shown[-1])
    assert [t["text"] for t in m.turns] == [t["text"] for t in stored]
    assert "Doctor" in m.transcript.toPlainText()


def test_a_free_text_diagnosis_is_cut_in_the_run_table(window):
    from engine.text.columns import display_width

    m = window.go("consult").models
    diagnosis = "Double vision can be caused by multiple sclerosis, or by optic neuritis. " * 3
    row = {"mark": "wrong", "number": 1, "item": "osce-001", "text": "Hello doctor"}
    m.rows.set_rows([row | {"chosen": diagnosis, "gold": "Myasthenia gravis"}])
    chose = m.rows.data(m.rows.index(0, 3))
    assert chose.startswith("Double vision") and chose.endswith("…")
    assert display_width(chose) <= 24  # the table keeps its Answer column in view
    assert m.rows.data(m.rows.index(0, 4)) == "Myasthenia gravis"


def test_trials_from_the_app_play_each_case_again_and_show_the_spread(qtbot, window):
    """Two trials at temperature 0.8: two runs of one trial set, the progress over cases ×
    trials, and the set's spread under the summary; greedy trials are refused first."""
    record = {
        "Patient_Actor": {"Demographics": "35-year-old woman", "Symptoms": "Double vision"},
        "Correct_Diagnosis": "Myasthenia gravis",
    }
    save_cases(window.ctx.store, "one", [convert_record(record, "c1")])
    window.ctx.notify_data()
    m = window.go("consult").models
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    m.dataset.select("one")
    m.doctor.setCurrentIndex(m.doctor.findData("oracle-direct"))
    m.fields["patient"].setCurrentIndex(m.fields["patient"].findData("smollm2"))
    m.fields["patient_mode"].setCurrentIndex(m.fields["patient_mode"].findData("grounded"))
    m.limit.setValue(0)
    m.trials.setValue(2)
    m.fields["temperature"].setValue(0.0)
    click(qtbot, m.run_button)
    assert m.job is None and "temperature 0 would all be the same" in " ".join(
        close_message_boxes()
    )
    m.fields["temperature"].setValue(0.8)
    click(qtbot, m.run_button)
    totals = []
    m.job.signals.progress.connect(lambda p: totals.append(p.total))
    qtbot.waitUntil(lambda: m.job is None, timeout=LONG)
    runs = window.ctx.store.runs("consult")
    assert len(runs) == 2 and all(r["status"] == "finished" for r in runs)
    assert {r["settings"]["trial_set"] for r in runs} == {runs[0]["settings"]["trial_set"]}
    assert sorted(r["settings"]["seed"] for r in runs) == [0, 1]
    assert 2 in totals  # one case × two trials
    assert "Trial set" in m.summary.text() and "±" in m.summary.text()
