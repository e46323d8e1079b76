"""Take the screenshots in docs/screenshots/ of the app driven through each screen.

The app runs with a temporary database, the shipped samples and the embedded model.

    python scripts/screenshots.py            # starts itself under Xvfb when there is no display
    python scripts/screenshots.py --out DIR --only exam review
    QT_QPA_PLATFORM=offscreen python scripts/screenshots.py    # no display and no Xvfb

Needs Xvfb (Debian: ``apt-get install xvfb``) when no display is available, and a CJK font
for the Chinese questions (Debian: ``fonts-noto-cjk``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SIZE = (1400, 900)
SCREENS = (
    "exam",
    "consult",
    "french",
    "review",
    "results",
    "rate",
    "models",
    "notebook",
    "standing",
    "practice_block",
    "practice_marked",
    "train",
)


def relaunch_under_xvfb() -> None:
    """Run this script again inside a virtual X server, unless there is a display."""
    if (
        os.environ.get("DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
        or os.environ.get("MEDEXAM_SHOTS_CHILD")
    ):
        return
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        sys.exit("No display and no xvfb-run: install Xvfb (apt-get install xvfb).")
    env = dict(os.environ, MEDEXAM_SHOTS_CHILD="1")
    cmd = [xvfb, "-a", "-s", f"-screen 0 {SIZE[0]}x{SIZE[1]}x24", sys.executable, *sys.argv]
    sys.exit(subprocess.call(cmd, env=env))


class Shooter:
    """Drives the window and saves what it shows."""

    def __init__(self, window: Any, out: Path, wanted: set[str]) -> None:
        from PySide6.QtWidgets import QApplication

        self.window = window
        self.out = out
        self.wanted = wanted
        self.app = QApplication.instance()

    @staticmethod
    def _gui_testing() -> Any:
        import gui.testing

        return gui.testing

    def wait(self, cond: Callable[[], bool], timeout: float = 600.0, what: str = "") -> None:
        end = time.monotonic() + timeout
        while not cond():
            self.app.processEvents()
            time.sleep(0.02)
            if time.monotonic() > end:
                raise TimeoutError(f"timed out waiting for {what or cond}")

    def settle(self, seconds: float = 0.4) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.app.processEvents()
            time.sleep(0.02)

    def shot(self, name: str, screen: str | None = None, widget: Any = None) -> None:
        """Save what the window (or ``widget``, a dialog of it) shows as ``name``.png."""
        if screen is not None and screen not in self.wanted:
            return
        self.settle()
        path = self.out / f"{name}.png"
        (widget or self.window).grab().save(str(path))
        print(f"saved {path}")

    def exam_session(self) -> None:
        """A finished practice session (report and Results), then a question explained."""
        exam = self.window.go("exam")
        p = exam.practice
        p.dataset.select("explaincpe-sample")
        p.part.mode_practice.setChecked(True)
        p.part.count.setValue(6)
        p.start()
        self.wait(lambda: p.item is not None and not p.busy)
        for i in range(6):
            letter = p.item["answer"]
            if i % 3 == 1:  # a wrong answer now and then
                letter = "ABCDE"[("ABCDE".index(letter) + 1) % 5]
            p.options.toggle(letter)
            self.settle(0.5 + 0.6 * (i % 4))  # some time spent on each question
            p.submit()
            self.wait(lambda: p.answered and not p.busy)
            p.next_question()
            self.wait(lambda: not p.busy and (p.stack.currentIndex() == 2 or not p.answered))
        self.wait(lambda: p.stack.currentIndex() == 2 and not p.busy, what="the report")
        self.shot("exam-report", "exam")
        p.back_to_setup()
        p.part.count.setValue(3)
        p.start()
        self.wait(lambda: p.item is not None and not p.busy)
        p.options.toggle(p.item["answer"])
        self.settle(7.0)  # some thinking
        p.submit()
        self.wait(lambda: p.answered and not p.busy)
        exam_item = p.part
        exam_item.explain_lang.setCurrentIndex(exam_item.explain_lang.findData("en"))
        exam_item.explain()
        text = exam_item.model_text
        done = lambda: len(text.toPlainText()) > 160 or exam_item.explain_job is None  # noqa: E731
        self.wait(done, 900, "the explanation")
        exam_item.explainer.stop()
        self.wait(lambda: exam_item.explain_job is None)
        self.shot("exam", "exam")
        self._gui_testing().end_session(p)  # questions left: said yes to
        self.wait(lambda: p.stack.currentIndex() == 2 and not p.busy)

    def evaluate(self, method: str, limit: int, timeout: float = 600.0) -> Any:
        """A model evaluation of the sample questions with ``method``, run to its end on the
        Exam screen's second tab; returns the screen."""
        exam = self.window.go("exam")
        exam.tabs.setCurrentIndex(1)
        ev = exam.evaluation
        ev.dataset.select("explaincpe-sample")
        ev.fields["method"].setCurrentIndex(ev.fields["method"].findData(method))
        ev.limit.setValue(limit)
        ev.run()
        self.wait(lambda: ev.job is None, timeout, f"the {method} evaluation")
        return exam

    def exam_evaluation(self) -> None:
        exam = self.evaluate("logprob", 8)
        self.shot("exam-evaluation", "exam")
        exam.tabs.setCurrentIndex(0)

    def consultation(self) -> None:
        c = self.window.go("consult").person
        c.dataset.select("cases-sample")
        c.part.case_list.setCurrentRow(0)
        c.part.max_turns.setValue(6)
        c.start()
        self.wait(lambda: c.session is not None and not c.busy)
        questions = (
            "Where does it hurt, and since when?",
            "Do you have a fever?",
            "Have you felt sick or vomited?",
        )
        for q in questions:
            c.part.ask(q)
            self.wait(lambda: c.part.reply_job is None and not c.busy, what="the patient's reply")
        self.shot("consult", "consult")
        c.part.to_task()
        c.options.toggle(c.session.case.task.answer)
        c.submit()
        self.wait(lambda: c.stack.currentWidget() is c.results and not c.busy)
        self.shot("consult-result", "consult")

    def french(self) -> None:
        french = self.window.go("french")
        f = french.practice
        combo = f.dataset.combo
        self.wait(lambda: combo.findData("frenchmedmcqa-sample") >= 0, what="French sample")
        self.wait(lambda: f.part.retrieval.corpus.findData("french-sample") >= 0)
        f.dataset.select("frenchmedmcqa-sample")
        f.part.retrieval.corpus.setCurrentIndex(f.part.retrieval.corpus.findData("french-sample"))
        f.part.retrieval.retriever.setCurrentIndex(f.part.retrieval.retriever.findData("bm25"))
        f.part.retrieval.k.setValue(3)
        f.part.limit.setValue(4)
        f.start()
        self.wait(lambda: f.item is not None and not f.busy)
        for letter in ("a", "b", "d"):
            f.options.toggle(letter)
        f.submit()
        self.wait(lambda: f.part.verdict.text() != "" and not f.busy)
        self.shot("french", "french")
        f.end()
        self.wait(lambda: not f.busy)
        french.tabs.setCurrentIndex(1)
        m = french.runs
        m.dataset.select("frenchmedmcqa-sample")
        m.fields["method"].setCurrentIndex(m.fields["method"].findData("generate"))
        m.limit.setValue(4)
        m.run()
        self.wait(lambda: m.job is None, what="the French run")
        self.shot("french-runs", "french")
        french.tabs.setCurrentIndex(0)

    def review(self) -> None:
        """The cards the sessions made: the overview, then a card answered wrongly."""
        r = self.window.go("review")
        r.refresh()
        self.wait(lambda: r.start_button.isEnabled(), 60, "cards due")
        self.shot("review")
        r.start()
        self.wait(lambda: r.current is not None, 60, "a card")
        face = r.current.face
        letters = [letter for letter, _text in face.options]
        wrong = next(letter for letter in letters if letter not in face.gold)
        r.options.toggle(wrong)
        r.check()
        self.shot("review-card")
        r.end()

    def results(self) -> None:
        r = self.window.go("results")
        r.reload()
        exam_runs = [x["id"] for x in r.proxy.runs() if x["activity"] == "exam"]
        r.select_runs(exam_runs[-1:])
        r.tabs.setCurrentIndex(0)
        r.answers_table.selectRow(1)
        self.shot("results")
        r.tabs.setCurrentIndex(2)
        self.shot("results-charts")

    def rate(self) -> None:
        """A generated evaluation's explanations rated blind: two rated, the third begun."""
        exam = self.evaluate("generate", 5, 1800)
        exam.tabs.setCurrentIndex(0)
        r = self.window.go("results")
        r.reload()
        r.select_runs([max(x["id"] for x in r.proxy.runs() if x["activity"] == "exam")])
        r.rate_selected()
        d = r.rate_dialog
        d.rater.setCurrentText("dr-li")
        d.change_rater()
        for values in ((4, 5, 3, 4, 2), (2, 3, 2, 2, 1)):
            for row, value in zip(d.rows, values, strict=True):
                row.set_value(value)
            d.next()
        for row, value in zip(d.rows, (4, 4, 3), strict=False):
            row.set_value(value)
        d.resize(1180, 730)  # its size on a 1280×800 screen (offscreen screens are smaller)
        d.activateWindow()
        d.rows[3].setFocus()
        self.shot("rate", widget=d)
        d.close()

    def bank_data(self) -> None:
        """Two models evaluated on the 14 sample questions, two person sessions of them, a
        few questions marked, noted and tagged with why they were missed."""
        from engine.bank.notebook import mark, set_note, set_reason
        from engine.core.runs import run
        from engine.exam.dataset import ensure_sample
        from engine.exam.person import ExamSitting

        store = self.window.ctx.store
        dataset = ensure_sample(store)
        for model in ("smollm2", "gemma3-270m"):
            run(store, "exam", dataset, {"model": model, "method": "logprob", "limit": 14})
        for letters in ("BDCBAACDEBCAAD", "BDBBDACDEBCABD"):
            session = ExamSitting(store, dataset, limit=14)
            for letter in letters:
                session.next_question()
                session.answer(letter)
                self.settle(0.3)
            session.finish()
        notes = {
            "sample-05": ("华法林：监测 INR，不是 APTT。", "knowledge"),
            "sample-08": ("Read the last line twice: it asks which is NOT used.", "misread"),
            "sample-12": ("Dose in renal failure: work from the creatinine clearance.", None),
        }
        for key, (note, reason) in notes.items():
            set_note(store, "default", "exam", dataset, key, note)
            if reason:
                set_reason(store, "default", "exam", dataset, key, reason)
        for key in ("sample-03", "sample-05", "sample-12"):
            mark(store, "default", "exam", dataset, key)
        self.window.ctx.notify_runs()

    def notebook(self) -> None:
        """The Notebook tab: marked and noted questions, one of them shown in full."""
        r = self.window.go("review")
        r.tabs.setCurrentWidget(r.notebook)
        nb = r.notebook
        nb.refresh()
        nb.table.selectRow([x["item_key"] for x in nb.model.rows].index("sample-05"))
        self.shot("notebook", "notebook")

    def standing(self) -> None:
        """Where I stand: the subjects beside the two models, the trend, why missed."""
        r = self.window.go("review")
        r.tabs.setCurrentWidget(r.standing)
        self.shot("standing", "standing")
        r.tabs.setCurrentIndex(0)

    def practice_bank(self) -> None:
        """At 1280×800: a custom block built on the start page (after a session with misses),
        then a question of it marked, noted, missed and tagged with why."""
        from PySide6.QtCore import Qt

        self.window.resize(1280, 800)
        p = self.window.go("exam").practice
        p.dataset.select("explaincpe-sample")
        p.part.mode_practice.setChecked(True)
        p.part.count.setValue(8)
        p.start()
        self.wait(lambda: p.item is not None and not p.busy)
        while p.stack.currentIndex() == 1:
            letter = p.item["answer"]
            if p.session.index in (0, 1, 4, 7):  # missed
                letter = "ABCDE"[("ABCDE".index(letter) + 1) % 5]
            p.options.toggle(letter)
            p.submit()
            self.wait(lambda: p.answered and not p.busy)
            p.next_question()
            self.wait(lambda: not p.busy and (p.stack.currentIndex() == 2 or not p.answered))
        p.back_to_setup()
        b = p.part.block
        b.pool.setCurrentIndex(b.pool.findData("incorrect"))
        for i in range(b.subjects.count()):
            if b.subjects.item(i).data(Qt.ItemDataRole.UserRole) in ("药品知识题", "心血管类"):
                b.subjects.item(i).setCheckState(Qt.CheckState.Checked)
        p.part.mode_timed.setChecked(True)
        p.part.minutes.setValue(20)
        p.part.count.setValue(10)
        b.save_as("Missed drug questions")
        self.shot("practice_block", "practice_block")
        p.part.mode_practice.setChecked(True)
        p.start()
        self.wait(lambda: p.item is not None and not p.busy)
        p.marks.mark_button.setChecked(True)
        p.marks.note.setText("Warfarin: monitor the INR, not the aPTT")
        p.marks.save_note()
        p.options.toggle("ABCDE"[("ABCDE".index(p.item["answer"]) + 2) % 5])
        p.submit()
        self.wait(lambda: p.answered and not p.busy)
        p.marks.reason_buttons["knowledge"].click()
        self.shot("practice_marked", "practice_marked")
        self._gui_testing().end_session(p)  # questions left: said yes to
        self.wait(lambda: p.stack.currentIndex() == 2 and not p.busy)
        self.window.resize(*SIZE)

    def train(self) -> None:
        """A reader trained on the French sample for three short epochs, its loss curve."""
        t = self.window.go("train")
        page = t.form.choose("french-reader")
        page.data.select("frenchmedmcqa-sample")
        page.fields["epochs"].setValue(3)
        page.name.setText("minilm-sample")
        t.train()
        self.wait(lambda: t.job is None, what="the training")
        t.table.selectRow(0)
        self.shot("train", "train")

    def models(self) -> None:
        models = self.window.go("models")
        self.wait(lambda: models.list.count() > 0)
        models.prompt.setText("In one sentence, what is a vaccine?")
        models.test_prompt()
        self.wait(lambda: models.stream_job is None, what="the test prompt")
        self.shot("models")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=str(REPO / "docs" / "screenshots"), help="Folder for the PNGs."
    )
    parser.add_argument(
        "--only",
        nargs="*",
        choices=SCREENS,
        metavar="SCREEN",
        help=f"Only these: {', '.join(SCREENS)}.",
    )
    args = parser.parse_args()
    relaunch_under_xvfb()

    home = Path(tempfile.mkdtemp(prefix="medexam-shots-"))
    os.environ["MEDEXAM_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(REPO))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from gui.testing import open_window

    window = open_window(home)
    window.resize(*SIZE)
    window.move(0, 0)
    window.show()
    wanted = set(args.only or SCREENS)
    s = Shooter(window, out, wanted)
    print("loading the model…")
    window.jobs.start(lambda job: window.host.get())
    s.wait(lambda: window.host.state == "ready", what="the model")
    s.wait(lambda: window.ctx.model_list is not None, what="the catalog")
    if wanted & {"exam", "review", "results"}:
        s.exam_session()
        s.exam_evaluation()
    if wanted & {"consult", "results"}:
        s.consultation()
    if wanted & {"french", "results"}:
        s.french()
    if "review" in wanted:
        s.review()
    if "results" in wanted:
        s.results()
    if "rate" in wanted:
        s.rate()
    if "models" in wanted:
        s.models()
    if wanted & {"notebook", "standing"}:
        s.bank_data()
        s.notebook()
        s.standing()
    if wanted & {"practice_block", "practice_marked"}:
        s.practice_bank()
    if "train" in wanted:
        s.window.go("french")  # imports the French sample
        s.wait(lambda: window.ctx.store.has_dataset("frenchmedmcqa-sample"), what="the sample")
        s.train()
    window.close()
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
