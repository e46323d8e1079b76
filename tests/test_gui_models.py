"""The Models screen: the catalog, a model's details, load settings with the build's GPU
support, a bad file refused with a clear message, a test prompt streamed with its speed,
and a model process that dies mid-generation (a message, a restart, the app still usable).
"""

from __future__ import annotations

import os
import signal

import pytest
from model_files import cut_copy, tiny_llama
from PySide6.QtCore import Qt

from gui.testing import click_button, close_message_boxes, message_boxes

pytestmark = [pytest.mark.gui, pytest.mark.usefixtures("chat_model")]
LONG = 240_000


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def names(screen):
    return [
        screen.list.item(i).data(Qt.ItemDataRole.UserRole).name for i in range(screen.list.count())
    ]


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
    assert window.host.load_settings().n_ctx == 2048

    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a model at all")
    m.add_path(str(bad))
    qtbot.waitUntil(lambda: bool(message_boxes()), timeout=LONG)
    text = close_message_boxes()[0]
    assert "broken.gguf" in text and "GGUF" in text


def test_slots_are_a_setting_shown_with_why(qtbot, window):
    m = window.go("models")
    qtbot.waitUntil(lambda: m.list.count() >= 2, timeout=LONG)
    m.list.setCurrentRow(names(m).index("smollm2"))
    assert m.slots.specialValueText() == "Automatic"
    qtbot.waitUntil(lambda: "of KV cache each" in m.slots_note.text(), timeout=LONG)
    m.slots.setValue(3)
    assert window.host.load_settings().slots == 3
    qtbot.waitUntil(lambda: m.slots_note.text().startswith("3 slots as set"), timeout=LONG)
    m.slots.setValue(0)
    assert window.host.load_settings().slots is None
    click(qtbot, m.load_button)
    qtbot.waitUntil(lambda: window.host.model is not None, timeout=LONG)
    qtbot.waitUntil(lambda: window.host.state == "ready", timeout=LONG)
    slots = window.host.model.info["slots"]
    qtbot.waitUntil(lambda: f", {slots} slots," in m.state.text(), timeout=LONG)


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


def test_a_damaged_default_model_gives_way_to_the_embedded_one(qtbot, models_folder, window):
    """A truncated model file was the default: the window opens on smollm2 instead, says
    why in the status bar, and the setting no longer names the damaged file."""

    from engine import settings
    from gui.app import create_window

    window.close()
    cut_copy(models_folder / "cut.gguf", 8_000_000)
    settings.set("model", "cut")  # chosen before the file was damaged

    again = create_window(str(models_folder.parent / "medexam.db"))
    qtbot.addWidget(again)
    again.show()
    message = (
        "cut could not be loaded (truncated: 8 MB of {} MB expected); using the embedded "
        "smollm2 instead, now the default model"
    )
    assert again.statusBar().currentMessage().startswith(message.split("{")[0])
    assert again.statusBar().currentMessage().endswith(message.split("}")[1])
    assert again.host.notice_text == again.statusBar().currentMessage()
    assert "Model: smollm2" in again.model_label.text()
    assert settings.get("model") == ""
    assert again.host.selected == "smollm2"
    again.close()


def test_a_default_that_fails_to_load_gives_way_when_used(qtbot, models_folder, window):
    """A model whose header passes but that cannot be loaded: the host's model (a person's
    exam, say) is the embedded one, with the sentence saying so."""
    from engine import settings

    tiny_llama(models_folder / "empty.gguf")
    settings.set("model", "empty")
    assert window.host.selected == "empty"
    window.jobs.start(lambda job: window.host.get())
    qtbot.waitUntil(lambda: window.host.notice_text != "", timeout=LONG)
    assert window.host.name == "smollm2"
    assert window.host.notice_text.startswith("empty could not be loaded (")
    qtbot.waitUntil(
        lambda: window.statusBar().currentMessage() == window.host.notice_text, timeout=LONG
    )
    assert settings.get("model") == ""
    qtbot.waitUntil(lambda: "smollm2" in window.model_label.text(), timeout=LONG)
