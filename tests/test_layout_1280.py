"""The app at its default window, 1280×820, with a finished compare-models experiment (its
models scripted, named in the test's own catalog): Experiments › Tables breaks no word
across lines, Experiments › Figures says in words why it has no figure, and the Compare
screen's headers are as wide as their longest word and its chart is drawn whole."""

from __future__ import annotations

import json

import pytest
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from engine.exam.dataset import ensure_sample
from engine.experiments.plan import make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.models.scripted import ScriptedModel

pytestmark = pytest.mark.gui

MODELS = {"smollm2-q4": "答案：B", "smollm2-q8": "答案：D"}
SIZES = (94 * 2**20, 241 * 2**20)


@pytest.fixture
def compared(window, home, scripted_pool):
    """The window at 1280×820 over a finished compare-models experiment of two models on 3
    items, their runs' files of :data:`SIZES`."""
    catalog = {name: {"backend": "scripted", "replies": reply} for name, reply in MODELS.items()}
    (home / "models.json").write_text(json.dumps(catalog))
    store = window.ctx.store
    dataset = ensure_sample(store)
    plan = make_plan(store, "compare-models", list(MODELS), dataset, 3)
    experiment_id, _ = open_experiment(store, plan)
    pool = scripted_pool(*(ScriptedModel(name, replies=r) for name, r in MODELS.items()))
    run_experiment(store, experiment_id, pool=pool)
    for run, size in zip(sorted(store.runs(), key=lambda r: r["model"]), SIZES, strict=True):
        usage = {run["model"]: {"file_size": size, "quantization": "Q4_K_M"}}
        store.update_run(run["id"], summary={**run["summary"], "usage": usage})
    window.resize(1280, 820)
    return window


def _settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def _broken_words(document) -> list[str]:
    """The texts of ``document`` (a table's cells too) that a line break cuts inside a word
    (between two letters or digits)."""
    document.size()  # laid out to its end
    found = []
    block = document.begin()
    while block.isValid():
        text, layout = block.text(), block.layout()
        for i in range(1, layout.lineCount()):
            at = layout.lineAt(i).textStart()
            if 0 < at < len(text) and text[at - 1].isalnum() and text[at].isalnum():
                found.append(f"{text[:at]}|{text[at:]}")
        block = block.next()
    return found


def test_layout_1280_experiment_tables_break_lines_between_words_only(compared):
    screen = compared.go("experiments")
    screen.tabs.setCurrentIndex(0)
    _settle()
    assert screen.view.isVisible() and screen.view.width() < 1100  # the window's, not more
    html = screen.view.toHtml()
    assert "Model" in html and "smollm2-q4" in html
    assert _broken_words(screen.view.document()) == []
    assert screen.view.document().size().width() > screen.view.viewport().width()  # it scrolls


def test_layout_1280_figures_of_an_experiment_without_one_say_why(compared):
    screen = compared.go("experiments")
    screen.tabs.setCurrentIndex(1)
    _settle()
    assert all(not label.isVisible() for label in screen.figures)
    assert screen.no_figure.isVisible()
    said = screen.no_figure.text()
    assert said.startswith("No figure: compare-models draws none") and "Compare screen" in said


def _header_words_fit(table) -> list[str]:
    """The headers of ``table`` narrower than their longest word."""
    header = table.horizontalHeader()
    metrics = QFontMetrics(header.font())
    narrow = []
    for c in range(table.columnCount()):
        text = table.horizontalHeaderItem(c).text()
        longest = max((metrics.horizontalAdvance(w) for w in text.split()), default=0)
        if header.sectionSize(c) < longest:
            narrow.append(text)
    return narrow


def test_layout_1280_compare_headers_fit_and_its_chart_is_drawn_whole(compared):
    screen = compared.go("compare")
    screen.reload()
    _settle()
    assert "Accuracy (%)" in [
        screen.table.horizontalHeaderItem(c).text() for c in range(screen.table.columnCount())
    ]
    assert _header_words_fit(screen.table) == []
    chart = screen.chart
    shown = chart.pixmap()
    assert not shown.isNull()
    room = chart.contentsRect()
    assert shown.width() <= room.width() and shown.height() <= room.height()
    assert chart.visibleRegion().boundingRect() == chart.rect()  # nothing of it hidden
    assert room.height() > 150  # large enough to read


def test_layout_1280_the_size_chart_draws_nothing_outside_its_figure():
    """A long name at the right edge too: the figure's own layout makes room for it."""
    from engine.experiments.size_chart import _size_figure

    names = ("smollm2-q4 Q4_K_M", "Meta-Llama-3.1-8B-Instruct Q4_K_M")
    points = [
        {"name": name, "size": size, "value": v, "low": v - 20, "high": v + 20}
        for (name, size, v) in zip(names, (94 * 2**20, 4900 * 2**20), (25.0, 75.0), strict=True)
    ]
    fig = _size_figure({"title": "Accuracy (%) against file size", "axis": "Accuracy (%)",
                        "points": points})  # fmt: skip
    fig.draw_without_rendering()  # laid out as when saved
    drawn, room = fig.get_tightbbox(), fig.bbox_inches
    assert drawn.x0 >= room.x0 - 0.01 and drawn.x1 <= room.x1 + 0.01
    assert drawn.y0 >= room.y0 - 0.01 and drawn.y1 <= room.y1 + 0.01


def test_layout_1280_experiment_figures_are_as_wide_as_the_panel_at_most(
    window, home, scripted_pool
):
    """An experiment with a figure shows it, no wider than the panel, and no "No figure"."""
    (home / "models.json").write_text(json.dumps({"quick": {"backend": "scripted",
                                                            "replies": "答案：B"}}))  # fmt: skip
    store = window.ctx.store
    plan = make_plan(store, "explaincpe-table8", ["quick"], ensure_sample(store), limit=1)
    experiment_id, _ = open_experiment(store, plan)
    run_experiment(
        store, experiment_id, pool=scripted_pool(ScriptedModel("quick", replies="答案：B"))
    )
    window.resize(1280, 820)
    screen = window.go("experiments")
    screen.tabs.setCurrentIndex(1)
    _settle()
    shown = [label for label in screen.figures if label.isVisible()]
    assert shown and not screen.no_figure.isVisible()
    panel = screen.tabs.currentWidget().viewport().width()
    for label in shown:
        assert 300 < label.pixmap().width() <= min(label.width(), panel)
        assert label.pixmap().height() <= label.height()
