"""The Train screen's form of a new training: the kind (:func:`engine.train.kinds.kinds`: a
FrenchMedMCQA reader, a consultation doctor…), what it trains on (a data set of the kind's
activity, or what its own picker offers), the name of what it makes, and the kind's
settings, made from its settings dataclass
(:func:`engine.fields.form_rows`, one widget of its kind per setting:
:func:`gui.widgets.run_panel.setting_widget`). The kind's own settings and the epochs are
in view; the other training settings (how many examples and steps, the batch, the learning
rate, the seed, the device…) are under "More settings".

A kind may bring its own picker of what it trains on (a doctor's: golden sets or a file of
dialogues, :mod:`gui.consult.training`); the others train on a data set of their activity.

One page per kind, kept while the screen lives: going back to a kind finds it as it was
left. A page trains on the data set whose name says it is a training split
(``frenchmedmcqa-train``, ``train``…) and picks the best epoch on the one whose name says
dev, until the person chooses others (:func:`split_named`). The widgets hold layout and wiring only;
the settings are checked by the settings dataclass (:func:`engine.fields.from_dict`) and the data by
the training itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Protocol, cast

from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from engine.fields import SettingInfo, form_rows, from_dict
from engine.train.settings import TrainSettings
from gui.widgets.common import (
    AppContext,
    Card,
    DatasetPicker,
    button,
    combo,
    flush_column,
    muted,
    primary,
    whole_text,
)
from gui.widgets.run_panel import setting_value, setting_widget

if TYPE_CHECKING:
    from engine.train.kinds import TrainingKind
    from engine.types import JSONDict


class DataPicker(Protocol):
    """A kind's own data picker (:attr:`engine.train.kinds.TrainingKind.data_picker`; else a
    data set picker of its activity): a widget made with the app's context, with the
    ``name`` of the data chosen (None: none) and what to do when there is none to choose
    (``missing``)."""

    missing: str

    @property
    def name(self) -> str | None: ...


#: The settings every training has: under "More settings", but for those in :data:`IN_VIEW`.
COMMON = frozenset(f.name for f in fields(TrainSettings))
IN_VIEW = frozenset({"epochs"})
#: The names a data set of the training split and of the dev split ends with.
TRAIN_SPLITS = ("train",)
DEV_SPLITS = ("dev", "val", "validation")
#: Settings in view and under "More settings" go this many to a row.
COLUMNS = 3


def split_named(names: Sequence[str], splits: Sequence[str]) -> str | None:
    """The first of ``names`` that is one of ``splits`` or ends with one after ``-`` or
    ``_`` (``frenchmedmcqa-dev``), None when none does."""
    for name in names:
        if any(name == s or name.endswith((f"-{s}", f"_{s}")) for s in splits):
            return name
    return None


def kind_note(kind: TrainingKind) -> str:
    return kind.note or f"{kind.name[:1].upper()}{kind.name[1:]}: {kind.data_help}"


class StoreChoice(QComboBox):
    """A setting naming something stored (a data set, a corpus), or none (``first``)."""

    def __init__(self, ctx: AppContext, first: str, names: Callable[[], list[str]]) -> None:
        super().__init__()
        whole_text(self)
        self.first, self.names = first, names
        ctx.data_changed.append(self.reload)
        self.reload()

    def reload(self) -> None:
        current = self.currentData()
        self.clear()
        self.addItem(self.first, None)
        for name in self.names():
            self.addItem(name, name)
        self.setCurrentIndex(max(self.findData(current), 0))


class BaseCombo(QComboBox):
    """The local GGUF chat model a LoRA is trained on (the engine says why another will not
    do); its default until the catalog is read."""

    def __init__(self, ctx: AppContext, default: str) -> None:
        super().__init__()
        whole_text(self)
        self.ctx, self.default = ctx, default
        ctx.models_changed.append(self.reload)
        self.reload()

    def reload(self) -> None:
        from engine.models.gguf_info import GGUFInfo

        current = self.currentData() or self.default
        found = [
            m for m in self.ctx.model_list or []
            if isinstance(m, GGUFInfo) and m.chat_template and not m.lora
        ]  # fmt: skip
        self.clear()
        if not any(m.name == current for m in found):
            self.addItem(current, current)
        for m in found:
            self.addItem(f"{m.name}  ({m.summary()})", m.name)
        self.setCurrentIndex(max(self.findData(current), 0))


class RateBox(QLineEdit):
    """A small number (a learning rate) typed as ``5e-05``: a spin box's decimals would
    round it to 0."""

    def __init__(self, info: SettingInfo) -> None:
        super().__init__(f"{info.default:g}" if isinstance(info.default, float) else "")
        low = info.min if info.min is not None else 0.0
        self.setValidator(QDoubleValidator(low, info.max if info.max is not None else 1e9, 12))
        self.label = info.label

    def value(self) -> float:
        try:
            return float(self.text().strip())
        except ValueError:
            raise ValueError(f"{self.label} must be a number (got {self.text()!r})") from None


def _grid(rows: Sequence[tuple[str, QWidget]]) -> QGridLayout:
    """Label–widget pairs, :data:`COLUMNS` pairs to a row."""
    grid = QGridLayout()
    grid.setHorizontalSpacing(10)
    grid.setVerticalSpacing(8)
    for i, (label, widget) in enumerate(rows):
        row, column = divmod(i, COLUMNS)
        if label:
            grid.addWidget(QLabel(label), row, 2 * column)
        grid.addWidget(widget, row, 2 * column + 1)
    for column in range(COLUMNS):
        grid.setColumnStretch(2 * column + 1, 1)
    return grid


class KindForm(QWidget):
    """One kind's page: its data, the name of what it makes and its settings."""

    def __init__(self, ctx: AppContext, kind: TrainingKind) -> None:
        super().__init__()
        self.ctx, self.kind = ctx, kind
        self.settings_class = kind.settings_class()
        self.fields: dict[str, QWidget] = {}
        self.data: DatasetPicker | DataPicker = self._data_picker()
        self.name = QLineEdit(kind.default_name or kind.artefact)
        self.name.setToolTip("The name of what the training makes (a folder of trained models)")
        infos = form_rows(self.settings_class)
        shown = [i for i in infos if i.name not in COMMON or i.name in IN_VIEW]
        more = [i for i in infos if i not in shown]
        lay = flush_column(self, 8)
        data = cast("QWidget", self.data)  # a kind's own picker is a widget too
        first: list[tuple[str, QWidget]] = [("Train on", data), ("Name", self.name)]
        lay.addLayout(_grid(first + [self._row(i) for i in shown]))
        self.more = QWidget()
        inner = flush_column(self.more)
        inner.addLayout(_grid([self._row(i) for i in more]))
        self.more.hide()
        lay.addWidget(self.more)
        self.chosen = False  # whether the person chose the data or the dev set
        if isinstance(self.data, DatasetPicker):
            self.data.combo.activated.connect(self._choose)
        if isinstance(self.fields.get("dev"), QComboBox):
            self.fields["dev"].activated.connect(self._choose)  # type: ignore[attr-defined]
        ctx.data_changed.append(self.offer_splits)
        self.offer_splits()

    def _choose(self, _index: int = 0) -> None:
        self.chosen = True

    def offer_splits(self) -> None:
        """Train on the training split and pick the best epoch on the dev split (when data
        sets are named so), until the person chooses: the first data set by name is often
        the dev split."""
        if self.chosen or not isinstance(self.data, DatasetPicker):
            return
        names = self._datasets()
        train = split_named(names, TRAIN_SPLITS)
        if train is not None:
            self.data.select(train)
        dev = self.fields.get("dev")
        found = split_named(names, DEV_SPLITS)
        if isinstance(dev, QComboBox) and found is not None and found != self.data.name:
            dev.setCurrentIndex(dev.findData(found))

    def _data_picker(self) -> DatasetPicker | DataPicker:
        if self.kind.data_picker is not None:
            return self.kind.data_picker.load()(self.ctx)
        picker = DatasetPicker(self.ctx, self.kind.activity, compact=True)
        window = self.ctx.window
        if window is not None:
            picker.import_clicked.connect(lambda: window.open_import(self.kind.activity))
        return picker

    def _row(self, info: SettingInfo) -> tuple[str, QWidget]:
        widget = self._widget(info)
        widget.setToolTip(info.help)
        self.fields[info.name] = widget
        return ("" if info.kind == "bool" else info.label, widget)

    def _widget(self, info: SettingInfo) -> QWidget:
        """A setting's widget: one naming something stored is a list of those, a model a
        list of local chat models, a learning rate a line of text; the others as every
        settings form has them."""
        if info.name == "dev":
            return StoreChoice(self.ctx, "(keep the last epoch)", self._datasets)
        if info.name == "corpus":
            return StoreChoice(self.ctx, "(none)", self._corpora)
        if info.kind == "model":
            return BaseCombo(self.ctx, str(info.default or "smollm2"))
        if info.kind == "float" and info.min is not None and 0 < info.min < 1e-3:
            return RateBox(info)
        return setting_widget(self.ctx, info, f"train/{self.kind.id}/{info.name}")

    def _datasets(self) -> list[str]:
        return [d["name"] for d in self.ctx.store.datasets(self.kind.activity)]

    def _corpora(self) -> list[str]:
        return [c["name"] for c in self.ctx.store.corpora()]

    def settings(self) -> JSONDict:
        """The settings the widgets say, checked by the kind's settings dataclass (a
        ValueError in one line when they do not make a training)."""
        values: JSONDict = {}
        for info in form_rows(self.settings_class):
            widget = self.fields[info.name]
            if isinstance(widget, RateBox):
                values[info.name] = widget.value()
            elif isinstance(widget, QComboBox):
                values[info.name] = widget.currentData()
            else:
                values[info.name] = setting_value(info, widget)
        from_dict(self.settings_class, values)
        return values

    def given(self) -> tuple[str, JSONDict, str]:
        """The data, the settings and the name of a new training (a ValueError in one line
        when something is missing)."""
        data = self.data.name
        if not data:
            if isinstance(self.data, DatasetPicker):
                raise ValueError(f"Import a {self.kind.activity} data set to train on first.")
            raise ValueError(self.data.missing)
        name = self.name.text().strip()
        if not name:
            raise ValueError("Give what the training makes a name.")
        return data, self.settings(), name


