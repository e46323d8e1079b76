"""The Models screen: the catalog, a model's details, load settings with the build's GPU
support, a bad file refused with a clear message, a test prompt streamed with its speed,
and a model process that dies mid-generation (a message, a restart, the app still usable).
"""

from __future__ import annotations

import os
import signal

import pytest
from PySide6.QtCore import Qt

from gui.testing import click_button, close_message_boxes, message_boxes, open_window

pytestmark = pytest.mark.gui
LONG = 240_000


@pytest.fixture
def window(qtbot, tmp_path, chat_model):
    w = open_window(tmp_path)
    qtbot.addWidget(w)
    w.show()
    yield w
    close_message_boxes()


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def names(screen):
    return [screen.list.item(i).data(Qt.ItemDataRole.UserRole).name
            for i in range(screen.list.count())]  # fmt: skip


def test_catalog_details_and_settings(qtbot, window, tmp_path):
    m = window.go("models")
    qtbot.waitUntil(lambda: m.list.count() >= 2, timeout=LONG)
    assert {"smollm2", "gemma3-270m"} <= set(names(m))
    m.list.setCurrentRow(names(m).index("smollm2"))
    assert "llama" in m.info.text() and "chat" in m.info.text()
    qtbot.waitUntil(lambda: "build" in m.gpu_note.text(), timeout=LONG)
    assert m.threads.specialValueText().startswith("Automatic")
    assert "ready" in window.model_label.text() and "smollm2" in window.model_label.text()
    m.n_ctx.setValue(2048)
    assert window.host.load_settings()["n_ctx"] == 2048

    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a model at all")
    m.add_path(str(bad))
    qtbot.waitUntil(lambda: bool(message_boxes()), timeout=LONG)
    text = close_message_boxes()[0]
    assert "broken.gguf" in text and "GGUF" in text


def test_prompt_streams_and_shows_speed(qtbot, window):
    m = window.go("models")
    qtbot.waitUntil(lambda: m.list.count() >= 2, timeout=LONG)
    m.list.setCurrentRow(names(m).index("smollm2"))
    m.prompt.setText("Say hello.")
    click(qtbot, m.run_button)
    qtbot.waitUntil(lambda: m.output.toPlainText().strip() != "", timeout=LONG)
    qtbot.waitUntil(lambda: m.stream_job is None, timeout=LONG)
    assert "tokens/s" in m.speed.text()


def test_model_crash_offers_a_restart(qtbot, window):
    m = window.go("models")
    qtbot.waitUntil(lambda: m.list.count() >= 2, timeout=LONG)
    m.list.setCurrentRow(names(m).index("smollm2"))
    m.prompt.setText("Write a long story about a pharmacist.")
    click(qtbot, m.run_button)
    qtbot.waitUntil(lambda: m.output.toPlainText().strip() != "", timeout=LONG)
    model = window.host.model
    os.kill(model.pid, signal.SIGKILL)  # the model process dies mid-generation
    qtbot.waitUntil(lambda: bool(message_boxes()), timeout=LONG)
    box = message_boxes()[0]
    assert box.windowTitle() == "The model stopped"
    assert "crashed" in window.model_label.text() or "stopped" in window.model_label.text()
    click_button(box, "Restart model")
    qtbot.waitUntil(lambda: window.host.state == "ready" and model.alive, timeout=LONG)
    assert m.run_button.isEnabled()
    # Still usable: generate again.
    m.prompt.setText("Say hi.")
    click(qtbot, m.run_button)
    qtbot.waitUntil(lambda: m.stream_job is None and "tokens/s" in m.speed.text(), timeout=LONG)
