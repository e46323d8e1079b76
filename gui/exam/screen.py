"""Exam: practise pharmacist exam questions (with feedback, or as a timed exam) and evaluate a
model on a question set.

Everything about the exam — questions, scoring, the pass mark, per-type accuracy, missed
questions, prompts and model runs — comes from :mod:`engine.exam`; this screen only shows it.
The practice tab is the one practice panel with the exam's item widget
(:mod:`gui.exam.item`, its report :mod:`gui.exam.report`), the evaluation tab the shared run panel
with the exam's settings.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.errors import UserError
from engine.registry import FUNCTION, Lazy
from gui.widgets.common import AppContext
from gui.widgets.practice import PracticePanel
from gui.widgets.run_panel import RunPanel
from gui.widgets.screen import ActivityScreen

SUBTITLE = (
    "Licensed pharmacist exam questions: practise with feedback, sit a timed exam, "
    "or see how a model does."
)


class ExamScreen(ActivityScreen):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__(
            ctx, "exam", SUBTITLE, sample=Lazy("engine.exam.dataset", "ensure_sample", FUNCTION)
        )
        self.practice = self.add_tab(PracticePanel(ctx, "exam"), "Practice")
        self.practice.title_changed.connect(
            lambda title: self.tabs.setTabText(self.tabs.indexOf(self.practice), title)
        )
        self.evaluation = self.add_tab(ExamRunPanel(ctx), "Model evaluation")

    def practise(self, dataset: str, keys: Sequence[str]) -> None:
        """Start a practice session of the questions ``keys`` of ``dataset`` (with the count
        and mode of the setup page), unless one is under way (:class:`UserError`)."""
        practice = self.practice
        if practice.busy or practice.stack.currentIndex() == 1:
            raise UserError("A session is under way in Exam → Practice: end it first.")
        self.tabs.setCurrentWidget(practice)
        practice.dataset.select(dataset)
        practice.start(keys=list(keys))


class ExamRunPanel(RunPanel):
    """A model answers a question set: the model, method, few-shot examples, prompt language
    and instruction of the ExplainCPE prompts (:class:`engine.exam.settings.ExamSettings`)."""

    activity_id = "exam"
    settings_key = "exam_eval"
    help_text = (
        "<b>Write an answer</b>: the model answers and explains; the letter is read "
        "from its reply and the explanation is compared with the published one "
        "(ROUGE).<br><b>Letter probabilities</b>: one pass per question reads how "
        "likely each letter is — much faster, and it shows how sure the model was."
        "<br><b>Examples</b>: solved questions shown before each one (few-shot)."
    )
