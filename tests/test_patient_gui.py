"""See a patient in the app with a scripted patient model that states the wrong sex: the
reply shown is the checked one, and after the consultation the result panel marks the fact
told from that reply and shows the patient audit."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from engine.consult.cases.cases import save_cases
from engine.models.scripted import ScriptedModel
from tests.test_patient_grounded import CASE

pytestmark = pytest.mark.gui
LONG = 300_000


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_the_result_panel_shows_the_audit_and_what_was_told(qtbot, window, monkeypatch):
    save_cases(window.ctx.store, "dv", [CASE])
    model = ScriptedModel("patient", replies="I'm a 35-year-old male.")
    monkeypatch.setattr(window.ctx.host, "get", lambda name=None: model)
    p = window.go("consult").person
    p.dataset.select("dv")
    p.part.case_list.setCurrentRow(0)
    p.part.max_turns.setValue(2)
    click(qtbot, p.start_button)
    qtbot.waitUntil(lambda: p.session is not None and p.part.ask_button.isEnabled(), timeout=LONG)
    p.part.ask_line.setText("How old are you?")
    click(qtbot, p.part.ask_button)
    qtbot.waitUntil(lambda: p.part.reply_job is None and not p.busy, timeout=LONG)
    chat = p.part.chat.toPlainText()
    assert "I'm a 35-year-old female." in chat and "male." not in chat.replace("female.", "")
    click(qtbot, p.part.to_task_button)
    p.part.diagnosis.setText("Myasthenia gravis")
    click(qtbot, p.submit_button)
    qtbot.waitUntil(lambda: p.stack.currentWidget() is p.results, timeout=LONG)
    assert [f["key"] for f in p.part.result_card.facts.rows if f["status"] == "told"] == [
        "Demographics"
    ]
    audit = p.part.result_card.audit.text()
    assert "Replies contradicting a fact of the case: 0 of 1 (0%)" in audit
    assert "1 the case&#x27;s own words read out" in audit  # escaped for the label
