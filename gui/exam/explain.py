"""A model's explanation of an exam question, asked for in practice: the Ask button, the
language, Stop, and the text streamed word by word (the session stores it with the run:
:meth:`engine.exam.person.ExamSitting.stream_explanation`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from engine.text.language import item_language
from gui.models import set_setting, setting
from gui.widgets.common import AppContext, combo, muted, show_error, text_view

if TYPE_CHECKING:
    from engine.exam.dataset import Question
    from engine.exam.person import ExamSitting
    from gui.widgets.screen import SessionCalls
    from gui.workers import Job, Worker

EXPLAIN_LANGUAGES = [
    ("auto", "In the question's language"),
    ("zh", "In Chinese"),
    ("en", "In English"),
]


class ExplainBox(QWidget):
    """The row of controls over the streamed text; ``calls`` (the practice panel) runs the
    stream on its session's thread."""

    def __init__(self, ctx: AppContext, calls: SessionCalls) -> None:
        super().__init__()
        self.ctx, self.calls = ctx, calls
        self.job: Worker | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.button = QPushButton("Ask the model to explain")
        self.button.setToolTip("The loaded model explains this question, word by word")
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setVisible(False)
        self.lang = combo(EXPLAIN_LANGUAGES, setting("exam/explain_lang", "auto"))
        self.lang.currentIndexChanged.connect(self._lang_changed)
        row.addWidget(self.button)
        row.addWidget(self.lang)
        row.addWidget(self.stop_button)
        row.addWidget(muted(QLabel("Written by a small local model: it can be wrong.")))
        row.addStretch(1)
        lay.addLayout(row)
        self.text = text_view(90)
        self.text.setVisible(False)
        lay.addWidget(self.text)

    def _lang_changed(self) -> None:
        set_setting("exam/explain_lang", self.lang.currentData())

    def clear(self) -> None:
        self.text.clear()
        self.text.setVisible(False)

    def explain(self, session: ExamSitting, item: Question) -> None:
        """Stream the loaded model's explanation of ``item`` (a question of ``session``)."""
        if self.job is not None:
            return
        host, key = self.ctx.host, str(item["id"])
        lang = self.lang.currentData()
        if lang == "auto":
            lang = item_language(item)

        def job(job: Job) -> str:
            model = host.get()
            out = []
            for piece in session.stream_explanation(model, key, lang=lang):
                job.piece(piece)
                out.append(piece)
                if job.cancelled:
                    model.cancel()
            return "".join(out)

        self.text.clear()
        self.text.setVisible(True)
        self.text.setPlaceholderText("Loading the model…" if host.model is None else "Thinking…")
        self.button.setEnabled(False)
        self.stop_button.setVisible(True)
        self.job = self.calls.stream(job, self._piece, on_error=self._failed, on_ended=self._ended)

    def _failed(self, exc: BaseException) -> None:
        show_error(self, exc, self.ctx, "The model could not explain")

    def _piece(self, text: str) -> None:
        cursor = self.text.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        self.text.setTextCursor(cursor)
        self.text.ensureCursorVisible()

    def _ended(self) -> None:
        self.job = None
        self.stop_button.setVisible(False)
        self.button.setEnabled(True)

    def stop(self) -> None:
        self.calls.stop_stream(self.job)
