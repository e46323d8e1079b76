"""Consultation: interview a simulated patient as the doctor, then answer the case's task
(:mod:`gui.consult.item`, in the one practice panel). A second tab runs a model doctor (or an
oracle, or a baseline) against the model patient on the shared run panel, the transcript
shown as it happens.

The patient, the fact matching, the scoring and the metrics are :mod:`engine.consult`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel, QWidget

from engine.fields import SettingInfo
from engine.registry import FUNCTION, Lazy
from gui.consult.transcript import transcript_html
from gui.widgets.common import AppContext, ModelCombo, combo, muted, text_view
from gui.widgets.practice import PracticePanel
from gui.widgets.run_panel import RunPanel
from gui.widgets.screen import ActivityScreen

if TYPE_CHECKING:
    from engine.types import JSONDict

DOCTORS = [
    ("model", "A model", "A model asks the questions (the doctor model below)"),
    ("oracle-direct", "Oracle, in order", "Asks about every fact of the case, in order"),
    ("oracle-random", "Oracle, random order", "Asks about every fact, in a random order"),
    ("upper", "Upper bound", "No consultation: the solver is given every fact"),
    ("lower", "Lower bound", "No consultation: the solver has the opening request only"),
]
BOUNDS = ("upper", "lower")
PATIENT_NOTES = {
    "paper": "Sees every fact and the dialogue; what it reveals is measured.",
    "grounded": "Sees only the facts a question asks about; for tiny models, students.",
}
SUBTITLE = (
    "Interview a simulated patient, then make your diagnosis. The patient only tells what "
    "you ask about."
)


class ConsultScreen(ActivityScreen):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__(
            ctx,
            "consult",
            SUBTITLE,
            sample=Lazy("engine.consult.cases.cases", "ensure_sample", FUNCTION),
        )
        self.person = self.add_tab(PracticePanel(ctx, "consult"), "See a patient")
        self.models = self.add_tab(ConsultRunPanel(ctx), "Model vs model")


class ConsultRunPanel(RunPanel):
    """A doctor (a model, an oracle or a baseline) consults the model patient over each case
    (:mod:`engine.consult.doctor.runner`), several cases at once when "At once" says so (automatic:
    8 when every model is served, else 1); the transcript of a case in progress is shown live
    from the run's progress, one turn at a time."""

    activity_id = "consult"
    settings_key = "consult_run"
    default_limit = 1

    def settings_rows(self) -> list[tuple[str, QWidget]]:
        rows = super().settings_rows()
        self._doctor_changed()
        self._patient_mode_changed()
        return rows

    def setting_rows(self, info: SettingInfo) -> list[tuple[str, QWidget]]:
        """The doctor is chosen as a kind of doctor and, for a model doctor, its model; the
        patient mode has a note on what the patient sees."""
        if info.name == "doctor":
            self.doctor = combo([(key, label) for key, label, _tip in DOCTORS])
            for i, (_key, _label, tip) in enumerate(DOCTORS):
                self.doctor.setItemData(i, tip, Qt.ItemDataRole.ToolTipRole)
            self.doctor.currentIndexChanged.connect(self._doctor_changed)
            self.doctor_model = ModelCombo(self.ctx)
            return [(info.label, self.doctor), ("Doctor model", self.doctor_model)]
        rows = super().setting_rows(info)
        if info.name == "patient_mode":
            if isinstance(mode := self.fields[info.name], QComboBox):  # a choice: a combo box
                mode.currentIndexChanged.connect(self._patient_mode_changed)
            self.patient_mode_note = muted(QLabel(""))
            self.patient_mode_note.setWordWrap(True)
            rows.append(("", self.patient_mode_note))
        return rows

    def setting_values(self, info: SettingInfo) -> JSONDict:
        if info.name == "doctor":
            doctor = self.doctor.currentData()
            return {"doctor": (self.doctor_model.name or doctor) if doctor == "model" else doctor}
        return super().setting_values(info)

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
        mode = self.fields["patient_mode"].currentData()  # type: ignore[attr-defined]
        self.patient_mode_note.setText(PATIENT_NOTES.get(mode, ""))

    def _doctor_changed(self) -> None:
        """What a doctor does not use is greyed: a baseline consults nobody, only a model
        doctor has a model and a prompt."""
        doctor = self.doctor.currentData()
        self.doctor_model.setEnabled(doctor == "model")
        uses = {"style": doctor == "model", "patient": doctor not in BOUNDS}
        uses["patient_mode"] = uses["patient"]
        for name, used in uses.items():
            if name in self.fields:
                self.fields[name].setEnabled(used)

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
