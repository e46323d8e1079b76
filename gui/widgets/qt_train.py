"""Train: a FrenchMedMCQA reader trained in the background (:mod:`engine.train`), its loss
curve drawn as it goes, Stop (the training ends cancelled and can be resumed), the
trainings stored in the database, and "Evaluate now" (a French run of the chosen reader on
a data set, scored as every French run is).

The widgets hold layout and wiring only: training, resuming and evaluating are the engine's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCharts import QLineSeries, QValueAxis
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from gui.widgets import charts
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    Header,
    ProgressRow,
    add_rows,
    button,
    combo,
    muted,
    page_column,
    primary,
    show_error,
    spin_box,
)

if TYPE_CHECKING:
    from engine.progress import Progress
    from engine.types import JSONDict
    from gui.workers import Job, Worker

SUBTITLE = (
    "Train the FrenchMedMCQA paper's reader: an encoder fine-tuned to pick the combination of "
    "right options, with or without a retrieved passage. Trained readers answer French runs."
)
COLUMNS = ["Id", "Name", "Status", "Steps", "Dev Hamming", "Device"]


def train_job(job: Job, dataset: str, settings: JSONDict, name: str) -> JSONDict:
    from engine.train.loop import train

    return train(
        job.store, "french-reader", dataset, settings, name=name,
        progress=job.progress, cancel=job.cancel,
    )  # fmt: skip


def evaluate_job(job: Job, reader: str, dataset: str) -> JSONDict:
    from engine.french.runner import run_french

    return run_french(job.store, dataset, reader=reader, progress=job.progress, cancel=job.cancel)


class LossCurve(QWidget):
    """The loss by step of the training under way (or of the one chosen in the list)."""

    def __init__(self) -> None:
        super().__init__()
        self.series = QLineSeries()
        self.series.setName("loss")
        chart = charts._chart("Training loss")
        chart.addSeries(self.series)
        self.x, self.y = QValueAxis(), QValueAxis()
        self.x.setTitleText("step")
        chart.addAxis(self.x, Qt.AlignmentFlag.AlignBottom)
        chart.addAxis(self.y, Qt.AlignmentFlag.AlignLeft)
        self.series.attachAxis(self.x)
        self.series.attachAxis(self.y)
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
        self.y.setRange(max(0.0, low - pad), high + pad)
        charts.nice_axis(self.x, max(n_steps, len(points), 1))


class TrainScreen(QWidget):
    """The form of a new reader, its progress and loss curve, and the stored trainings."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.job: Worker | None = None
        self.points: list[list[float]] = []
        outer = page_column(self, Header("Train", SUBTITLE))
        outer.addWidget(self._form())
        self.progress = ProgressRow()
        self.progress.stop_clicked.connect(self.stop)
        outer.addWidget(self.progress)
        self.curve = LossCurve()
        outer.addWidget(self.curve, 1)
        outer.addWidget(self._list(), 1)
        ctx.data_changed.append(self.reload)
        self.reload()

    def _form(self) -> Card:
        card = Card("A new reader")
        self.dataset = DatasetPicker(self.ctx, "french", compact=True)
        self.dev = QComboBox()
        self.retriever = combo(
            [("none", "No context"), ("bm25", "BM25 passage"), ("dense", "MiniLM passage")]
        )
        self.corpus = QComboBox()
        self.encoder = QLineEdit("minilm")
        self.encoder.setToolTip("minilm (embedded) or the folder of a Hugging Face encoder")
        self.epochs = spin_box(1, 100, 3, suffix=" epochs")
        self.name = QLineEdit("reader")
        grid = QGridLayout()
        add_rows(grid, [("Train on", self.dataset), ("Best epoch on", self.dev),
                        ("Context", self.retriever), ("Corpus", self.corpus)])  # fmt: skip
        add_rows(grid, [("Encoder", self.encoder), ("Epochs", self.epochs),
                        ("Name", self.name)], column=2)  # fmt: skip
        card.add_layout(grid)
        row = QHBoxLayout()
        self.start = primary(button("Train", self.train))
        self.state = muted(QLabel(""))
        row.addWidget(self.start)
        row.addWidget(self.state, 1)
        card.add_layout(row)
        return card

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
        self.evaluate_on = DatasetPicker(self.ctx, "french", compact=True)
        self.evaluate = button("Evaluate now", self.evaluate_now, "A French run of the reader")
        self.resume = button("Resume", self.resume_chosen, "Go on from the last checkpoint")
        self.result = muted(QLabel(""))
        for w in (QLabel("Evaluate on"), self.evaluate_on, self.evaluate, self.resume):
            row.addWidget(w)
        row.addWidget(self.result, 1)
        card.add_layout(row)
        return card

    # -- data ------------------------------------------------------------------------------

    def reload(self) -> None:
        from engine.train.records import all_trainings

        store = self.ctx.store
        names = [d["name"] for d in store.datasets("french")]
        for box, first in ((self.dev, "(keep the last epoch)"), (self.corpus, "(none)")):
            current = box.currentData()
            box.clear()
            box.addItem(first, None)
            for name in names if box is self.dev else [c["name"] for c in store.corpora()]:
                box.addItem(name, name)
            box.setCurrentIndex(max(box.findData(current), 0))
        self.rows = all_trainings(store)
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            best = (r.get("result") or {}).get("best") or {}
            cells = [r["id"], r["name"], r["status"], f"{r['step']}/{r['n_steps']}",
                     best.get("hamming", "—"), r.get("device") or ""]  # fmt: skip
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

    # -- jobs -------------------------------------------------------------------------------

    def settings(self) -> JSONDict:
        return {
            "dev": self.dev.currentData(),
            "retriever": self.retriever.currentData(),
            "corpus": self.corpus.currentData(),
            "encoder": self.encoder.text().strip() or "minilm",
            "epochs": self.epochs.value(),
        }

    def train(self) -> None:
        if self.dataset.name is None:
            show_error(self, "Import a French data set to train on first.", self.ctx)
            return
        self._start(train_job, self.dataset.name, self.settings(), self.name.text().strip())

    def resume_chosen(self) -> None:
        from engine.train.loop import train

        row = self.chosen()
        if row is None:
            return

        def resume(job: Job, training_id: int) -> JSONDict:
            return train(job.store, "", resume=training_id, progress=job.progress,
                         cancel=job.cancel)  # fmt: skip

        self._start(resume, int(row["id"]))

    def _start(self, fn: Any, *args: Any) -> None:
        self.points = []
        self.start.setEnabled(False)
        self.progress.started(0, "Preparing the data and the encoder…")
        self.job = self.ctx.jobs.start(
            fn, *args, on_progress=self._progress, on_done=self._done,
            on_error=lambda e: show_error(self, e, self.ctx), on_ended=self._ended,
        )  # fmt: skip

    def _progress(self, p: Progress) -> None:
        info = p.info or {}
        if "loss" in info:
            self.points.append([p.done, float(info["loss"])])
            self.curve.show_curve(self.points, p.total)
            left = info.get("eta_s") or 0
            text = (f"{p.message} · loss {info['loss']:.3f} · "
                    f"{info.get('examples_per_s', 0):.1f} examples/s · {left / 60:.1f} min left")  # fmt: skip
            self.progress.update(p, text)
        else:
            self.progress.update(p)

    def _done(self, row: JSONDict) -> None:
        best = (row.get("result") or {}).get("best")
        scores = f", dev Hamming {best['hamming']:.1f}, EMR {best['emr']:.1f}" if best else ""
        self.state.setText(f"Training {row['id']} {row['status']} on {row['device']}{scores}.")

    def _ended(self) -> None:
        self.job = None
        self.start.setEnabled(True)
        self.progress.ended("")
        self.reload()

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.progress.label.setText("Stopping at the next step…")

    def evaluate_now(self) -> None:
        row, dataset = self.chosen(), self.evaluate_on.name
        if row is None or row["status"] != "finished" or dataset is None:
            self.result.setText("Choose a finished training and a data set.")
            return

        def shown(summary: JSONDict) -> None:
            self.result.setText(
                f"Run {summary['run_id']}: Hamming {summary['hamming']:.1f}, "
                f"EMR {summary['emr']:.1f} on {summary['n']} questions"
            )
            self.ctx.notify_runs()

        self.result.setText("Evaluating…")
        self.ctx.jobs.start(
            evaluate_job, row["name"], dataset, on_done=shown,
            on_error=lambda e: show_error(self, e, self.ctx),
        )  # fmt: skip
