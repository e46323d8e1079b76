"""The Models screen lists the model files that cannot be used, each with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from model_files import cut_copy
from PySide6.QtCore import Qt

pytestmark = [pytest.mark.gui]
LONG = 240_000


@pytest.fixture
def folder(models_folder: Path) -> Path:
    """A models folder holding the first 8 MB of the embedded chat model's file."""
    cut_copy(models_folder / "cut.gguf", 8_000_000)
    return models_folder


def test_a_truncated_file_is_shown_with_its_reason(qtbot, folder, window):
    m = window.go("models")
    qtbot.waitUntil(lambda: m.list.count() >= 1, timeout=LONG)
    names = [m.list.item(i).data(Qt.ItemDataRole.UserRole).name for i in range(m.list.count())]
    assert "cut" not in names and "smollm2" in names
    assert m.problems.isVisible()
    assert "<b>cut.gguf</b>: truncated: 8 MB of" in m.problems.text()
    assert m.problems.toolTip() == str(folder / "cut.gguf")
