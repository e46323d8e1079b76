"""A custom block on a practice page's start card, as question banks build them: the pool
(each with its size), subjects and difficulty, with the page's own count and mode controls;
saved under a name and filled again from a saved one (:class:`BlockControls`).

Pools, subjects, the draw and saved blocks are :mod:`engine.bank`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QListView,
    QListWidget,
    QListWidgetItem,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.bank.blocks import (
    Block,
    delete_block,
    load_block,
    new_seed,
    save_block,
    saved_blocks,
    subjects,
)
from engine.bank.difficulty import LEVELS
from engine.bank.pools import POOLS, pool_sizes
from gui.models import set_setting, setting
from gui.widgets.common import button, combo, show_error, whole_text

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLayout

    from gui.widgets.common import AppContext

#: What each pool holds, for its tooltip.
POOL_TIPS = {
    "all": "Every question of the set",
    "unused": "Questions you never answered",
    "incorrect": "Questions you got wrong the last time",
    "omitted": "Questions you skipped, or the time ran out on, the last time",
    "marked": "Questions you marked (★)",
    "correct": "Questions you got right the last time",
}

CHECK_ICON = (Path(__file__).parents[1] / "icons" / "check.svg").as_posix()
#: The subjects' list: ticks like the app's check boxes, a few to a line.
CHIPS = """
QListWidget#chips { background: #ffffff; border: 1px solid #e2e5ea; border-radius: 8px;
    padding: 3px; }
QListWidget#chips::item { border: none; border-radius: 5px; color: #1f2328; }
QListWidget#chips::item:hover { background: #f3f4f6; }
QListWidget#chips::indicator { width: 15px; height: 15px; border: 1px solid #aeb5c0;
    border-radius: 4px; background: #ffffff; }
QListWidget#chips::indicator:checked { background: #2563eb; border-color: #2563eb;
    image: url({check}); }
"""


def order_box(key: str) -> QCheckBox:
    """The "In file order" box: ticked, a block takes the first questions of the set in
    its order; unticked (the default), they are drawn at random (:func:`drawn_seed`).
    Remembered under ``key/in_order``."""
    box = QCheckBox("In file order")
    box.setToolTip("The first questions of the set, in its order, instead of drawn at random")
    box.setChecked(setting(f"{key}/in_order", False, bool))
    box.toggled.connect(lambda on: set_setting(f"{key}/in_order", on))
    return box


def drawn_seed(box: QCheckBox) -> int | None:
    """The seed a new block is drawn with (stored on its run: ``--seed`` takes it again);
    None when ``box`` (:func:`order_box`) asks for the file's order."""
    return None if box.isChecked() else new_seed()


def _tick(item: QListWidgetItem) -> None:
    if item.data(Qt.ItemDataRole.UserRole) is None:  # the line saying there are none
        return
    on = item.checkState() != Qt.CheckState.Checked
    item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)


