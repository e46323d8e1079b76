"""What a consultation doctor is trained on, chosen on the Train screen: a golden set or a
JSON Lines file of chat dialogues (the doctor's training kind names this picker:
:mod:`engine.consult.training.finetune`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QSizePolicy, QWidget

from engine.consult.training.finetune import GOLDEN_HINT
from gui.widgets.common import AppContext, button, whole_text


class DialoguePicker(QWidget):
    """A doctor's dialogues: a golden set (consultation runs tagged with its name, listed
    as they are made) or a JSON Lines file of chat dialogues chosen with File…."""

    missing = (
        f"Choose the dialogues to train on: build a golden set first ({GOLDEN_HINT}) "
        "or choose a JSON Lines file of dialogues with File…."
    )

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.files: list[str] = []
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.combo = whole_text(QComboBox(), QSizePolicy.Policy.MinimumExpanding)
        self.file_button = button("File…", self.choose_file, "A JSON Lines file of dialogues")
        lay.addWidget(self.combo, 1)
        lay.addWidget(self.file_button)
        ctx.runs_changed.append(self.reload)
        ctx.data_changed.append(self.reload)
        self.reload()

    def reload(self, select: str | None = None) -> None:
        from engine.consult.training.golden import golden_sets

        current = select or self.name
        self.combo.clear()
        for name, runs in golden_sets(self.ctx.store).items():
            n = len(runs)
            self.combo.addItem(f"{name} (golden set, {n} run{'s' if n != 1 else ''})", name)
        for path in self.files:
            self.combo.addItem(f"{Path(path).name} (dialogue file)", path)
            self.combo.setItemData(self.combo.count() - 1, path, Qt.ItemDataRole.ToolTipRole)
        if not self.combo.count():
            self.combo.addItem(f"No golden set yet: {GOLDEN_HINT}", None)
        self.combo.setCurrentIndex(max(self.combo.findData(current), 0))

    def add_file(self, path: str) -> None:
        """Offer the dialogues of file ``path`` and choose them."""
        if path not in self.files:
            self.files.append(path)
        self.reload(select=path)

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Dialogues to train on", "", "JSON Lines (*.jsonl *.json);;All files (*)"
        )
        if path:
            self.add_file(path)

    @property
    def name(self) -> str | None:
        return self.combo.currentData()

    def names(self) -> list[str]:
        """What it offers (golden sets, then files)."""
        found = (self.combo.itemData(i) for i in range(self.combo.count()))
        return [str(x) for x in found if x is not None]
