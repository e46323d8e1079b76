"""The model-run panel every activity shares: a settings card (data set, the activity's own
settings, how many, at once; Run; a stopped run to resume), and the progress of the run (a
bar with Stop, the headline score so far, each answer as it comes, the summary at the end).

An activity subclasses :class:`RunPanel` with its ``activity_id``. Its settings rows are made
from the activity's settings dataclass (:func:`engine.fields.form_rows`): a list, a number, a
check box, a line of text or a model picker per setting, remembered between sessions; a
subclass gives a setting widgets of its own where it needs them
(:meth:`RunPanel.setting_rows`, :meth:`RunPanel.setting_values`). The run itself is
:func:`engine.core.runs.run` on a worker; scores, labels and summaries come from the engine
(:mod:`engine.activities`, :mod:`engine.reports.results`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QWidget,
)

from engine.activities import activity, metric_label
from engine.core.trials import MAX_TRIALS, check_trials
from engine.errors import UserError
from engine.fields import FORM_MAX, SettingInfo, form_rows, from_dict
from engine.reports.results import running_score, summary_rows
from engine.text.columns import short_text
from gui.models import set_setting, setting
from gui.tables import RowsModel, format_value, table_view
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    ModelCombo,
    ProgressRow,
    check_crash,
    combo,
    esc,
    muted,
    primary,
    show_error,
    spin_box,
    whole_text,
)
from gui.widgets.screen import VerticalScroll

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue

RESUMABLE = ("cancelled", "failed", "interrupted")
ANSWER_COLUMNS = 24  # a free-text answer (a diagnosis) is cut to this width in the table
MARKS = {"right": ("✓", "#15803d"), "partly": ("~", "#b45309"), "wrong": ("✗", "#b91c1c")}


class RunPanel(QWidget):
    """A model run of one activity, with its settings, progress and live answers.

    Subclasses set ``activity_id`` and ``settings_key`` (where the choices are remembered)
    and, when they need to, override :meth:`setting_rows` and :meth:`setting_values` (a
    setting's own widgets), :meth:`given`, :meth:`prepare` (work on the worker before the
    run, e.g. building an index),
    :meth:`on_report` (each progress report,
    the steps within an item included: a live view of the run),
    :meth:`live_views` (widgets above the answers table) and :meth:`item_text`.
    """

    activity_id = ""
    settings_key = ""
    default_limit = 20  # a first run answers a few, not a whole data set (0: all)
    confirm_s = 10 * 60  # a run estimated to take longer asks first
    concurrent = True  # offer "At once" (items in flight)
    help_text = ""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.activity = activity(self.activity_id)
        self.job: Any = None
        self.answers: list[dict[str, Any]] = []
        self.items: dict[str, dict[str, Any]] = {}
        self.numbers: dict[str, int] = {}
        self.fields: dict[str, QWidget] = {}  # a setting's widget, where it has one of its kind
        self._announced = False
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 10, 0, 0)
        lay.setSpacing(12)
        lay.addWidget(VerticalScroll(self._settings_card()))  # as wide as its rows want
        lay.addWidget(self._progress_card(), 1)
        ctx.runs_changed.append(self._load_resumable)
        self._load_resumable()

    # -- what an activity supplies ---------------------------------------------------------

    @property
    def settings_class(self) -> type:
        """The activity's settings dataclass (:mod:`engine.fields`)."""
        return self.activity.settings_class()

    def settings_rows(self) -> list[tuple[str, QWidget]]:
        """The activity's own settings, as (label, widget) rows after the data set: those of
        each setting its form shows, in order (:meth:`setting_rows`)."""
        return [row for info in form_rows(self.settings_class) for row in self.setting_rows(info)]

    def setting_rows(self, info: SettingInfo) -> list[tuple[str, QWidget]]:
        """The rows of one setting: one widget of its kind, with its remembered value."""
        widget = setting_widget(self.ctx, info, f"{self.settings_key}/{info.name}")
        self.fields[info.name] = widget
        return [("" if info.kind == "bool" else info.label, widget)]

    def setting_values(self, info: SettingInfo) -> JSONDict:
        """What the rows of one setting say: ``{name: value}`` (a subclass's own widgets may
        give several values, or raise a ValueError with one line)."""
        return {info.name: setting_value(info, self.fields[info.name])}

    def given(self) -> dict[str, Any]:
        """The settings of a new run from the widgets, checked against the settings
        dataclass (a ValueError with one line when they do not make a run), then
        remembered."""
        values: dict[str, Any] = {}
        for info in form_rows(self.settings_class):
            values.update(self.setting_values(info))
        values["limit"] = self.limit.value() or None
        from_dict(self.settings_class, values)
        for name, widget in self.fields.items():
            if not isinstance(widget, ModelCombo) and values.get(name) is not None:
                set_setting(f"{self.settings_key}/{name}", values[name])
        return values

    @staticmethod
    def prepare(job: Any, given: dict[str, Any]) -> dict[str, Any]:
        """On the worker, before a new run starts: the settings to run with."""
        return given

    def on_report(self, info: dict[str, Any]) -> None:
        """The info of each progress report of the run, in the UI: a step within an item
        (:meth:`engine.core.job.Job.step`, e.g. a consultation's turn) or an answer (``item``)."""

    def live_views(self) -> list[tuple[QWidget, int]]:
        """Widgets (and their stretch) shown above the answers table."""
        return []

    def item_text(self, item: dict[str, Any]) -> str:
        """An item in a few words, for the answers table."""
        return str(item.get("question", ""))

    def run_started(self) -> None:
        """A run starts: clear the live views."""

    # -- building ------------------------------------------------------------------------

    def _settings_card(self) -> Card:
        card = Card("Settings")
        self.dataset = DatasetPicker(
            self.ctx, self.activity.id, compact=True, remember=self.settings_key
        )
        self.dataset.import_clicked.connect(self._open_import)
        limit = setting(f"{self.settings_key}/limit", self.default_limit, int)
        self.limit = spin_box(0, 100000, limit, special="All")
        self.at_once = spin_box(
            0,
            64,
            0,
            special="Automatic",
            tip="Items in flight at once (automatic: as many as the model takes, a local "
            "model's slots, 8 for a served one)",
        )
        noun = f"{self.activity.item_noun}s"
        self.trials = spin_box(
            1,
            MAX_TRIALS,
            1,
            tip=f"Play every {self.activity.item_noun} this many times, each trial with its "
            "own seed (needs a temperature above 0): the summary gives the mean, the spread "
            "between trials and a 95% interval",
        )
        rows = [(noun.capitalize(), self.dataset), *self.settings_rows()]
        rows.append((f"How many {noun}", self.limit))
        rows.append(("Trials", self.trials))
        if self.concurrent:
            rows.append(("At once", self.at_once))
        card.add_layout(_grid(rows))
        card.add_layout(self._run_row())
        card.layout_.addSpacing(8)
        card.add(_title("Resume a stopped run"))
        card.add_layout(self._resume_row())
        if self.help_text:
            card.layout_.addSpacing(8)
            help_label = muted(QLabel(self.help_text))
            help_label.setWordWrap(True)
            help_label.setTextFormat(Qt.TextFormat.RichText)
            card.add(help_label)
        card.layout_.addStretch(1)
        return card

    def _run_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addStretch(1)
        self.run_button = primary(QPushButton("Run"))
        self.run_button.setMinimumWidth(110)
        self.run_button.clicked.connect(self._run_clicked)
        row.addWidget(self.run_button)
        return row

    def _resume_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.resumable = whole_text(QComboBox(), QSizePolicy.Policy.MinimumExpanding)
        self.resume_button = QPushButton("Resume")
        self.resume_button.clicked.connect(self.resume)
        row.addWidget(self.resumable, 1)
        row.addWidget(self.resume_button)
        return row

    def _progress_card(self) -> Card:
        card = Card("Progress")
        self.progress = ProgressRow()
        self.progress.label.setMinimumWidth(120)  # "case 3/10, turn 4": fits a narrow window
        self.progress.stop_clicked.connect(self.stop)
        card.add(self.progress)
        self.live = QLabel("Not started")
        self.live.setObjectName("bigNumber")
        card.add(self.live)
        self.live_note = muted(QLabel(f"{self._headline_name()} so far"))
        card.add(self.live_note)
        for widget, stretch in self.live_views():
            card.add(widget, stretch)
        self.rows = RowsModel(self._columns(), self)
        self.rows.colour = self._colour
        fit = [i for i in range(len(self.rows.columns)) if i != 2]
        card.add(table_view(self.rows, stretch=2, fit=fit), 1)
        self.summary = muted(QLabel(""))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        card.add(self.summary)
        return card

    def _columns(self) -> list[tuple[str, Any]]:
        columns = [
            ("", lambda a: MARKS[a["mark"]][0]),
            ("#", lambda a: a["number"]),
            (self.activity.item_noun.capitalize(), lambda a: a["text"]),
            ("Chose", lambda a: short_text(a.get("chosen") or "—", ANSWER_COLUMNS)),
            ("Answer", lambda a: short_text(a.get("gold") or "", ANSWER_COLUMNS)),
        ]
        if not self._right_or_wrong():
            columns.append((self._headline_name(), lambda a: f"{a['score']:.0f}%"))
        return columns

    def _colour(self, answer: dict[str, Any]) -> str:
        return MARKS[answer["mark"]][1]

    def _right_or_wrong(self) -> bool:
        """Whether the headline is the share of answers right (each answer right or wrong,
        one unanswered wrong) rather than a mean of scores per answer (the Hamming score)."""
        from engine.core.scoring import right_key

        return self.activity.headline == right_key(self.activity.id)

    def _headline_name(self) -> str:
        return metric_label(self.activity.headline, self.activity.id).removesuffix(" (%)")

    def _open_import(self) -> None:
        if self.ctx.window is not None:
            self.ctx.window.open_import(self.activity.id)

    # -- running ---------------------------------------------------------------------------

    def _load_resumable(self) -> None:
        runs = [
            r
            for r in self.ctx.store.runs(self.activity.id)
            if r["runner"] != "person" and r["status"] in RESUMABLE
        ]
        self.resumable.clear()
        for r in runs:
            done = f"{r['n_done']}/{r['n_total']}"
            self.resumable.addItem(f"#{r['id']} {r['model']} · {r['dataset']} · {done}", r["id"])
        if not runs:
            self.resumable.addItem("No stopped runs")
        self.resumable.setEnabled(bool(runs))
        self.resume_button.setEnabled(bool(runs) and self.job is None)

    def _run_clicked(self) -> None:
        self.run()

    def run(self, resume: int | None = None) -> None:
        """Start a run with the chosen settings (or continue run ``resume``)."""
        if self.job is not None:
            return
        if resume is None:
            dataset = self.dataset.name
            try:
                if not dataset:
                    raise ValueError(f"Choose a data set of {self.activity.item_noun}s.")
                given = self.given()
                check_trials(given, self.trials.value())
            except (ValueError, UserError) as exc:
                show_error(self, exc, self.ctx)
                return
            if not self._long_run_confirmed(dataset, given):
                return
            self.dataset.remember_choice()
            set_setting(f"{self.settings_key}/limit", self.limit.value())
        else:
            dataset, given = None, {}
        items_of = str(dataset) if resume is None else self.ctx.store.run(resume)["dataset"]
        self.items = {str(i["id"]): i for i in self.ctx.store.items(items_of)}
        self.numbers = {key: n for n, key in enumerate(self.items, 1)}  # as Results numbers
        at_once = (self.at_once.value() or None) if self.concurrent else None
        self._clear()
        self.job = self.ctx.jobs.start(
            _run_job,
            self.activity.id,
            self.ctx.host,
            type(self).prepare,
            dataset,
            given,
            resume,
            at_once,
            self.trials.value() if resume is None else 1,
            on_progress=self._progress,
            on_done=self._done,
            on_error=self._failed,
            on_ended=self._ended,
        )

    def _long_run_confirmed(self, dataset: str, given: dict[str, Any]) -> bool:
        """Say how long the run will take (:func:`engine.core.estimate.estimate`) in the status
        bar; a run longer than ``confirm_s`` asks first. False when the person declines."""
        from PySide6.QtWidgets import QMessageBox

        from engine.core.estimate import estimate

        found = estimate(self.ctx.store, self.activity.id, dataset, given, self.trials.value())
        said = found.text(self.activity.item_noun)
        if found.seconds is not None and found.seconds > self.confirm_s:
            answer = QMessageBox.question(
                self,
                "A long run",
                f"This run will take a while: {said}.\n\nStart it? (Fewer with “How many”.)",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return False
        self.ctx.status(f"Running {said}")
        return True

    def _clear(self) -> None:
        self.answers = []
        self._announced = False
        self.rows.set_rows([])
        self.summary.setText("")
        self.live.setText("—")
        self.progress.started(0, "Starting…")
        self.run_button.setEnabled(False)
        self.resume_button.setEnabled(False)
        self.run_started()

    def resume(self) -> None:
        run_id = self.resumable.currentData()
        if run_id is not None and self.job is None:
            self.run(resume=int(run_id))

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.progress.label.setText(f"Stopping after this {self.activity.item_noun}…")

    def _progress(self, p: Any) -> None:
        info = p.info or {}
        if info.get("run_id") and not self._announced:
            self._announced = True
            self.ctx.notify_runs()
        self.on_report(info)
        if "item" in info:
            self._add_answer(str(info["item"]), info)
            message = f"{p.done} of {p.total} {self.activity.item_noun}s"
        else:
            message = p.message or "Loading the model…"
        if self.job is not None and self.job.job.cancelled:  # what is in flight finishes
            message = f"Stopping after this {self.activity.item_noun}…"
        self.progress.update(p, message)

    def _add_answer(self, key: str, info: dict[str, Any]) -> None:
        text = " ".join(self.item_text(self.items.get(key, {})).split())
        score, _ = running_score(self.activity.id, [info])
        mark = "right" if score == 100 else "wrong" if not score else "partly"
        self.answers.append(
            {
                **info,
                "item": key,
                "number": self.numbers.get(key, ""),
                "text": text[:80] + ("…" if len(text) > 80 else ""),
                "score": score or 0.0,
                "mark": mark,
            }
        )
        self.rows.set_rows(list(reversed(self.answers)))
        score, right = running_score(self.activity.id, self.answers)
        n = len(self.answers)
        self.live.setText(f"{score:.0f}%")
        self.live_note.setText(f"{self._headline_name()} so far: {right} of {n} wholly right")

    def _done(self, summary: dict[str, Any]) -> None:
        self.ctx.notify_runs()
        check_crash(self.ctx, summary)
        parts = [
            f"{esc(label)}: <b>{esc(format_value(value))}</b>"
            for _key, label, value in summary_rows(
                summary, self.activity.id, self.activity.run_keys
            )
        ]
        status = f"Run #{summary.get('run_id')} {esc(summary.get('status', ''))}"
        self.summary.setText(" · ".join([status, *parts]) + _spread_html(summary, self.activity.id))
        headline = summary.get(self.activity.headline)
        if isinstance(headline, int | float):
            self.live.setText(f"{headline:.0f}%")
            n = summary.get("n") or summary.get("answered")
            over = f"{self._headline_name()} over {n} {self.activity.item_noun}s"
            wrong = " (unanswered count as wrong)" if self._right_or_wrong() else ""
            self.live_note.setText(over + wrong)

    def _failed(self, exc: BaseException) -> None:
        show_error(self, exc, self.ctx, "The run failed")

    def _ended(self) -> None:
        self.job = None
        stopping = f"Stopping after this {self.activity.item_noun}…"
        self.progress.ended("Stopped" if self.progress.label.text() == stopping else "")
        self.run_button.setEnabled(True)
        self._load_resumable()


def _run_job(
    job: Any,
    activity_id: str,
    host: Any,
    prepare: Any,
    dataset: str | None,
    given: dict[str, Any],
    resume: int | None,
    at_once: int | None,
    trials: int = 1,
) -> dict[str, Any]:
    """The worker's part of a run: the activity's preparation, then the engine's one run
    loop (:func:`engine.core.runs.run`), or ``trials`` of them
    (:func:`engine.core.trials.run_trials`: the last trial's summary, with the set's ``trial_set``,
    ``run_ids`` and ``spread``)."""
    from engine.core.runs import run
    from engine.core.trials import run_trials, spread

    if resume is None:
        given = prepare(job, given)
    options = {"pool": host.lending(), "progress": job.progress, "cancel": job.cancel,
               "concurrency": at_once}  # fmt: skip
    if trials == 1:
        return run(job.store, activity_id, dataset, given, resume=resume, **options)
    found = run_trials(job.store, activity_id, dataset, given, trials, **options)
    last = found.summaries[-1]
    return {**last, "trial_set": found.name, "run_ids": found.run_ids,
            "spread": spread(job.store, found.run_ids)}  # fmt: skip


def _spread_html(summary: dict[str, Any], activity_id: str) -> str:
    """A trial set's spread under the last trial's summary (nothing for one run)."""
    from engine.core.trials import spread_text

    if not summary.get("spread"):
        return ""
    ids = ", ".join(f"#{r}" for r in summary["run_ids"])
    parts = [
        f"{esc(metric_label(k, activity_id))}: <b>{esc(spread_text(v))}</b>"
        for k, v in summary["spread"].items()
    ]
    return (
        f"<br>Trial set {esc(summary['trial_set'])} (runs {ids}), mean ± spread between "
        f"trials [95% interval]: " + " · ".join(parts)
    )


def setting_widget(ctx: AppContext, info: SettingInfo, key: str) -> QWidget:
    """A widget for setting ``info`` of its kind (:data:`engine.fields.KINDS`), showing the
    value remembered under ``key`` (else its default), with its help as the tooltip."""
    kinds = {"bool": bool, "int": int, "float": float}
    kind = kinds.get(info.kind, type(info.default) if info.default is not None else str)
    value = setting(key, info.default, kind)
    widget: QWidget
    if info.kind == "model":
        widget = ModelCombo(ctx)
    elif info.kind == "choice":
        widget = combo(list(info.choices), value)
    elif info.kind == "bool":
        widget = QCheckBox(info.label)
        widget.setChecked(bool(value))
    elif info.kind in ("int", "float"):
        widget = _number_box(info, value)
    else:
        widget = QLineEdit(str(value or ""))
        widget.setPlaceholderText("Default" if info.optional else "")
    widget.setToolTip(info.help)
    return widget


def _number_box(info: SettingInfo, value: JSONValue) -> QSpinBox | QDoubleSpinBox:
    """A number box within the setting's bounds; an optional setting's lowest value reads
    "Default" (None: left to the engine)."""
    box: QSpinBox | QDoubleSpinBox
    if info.kind == "int":
        box = QSpinBox()
    else:
        box = QDoubleSpinBox()
        box.setDecimals(2)
        box.setSingleStep(0.05 if info.max is not None and info.max <= 1 else 0.1)
    low = info.min if info.min is not None else -FORM_MAX
    high = info.max if info.max is not None else FORM_MAX
    if info.optional:
        low -= 1
        box.setSpecialValueText("Default")
    shown = low if not isinstance(value, int | float) else value  # None: the lowest
    if isinstance(box, QSpinBox):
        box.setRange(int(low), int(high))
        box.setValue(int(shown))
    else:
        box.setRange(low, high)
        box.setValue(shown)
    return box


def setting_value(info: SettingInfo, widget: QWidget) -> JSONValue:
    """The value ``widget`` (made by :func:`setting_widget`) holds for setting ``info``; None
    for an optional one left at "Default" (or empty)."""
    if isinstance(widget, ModelCombo):
        return widget.name or None
    if isinstance(widget, QComboBox):
        return widget.currentData()
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QSpinBox | QDoubleSpinBox):
        unset = info.optional and widget.value() == widget.minimum()
        return None if unset else widget.value()
    if isinstance(widget, QLineEdit):
        return widget.text().strip() or (None if info.optional else "")
    raise TypeError(f"no value for a {type(widget).__name__}")


def _grid(rows: list[tuple[str, QWidget]]) -> QFormLayout:
    """The settings as label–field rows; a field too wide beside its label goes under it
    (a narrow window)."""
    form = QFormLayout()
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    form.setHorizontalSpacing(14)
    form.setVerticalSpacing(10)
    for label, widget in rows:
        if isinstance(widget, QComboBox):
            widget.setMinimumWidth(0)  # as wide as its longest item, never a fixed width
        if widget.layout() is not None and label:  # several controls: the whole width
            form.addRow(QLabel(label))
            form.addRow(widget)
        else:
            form.addRow(label, widget)
    return form


def _title(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("cardTitle")
    return label
