"""Experiments: each grid of runs played as one job (``medexam experiment run``, see
:mod:`engine.experiments`) with its runs and their status, refreshed while one is running;
the selected experiment's tables and figures (ExplainCPE's Table 8, Table 3, Figure 3; the
consultation's Table 3 and Figures 5, 6 and 7…), its
report saved as HTML, and Go on / Stop to play the rest of it here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gui.widgets.charts import FittedImage
from gui.widgets.common import (
    AppContext,
    Header,
    ProgressRow,
    muted,
    page_column,
    show_error,
    text_view,
)
from gui.widgets.experiment_job import ExperimentJob
from gui.widgets.qt_diff import pick_pair, side_by_side_button

if TYPE_CHECKING:
    from engine.reports.shapes import Chart

#: How often the list is read again while an experiment runs (ms).
REFRESH_MS = 2000
#: The width a figure is shown at per panel (px), and the most any figure is given.
FIGURE_PX = 640
MAX_FIGURE_PX = 1000
#: The most figures an experiment shows (the consultation's Figures 5, 6 and 7).
MAX_FIGURES = 4


def _no_figure(experiment: dict[str, Any], lines: list[Chart]) -> str:
    """Why ``experiment`` shows no figure (its line charts ``lines``, none with a point)."""
    if lines:
        return "No figure yet: its figures are drawn from its finished runs, and none has finished."
    name = experiment["spec"].get("preset") or experiment["name"]
    if name == "compare-models":
        return (
            "No figure: compare-models draws none of its own. Its runs' scores are under "
            "Tables, and their accuracy against file size is charted on the Compare screen."
        )
    return f"No figure: {name} draws tables only (under Tables)."


def _play(job: Any, pool: Any, experiment_id: int) -> dict[str, Any]:
    """The worker's part of Go on: the rest of the experiment, stopped by Stop."""
    from engine.experiments.run import run_experiment

    return run_experiment(
        job.store, experiment_id, pool=pool, progress=job.progress, cancel=job.cancel
    )


class ExperimentsScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        outer = page_column(
            self,
            Header(
                "Experiments",
                "Grids of runs played as one job — a paper's protocol or models × settings "
                "(medexam experiment run).",
            ),
        )
        bar = QHBoxLayout()
        self.hint = muted(QLabel("Start one with: medexam experiment run explaincpe-table8 …"))
        self.go_button = QPushButton("Go on")
        self.go_button.setToolTip("Play the runs it has not finished, here")
        self.save_button = QPushButton("Save report…")
        self.save_button.setToolTip("Its runs, tables and figures on one HTML page")
        bar.addWidget(self.hint, 1)
        for w in (self.go_button, self.save_button):
            w.setEnabled(False)
            bar.addWidget(w)
        bar.addWidget(side_by_side_button(self, ctx, self.side_by_side_pair))
        outer.addLayout(bar)
        self.progress = ProgressRow()
        outer.addWidget(self.progress)

        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Experiment / run", "Run", "Status", "Done", "Score"])
        self.tree.setColumnWidth(0, 360)
        self.tree.setSelectionMode(QTreeWidget.SelectionMode.ExtendedSelection)
        for column, width in ((1, 60), (2, 160), (3, 70)):
            self.tree.setColumnWidth(column, width)
        self.view = text_view()
        # one per figure, stacked, each as wide as the panel lets it be
        self.figures = [FittedImage(fit_height=False) for _ in range(MAX_FIGURES)]
        self.figure = self.figures[0]
        self.no_figure = muted(QLabel())  # why there is no figure to show
        self.no_figure.setWordWrap(True)
        holder = QWidget()
        stack = QVBoxLayout(holder)
        stack.addWidget(self.no_figure)
        for label in self.figures:
            stack.addWidget(label)
        stack.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(holder)
        scroll.setWidgetResizable(True)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.view, "Tables")
        self.tabs.addTab(scroll, "Figures")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.tree)
        split.addWidget(self.tabs)
        split.setChildrenCollapsible(False)
        split.setSizes([260, 400])
        outer.addWidget(split, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._tick)
        self.tree.currentItemChanged.connect(lambda *_: self._selected())
        self.go_button.clicked.connect(self.go_on)
        self.player = ExperimentJob(self, ctx, self.progress, "Experiment", self._ended)
        self.save_button.clicked.connect(lambda: self.save_report())
        ctx.runs_changed.append(self.reload)
        self.experiments: list[dict[str, Any]] = []
        self.reload()

    # -- data ------------------------------------------------------------------------------

    def shown(self) -> None:
        self.reload()

    def selected_id(self) -> int | None:
        item = self.tree.currentItem()
        while item is not None and item.parent() is not None:
            item = item.parent()
        return None if item is None else int(item.data(0, Qt.ItemDataRole.UserRole))

    def side_by_side_pair(self) -> tuple[int, int] | None:
        """The two runs selected (Ctrl+click), else the experiment's first two finished."""
        texts = [i.text(1) for i in self.tree.selectedItems() if i.parent() is not None]
        chosen = [int(t[1:]) for t in texts if t[1:].isdigit()]
        return pick_pair(chosen, self._experiment())

    def reload(self) -> None:
        from engine.experiments.records import all_experiments
        from engine.reports.export import headline

        chosen = self.selected_id()
        self.experiments = all_experiments(self.ctx.store)
        self.tree.blockSignals(True)
        self.tree.clear()
        for e in self.experiments:
            done = sum(c["status"] == "finished" for c in e["cells"])
            top = QTreeWidgetItem([f"#{e['id']} {e['name']}", "", e["status"],
                                   f"{done}/{len(e['cells'])}", ""])  # fmt: skip
            top.setToolTip(0, e["title"])
            top.setData(0, Qt.ItemDataRole.UserRole, e["id"])
            for c in e["cells"]:
                run = c["run"] or {}
                counts = f"{run.get('n_done', 0)}/{run.get('n_total', 0)}" if run else ""
                status = c["status"] + (" (reused)" if c["reused"] else "")
                child = QTreeWidgetItem([c["label"], f"#{c['run_id']}" if run else "", status,
                                         counts, headline(run) if run else ""])  # fmt: skip
                if c.get("error"):
                    child.setToolTip(2, c["error"])
                top.addChild(child)
            self.tree.addTopLevelItem(top)
            if e["id"] == chosen or (chosen is None and self.tree.currentItem() is None):
                self.tree.setCurrentItem(top)
                top.setExpanded(True)
        self.tree.blockSignals(False)
        running = any(e["status"] == "running" for e in self.experiments)
        if running or self.job is not None:
            self.timer.start()
        else:
            self.timer.stop()
        self._selected()

    def _tick(self) -> None:
        if self.isVisible():
            self.reload()

    def _experiment(self) -> dict[str, Any] | None:
        found = self.selected_id()
        return next((e for e in self.experiments if e["id"] == found), None)

    def _selected(self) -> None:
        from engine.reports.experiment import experiment_section
        from engine.reports.render import to_html

        e = self._experiment()
        busy = self.job is not None
        self.go_button.setEnabled(e is not None and not busy and e["status"] != "finished")
        self.save_button.setEnabled(e is not None and any(c["run_id"] for c in e["cells"]))
        if e is None:
            self.view.setHtml("<p>No experiment yet.</p>")
            self._show_figures([], "No experiment yet.")
            return
        section = experiment_section(self.ctx.store, e)
        tables = section["tables"][1:] or section["tables"]  # the paper's, else its grid
        page = {"title": e["title"], "created": e["created"] or "", "runs": [],
                "overview": tables[0], "sections": []}  # fmt: skip
        if tables[1:]:
            page["sections"] = [{**section, "tables": tables[1:], "name": "More"}]
        self.view.setHtml(to_html(page, charts=False))  # type: ignore[arg-type]
        lines = [c for c in section["charts"] if c["kind"] == "lines"]
        self._show_figures([c for c in lines if c.get("series")], _no_figure(e, lines))

    def _show_figures(self, charts: list[Chart], why: str) -> None:
        """The experiment's figures, one under the other, each as wide as its panels need
        (up to :data:`MAX_FIGURE_PX`, less where the panel is narrower); ``why`` there is
        none when there is none."""
        from engine.reports.charts import chart_png

        self.no_figure.setText("" if charts else why)
        self.no_figure.setVisible(not charts)
        for n, label in enumerate(self.figures):
            if n >= len(charts):
                label.clear()
                label.hide()
                continue
            panels = len({str(s.get("panel") or "") for s in charts[n]["series"]})
            pixmap = QPixmap()
            pixmap.loadFromData(chart_png(charts[n], dpi=90))
            width = min(FIGURE_PX * max(1, panels), MAX_FIGURE_PX)
            label.show_image(
                pixmap.scaledToWidth(width, Qt.TransformationMode.SmoothTransformation)
            )
            label.show()

    # -- actions -----------------------------------------------------------------------------

    @property
    def job(self) -> Any:
        """The experiment playing (None when none is)."""
        return self.player.job

    def go_on(self) -> None:
        e = self._experiment()
        if e is not None and self.player.start(_play, e["id"], message=f"Experiment #{e['id']}…"):
            self.reload()

    def stop(self) -> None:
        self.player.stop()

    def _ended(self) -> None:
        self.ctx.notify_runs()
        self.reload()

    def save_report(self, path: str | None = None) -> str | None:
        from engine.reports import render
        from engine.reports.experiment import experiment_report
        from engine.reports.export import save_text

        e = self._experiment()
        if e is None:
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self, "Save report", f"experiment-{e['id']}.html", "HTML (*.html)"
            )
            if not path:
                return None
        try:
            save_text(path, render(experiment_report(self.ctx.store, e["id"]), "html"), "html")
        except Exception as exc:  # noqa: BLE001 - said in a message box
            show_error(self, exc, self.ctx)
            return None
        self.ctx.status(f"Saved {path}")
        return path
