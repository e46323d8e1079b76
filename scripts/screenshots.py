"""Take the screenshots in docs/screenshots/: the app driven to an interesting state on each
screen, with a temporary database, the shipped samples and the embedded model.

    python scripts/screenshots.py            # starts itself under Xvfb when there is no display
    python scripts/screenshots.py --out DIR

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

REPO = Path(__file__).resolve().parents[1]
SIZE = (1400, 900)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    parser.add_argument("--only", nargs="*", help="Only these screens.")
    args = parser.parse_args()
    relaunch_under_xvfb()

    home = Path(tempfile.mkdtemp(prefix="medexam-shots-"))
    os.environ["MEDEXAM_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(REPO))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtWidgets import QApplication

    from gui.testing import open_window

    window = open_window(home)
    window.resize(*SIZE)
    window.move(0, 0)
    window.show()
    app = QApplication.instance()

    def wait(cond: Callable[[], bool], timeout: float = 600.0, what: str = "") -> None:
        end = time.monotonic() + timeout
        while not cond():
            app.processEvents()
            time.sleep(0.02)
            if time.monotonic() > end:
                raise TimeoutError(f"timed out waiting for {what or cond}")

    def settle(seconds: float = 0.4) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)

    def shot(name: str) -> None:
        settle()
        path = out / f"{name}.png"
        window.grab().save(str(path))
        print(f"saved {path}")

    wanted = set(args.only or ["models", "exam", "consult", "french", "results"])
    print("loading the model…")
    window.jobs.start(lambda job: window.host.get())
    wait(lambda: window.host.state == "ready", what="the model")
    wait(lambda: window.ctx.model_list is not None, what="the catalog")

    # -- Exam ----------------------------------------------------------------------------
    exam = window.go("exam")
    p = exam.practice
    p.dataset.select("explaincpe-sample")
    if "exam" in wanted or "results" in wanted:
        # A finished session first, for the report and for Results.
        p.mode_practice.setChecked(True)
        p.count.setValue(6)
        p.start()
        wait(lambda: p.item is not None and not p.busy)
        for i in range(6):
            letter = p.item["answer"] if i % 3 != 1 else "ABCDE"[("ABCDE".index(
                p.item["answer"]) + 1) % 5]  # fmt: skip
            p.options.toggle(letter)
            settle(0.5 + 0.6 * (i % 4))  # some time spent on each question
            p.submit()
            wait(lambda: p.answered and not p.busy)
            p.next_question()
            wait(lambda: not p.busy and (p.stack.currentIndex() == 2 or not p.answered))
        wait(lambda: p.stack.currentIndex() == 2 and not p.busy, what="the report")
        if "exam" in wanted:
            shot("exam-report")
        # A question answered, with the model's explanation.
        p.back_to_setup()
        p.count.setValue(3)
        p.start()
        wait(lambda: p.item is not None and not p.busy)
        p.options.toggle(p.item["answer"])
        settle(7.0)  # some thinking
        p.submit()
        wait(lambda: p.answered and not p.busy)
        p.explain_lang.setCurrentIndex(p.explain_lang.findData("en"))
        p.explain()
        wait(lambda: len(p.model_text.toPlainText()) > 160 or p.explain_job is None, 900,
             "the explanation")  # fmt: skip
        p._stop_explaining()
        wait(lambda: p.explain_job is None)
        if "exam" in wanted:
            shot("exam")
        p.end_session()
        wait(lambda: p.stack.currentIndex() == 2 and not p.busy)
        # A model evaluation.
        exam.tabs.setCurrentIndex(1)
        ev = exam.evaluation
        ev.dataset.select("explaincpe-sample")
        ev.method.setCurrentIndex(ev.method.findData("logprob"))
        ev.limit.setValue(8)
        ev.run()
        wait(lambda: ev.job is None, what="the evaluation")
        if "exam" in wanted:
            shot("exam-evaluation")
        exam.tabs.setCurrentIndex(0)

    # -- Consultation ------------------------------------------------------------------------
    if "consult" in wanted or "results" in wanted:
        consult = window.go("consult")
        c = consult.person
        c.dataset.select("cases-sample")
        c.case_list.setCurrentRow(0)
        c.max_turns.setValue(6)
        c.start()
        wait(lambda: c.consultation is not None and not c.busy)
        for q in ("Where does it hurt, and since when?", "Do you have a fever?",
                  "Have you felt sick or vomited?"):  # fmt: skip
            c.ask(q)
            wait(lambda: c.reply_job is None and not c.busy, what="the patient's reply")
        if "consult" in wanted:
            shot("consult")
        c.end()
        case = c.consultation.case
        c.task_options.toggle(case.task.answer)
        c.submit()
        wait(lambda: c.side.currentIndex() == 2 and not c.busy)
        if "consult" in wanted:
            shot("consult-result")

    # -- French QA ---------------------------------------------------------------------------
    if "french" in wanted or "results" in wanted:
        french = window.go("french")
        f = french.practice
        wait(lambda: f.dataset.combo.findData("frenchmedmcqa-sample") >= 0, what="French sample")
        wait(lambda: f.retrieval.corpus.findData("french-sample") >= 0)
        f.dataset.select("frenchmedmcqa-sample")
        f.retrieval.corpus.setCurrentIndex(f.retrieval.corpus.findData("french-sample"))
        f.retrieval.retriever.setCurrentIndex(f.retrieval.retriever.findData("bm25"))
        f.retrieval.k.setValue(3)
        f.limit.setValue(4)
        f.start()
        wait(lambda: f.view is not None and not f.busy)
        for letter in ("a", "b", "d"):
            f.options.toggle(letter)
        f.submit()
        wait(lambda: f.verdict.text() != "" and not f.busy)
        if "french" in wanted:
            shot("french")
        f.finish()
        wait(lambda: not f.busy)
        french.tabs.setCurrentIndex(1)
        m = french.runs
        m.dataset.select("frenchmedmcqa-sample")
        m.method.setCurrentIndex(m.method.findData("generate"))
        m.limit.setValue(4)
        m.run()
        wait(lambda: m.job is None, what="the French run")
        french.tabs.setCurrentIndex(0)

    # -- Results -----------------------------------------------------------------------------
    if "results" in wanted:
        r = window.go("results")
        r.reload()
        exam_runs = [x["id"] for x in r.proxy.runs() if x["activity"] == "exam"]
        r.select_runs(exam_runs[-1:])
        r.tabs.setCurrentIndex(0)
        r.answers_table.selectRow(1)
        shot("results")
        r.tabs.setCurrentIndex(2)
        shot("results-charts")

    # -- Models ------------------------------------------------------------------------------
    if "models" in wanted:
        models = window.go("models")
        wait(lambda: models.list.count() > 0)
        models.prompt.setText("In one sentence, what is paracetamol used for?")
        models.test_prompt()
        wait(lambda: models.stream_job is None, what="the test prompt")
        shot("models")

    window.close()
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
