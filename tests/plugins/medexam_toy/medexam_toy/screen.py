"""The toy activity's screen in the app: its data sets and the models' scores on them, and
a person doing its sums in the app's one practice panel (with the toy's item widget)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QListWidget, QVBoxLayout, QWidget

from engine.core.scoring import headline_value
from gui.widgets.practice import PracticePanel


class SumsScreen(QWidget):
    """Every sums data set, then every toy run with its score (read again when shown), then
    the practice panel."""

    def __init__(self, ctx: Any) -> None:
        super().__init__()
        self.ctx = ctx
        lay = QVBoxLayout(self)
        title = QLabel("Sums")
        title.setObjectName("title")
        lay.addWidget(title)
        self.datasets = QListWidget()
        self.runs = QListWidget()
        lay.addWidget(QLabel("Data sets"))
        lay.addWidget(self.datasets)
        lay.addWidget(QLabel("Runs"))
        lay.addWidget(self.runs)
        self.practice = PracticePanel(ctx, "toy")  # its item widget, from its descriptor
        lay.addWidget(self.practice, 1)
        self.shown()

    def shown(self) -> None:
        store = self.ctx.store
        self.datasets.clear()
        for found in store.datasets("toy"):
            self.datasets.addItem(f"{found['name']} ({found['n_items']} sums)")
        self.runs.clear()
        for found in store.runs("toy"):
            score = headline_value(found)
            shown = "—" if score is None else f"{score:.1f}%"
            self.runs.addItem(f"#{found['id']} {found['model']}: {shown}")
