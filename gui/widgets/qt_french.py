"""French QA: FrenchMedMCQA questions (one or more right options) with the passages a
retriever finds for them, the query words highlighted; Hamming score and exact match per
question and overall; and model runs over a question set.

Retrieval, the highlighted spans, scoring and the model reader are :mod:`engine.french`'s.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.activities import metric_label
from gui.models import set_setting, setting
from gui.tables import RowsModel, format_value
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    Header,
    ModelCombo,
    OptionList,
    ProgressRow,
    check_crash,
    esc,
    muted,
    primary,
    show_error,
    text_view,
)

RETRIEVERS = [
    ("bm25", "BM25 (words)"),
    ("dense", "Dense (MiniLM embeddings)"),
    ("hybrid", "Hybrid (both, fused)"),
    ("", "No passages"),
]
HIGHLIGHT = "<span style='background:#fde68a; color:#111827'>"


def passages_html(passages: list[Any]) -> str:
    """Retrieved passages with the words they share with the query highlighted."""
    if not passages:
        return "<p style='color:#6b7280'>No passage for this question.</p>"
    out = []
    for i, p in enumerate(passages, 1):
        pieces, last = [], 0
        for start, end in p.spans:
            pieces += [esc(p.text[last:start]), HIGHLIGHT, esc(p.text[start:end]), "</span>"]
            last = end
        pieces.append(esc(p.text[last:]))
        out.append(
            f"<p style='margin:0 0 2px 0; color:#6b7280'><small><b>Passage {i}</b> · "
            f"{esc(p.source)} · score {p.score:.3g}</small></p>"
            f"<p style='margin:0 0 14px 0; line-height:140%'>{''.join(pieces)}</p>"
        )
    return "".join(out)


def load_retriever(job: Any, corpus: str, retriever: str) -> Any:
    """The index of ``corpus`` for ``retriever`` (built on first use, reused after)."""
    if not retriever or not corpus:
        return None
    from engine.french.index import build_index

    return build_index(job.store, corpus, retriever, progress=job.progress, cancel=job.cancel)


class RetrievalControls(QWidget):
    """Corpus, retriever and number of passages, remembered between sessions."""

    def __init__(self, ctx: AppContext, key: str) -> None:
        super().__init__()
        self.ctx, self.key = ctx, key
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.corpus = QComboBox()
        self.corpus.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.corpus.setMinimumContentsLength(17)
        self.retriever = QComboBox()
        for data, label in RETRIEVERS:
            self.retriever.addItem(label, data)
        self.k = QSpinBox()
        self.k.setRange(1, 10)
        self.k.setPrefix("k = ")
        self.k.setToolTip("How many passages to retrieve")
        self.k.setFixedWidth(86)
        self.retriever.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        lay.addWidget(self.corpus, 1)
        lay.addWidget(self.retriever)
        lay.addWidget(self.k)
        i = self.retriever.findData(setting(f"{key}/retriever", "bm25"))
        self.retriever.setCurrentIndex(max(i, 0))
        self.k.setValue(setting(f"{key}/k", 3, int))
        self.retriever.currentIndexChanged.connect(self._changed)
        self.k.valueChanged.connect(self._changed)
        ctx.data_changed.append(self.reload)
        self.reload()
        self._changed()

    def reload(self) -> None:
        current = self.corpus.currentData() or setting(f"{self.key}/corpus", "french-sample")
        self.corpus.blockSignals(True)
        self.corpus.clear()
        for c in self.ctx.store.corpora():
            self.corpus.addItem(f"{c['name']} ({c['n_passages']})", c["name"])
            self.corpus.setItemData(self.corpus.count() - 1, f"{c['n_passages']} passages",
                                    Qt.ItemDataRole.ToolTipRole)  # fmt: skip
        i = self.corpus.findData(current)
        if i >= 0:
            self.corpus.setCurrentIndex(i)
        self.corpus.blockSignals(False)

    def _changed(self) -> None:
        on = bool(self.retriever.currentData())
        self.corpus.setEnabled(on)
        self.k.setEnabled(on)
        set_setting(f"{self.key}/retriever", self.retriever.currentData())
        set_setting(f"{self.key}/k", self.k.value())
        if self.corpus.currentData():
            set_setting(f"{self.key}/corpus", self.corpus.currentData())

    @property
    def values(self) -> tuple[str, str, int]:
        return self.corpus.currentData() or "", self.retriever.currentData(), self.k.value()


def _table(model: Any) -> QTableView:
    t = QTableView()
    t.setModel(model)
    t.verticalHeader().setVisible(False)
    t.setShowGrid(False)
    t.setAlternatingRowColors(True)
    t.horizontalHeader().setHighlightSections(False)
    return t


class FrenchScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        outer = QVBoxLayout(self)
        outer.setContentsMargins(28, 22, 28, 20)
        outer.setSpacing(12)
        outer.addWidget(
            Header(
                "French QA",
                "Questions de pharmacie (FrenchMedMCQA): one or more options are right. "
                "Passages from a corpus help you decide.",
            )
        )
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.practice = FrenchPractice(ctx)
        self.runs = FrenchModelRun(ctx)
        self.tabs.addTab(self.practice, "Practice")
        self.tabs.addTab(self.runs, "Model run")
        outer.addWidget(self.tabs, 1)
        # The sample questions and corpus, imported once (in the background: the French
        # engine loads its analyser).
        ctx.jobs.start(self._ensure_sample, on_done=lambda _r: ctx.notify_data(),
                       on_error=lambda e: ctx.status(f"French sample not loaded: {e}"))  # fmt: skip

    def closing(self) -> None:
        self.practice.closing()

    @staticmethod
    def _ensure_sample(job: Any) -> Any:
        from engine.french.dataset import ensure_sample

        return ensure_sample(job.store)


class FrenchPractice(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.session: Any = None
        self.view: Any = None
        self.busy = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(12)

        setup = Card()
        row = QHBoxLayout()
        row.setSpacing(10)
        self.dataset = DatasetPicker(ctx, "french", compact=True)
        self.dataset.import_clicked.connect(lambda: ctx.window.open_import("french"))
        self.dataset.changed.connect(self._dataset_changed)
        self.retrieval = RetrievalControls(ctx, "french")
        self.limit = QSpinBox()
        self.limit.setRange(0, 100000)
        self.limit.setSpecialValueText("All")
        self.limit.setPrefix("")
        self.limit.setToolTip("How many questions")
        self.limit.setFixedWidth(90)
        self.limit.setValue(setting("french/limit", 0, int))
        self.start_button = primary(QPushButton("Start"))
        self.start_button.clicked.connect(self.start)
        row.addWidget(QLabel("Questions"))
        row.addWidget(self.dataset, 2)
        row.addSpacing(8)
        row.addWidget(QLabel("Passages"))
        row.addWidget(self.retrieval, 3)
        row.addSpacing(8)
        row.addWidget(QLabel("How many"))
        row.addWidget(self.limit)
        row.addWidget(self.start_button)
        setup.add_layout(row)
        lay.addWidget(setup)
        self.retrieval.retriever.currentIndexChanged.connect(self._retrieval_changed)
        self.retrieval.k.valueChanged.connect(self._retrieval_changed)
        self.retrieval.corpus.currentIndexChanged.connect(self._retrieval_changed)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        qwrap = QWidget()
        ql = QVBoxLayout(qwrap)
        ql.setContentsMargins(0, 0, 0, 0)
        qcard = Card()
        top = QHBoxLayout()
        self.position = QLabel("")
        self.position.setObjectName("cardTitle")
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setMaximumWidth(220)
        top.addWidget(self.position)
        top.addStretch(1)
        top.addWidget(self.bar)
        qcard.add_layout(top)
        self.question = QLabel("Choose a question set and press Start.")
        self.question.setObjectName("question")
        self.question.setWordWrap(True)
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        qcard.add(self.question)
        hint = muted(QLabel("Select every right option (one or more)."))
        qcard.add(hint)
        self.options = OptionList(multi=True)
        self.options.selection_changed.connect(self._enable)
        qcard.add(self.options)
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        qcard.add(self.verdict)
        qcard.layout_.addStretch(1)
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setWidget(qcard)
        ql.addWidget(area, 1)
        buttons = QHBoxLayout()
        self.finish_button = QPushButton("Finish")
        self.finish_button.clicked.connect(self.finish)
        self.total = muted(QLabel(""))
        self.submit_button = primary(QPushButton("Check"))
        self.submit_button.setMinimumWidth(110)
        self.submit_button.clicked.connect(self.submit)
        self.next_button = primary(QPushButton("Next question"))
        self.next_button.clicked.connect(self.next_question)
        buttons.addWidget(self.finish_button)
        buttons.addWidget(self.total, 1)
        buttons.addWidget(self.submit_button)
        buttons.addWidget(self.next_button)
        ql.addLayout(buttons)
        split.addWidget(qwrap)

        pcard = Card("Passages")
        self.passages = text_view()
        self.passages.setPlaceholderText("The retrieved passages appear here, the words they "
                                         "share with the question highlighted.")  # fmt: skip
        pcard.add(self.passages, 1)
        split.addWidget(pcard)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 4)
        lay.addWidget(split, 1)
        self._enable()

    # -- flow ------------------------------------------------------------------------------

    def _run(self, fn: Any, on_done: Any, *args: Any, progress: Any = None) -> None:
        self.busy = True
        self._enable()

        def ended() -> None:
            self.busy = False
            self._enable()

        self.ctx.jobs.start(fn, *args, pool="session", on_done=on_done, on_progress=progress,
                            on_error=lambda e: show_error(self, e, self.ctx),
                            on_ended=ended)  # fmt: skip

    def start(self) -> None:
        from engine.french.session import FrenchSession

        dataset = self.dataset.name
        if not dataset:
            show_error(self, "Import a French question set first.", self.ctx)
            return
        corpus, retriever, k = self.retrieval.values
        if retriever and not corpus:
            show_error(self, "Import a corpus for the passages, or choose “No passages”.",
                       self.ctx)  # fmt: skip
            return
        limit = self.limit.value() or None
        set_setting("french/limit", self.limit.value())
        if self.session is not None and not self.session.done:
            self.ctx.jobs.start(lambda job, s=self.session: s.finish(), pool="session")

        def make(job: Any) -> Any:
            index = load_retriever(job, corpus, retriever)
            session = FrenchSession(job.store, dataset, limit=limit, index=index, k=k)
            return session, session.question()

        self.passages.setHtml("<p style='color:#6b7280'>Preparing the passages…</p>")
        self._run(make, self._started, progress=self._index_progress)

    def _index_progress(self, p: Any) -> None:
        self.passages.setHtml(f"<p style='color:#6b7280'>{esc(p.message)} "
                              f"({p.done}/{p.total})…</p>")  # fmt: skip

    def _started(self, result: tuple[Any, Any]) -> None:
        self.session, view = result
        self.ctx.notify_runs()
        self._show(view)

    def _show(self, view: Any) -> None:
        self.view = view
        self.position.setText(f"Question {view.position + 1} of {view.total}")
        self.bar.setRange(0, view.total)
        self.bar.setValue(self.session.summary()["answered"])
        self.question.setText(view.question)
        self.options.set_options([(letter, text) for letter, text in view.options])
        self.verdict.setText("")
        self.passages.setHtml(passages_html(view.passages))
        self._totals()
        self._enable()

    def _retrieval_changed(self) -> None:
        """Retrieve the current question's passages again with the new settings."""
        if self.session is None or self.view is None or self.busy:
            return
        corpus, retriever, k = self.retrieval.values
        session, position = self.session, self.view.position

        def redo(job: Any) -> Any:
            session.set_retrieval(load_retriever(job, corpus, retriever), k)
            return session.question(position)

        answered = self.view.answered or bool(self.verdict.text())
        self._run(redo, lambda v: self._show_passages(v, answered))

    def _show_passages(self, view: Any, answered: bool) -> None:
        self.passages.setHtml(passages_html(view.passages))

    def _dataset_changed(self, _name: str) -> None:
        self._enable()

    def _enable(self) -> None:
        has = self.session is not None and self.view is not None
        answered = has and bool(self.verdict.text())
        self.submit_button.setVisible(not answered)
        self.submit_button.setEnabled(has and not self.busy and not answered)
        self.next_button.setVisible(answered)
        self.next_button.setEnabled(answered and not self.busy and not self.session.done)
        self.finish_button.setEnabled(has and not self.busy)
        self.start_button.setEnabled(not self.busy and bool(self.dataset.name))

    def submit(self) -> None:
        if self.session is None or self.view is None or self.busy:
            return
        chosen = [c.lower() for c in self.options.selected()]
        session, position = self.session, self.view.position
        self._run(lambda job: (session.answer(chosen, position), session.summary()),
                  self._answered)  # fmt: skip

    def _answered(self, result: tuple[Any, dict[str, Any]]) -> None:
        fb, summary = result
        self.options.reveal(fb.gold, fb.chosen)
        colour = "#15803d" if fb.exact else "#b45309" if fb.hamming > 0 else "#b91c1c"
        words = "Exactly right" if fb.exact else "Partly right" if fb.hamming > 0 else "Wrong"
        detail = []
        if fb.missed:
            detail.append("missed " + ", ".join(x.upper() for x in fb.missed))
        if fb.wrong:
            detail.append("wrongly ticked " + ", ".join(x.upper() for x in fb.wrong))
        gold = " + ".join(x.upper() for x in fb.gold)
        self.verdict.setText(
            f"<p style='color:{colour}; font-size:12pt'><b>{words}</b> — Hamming score "
            f"{100 * fb.hamming:.0f}%, exact match {'yes' if fb.exact else 'no'}</p>"
            f"<p>Right options: <b>{esc(gold)}</b>"
            + (f" · {esc('; '.join(detail))}" if detail else "")
            + "</p>"
        )
        self._totals(summary)
        self.bar.setValue(summary["answered"])
        if self.session.done:
            self.finish()
        self._enable()

    def _totals(self, summary: dict[str, Any] | None = None) -> None:
        if summary is None and self.session is not None:
            summary = self.session.summary()
        if not summary or not summary.get("answered"):
            self.total.setText("")
            return
        self.total.setText(
            f"Overall: Hamming {summary['hamming']:.0f}% · EMR {summary['emr']:.0f}% "
            f"· {summary['answered']} of {summary['total']} answered"
        )

    def next_question(self) -> None:
        if self.session is None or self.session.done:
            return
        session = self.session
        self._run(lambda job: session.question(), self._show)

    def finish(self) -> None:
        if self.session is None:
            return
        session = self.session

        def done(summary: dict[str, Any]) -> None:
            self.ctx.notify_runs()
            self.total.setText(
                f"Finished: Hamming {summary.get('hamming') or 0:.0f}% · "
                f"EMR {summary.get('emr') or 0:.0f}% over {summary['answered']} question(s). "
                "See Results for the details."
            )

        self._run(lambda job: session.finish(), done)

    def closing(self) -> None:
        """The window closes: an unfinished session is closed (its answers are kept)."""
        session = self.session
        if session is not None and self.ctx.store.run(session.run_id)["status"] == "running":
            self.ctx.jobs.start(lambda job: session.finish(), pool="session")


