"""The Models screen with a served model (llama-cpp-python's server on SmolLM2): add it, test
its server, try a prompt on it, remove it; a bad address is one clear message."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt

from gui.testing import close_message_boxes, message_boxes
from tests.served_fixtures import LlamaServer, free_port

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.usefixtures("chat_model")]
LONG = 240_000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    s = LlamaServer(tmp_path_factory.mktemp("gui-server")).start()
    yield s
    s.stop()


def names(screen) -> list[str]:
    items = (screen.list.item(i) for i in range(screen.list.count()))
    return [item.data(Qt.ItemDataRole.UserRole).name for item in items]


def test_add_test_try_and_remove_a_served_model(qtbot, window, server: LlamaServer) -> None:
    m = window.go("models")
    qtbot.waitUntil(lambda: m.list.count() >= 2, timeout=LONG)
    name = f"gui-served-{server.port}"
    m.add_server(server.url, name)
    qtbot.waitUntil(lambda: name in names(m), timeout=LONG)
    m.list.setCurrentRow(names(m).index(name))
    assert server.url in m.info.text() and m.check_button.isEnabled()
    assert m.remove_button.isEnabled()
    m.check_server()
    qtbot.waitUntil(lambda: "the server answers" in m.state.text(), timeout=LONG)
    m.prompt.setText("Say hello.")
    m.test_prompt()
    qtbot.waitUntil(lambda: "tokens/s" in m.speed.text(), timeout=LONG)
    assert m.output.toPlainText().strip()
    m.remove_model()
    qtbot.waitUntil(lambda: name not in names(m), timeout=LONG)

    m.add_server(f"http://127.0.0.1:{free_port()}/v1", "gui-nowhere")
    qtbot.waitUntil(lambda: bool(message_boxes()), timeout=LONG)
    assert "no answer from" in close_message_boxes()[0]


def test_run_panels_have_a_concurrency_setting(window) -> None:
    exam = window.go("exam")
    panels = [w for w in exam.findChildren(object) if hasattr(w, "at_once")]
    assert panels and panels[0].at_once.specialValueText() == "Automatic"
