"""Consultation: interview a simulated patient as the doctor, then answer the case's task
(:mod:`gui.widgets.consult_person`). A second tab runs a model doctor (or an oracle, or a
baseline) against the model patient on the shared run panel, the transcript shown as it
happens.

The patient, the fact matching, the scoring and the metrics are :mod:`engine.consult`'s.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSpinBox, QWidget

from gui.models import set_setting, setting
from gui.widgets.common import AppContext, ModelCombo, combo, muted, text_view
from gui.widgets.consult_person import PersonPanel, transcript_html
from gui.widgets.run_panel import RunPanel
from gui.widgets.screen import ActivityScreen

__all__ = ["ConsultRunPanel", "ConsultScreen", "PersonPanel", "transcript_html"]

DOCTORS = [
    ("model", "A model", "A model asks the questions (the doctor model below)"),
    ("oracle-direct", "Oracle, in order", "Asks about every fact of the case, in order"),
    ("oracle-random", "Oracle, random order", "Asks about every fact, in a random order"),
    ("upper", "Upper bound", "No consultation: the solver is given every fact"),
    ("lower", "Lower bound", "No consultation: the solver has the opening request only"),
]
BOUNDS = ("upper", "lower")
STYLES = [("long", "Detailed doctor prompt"), ("short", "Short doctor prompt")]
PATIENT_MODES = [("paper", "As in the paper"), ("grounded", "Grounded in the asked facts")]
PATIENT_NOTES = {
    "paper": "Sees every fact and the dialogue; what it reveals is measured.",
    "grounded": "Sees only the facts a question asks about; for tiny models, students.",
}


class ConsultScreen(ActivityScreen):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__(
            ctx,
            "consult",
            "Interview a simulated patient, then make your diagnosis. The patient only "
            "tells what you ask about.",
        )
        from engine.consult.cases import ensure_sample

        try:
            ensure_sample(ctx.store)
        except Exception as exc:  # noqa: BLE001 - the app works without the sample
            ctx.status(f"The sample cases could not be loaded: {exc}")
        self.person = PersonPanel(ctx)
        self.models = ConsultRunPanel(ctx)
        self.add_tab(self.person, "See a patient")
        self.add_tab(self.models, "Model vs model")

    def closing(self) -> None:
        self.person.stop_reply()
        self.person.abandon()


class ConsultRunPanel(RunPanel):
    """A doctor (a model, an oracle or a baseline) consults the model patient over each case
    (:mod:`engine.consult.run`), several cases at once when "At once" says so (automatic: 8
    when every model is served, else 1); the transcript of a case in progress is shown live
    from the run's progress, one turn at a time."""

    activity_id = "consult"
    settings_key = "consult_run"
    default_limit = 1

    def settings_rows(self) -> list[tuple[str, QWidget]]:
        self.doctor = combo([(key, label) for key, label, _tip in DOCTORS])
        for i, (_key, _label, tip) in enumerate(DOCTORS):
            self.doctor.setItemData(i, tip, Qt.ItemDataRole.ToolTipRole)
        self.doctor.currentIndexChanged.connect(self._doctor_changed)
        self.doctor_model = ModelCombo(self.ctx)
        self.patient_model = ModelCombo(self.ctx)
        self.prompt_style = combo(STYLES)
        self.patient_mode = combo(PATIENT_MODES)
        self.patient_mode.currentIndexChanged.connect(self._patient_mode_changed)
        self.patient_mode_note = muted(QLabel(""))
        self.patient_mode_note.setWordWrap(True)
        self.turns_spin = QSpinBox()
        self.turns_spin.setRange(1, 50)
        self.turns_spin.setValue(setting(f"{self.settings_key}/max_turns", 5, int))
        self._doctor_changed()
        self._patient_mode_changed()
        return [
            ("Doctor", self.doctor),
            ("Doctor model", self.doctor_model),
            ("Prompt", self.prompt_style),
            ("Patient model", self.patient_model),
            ("Patient", self.patient_mode),
            ("", self.patient_mode_note),
            ("Questions per case", self.turns_spin),
        ]

    def live_views(self) -> list[tuple[QWidget, int]]:
        self.turns: list[dict[str, Any]] = []
        self.case_key: str | None = None
        self.case_turns: dict[str, list[dict[str, Any]]] = {}
        self.case_label = muted(QLabel(""))
        self.case_label.setWordWrap(True)
        self.transcript = text_view()
        self.transcript.setPlaceholderText(
            "The doctor's questions and the patient's replies appear here as they are made."
        )
        return [(self.case_label, 0), (self.transcript, 2)]

    def item_text(self, item: dict[str, Any]) -> str:
        return str(item.get("initial_request", ""))

    def _patient_mode_changed(self) -> None:
        self.patient_mode_note.setText(PATIENT_NOTES[self.patient_mode.currentData()])

    def _doctor_changed(self) -> None:
        doctor = self.doctor.currentData()
        self.doctor_model.setEnabled(doctor == "model")
        self.prompt_style.setEnabled(doctor == "model")
        self.patient_model.setEnabled(doctor not in BOUNDS)
        self.patient_mode.setEnabled(doctor not in BOUNDS)

    def given(self) -> dict[str, Any]:
        set_setting(f"{self.settings_key}/max_turns", self.turns_spin.value())
        doctor = self.doctor.currentData()
        if doctor == "model":
            doctor = self.doctor_model.name or "model"
        return {
            "doctor": doctor,
            "patient": self.patient_model.name,
            "style": self.prompt_style.currentData(),
            "patient_mode": self.patient_mode.currentData(),
            "max_turns": self.turns_spin.value(),
            "limit": self.limit.value() or None,
        }

    def run_started(self) -> None:
        self.turns = []
        self.case_key = None
        self.case_turns = {}
        self.transcript.clear()
        self.case_label.setText("Loading the models…")

    def on_report(self, info: dict[str, Any]) -> None:
        """A turn of a case (a step of the run's progress) or a case answered. With several
        cases at once the transcript follows one: the first, then, once it is answered,
        the case whose turn comes next."""
        key = str(info.get("case") or info.get("item") or "")
        if "turn" in info:
            if info["turn"]["turn"] == 0:  # a case (re)starts with its opening request
                self.case_turns[key] = []
            self.case_turns.setdefault(key, []).append(info["turn"])
            if self.case_key is None:
                self.case_key = key
            if key == self.case_key:
                self._show_transcript()
            self._say_case()
        elif "item" in info:
            done = self.case_turns.pop(key, None)
            if key == self.case_key:
                self.turns = done if done is not None else self.turns
                self.case_key = None  # the next case with a turn is watched
                verdict = "right" if info.get("correct") else "wrong"
                chosen = _short(info.get("chosen") or "—")
                self.case_label.setText(
                    f"Case {key}: answered {chosen} (right answer {_short(info.get('gold'))})"
                    f" — {verdict}"
                )

    def _say_case(self) -> None:
        """Which case the transcript shows, and how many others are in progress."""
        if self.case_key is None or self.case_key not in self.case_turns:
            return
        others = len(self.case_turns) - 1
        more = f" ({others} more in progress)" if others > 0 else ""
        self.case_label.setText(f"Case {self.case_key}{more}")

    def _show_transcript(self) -> None:
        self.turns = self.case_turns.get(self.case_key or "", [])
        self.transcript.setHtml(transcript_html(self.turns, doctor_label="Doctor"))
        bar = self.transcript.verticalScrollBar()
        bar.setValue(bar.maximum())


def _short(text: object, limit: int = 60) -> str:
    """A reply or an answer in one short line."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
