"""Train: a model of one of the engine's training kinds (:mod:`engine.train`) trained in the
background — a FrenchMedMCQA reader, or a consultation doctor fine-tuned with LoRA on golden
dialogues — its loss curve drawn as it goes, Stop (the training ends cancelled and can be
resumed), the trainings stored in the database, and "Evaluate now": a French run of a
reader, or a consultation run of a doctor (the model ``BASE+NAME``) on a set of cases,
scored as every run of its activity is.

The form of a new training is :mod:`gui.widgets.qt_train_form`. The widgets hold layout and
wiring only: training, resuming and evaluating are the engine's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCharts import QLineSeries, QValueAxis
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from engine.errors import UserError
from engine.train.evaluate import trained_model
from engine.train.kinds import TrainingKind, kinds
from gui.widgets import charts
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    Header,
    ProgressRow,
    button,
    muted,
    page_column,
    show_error,
)
from gui.widgets.qt_train_form import TrainForm

if TYPE_CHECKING:
    from engine.core.progress import Progress
    from engine.types import JSONDict
    from gui.workers import Job, Worker

SUBTITLE = (
    "Train a model in the background and watch its loss: a FrenchMedMCQA reader (an encoder "
    "fine-tuned to pick the right options) or writer (a local chat model fine-tuned with "
    "LoRA to write them), or a consultation doctor (a local chat model fine-tuned with LoRA "
    "on golden dialogues). Stop and resume a training; evaluate what it made."
)
COLUMNS = ["Id", "Kind", "Name", "Status", "Steps", "Dev score", "Final loss", "Device"]


def train_job(job: Job, kind: str, data: str, settings: JSONDict, name: str) -> JSONDict:
    from engine.train.loop import train

    return train(
        job.store, kind, data, settings, name=name, progress=job.progress, cancel=job.cancel
    )


def resume_job(job: Job, training_id: int) -> JSONDict:
    from engine.train.loop import train

    return train(job.store, "", resume=training_id, progress=job.progress, cancel=job.cancel)


def evaluate_job(job: Job, training_id: int, dataset: str, pool: Any) -> JSONDict:
    from engine.train.evaluate import evaluate

    return evaluate(
        job.store, training_id, dataset, pool=pool, progress=job.progress, cancel=job.cancel
    )


def kind_of(row: JSONDict) -> TrainingKind | None:
    """The kind of training ``row`` (None: no installed package registers it now)."""
    return kinds().get(str(row["kind"]))


def evaluated_text(summary: JSONDict, kind: TrainingKind) -> str:
    """An evaluation run's summary in a line: the measures of the training's kind
    (``Hamming 40.0, EMR 10.0``) over its items."""
    from engine.activities import activity

    head = f"Run {summary['run_id']} {summary.get('status', '')}".rstrip()
    said = kind.said(summary)
    n = summary.get("n") or summary.get("answered") or 0
    noun = activity(kind.activity).item_noun
    return f"{head}: {said} on {n} {noun}{'s' if n != 1 else ''}" if said else head


def dev_score(row: JSONDict) -> str:
    """The best epoch's first measure on the dev set (a reader's Hamming), or — without
    one."""
    best = (row.get("result") or {}).get("best") or {}
    kind = kind_of(row)
    return (kind.said(best, first=True) if kind is not None else "") or "—"


class LossCurve(QWidget):
    """The loss by step of the training under way (or of the one chosen in the list)."""

    def __init__(self) -> None:
        super().__init__()
        self.series = QLineSeries()
        self.series.setName("loss")
        chart = charts._chart("Training loss")
        chart.addSeries(self.series)
        self.x_axis, self.y_axis = QValueAxis(), QValueAxis()
        self.x_axis.setTitleText("step")
        chart.addAxis(self.x_axis, Qt.AlignmentFlag.AlignBottom)
        chart.addAxis(self.y_axis, Qt.AlignmentFlag.AlignLeft)
        self.series.attachAxis(self.x_axis)
        self.series.attachAxis(self.y_axis)
        chart.legend().hide()
        self.view = charts.view(chart)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.view)

    def show_curve(self, points: list[list[float]], n_steps: int = 0) -> None:
        self.series.clear()
        for step, loss in points:
            self.series.append(float(step), float(loss))
        losses = [loss for _, loss in points] or [0.0, 1.0]
        low, high = min(losses), max(losses)
        pad = max(high - low, 0.05) * 0.1
        self.y_axis.setRange(max(0.0, low - pad), high + pad)
        charts.nice_axis(self.x_axis, max(n_steps, len(points), 1))


class TrainScreen(QWidget):
    """The form of a new training, its progress and loss curve, and the stored trainings."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.job: Worker | None = None
        self.evaluation: Worker | None = None
        self.points: list[list[float]] = []
        self.rows: list[JSONDict] = []
        outer = page_column(self, Header("Train", SUBTITLE))
        self.form = TrainForm(ctx, self.train)
        outer.addWidget(self.form)
        self.progress = ProgressRow()
        self.progress.stop_clicked.connect(self.stop)
        outer.addWidget(self.progress)
        self.curve = LossCurve()
        below = QHBoxLayout()  # side by side: the form may grow (More settings)
        below.setSpacing(12)
        below.addWidget(self.curve, 2)
        below.addWidget(self._list(), 3)
        outer.addLayout(below, 1)
        self.form.kind.currentIndexChanged.connect(lambda _i: self._show_evaluate_on())
        ctx.data_changed.append(self.reload)
        self.reload()

    @property
    def start(self) -> QPushButton:
        return self.form.start

    @property
    def state(self) -> QLabel:
        return self.form.state

    def _list(self) -> Card:
        card = Card("Trainings")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.itemSelectionChanged.connect(self._chosen)
        card.add(self.table, 1)
        row = QHBoxLayout()
        self.evaluated = {k.id: k for k in kinds().values() if k.evaluation is not None}
        self.evaluate_pickers = {
            activity: self._picker(activity)
            for activity in dict.fromkeys(k.activity for k in self.evaluated.values())
        }
        self.evaluate = button("Evaluate now", self.evaluate_now)
        self.resume = button("Resume", self.resume_chosen, "Go on from the last checkpoint")
        self.result = muted(QLabel(""))
        self.result.setWordWrap(True)
        row.addWidget(QLabel("Evaluate on"))
        for picker in self.evaluate_pickers.values():
            row.addWidget(picker, 1)
        row.addWidget(self.evaluate)
        row.addWidget(self.resume)
        card.add_layout(row)
        card.add(self.result)
        self._show_evaluate_on()
        return card

    def _picker(self, activity: str) -> DatasetPicker:
        picker = DatasetPicker(self.ctx, activity, compact=True)
        window = self.ctx.window
        if window is not None:
            picker.import_clicked.connect(lambda: window.open_import(activity))
        return picker

    # -- data ------------------------------------------------------------------------------

    def reload(self) -> None:
        from engine.train.records import all_trainings

        self.rows = all_trainings(self.ctx.store)
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            loss = (r.get("result") or {}).get("final_loss")
            steps = f"{r['step']}/{r['n_steps']}"
            loss_text = "—" if loss is None else f"{loss:.3f}"
            cells = [r["id"], r["kind"], r["name"], r["status"], steps, dev_score(r), loss_text,
                     r.get("device") or ""]  # fmt: skip
            for j, value in enumerate(cells):
                self.table.setItem(i, j, QTableWidgetItem(str(value)))
        self.table.resizeColumnsToContents()

    def chosen(self) -> JSONDict | None:
        rows = {i.row() for i in self.table.selectedItems()}
        return self.rows[min(rows)] if rows else None

    def _chosen(self) -> None:
        row = self.chosen()
        if row is not None and self.job is None:
            self.curve.show_curve(row.get("loss_curve") or [], int(row.get("n_steps") or 0))
        self._show_evaluate_on()

    def evaluated_kind(self) -> TrainingKind | None:
        """The kind of the chosen training (else the one in the form), when a run can
        evaluate what it makes."""
        row = self.chosen()
        return self.evaluated.get(row["kind"] if row is not None else self.form.kind_id)

    def evaluate_on(self) -> DatasetPicker | None:
        """The data sets the chosen training (else the kind in the form) is evaluated on."""
        kind = self.evaluated_kind()
        return self.evaluate_pickers[kind.activity] if kind is not None else None

    def _show_evaluate_on(self) -> None:
        shown = self.evaluate_on()
        for picker in self.evaluate_pickers.values():
            picker.setVisible(picker is shown)
        kind = self.evaluated_kind()
        tip = kind.evaluation_note if kind is not None else ""
        self.evaluate.setToolTip(tip or "No evaluation here")
        self.evaluate.setEnabled(shown is not None and self.evaluation is None)

    # -- jobs -------------------------------------------------------------------------------

    def train(self) -> None:
        """Start a training of the kind, data, settings and name the form says."""
        if self.job is not None:
            return
        page = self.form.page
        try:
            data, settings, name = page.given()
        except (ValueError, UserError) as exc:
            self.state.setText(str(exc))
            show_error(self, exc, self.ctx, "The training cannot start")
            return
        self._start(train_job, page.kind.id, data, settings, name)

    def resume_chosen(self) -> None:
        row = self.chosen()
        if row is not None and self.job is None:
            self._start(resume_job, int(row["id"]))

    def _start(self, fn: Any, *args: Any) -> None:
        self.points = []
        self.curve.show_curve([])
        self.start.setEnabled(False)
        self.resume.setEnabled(False)
        self.state.setText("")
        self.progress.started(0, "Preparing the data and the model…")
        self.job = self.ctx.jobs.start(
            fn, *args, on_progress=self._progress, on_done=self._done,
            on_error=self._failed, on_ended=self._ended,
        )  # fmt: skip

    def _progress(self, p: Progress) -> None:
        info = p.info or {}
        if "loss" in info:
            self.points.append([p.done, float(info["loss"])])
            self.curve.show_curve(self.points, p.total)
            left = info.get("eta_s") or 0
            speed = f"{info.get('examples_per_s', 0):.1f} examples/s"
            text = f"{p.message} · loss {info['loss']:.3f} · {speed} · {left / 60:.1f} min left"
            self.progress.update(p, text)
        else:
            self.progress.update(p)

    def _done(self, row: JSONDict) -> None:
        best = (row.get("result") or {}).get("best")
        kind = kind_of(row)
        said = kind.said(best) if best and kind is not None else ""
        scores = f", dev {said}" if said else ""
        text = f"Training {row['id']} {row['status']} on {row['device']}{scores}."
        if row["status"] == "finished" and kind is not None and kind.artefact == "adapter":
            text += f" The model {trained_model(row)} is in the model list."
            self.ctx.refresh_models()
        self.state.setText(text)
        if row["status"] == "failed":
            show_error(self, f"Training {row['id']} failed: {row.get('error')}", self.ctx)

    def _failed(self, exc: BaseException) -> None:
        from engine.core.progress import Cancelled

        if isinstance(exc, Cancelled):  # stopped while it was being prepared
            self.state.setText("Stopped before the training started: nothing was recorded.")
            return
        self.state.setText(f"The training did not start: {exc}")
        show_error(self, exc, self.ctx, "The training cannot start")

    def _ended(self) -> None:
        self.job = None
        self.start.setEnabled(True)
        self.resume.setEnabled(True)
        self.progress.ended("")
        self.reload()

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.progress.label.setText("Stopping at the next step…")

    def evaluate_now(self) -> None:
        row, picker = self.chosen(), self.evaluate_on()
        dataset = picker.name if picker is not None else None
        if row is None or row["status"] != "finished" or dataset is None:
            self.result.setText("Choose a finished training and a data set.")
            return

        kind = self.evaluated_kind()

        def shown(summary: JSONDict) -> None:
            if kind is not None:
                self.result.setText(evaluated_text(summary, kind))
            self.ctx.notify_runs()

        def ended() -> None:
            self.evaluation = None
            self._show_evaluate_on()

        def progress(p: Progress) -> None:
            if p.total:
                self.result.setText(f"Evaluating… {p.done}/{p.total}")

        self.result.setText("Evaluating…")
        self.evaluation = self.ctx.jobs.start(
            evaluate_job, row["id"], dataset, self.ctx.host.lending(), on_done=shown, on_progress=progress,
            on_error=lambda e: show_error(self, e, self.ctx), on_ended=ended,
        )  # fmt: skip
        self.evaluate.setEnabled(False)