class TrainForm(Card):
    """The kind picker over each kind's page (:class:`KindForm`), Train and its state."""

    def __init__(self, ctx: AppContext, train: Callable[[], None]) -> None:
        from engine.train.kinds import kinds

        super().__init__("A new training")
        self.ctx = ctx
        self.kinds = kinds()
        self.kind = combo([(k.id, k.name[:1].upper() + k.name[1:]) for k in self.kinds.values()])
        self.note = muted(QLabel(""))
        self.note.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(QLabel("Kind"))
        top.addWidget(self.kind)
        top.addWidget(self.note, 1)
        self.add_layout(top)
        self.pages: dict[str, KindForm] = {}
        self.stack = QWidget()  # the pages, all but the chosen one hidden (and sized out)
        self.stack_layout = flush_column(self.stack)
        self.add(self.stack)
        row = QHBoxLayout()
        self.start = primary(button("Train", train))
        self.more = button("More settings ▸", self.toggle_more, "The other training settings")
        self.state = muted(QLabel(""))
        self.state.setWordWrap(True)
        row.addWidget(self.start)
        row.addWidget(self.more)
        row.addWidget(self.state, 1)
        self.add_layout(row)
        self.kind.currentIndexChanged.connect(lambda _i: self._kind_changed())
        self._kind_changed()

    @property
    def kind_id(self) -> str:
        return str(self.kind.currentData())

    @property
    def page(self) -> KindForm:
        """The page of the kind chosen (made the first time it is chosen)."""
        found = self.pages.get(self.kind_id)
        if found is None:
            found = self.pages[self.kind_id] = KindForm(self.ctx, self.kinds[self.kind_id])
            self.stack_layout.addWidget(found)
        return found

    def choose(self, kind_id: str) -> KindForm:
        """Choose kind ``kind_id``; return its page."""
        self.kind.setCurrentIndex(self.kind.findData(kind_id))
        return self.page

    def _kind_changed(self) -> None:
        page = self.page
        for other in self.pages.values():
            other.setVisible(other is page)
        self.note.setText(kind_note(page.kind))
        self._say_more()
        self.state.setText("")

    def toggle_more(self) -> None:
        more = self.page.more
        more.setHidden(not more.isHidden())
        self._say_more()

    def _say_more(self) -> None:
        hidden = self.page.more.isHidden()
        self.more.setText("More settings ▸" if hidden else "Fewer settings ▴")