class FrenchModelRun(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.job: Any = None
        self.rows_data: list[dict[str, Any]] = []
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(16)
        card = Card("Settings")
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(10)
        self.dataset = DatasetPicker(ctx, "french")
        self.dataset.import_clicked.connect(lambda: ctx.window.open_import("french"))
        self.model = ModelCombo(ctx)
        self.retrieval = RetrievalControls(ctx, "french_run")
        self.method = QComboBox()
        self.method.addItem("Write the letters", "generate")
        self.method.addItem("Ask option by option (probabilities)", "logprob")
        i = self.method.findData(setting("french_run/method", "generate"))
        self.method.setCurrentIndex(max(i, 0))
        self.limit = QSpinBox()
        self.limit.setRange(0, 100000)
        self.limit.setSpecialValueText("All")
        self.limit.setValue(setting("french_run/limit", 0, int))
        self.at_once = QSpinBox()
        self.at_once.setRange(0, 64)
        self.at_once.setSpecialValueText("Automatic")
        self.at_once.setToolTip("Questions in flight at once (automatic: 8 for a served model)")
        rows = [("Questions", self.dataset), ("Model", self.model), ("Passages", self.retrieval),
                ("Method", self.method), ("How many", self.limit),
                ("At once", self.at_once)]  # fmt: skip
        for i, (label, w) in enumerate(rows):
            grid.addWidget(QLabel(label), i, 0)
            grid.addWidget(w, i, 1)
        grid.setColumnStretch(1, 1)
        card.add_layout(grid)
        buttons = QHBoxLayout()
        self.resumable = QComboBox()
        self.resume_button = QPushButton("Resume")
        self.resume_button.clicked.connect(self.resume)
        self.run_button = primary(QPushButton("Run"))
        self.run_button.setMinimumWidth(110)
        self.run_button.clicked.connect(lambda: self.run())
        buttons.addStretch(1)
        buttons.addWidget(self.run_button)
        card.add_layout(buttons)
        card.layout_.addSpacing(8)
        rt = QLabel("Resume a stopped run")
        rt.setObjectName("cardTitle")
        card.add(rt)
        rrow = QHBoxLayout()
        rrow.addWidget(self.resumable, 1)
        rrow.addWidget(self.resume_button)
        card.add_layout(rrow)
        card.layout_.addStretch(1)
        card.setMaximumWidth(520)
        lay.addWidget(card, 2)

        right = Card("Progress")
        self.progress = ProgressRow()
        self.progress.stop_clicked.connect(self.stop)
        right.add(self.progress)
        self.live = QLabel("Not started")
        self.live.setObjectName("bigNumber")
        right.add(self.live)
        self.live_note = muted(QLabel("Hamming score so far"))
        right.add(self.live_note)
        self.rows = RowsModel(
            [("Question", lambda r: r["item"]), ("Chose", lambda r: r.get("chosen") or "—"),
             ("Right", lambda r: r.get("gold") or ""),
             ("Hamming", lambda r: f"{100 * r.get('hamming', 0):.0f}%")], self)  # fmt: skip
        self.rows.colour = lambda r: ("#15803d" if r.get("hamming") == 1 else
                                      "#b91c1c" if not r.get("hamming") else "#b45309")  # fmt: skip
        table = _table(self.rows)
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        right.add(table, 1)
        self.summary = muted(QLabel(""))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        right.add(self.summary)
        lay.addWidget(right, 3)
        ctx.runs_changed.append(self._load_resumable)
        self._load_resumable()

    def _load_resumable(self) -> None:
        runs = [r for r in self.ctx.store.runs("french")
                if r["runner"] == "model" and r["status"] in ("cancelled", "failed")]  # fmt: skip
        self.resumable.clear()
        for r in runs:
            self.resumable.addItem(
                f"#{r['id']} {r['model']} · {r['dataset']} · {r['n_done']}/{r['n_total']}", r["id"]
            )
        if not runs:
            self.resumable.addItem("No stopped runs")
        self.resumable.setEnabled(bool(runs))
        self.resume_button.setEnabled(bool(runs) and self.job is None)

    def run(self, resume: int | None = None) -> None:
        from engine.runs import run as run_activity

        if self.job is not None:
            return
        if resume is None:
            dataset, model_name = self.dataset.name, self.model.name
            corpus, retriever, k = self.retrieval.values
            method, limit = self.method.currentData(), self.limit.value() or None
            set_setting("french_run/method", method)
            set_setting("french_run/limit", self.limit.value())
        else:
            run = self.ctx.store.run(resume)
            s = run["settings"] or {}
            dataset, model_name = run["dataset"], run["model"]
            corpus, retriever, k = s.get("corpus") or "", s.get("retriever") or "", s.get("k") or 1
            method, limit = s.get("method", "generate"), s.get("limit")
        if not dataset or not model_name:
            show_error(self, "Choose a question set and a model.", self.ctx)
            return
        host = self.ctx.host
        at_once = self.at_once.value() or None

        def job(job: Any) -> dict[str, Any]:
            given: dict[str, Any] = {}
            if resume is None:
                index = load_retriever(job, corpus, retriever)
                given = {"model": model_name, "k": k, "method": method, "limit": limit}
                given["index"] = index.name if index is not None else None
            return run_activity(
                job.store,
                "french",
                dataset,
                given,
                resume=resume,
                pool=host.pool,
                progress=job.progress,
                cancel=job.cancel,
                concurrency=at_once,
            )

        self.rows_data = []
        self.rows.set_rows([])
        self.summary.setText("")
        self.live.setText("—")
        self.progress.started(0, "Preparing…")
        self.run_button.setEnabled(False)
        self.resume_button.setEnabled(False)
        self.ctx.notify_runs()
        self.job = self.ctx.jobs.start(
            job, on_progress=self._progress, on_done=self._done,
            on_error=lambda e: show_error(self, e, self.ctx, "The run failed"),
            on_ended=self._ended,
        )  # fmt: skip

    def resume(self) -> None:
        run_id = self.resumable.currentData()
        if run_id is not None:
            self.run(resume=int(run_id))

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.progress.label.setText("Stopping after this question…")

    def _progress(self, p: Any) -> None:
        info = p.info or {}
        scores = info.get("scores") or {}
        if "hamming" in scores:
            if not self.rows_data:
                self.ctx.notify_runs()
            self.rows_data.append(
                {
                    "item": p.message,
                    "chosen": info.get("chosen"),
                    "gold": info.get("gold"),
                    "hamming": scores["hamming"],
                }
            )
            self.rows.set_rows(list(reversed(self.rows_data)))
            n = len(self.rows_data)
            mean = sum(r["hamming"] for r in self.rows_data) / n
            exact = sum(1 for r in self.rows_data if r["hamming"] == 1)
            self.live.setText(f"{100 * mean:.0f}%")
            self.live_note.setText(f"Hamming score so far · {exact} of {n} exactly right")
            self.progress.update(p, f"{p.done} of {p.total}")
        else:
            self.progress.update(p)

    def _done(self, summary: dict[str, Any]) -> None:
        self.ctx.notify_runs()
        check_crash(self.ctx, summary)
        keys = ["hamming", "emr", "answered"]
        parts = [
            f"{esc(metric_label(k, 'french'))}: <b>{esc(format_value(summary.get(k)))}</b>"
            for k in keys
        ]
        recall = summary.get("recall_at_k")
        if recall:
            label = esc(metric_label("recall_at_k.recall", "french"))
            parts.append(f"{label} (k={recall['k']}): <b>{recall['recall']}</b>")
        self.summary.setText(f"Run #{summary.get('run_id')} {esc(summary.get('status'))} · "
                             + " · ".join(parts))  # fmt: skip
        if summary.get("hamming") is not None:
            self.live.setText(f"{summary['hamming']:.0f}%")

    def _ended(self) -> None:
        self.job = None
        self.progress.ended("")
        self.run_button.setEnabled(True)
        self._load_resumable()
