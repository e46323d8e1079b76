"""Results: every run in a filterable table (with the settings that tell it apart), a run's
details with its per-item answers, two runs side by side, charts of scores over time and by
category, a report of several runs in their paper's layout (saved as HTML), and export."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.activities import activities, activity_name
from engine.core.progress import Progress
from engine.core.scoring import Rescored, rescore
from engine.reports.results import answer_label, category_scores, compare_runs, summary_rows
from gui.models import set_setting, setting
from gui.tables import (
    QUESTION_COLUMN,
    RUN_COLUMNS,
    AnswersModel,
    RowsModel,
    RunsFilter,
    RunsModel,
    format_value,
    table_view,
)
from gui.widgets.common import AppContext, Header, esc, muted, page_column, show_error, text_view
from gui.widgets.qt_diff import side_by_side_button
from gui.widgets.question import item_html

if TYPE_CHECKING:
    from engine.reports.shapes import Report


def _tab_page(layout: QLayout) -> QWidget:
    """A tab of the lower half, holding ``layout`` a little below the tab bar."""
    page = QWidget()
    page.setLayout(layout)
    layout.setContentsMargins(0, 8, 0, 0)
    return page


class ResultsScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        outer = page_column(
            self,
            Header("Results", "Every exam, consultation and French run — yours and the models'."),
        )

        # -- filters and actions ---------------------------------------------------------
        bar = QHBoxLayout()
        bar.setSpacing(8)
        self.activity = QComboBox()
        self.activity.addItem("All activities", "")
        for key, found in activities().items():
            self.activity.addItem(found.name, key)
        self.who = QComboBox()
        self.who.setMinimumWidth(140)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter by model, setting, data set or status")
        self.search.setClearButtonEnabled(True)
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Select two runs (Ctrl+click) to compare them")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Save the selected run as CSV or JSON")
        self.delete_button = QPushButton("Delete")
        self.rescore_button = QPushButton("Score again")
        self.rescore_button.setToolTip(
            "Apply the activity's scorers to the selected run's stored answers again, without"
            " running its model"
        )
        self.rescore_job: Any = None
        self.rate_button = QPushButton("Rate explanations")
        self.rate_button.setToolTip("Rate the selected model runs' explanations 1–5, blind")
        self.rate_dialog: Any = None
        bar.addWidget(self.activity)
        bar.addWidget(self.who)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.compare_button)
        bar.addWidget(self.export_button)
        bar.addWidget(self.rescore_button)
        bar.addWidget(self.delete_button)
        outer.addLayout(bar)

        self.runs = RunsModel(self)
        self.proxy = RunsFilter(self)
        self.proxy.setSourceModel(self.runs)
        setting_column = [title for title, _get in RUN_COLUMNS].index("Setting")
        fit = [i for i in range(len(RUN_COLUMNS)) if i != setting_column]
        self.table = table_view(self.proxy, stretch=setting_column, fit=fit)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._details_tab(), "Details")
        self.tabs.addTab(self._compare_tab(), "Compare")
        self.charts_layout = QHBoxLayout()
        self.charts_tab = _tab_page(self.charts_layout)
        self.tabs.addTab(self.charts_tab, "Charts")
        self.tabs.addTab(self._report_tab(), "Report")
        self.rate_button.setStyleSheet("margin: 0 0 4px 0")
        self.tabs.setCornerWidget(self.rate_button)  # the bar above is as wide as it may be
        self.time_chart: Any = None
        self.cat_chart: Any = None

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        outer.addWidget(split, 1)

        self.activity.currentIndexChanged.connect(self._filter)
        self.who.currentIndexChanged.connect(self._filter)
        self.search.textChanged.connect(self._filter)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        self.table.doubleClicked.connect(lambda *_: self.tabs.setCurrentIndex(0))
        self.compare_button.clicked.connect(self.compare_selected)
        self.export_button.clicked.connect(lambda: self.export_selected())
        self.delete_button.clicked.connect(self.delete_selected)
        self.rescore_button.clicked.connect(self.rescore_selected)
        self.rate_button.clicked.connect(self.rate_selected)
        self.tabs.currentChanged.connect(lambda i: self._refresh_charts() if i == 2 else None)
        ctx.runs_changed.append(self.reload)
        saved = setting("results/activity", "")
        i = self.activity.findData(saved)
        if i >= 0:
            self.activity.setCurrentIndex(i)
        self.reload()

    # -- tabs ------------------------------------------------------------------------------

    def _details_tab(self) -> QWidget:
        w = QSplitter(Qt.Orientation.Horizontal)
        self.summary = text_view()
        self.summary.setMinimumWidth(260)
        right = QSplitter(Qt.Orientation.Vertical)
        self.answers = AnswersModel(self)
        question, response = QUESTION_COLUMN, len(self.answers.columns) - 1
        fit = [i for i in range(response) if i != question]
        self.answers_table = table_view(self.answers, stretch=question, fit=fit)
        self.answers_table.horizontalHeader().resizeSection(response, 240)
        self.answers_table.selectionModel().selectionChanged.connect(lambda *_: self._item())
        self.item_view = text_view()
        self.item_view.setPlaceholderText("Select an answer to read it in full.")
        right.addWidget(self.answers_table)
        right.addWidget(self.item_view)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        w.addWidget(self.summary)
        w.addWidget(right)
        w.setStretchFactor(0, 2)
        w.setStretchFactor(1, 5)
        w.setContentsMargins(0, 8, 0, 0)
        return w

    def _compare_tab(self) -> QWidget:
        lay = QHBoxLayout()
        self.compare_metrics = RowsModel(
            [
                ("Metric", lambda r: r[0]),
                ("Run A", lambda r: format_value(r[1])),
                ("Run B", lambda r: format_value(r[2])),
            ],
            self,
        )
        self.compare_items = RowsModel(
            [
                ("Item", lambda r: r[0]),
                ("A chose", lambda r: r[1]),
                ("B chose", lambda r: r[2]),
                ("A", lambda r: {1: "✓", 0: "✗"}.get(r[3], "·")),
                ("B", lambda r: {1: "✓", 0: "✗"}.get(r[4], "·")),
            ],
            self,
        )
        self.compare_items.colour = lambda r: "#b91c1c" if r[1] != r[2] else None
        left = QVBoxLayout()
        self.compare_title = muted(QLabel("Select two runs in the table, then press Compare."))
        self.compare_title.setWordWrap(True)
        self.compare_title.setTextFormat(Qt.TextFormat.RichText)
        left.addWidget(self.compare_title)
        mt = table_view(self.compare_metrics, stretch=0)
        left.addWidget(mt, 1)
        right = QVBoxLayout()
        self.compare_agree = muted(QLabel(""))
        right.addWidget(self.compare_agree)
        it = table_view(self.compare_items, stretch=0)
        right.addWidget(it, 1)
        right.addWidget(side_by_side_button(self, self.ctx, self.selected_ids))
        lay.addLayout(left, 1)
        lay.addLayout(right, 1)
        return _tab_page(lay)

    def _report_tab(self) -> QWidget:
        lay = QVBoxLayout()
        bar = QHBoxLayout()
        self.report_hint = muted(
            QLabel("Select runs in the table (Ctrl+click), then press Make report.")
        )
        self.report_button = QPushButton("Make report")
        self.report_button.setToolTip("The selected runs side by side, in their paper's layout")
        self.save_report_button = QPushButton("Save HTML…")
        self.save_report_button.setToolTip("One page with tables and charts, for any browser")
        self.save_report_button.setEnabled(False)
        bar.addWidget(self.report_hint, 1)
        bar.addWidget(self.report_button)
        bar.addWidget(self.save_report_button)
        lay.addLayout(bar)
        self.report_view = text_view()
        lay.addWidget(self.report_view, 1)
        self.report: Report | None = None
        self.report_button.clicked.connect(lambda: self.make_report())
        self.save_report_button.clicked.connect(lambda: self.save_report())
        return _tab_page(lay)

    # -- data ------------------------------------------------------------------------------

    def shown(self) -> None:
        self.reload()

    def reload(self) -> None:
        selected = self.selected_ids()
        self.runs.reload(self.ctx.store)
        whos = sorted({("You" if r["runner"] == "person" else r["model"]) for r in self.runs.rows})
        current = self.who.currentData()
        self.who.blockSignals(True)
        self.who.clear()
        self.who.addItem("Everyone", "")
        for w in whos:
            self.who.addItem(w, w)
        i = self.who.findData(current)
        self.who.setCurrentIndex(max(i, 0))
        self.who.blockSignals(False)
        self._filter()
        self.select_runs(selected)
        if self.tabs.currentIndex() == 2:
            self._refresh_charts()

    def _filter(self) -> None:
        set_setting("results/activity", self.activity.currentData())
        self.proxy.set_filter(
            self.activity.currentData(), self.search.text(), self.who.currentData() or ""
        )
        self._selected()
        if self.tabs.currentIndex() == 2:
            self._refresh_charts()

    def selected_ids(self) -> list[int]:
        rows = self.table.selectionModel().selectedRows()
        return [self.proxy.data(r, RowsModel.ROW_ROLE)["id"] for r in rows]

    def select_runs(self, ids: list[int]) -> None:
        sm = self.table.selectionModel()
        sm.clearSelection()
        for i in range(self.proxy.rowCount()):
            index = self.proxy.index(i, 0)
            if self.proxy.data(index, RowsModel.ROW_ROLE)["id"] in ids:
                sm.select(
                    index,
                    QItemSelectionModel.SelectionFlag.Select
                    | QItemSelectionModel.SelectionFlag.Rows,
                )

    def _selected(self) -> None:
        ids = self.selected_ids()
        self.compare_button.setEnabled(len(ids) == 2)
        self.export_button.setEnabled(len(ids) == 1)
        runs = {r["id"]: r for r in self.runs.rows}
        scorable = len(ids) == 1 and runs.get(ids[0], {}).get("runner") != "person"
        self.rescore_button.setEnabled(scorable or self.rescore_job is not None)
        models = [runs.get(i, {}).get("runner", "person") != "person" for i in ids]
        self.rate_button.setEnabled(bool(ids) and all(models))
        self.delete_button.setEnabled(bool(ids))
        if len(ids) == 1:
            self.show_run(ids[0])
        if self.tabs.currentIndex() == 2:
            self._refresh_charts()

    def show_run(self, run_id: int) -> None:
        """Fill the Details tab with one run."""
        store = self.ctx.store
        try:
            run = store.run(run_id)
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx)
            return
        self.current_run = run
        self.current_items = store.items_by_key(run["dataset"]) or {}
        who = "You" if run["runner"] == "person" else f"{run['model']} ({run['runner']})"
        lines = [
            f"<h3 style='margin:0'>Run {run['id']} · {esc(activity_name(run['activity']))}</h3>",
            f"<p style='color:#6b7280'>{esc(who)} on <b>{esc(run['dataset'])}</b><br>"
            f"{esc((run['started'] or '')[:19].replace('T', ' '))} · {esc(run['status'])}"
            f" · {run['n_done']}/{run['n_total']} done</p>",
        ]
        if run.get("error"):
            lines.append(f"<p style='color:#b91c1c'>{esc(run['error'])}</p>")
        rows = summary_rows(run["summary"], run["activity"])
        if rows:
            cells = "".join(
                f"<tr><td style='color:#4b5563;padding:2px 12px 2px 0'>{esc(label)}</td>"
                f"<td align='right'><b>{esc(format_value(v))}</b></td></tr>"
                for _k, label, v in rows
            )
            lines.append(f"<table>{cells}</table>")
        settings = run.get("settings") or {}
        if settings:
            text = ", ".join(f"{k}={v}" for k, v in settings.items() if v not in (None, ""))
            lines.append(f"<p style='color:#6b7280'><small>Settings: {esc(text)}</small></p>")
        scorers = ", ".join(
            f"{s['scorer']} v{s['version']} ({s['answers']})" for s in store.run_scorers(run_id)
        )
        lines.append(
            f"<p style='color:#6b7280'><small>Scored by: {esc(scorers or 'no scorer yet')}"
            "</small></p>"
        )
        self.summary.setHtml("".join(lines))
        self.answers.reload(store, run_id)
        self.item_view.clear()

    def _item(self) -> None:
        rows = self.answers_table.selectionModel().selectedRows()
        if not rows:
            return
        a = self.answers.row(rows[0].row())
        run = self.current_run
        parts = [
            f"<h4 style='margin:0'>Question {a['number']}</h4>",
            f"<p>Chosen: <b>{esc(a.get('chosen') or '—')}</b> · Gold: <b>{esc(a.get('gold'))}</b>"
            + (f" · {a['latency_s']:.1f} s" if a.get("latency_s") else "")
            + "</p>",
        ]
        parts.append(item_html(self.current_items.get(str(a["item_key"]))))
        if a.get("response") and a.get("response") != a.get("chosen"):
            parts.append(f"<p style='white-space:pre-wrap'>{esc(a['response'])}</p>")
        scores = {
            k: v for k, v in (a.get("scores") or {}).items() if isinstance(v, int | float | bool)
        }
        if scores:
            parts.append(
                "<p style='color:#6b7280'><small>"
                + esc(
                    ", ".join(
                        f"{answer_label(k, run['activity'])}: {format_value(v)}"
                        for k, v in scores.items()
                    )
                )
                + "</small></p>"
            )
        turns = self.ctx.store.turns(run["id"], a["item_key"])
        if turns:
            for t in turns:
                who = {"doctor": "Doctor", "patient": "Patient"}.get(t["role"], t["role"])
                colour = "#1d4ed8" if t["role"] == "doctor" else "#047857"
                parts.append(f"<p><b style='color:{colour}'>{who}:</b> {esc(t['text'])}</p>")
        self.item_view.setHtml("".join(parts))

    # -- actions ---------------------------------------------------------------------------

    def rescore_selected(self) -> None:
        """Score the selected run again in a worker (:func:`engine.core.scoring.rescore`), with its
        progress in the status bar; pressing the button again while it works stops it."""
        ids = self.selected_ids()
        if self.rescore_job is not None:
            self.rescore_job.stop()
            return
        if len(ids) != 1:
            return
        run_id = ids[0]

        def work(job: Any, run_id: int) -> Rescored:
            return rescore(job.store, run_id, progress=job.progress, cancel=job.cancel)

        def progress(p: Progress) -> None:
            self.ctx.status(f"Scoring run {run_id}: {p.done} of {p.total}")

        def done(result: Rescored) -> None:
            n = sum(result.scored.values())
            self.ctx.status(
                f"Run {run_id} scored again: {n} answers scored"
                if n
                else f"Run {run_id}: every answer already has these scorers' current scores"
            )
            self.reload()
            self.select_runs([run_id])

        def ended() -> None:
            self.rescore_job = None
            self.rescore_button.setText("Score again")
            self._selected()

        self.rescore_button.setText("Stop scoring")
        self.rescore_job = self.ctx.jobs.start(
            work,
            run_id,
            on_done=done,
            on_error=lambda exc: show_error(self, exc, self.ctx),
            on_progress=progress,
            on_ended=ended,
        )

    def rate_selected(self) -> None:
        """Rate the selected runs' explanations, blind (:mod:`gui.widgets.qt_rate`)."""
        from gui.widgets.qt_rate import open_rating

        self.rate_dialog = open_rating(self, self.ctx, self.selected_ids(), self.rate_dialog)

    def compare_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 2:
            return
        a, b = sorted(ids)
        try:
            cmp = compare_runs(self.ctx.store, a, b)
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx)
            return

        def name(r: dict[str, Any]) -> str:
            who = "You" if r["runner"] == "person" else r["model"]
            return f"#{r['id']} {who} · {r['dataset']}"

        self.compare_title.setText(
            f"<b>A</b>: {esc(name(cmp['a']))}<br><b>B</b>: {esc(name(cmp['b']))}"
        )
        self.compare_metrics.set_rows(cmp["metrics"])
        from engine.reports.answers import run_answers

        shown = {
            x["item_key"]: f"{x['number']}. {x['question']}" for x in run_answers(self.ctx.store, a)
        }  # the question, as the answers table shows it, not its id (a hash for some sets)
        self.compare_items.set_rows([(shown.get(k, k), *rest) for k, *rest in cmp["items"]])
        n = len(cmp["items"])
        self.compare_agree.setText(
            f"{n} items answered by both; same answer on {cmp['agree']}."
            if n
            else "The two runs have no item in common."
        )
        self.tabs.setCurrentIndex(1)

    def export_selected(self, path: str | None = None) -> str | None:
        """Export the selected run; asks where unless ``path`` is given. Returns the path."""
        from engine.reports.export import export_run

        ids = self.selected_ids()
        if len(ids) != 1:
            return None
        run_id = ids[0]
        if not path:
            path, chosen = self._ask_save(
                "Export run", f"run-{run_id}.csv", "CSV (*.csv);;JSON (*.json)"
            )
            if not path:
                return None
            if not Path(path).suffix:
                path += ".json" if "JSON" in chosen else ".csv"
        fmt = "json" if path.lower().endswith(".json") else "csv"
        return self._save(
            path,
            lambda: export_run(self.ctx.store, run_id, fmt),
            "Export failed",
            f"Saved run {run_id} to {path}",
        )

    def delete_selected(self) -> None:
        ids = self.selected_ids()
        if not ids:
            return
        answer = QMessageBox.question(
            self,
            "Delete runs",
            f"Delete {len(ids)} run(s) with their answers? Until the next delete, "
            "`medexam runs undelete` brings them back.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        from engine.store.deleted import delete_runs

        try:  # one delete: all of them or, when one is still running elsewhere, none
            delete_runs(self.ctx.store, ids)
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx, "Delete refused")
        self.reload()

    # -- report ----------------------------------------------------------------------------

    def make_report(self, ids: list[int] | None = None) -> Report | None:
        """Show the report of ``ids`` (default: the selected runs) in the Report tab."""
        from engine.reports import build_report
        from engine.reports.render import to_html

        ids = ids or sorted(self.selected_ids())
        if not ids:
            self.report_hint.setText("Select one run or more in the table first.")
            return None
        try:
            self.report = build_report(self.ctx.store, ids)
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx, "Report failed")
            return None
        self.report_view.setHtml(to_html(self.report, charts=False))
        self.report_hint.setText(f"Report of {len(ids)} run(s): " + ", ".join(f"#{i}" for i in ids))
        self.save_report_button.setEnabled(True)
        self.tabs.setCurrentIndex(3)
        return self.report

    def save_report(self, path: str | None = None) -> str | None:
        """Save the shown report as one HTML page; asks where unless ``path`` is given."""
        from engine.reports.render import to_html

        if self.report is None:
            return None
        report = self.report
        if not path:
            path, _ = self._ask_save("Save report", "medexam-report.html", "HTML (*.html)")
            if not path:
                return None
        return self._save(
            path, lambda: to_html(report), "Saving the report failed", f"Saved the report to {path}"
        )

    def _ask_save(self, title: str, name: str, filters: str) -> tuple[str, str]:
        """Where to save a file (``name`` in the folder of the last save, at first the home
        folder), and the filter chosen; an empty path when the person cancels."""
        last = setting("results/export_dir", str(Path.home()))
        return QFileDialog.getSaveFileName(self, title, str(Path(last) / name), filters)

    def _save(self, path: str, text: Callable[[], str], failure: str, saved: str) -> str | None:
        """Write ``text()`` to ``path`` (:func:`engine.reports.export.save_text`: a CSV file with
        UTF-8's byte-order mark) and remember its folder for the next save; ``saved`` goes to
        the status bar, a failure to a dialog titled ``failure``. Returns the path, or None
        when it failed."""
        from engine.reports.export import save_text

        try:
            save_text(path, text())
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx, failure)
            return None
        set_setting("results/export_dir", str(Path(path).parent))
        self.ctx.status(saved)
        return path

    # -- charts ----------------------------------------------------------------------------

    def _refresh_charts(self) -> None:
        from gui.widgets import charts

        runs = [r for r in self.proxy.runs() if r["status"] in ("finished", "cancelled")]
        series: dict[str, list[tuple[datetime, float]]] = {}
        from engine.reports.export import headline_value

        for r in runs:
            score = headline_value(r)
            if score is None or not r.get("started"):
                continue
            who = "You" if r["runner"] == "person" else r["model"]
            name = f"{who} · {activity_name(r['activity'])}"
            when = datetime.fromisoformat(r["started"]).astimezone().replace(tzinfo=None)
            series.setdefault(name, []).append((when, score))
        if self.time_chart is None:
            self.time_chart = charts.view()
            self.cat_chart = charts.view()
            self.charts_layout.addWidget(self.time_chart, 3)
            self.charts_layout.addWidget(self.cat_chart, 2)
        self.time_chart.setChart(charts.scores_over_time(series, "Scores over time"))
        ids = self.selected_ids()
        if len(ids) == 1:
            run = self.ctx.store.run(ids[0])
            what, rows = category_scores(run, self.ctx.store)
            title = f"Run {run['id']}: {what}" if what else f"Run {run['id']}: no categories"
            self.cat_chart.setChart(charts.bars(rows, title))
        else:
            chart = charts.bars([], "Categories")
            chart.setTitle("Select one run: its categories")  # whole at 1280×800
            self.cat_chart.setChart(chart)