class BlockControls(QObject):
    """The Pool, Subjects, Difficulty and Saved blocks rows (:meth:`filter_rows` and
    :meth:`saved_row`, for the page's grid) over the page's ``count`` and ``minutes`` and its
    mode buttons (:meth:`set_modes`). :meth:`refresh` follows the data set and profile;
    :meth:`block` is the block they make. ``changed`` is emitted when a pool, subject or
    difficulty is chosen; ``loaded``, with a saved block, before the block fills the
    controls (the page chooses its data set)."""

    changed = Signal()
    loaded = Signal(object)

    def __init__(
        self,
        ctx: AppContext,
        activity: str,
        parent: QWidget,
        *,
        count: QSpinBox,
        minutes: QSpinBox,
    ) -> None:
        super().__init__(parent)
        self.ctx, self.activity, self.page = ctx, activity, parent
        self.count, self.minutes = count, minutes
        self.timed: QRadioButton | None = None
        self.practice: QRadioButton | None = None
        self.dataset, self.profile = "", ""
        self.pool = combo([(p, p.capitalize()) for p in POOLS], "all")
        self.pool.setMinimumWidth(170)
        for i, p in enumerate(POOLS):
            self.pool.setItemData(i, POOL_TIPS[p], Qt.ItemDataRole.ToolTipRole)
        self.pool.currentIndexChanged.connect(self.changed)
        self.subjects = self._subject_list()
        self.levels = {level: QCheckBox(level.capitalize()) for level in LEVELS}
        for box in self.levels.values():
            box.setToolTip("From the share of people's and models' answers that were right")
            box.toggled.connect(self.changed)
        self.saved = whole_text(QComboBox())
        self.saved.setMinimumWidth(170)
        self.saved.setToolTip("Fill the controls from a block saved before")
        self.saved.activated.connect(self._saved_chosen)
        self.save_button = button("Save block…", self.ask_name, "Keep this block to take again")
        self.delete_button = button("Delete", self._delete_clicked, "Forget the saved block")
        self.name_dialog: QInputDialog | None = None

    def set_modes(self, timed: QRadioButton, practice: QRadioButton) -> None:
        """The page's buttons of a timed and a practice session."""
        self.timed, self.practice = timed, practice

    def _subject_list(self) -> QListWidget:
        """The subjects as ticks that wrap, four lines high; a click on one ticks it."""
        view = QListWidget()
        view.setObjectName("chips")
        view.setStyleSheet(CHIPS.replace("{check}", CHECK_ICON))
        view.setFlow(QListView.Flow.LeftToRight)
        view.setWrapping(True)
        view.setResizeMode(QListView.ResizeMode.Adjust)
        view.setSpacing(4)
        view.setTextElideMode(Qt.TextElideMode.ElideNone)
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        view.setFixedHeight(118)  # four lines
        view.setToolTip("Only questions of the subjects ticked (none ticked: every subject)")
        view.itemChanged.connect(lambda _item: self.changed.emit())
        view.itemClicked.connect(_tick)
        return view

    def filter_rows(self) -> list[tuple[str, QWidget | QLayout]]:
        """The Pool, Subjects and Difficulty rows: each one's label and control."""
        pool = QHBoxLayout()
        pool.addWidget(self.pool)
        pool.addStretch(1)
        levels = QHBoxLayout()
        levels.setSpacing(18)
        for box in self.levels.values():
            levels.addWidget(box)
        levels.addStretch(1)
        return [("Pool", pool), ("Subjects", self.subjects), ("Difficulty", levels)]

    def saved_row(self) -> tuple[str, QLayout]:
        """The Saved blocks row: the saved blocks, with Delete and Save block… under them
        (side by side they would widen the window past its narrowest)."""
        saved = QVBoxLayout()
        saved.setSpacing(6)
        saved.addWidget(self.saved)
        buttons = QHBoxLayout()
        buttons.addWidget(self.delete_button)
        buttons.addWidget(self.save_button)
        buttons.addStretch(1)
        saved.addLayout(buttons)
        return "Saved blocks", saved

    # -- following the data set -----------------------------------------------------------

    def refresh(self, dataset: str, profile: str) -> None:
        """Show the pools' sizes and the subjects of ``dataset`` for ``profile`` (the
        subjects ticked stay ticked when the data set is the same)."""
        ticked = set(self.chosen_subjects()) if dataset == self.dataset else set()
        self.dataset, self.profile = dataset, profile
        sizes = pool_sizes(self.ctx.store, self.activity, dataset, profile) if dataset else {}
        for i, p in enumerate(POOLS):
            self.pool.setItemText(i, f"{p.capitalize()} ({sizes.get(p, 0)})")
        self.subjects.blockSignals(True)
        self.subjects.clear()
        found = subjects(self.ctx.store, self.activity, dataset) if dataset else {}
        if dataset and not found:  # said, rather than an empty box
            none = QListWidgetItem(f"{dataset} names no subjects: questions are drawn from all")
            none.setFlags(Qt.ItemFlag.NoItemFlags)
            self.subjects.addItem(none)
        for name, n in found.items():
            item = QListWidgetItem(f"{name} ({n})")
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)  # ticked by a click anywhere on it
            item.setCheckState(Qt.CheckState.Checked if name in ticked else Qt.CheckState.Unchecked)
            self.subjects.addItem(item)
        self.subjects.blockSignals(False)
        self._fill_saved()

    def _fill_saved(self, current: str = "") -> None:
        names = list(saved_blocks(self.ctx.store, self.profile)) if self.profile else []
        self.saved.blockSignals(True)
        self.saved.clear()
        self.saved.addItem("Saved blocks…" if names else "No saved block yet", None)
        for name in names:
            self.saved.addItem(name, name)
        self.saved.setCurrentIndex(max(0, self.saved.findData(current)))
        self.saved.blockSignals(False)
        self.saved.setEnabled(bool(names))
        self.delete_button.setEnabled(bool(current))

    # -- the block ------------------------------------------------------------------------

    def chosen_subjects(self) -> list[str]:
        out = []
        for i in range(self.subjects.count()):
            item = self.subjects.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(str(item.data(Qt.ItemDataRole.UserRole)))
        return out

    @property
    def plain(self) -> bool:
        """No pool, subject or difficulty chosen: the page's plain first-N session."""
        return (
            self.pool.currentData() == "all"
            and not self.chosen_subjects()
            and not any(box.isChecked() for box in self.levels.values())
        )

    def block(self) -> Block:
        """The block the controls make (raises :class:`~engine.bank.blocks.BlockError`)."""
        return Block(
            self.activity,
            self.dataset,
            pool=str(self.pool.currentData()),
            subjects=tuple(self.chosen_subjects()),
            difficulty=tuple(level for level, box in self.levels.items() if box.isChecked()),
            count=self.count.value() or None,
            minutes=float(self.minutes.value()) if self.timed and self.timed.isChecked() else None,
        )

    def show_block(self, block: Block) -> None:
        """Fill the controls (the page's count and mode too) from ``block``."""
        self.pool.setCurrentIndex(max(0, self.pool.findData(block.pool)))
        for i in range(self.subjects.count()):
            item = self.subjects.item(i)
            on = item.data(Qt.ItemDataRole.UserRole) in block.subjects
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        for level, box in self.levels.items():
            box.setChecked(level in block.difficulty)
        self.count.setValue(block.count or 0)
        mode = self.timed if block.minutes else self.practice
        if mode is not None:
            mode.setChecked(True)
        if block.minutes:
            self.minutes.setValue(round(block.minutes))

    # -- saved blocks ---------------------------------------------------------------------

    def ask_name(self) -> None:
        """Ask a name for the block, then save it (:meth:`save_as`)."""
        dialog = QInputDialog(self.page)
        dialog.setWindowTitle("Save block")
        dialog.setLabelText("Name of this block (a saved block of that name is replaced):")
        dialog.setTextValue(self.saved.currentData() or "")
        dialog.textValueSelected.connect(self.save_as)
        self.name_dialog = dialog
        dialog.open()

    def save_as(self, name: str) -> None:
        try:
            save_block(self.ctx.store, self.profile, name, self.block())
        except Exception as exc:  # noqa: BLE001 - said in a dialog
            show_error(self.page, exc, self.ctx, "The block was not saved")
            return
        self._fill_saved(name.strip())
        self.ctx.status(f"Block {name.strip()!r} saved.")

    def _saved_chosen(self, _index: int) -> None:
        name = self.saved.currentData()
        self.delete_button.setEnabled(bool(name))
        if name:
            self.load(str(name))

    def load(self, name: str) -> Block | None:
        """Fill the controls from the saved block ``name`` (its data set is the caller's to
        choose: ``loaded`` is the block)."""
        try:
            block = load_block(self.ctx.store, self.profile, name)
        except Exception as exc:  # noqa: BLE001 - said in a dialog
            show_error(self.page, exc, self.ctx)
            return None
        self.loaded.emit(block)
        self.show_block(block)
        self._fill_saved(name)
        return block

    def _delete_clicked(self) -> None:
        name = self.saved.currentData()
        if name:
            delete_block(self.ctx.store, self.profile, str(name))
            self._fill_saved()
