"""Compare models: the same items through every model picked (local GGUF files, served models,
quantizations of one model), played as one experiment of the ``compare-models`` preset
(:mod:`engine.experiments`) off the UI thread, with progress and Stop. The comparison
(:func:`engine.experiments.compare.compare_runs`) fills in as each model's run finishes: each
score with its 95% interval, the paired difference from the best with its interval and p,
tokens/s, first token, peak memory, load time and file size, and the quality-per-size chart.
A comparison stopped (Stop, a closed app) is listed under Comparison and goes on with Go on,
or with Compare and the same models and data set."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.reports.equivalence import MARGIN
from gui.widgets.charts import FittedImage
from gui.widgets.common import (
    AppContext,
    Header,
    ProgressRow,
    button,
    form_row,
    muted,
    page_column,
    primary,
    show_error,
    spin_box,
    whole_text,
)
from gui.widgets.experiment_job import ExperimentJob
from gui.widgets.qt_diff import pick_pair, side_by_side_button

#: The preset a comparison plays.
PRESET = "compare-models"
#: The width the quality-per-size chart is shown at (px).
CHART_PX = 560
#: How often the table is read again while a comparison plays (ms): items done.
REFRESH_MS = 2000


def _compare(
    job: Any, pool: Any, models: list[str], dataset: str, limit: int | None
) -> dict[str, Any]:
    """The worker's part of Compare: plan the comparison (its stored experiment when these
    models and data set have one), then play what it lacks."""
    from engine.experiments.plan import make_plan
    from engine.experiments.run import open_experiment

    plan = make_plan(job.store, PRESET, models, dataset, limit)
    experiment_id, _new = open_experiment(job.store, plan)
    return _play(job, pool, experiment_id)


def _play(job: Any, pool: Any, experiment_id: int) -> dict[str, Any]:
    """Play the comparison's runs not finished; the screen hears of each run as it ends."""
    from engine.experiments.run import run_experiment

    job.emit(experiment_id)
    return run_experiment(
        job.store, experiment_id, pool=pool, progress=job.progress, cancel=job.cancel,
        on_cell=lambda _cell, _summary: job.emit(experiment_id),
    )  # fmt: skip


def comparisons(store: Any) -> list[dict[str, Any]]:
    """The stored comparisons (experiments of :data:`PRESET`), newest first."""
    from engine.experiments.records import all_experiments

    return [e for e in all_experiments(store) if e["spec"].get("preset") == PRESET]


def table_rows(
    experiment: dict[str, Any], result: dict[str, Any] | None
) -> tuple[list[str], list[list[str]]]:
    """The headers and rows (a status first) of ``experiment`` compared (``result``, None
    before two runs finished): a finished run's row from the comparison, the others' status
    and items done."""
    from engine.experiments.compare import compare_table

    headers, rows = compare_table(result) if result else (["Run", "Model", "Items"], [])
    by_run = {row[0]: row for row in rows}
    out = []
    for cell in experiment["cells"]:
        key = f"#{cell['run_id']}" if cell["run_id"] is not None else "–"
        status = cell["status"] + (" (reused)" if cell["reused"] else "")
        if key in by_run:
            out.append([status, *by_run.pop(key)])
            continue
        run = cell["run"] or {}
        done = f"{run.get('n_done', 0)}/{run.get('n_total', 0)}" if run else ""
        out.append([status, key, str(cell["coords"].get("model") or cell["label"]), done])
    out += [["person", *row] for row in by_run.values()]  # a person's run on the same items
    return ["Status", *headers], out


class CompareScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.shown_id: int | None = None
        self.wanted: list[str] = []  # the models of the comparison shown, ticked once listed
        self.cached: tuple[tuple[Any, ...], dict[str, Any] | None] = ((), None)
        outer = page_column(
            self,
            Header(
                "Compare models",
                "The same items through every model: scores with their intervals, the paired "
                "difference from the best, speed and memory (medexam experiment run "
                "compare-models).",
            ),
        )
        outer.addLayout(self._form())
        self.progress = ProgressRow()
        outer.addWidget(self.progress)
        outer.addWidget(self._results(), 1)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(lambda: self.reload() if self.isVisible() else None)
        self.models.itemChanged.connect(lambda _item: self._buttons())
        self.picker.activated.connect(lambda _i: self._picked())
        self.margin.valueChanged.connect(lambda _v: self._show(self._experiment()))
        self.player = ExperimentJob(self, ctx, self.progress, "Comparison", self._ended,
                                    on_event=self._run_ended)  # fmt: skip
        ctx.models_changed.append(self.reload_models)
        ctx.data_changed.append(self.reload_datasets)
        ctx.runs_changed.append(self.reload)
        self.reload_models()
        self.reload_datasets()
        self.reload()

    def _form(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.models = QListWidget()
        self.models.setToolTip("Tick the models to compare: local files, served models")
        self.models.setFixedHeight(120)
        left = QVBoxLayout()
        left.addWidget(muted(QLabel("Models")))
        left.addWidget(self.models)
        row.addLayout(left, 1)
        right = QVBoxLayout()
        self.datasets = whole_text(QComboBox())
        self.limit = spin_box(0, 100_000, 0, "All")
        right.addLayout(form_row("Data set", self.datasets, "The items every model answers"))
        right.addLayout(form_row("Items", self.limit, "Only the first N items (All: every one)"))
        self.margin = spin_box(1, 50, int(MARGIN), suffix=" points")
        tip = "Each model is judged equivalent to the top model within ± this many accuracy points"
        right.addLayout(form_row("Margin", self.margin, tip))
        self.compare_button = primary(button("Compare", self.compare, "Play every model's run"))
        self.go_button = button("Go on", self.go_on, "Play the runs it has not finished")
        buttons = QHBoxLayout()
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.go_button)
        buttons.addWidget(side_by_side_button(self, self.ctx, self.side_by_side_pair))
        right.addLayout(buttons)
        self.picker = whole_text(QComboBox())
        right.addLayout(form_row("Comparison", self.picker, "The comparisons made so far"))
        right.addStretch(1)
        row.addLayout(right)
        return row

    def _results(self) -> QSplitter:
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.notes = muted(QLabel())
        self.notes.setWordWrap(True)
        self.chart = FittedImage()  # the whole chart at any window size
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.chart)
        notes = QScrollArea()
        notes.setWidget(self.notes)
        notes.setWidgetResizable(True)
        bottom.addWidget(notes)
        bottom.setSizes([CHART_PX, 400])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(bottom)
        split.setChildrenCollapsible(False)
        split.setSizes([220, 380])
        return split

    # -- choices ---------------------------------------------------------------------------

    def reload_models(self) -> None:
        """The catalog's models as ticks (those ticked stay ticked)."""
        ticked = set(self.chosen_models() or self.wanted)
        self.models.blockSignals(True)
        self.models.clear()
        for m in self.ctx.model_list or []:
            item = QListWidgetItem(f"{m.name}  ({m.summary()})")
            item.setData(Qt.ItemDataRole.UserRole, m.name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            checked = m.name in ticked
            item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
            self.models.addItem(item)
        self.models.blockSignals(False)
        self._buttons()

    def chosen_models(self) -> list[str]:
        items = [self.models.item(i) for i in range(self.models.count())]
        return [
            str(i.data(Qt.ItemDataRole.UserRole))
            for i in items
            if i.checkState() == Qt.CheckState.Checked
        ]

    def choose(self, models: list[str], dataset: str, limit: int | None) -> None:
        """Tick ``models`` (only them) and pick ``dataset`` and ``limit``."""
        self.wanted = list(models)
        for i in range(self.models.count()):
            item = self.models.item(i)
            chosen = item.data(Qt.ItemDataRole.UserRole) in models
            item.setCheckState(Qt.CheckState.Checked if chosen else Qt.CheckState.Unchecked)
        i = self.datasets.findData(dataset)
        if i >= 0:
            self.datasets.setCurrentIndex(i)
        self.limit.setValue(limit or 0)

    def reload_datasets(self) -> None:
        current = self.datasets.currentData()
        self.datasets.clear()
        for d in self.ctx.store.datasets():
            self.datasets.addItem(f"{d['name']} ({d['activity']}, {d['n_items']})", d["name"])
        i = self.datasets.findData(current)
        if i >= 0:
            self.datasets.setCurrentIndex(i)

    def _buttons(self) -> None:
        busy = self.job is not None
        self.compare_button.setEnabled(not busy and len(self.chosen_models()) >= 2)
        e = self._experiment()
        self.go_button.setEnabled(not busy and e is not None and e["status"] != "finished")

    # -- the comparison shown ----------------------------------------------------------------

    def shown(self) -> None:
        self.reload()

    def reload(self) -> None:
        """The stored comparisons in the picker, the one shown read again."""
        self.found = comparisons(self.ctx.store)
        first = self.shown_id is None and bool(self.found)
        if first:
            self.shown_id = self.found[0]["id"]
        self.picker.blockSignals(True)
        self.picker.clear()
        for e in self.found:
            spec = e["spec"]
            models = ", ".join(spec.get("models") or [])
            limit = f", {spec['limit']} items" if spec.get("limit") else ""
            text = f"#{e['id']} {spec.get('dataset')}{limit}: {models} ({e['status']})"
            self.picker.addItem(text, e["id"])
        i = self.picker.findData(self.shown_id)
        if i >= 0:
            self.picker.setCurrentIndex(i)
        self.picker.blockSignals(False)
        if first:
            self._picked()  # the form says what the newest comparison compared
        else:
            self._show(self._experiment())

    def _experiment(self) -> dict[str, Any] | None:
        return next((e for e in getattr(self, "found", []) if e["id"] == self.shown_id), None)

    def _picked(self) -> None:
        self.shown_id = self.picker.currentData()
        e = self._experiment()
        if e is not None:
            spec = e["spec"]
            self.choose(list(spec.get("models") or []), str(spec.get("dataset")), spec.get("limit"))
        self._show(e)

    def _show(self, experiment: dict[str, Any] | None) -> None:
        self._buttons()
        self.table.clear()
        if experiment is None:
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.notes.setText("No comparison yet: tick two models or more, then Compare.")
            self.chart.clear()
            return
        result = self._compared(experiment)
        headers, rows = table_rows(experiment, result)
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setRowCount(len(rows))
        best = f"#{result['best']}" if result and result.get("best") is not None else None
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                if c > 3:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if row[1] == best:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        if result is None:
            self.notes.setText("The table fills in as the runs finish (two are compared first).")
        else:
            title = f"Compared on {result['items']['shared']} items of {result['dataset']}."
            self.notes.setText("\n\n".join([title, *result["notes"]]))
        self._chart(result)

    def side_by_side_pair(self) -> tuple[int, int] | None:
        """The two runs selected in the table, else the comparison's first two finished."""
        rows = sorted({i.row() for i in self.table.selectedIndexes()})
        cells = [self.table.item(r, 1) for r in rows]
        chosen = [int(c.text()[1:]) for c in cells if c and c.text()[1:].isdigit()]
        return pick_pair(chosen, self._experiment())

    def _compared(self, experiment: dict[str, Any]) -> dict[str, Any] | None:
        """The comparison of the experiment's finished runs (None before two), worked out
        again only when another run finished or a finished one changed (scored again)."""
        from engine.experiments.presets import compare_summary

        finished = [c for c in experiment["cells"] if c["status"] == "finished"]
        key: tuple[object, ...] = tuple(
            (c["run_id"], repr(c["run"].get("summary"))) for c in finished
        )
        key += (self.margin.value(),)
        if self.cached[0] != key:
            found = compare_summary(self.ctx.store, experiment, margin=self.margin.value())
            self.cached = (key, found[0] if found else None)
        return self.cached[1]

    def _chart(self, result: dict[str, Any] | None) -> None:
        from engine.experiments.size_chart import size_png

        png = size_png(result["chart"]) if result else b""
        if not png:
            self.chart.clear()
            self.chart.setText("" if result is None else "No file size known: no chart.")
            return
        self.chart.show_png(png)

    # -- actions -------------------------------------------------------------------------------

    def compare(self) -> None:
        """Play the comparison of the ticked models on the data set (going on with its stored
        experiment when there is one)."""
        models, dataset = self.chosen_models(), self.datasets.currentData()
        if self.job is not None:
            return
        if len(models) < 2 or not dataset:
            show_error(self, "Tick two models or more and pick a data set.", self.ctx)
            return
        limit = self.limit.value() or None
        self._start(_compare, models, dataset, limit)

    def go_on(self) -> None:
        e = self._experiment()
        if e is not None and self.job is None:
            self._start(_play, e["id"])

    @property
    def job(self) -> Any:
        """The comparison playing (None when none is)."""
        return self.player.job

    def _start(self, fn: Any, *args: Any) -> None:
        if self.player.start(fn, *args, message="Comparing…"):
            self.timer.start()
            self._buttons()

    def _run_ended(self, experiment_id: int) -> None:
        """A comparison started or one of its runs ended: show it as it is now."""
        self.shown_id = experiment_id
        self.reload()

    def stop(self) -> None:
        self.player.stop()

    def _ended(self) -> None:
        self.timer.stop()
        self.ctx.notify_runs()  # reloads this screen too
