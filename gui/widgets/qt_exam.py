"""Exam: practise pharmacist exam questions (with feedback, or as a timed exam) and evaluate a
model on a question set.

Everything about the exam — questions, scoring, the pass mark, per-type accuracy, missed
questions, prompts and model runs — comes from :mod:`engine.exam`; this screen only shows it.
The practice tab is :mod:`gui.widgets.exam_practice` (its report
:mod:`gui.widgets.exam_report`), the evaluation tab the shared run panel with the exam's
settings.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QWidget

from gui.models import set_setting, setting
from gui.widgets.common import AppContext, ModelCombo, combo
from gui.widgets.exam_practice import PracticePanel
from gui.widgets.run_panel import RunPanel
from gui.widgets.screen import ActivityScreen

METHODS = [
    ("generate", "Write an answer and explanation"),
    ("logprob", "Read the letter probabilities (fast)"),
]
LANGUAGES = [("zh", "Chinese (as published)"), ("en", "English")]


class ExamScreen(ActivityScreen):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__(
            ctx,
            "exam",
            "Licensed pharmacist exam questions: practise with feedback, sit a timed exam, "
            "or see how a model does.",
        )
        from engine.exam.dataset import ensure_sample

        try:
            ensure_sample(ctx.store)
        except Exception as exc:  # noqa: BLE001 - the app works without the sample
            ctx.status(f"The sample questions could not be loaded: {exc}")
        self.practice = PracticePanel(ctx)
        self.evaluation = ExamRunPanel(ctx)
        self.add_tab(self.practice, "Practice")
        self.add_tab(self.evaluation, "Model evaluation")

    def closing(self) -> None:
        self.practice.closing()


class ExamRunPanel(RunPanel):
    """A model answers a question set: the method, few-shot examples, prompt language and
    instruction of the ExplainCPE prompts (:class:`engine.exam.runner.ExamSettings`)."""

    activity_id = "exam"
    settings_key = "exam_eval"
    help_text = (
        "<b>Write an answer</b>: the model answers and explains; the letter is read "
        "from its reply and the explanation is compared with the published one "
        "(ROUGE).<br><b>Letter probabilities</b>: one pass per question reads how "
        "likely each letter is — much faster, and it shows how sure the model was."
        "<br><b>Examples</b>: solved questions shown before each one (few-shot)."
    )

    def settings_rows(self) -> list[tuple[str, QWidget]]:
        key = self.settings_key
        self.model = ModelCombo(self.ctx)
        self.method = combo(METHODS, setting(f"{key}/method", "generate"))
        shots = [(n, "No examples" if n == 0 else f"{n} solved example(s)") for n in (0, 1, 4, 8)]
        self.shots = combo(shots, setting(f"{key}/shots", 0, int))
        self.lang = combo(LANGUAGES, setting(f"{key}/lang", "zh"))
        self.instruction = QCheckBox("Start with the instruction")
        self.instruction.setChecked(setting(f"{key}/instruction", True, bool))
        return [
            ("Model", self.model),
            ("Method", self.method),
            ("Examples", self.shots),
            ("Prompt language", self.lang),
            ("", self.instruction),
        ]

    def given(self) -> dict[str, Any]:
        from engine.exam.runner import ExamSettings

        if not self.model.name:
            raise ValueError("Choose a model.")
        values = {
            "method": self.method.currentData(),
            "shots": self.shots.currentData(),
            "lang": self.lang.currentData(),
            "instruction": self.instruction.isChecked(),
        }
        for name, value in values.items():
            set_setting(f"{self.settings_key}/{name}", value)
        settings = ExamSettings(model=self.model.name, limit=self.limit.value() or None, **values)
        return settings.as_dict()
