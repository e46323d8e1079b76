"""How the activity screens draw: no combo box cuts its text, and a checked radio button
keeps the size and place of an unchecked one."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QRadioButton,
    QStyle,
    QStyleOptionButton,
)

pytestmark = pytest.mark.gui
LONG = 240_000
TABS = {
    "exam": ("practice", "evaluation"),
    "consult": ("person", "models"),
    "french": ("practice", "runs"),
}


def needed_width(box: QComboBox) -> int:
    """The width ``box`` needs to show its longest item whole, in its own style."""
    probe = QComboBox(box.parentWidget())
    probe.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    probe.addItems([box.itemText(i) for i in range(box.count())])
    width = probe.sizeHint().width()
    probe.deleteLater()
    return width


def cut_combos(panel) -> list[str]:
    out = []
    for box in panel.findChildren(QComboBox):
        if box.isVisible() and box.count() and box.width() < needed_width(box):
            longest = max((box.itemText(i) for i in range(box.count())), key=len)
            out.append(f"{longest!r}: {box.width()} < {needed_width(box)}")
    return out


def cut_in_every_tab(qtbot, window) -> dict[str, list[str]]:
    """The combo boxes that cut their text, in each tab of each activity screen."""
    french = window.go("french")
    qtbot.waitUntil(lambda: french.practice.dataset.combo.count() > 0, timeout=LONG)
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    cut = {}
    for key, tabs in TABS.items():
        screen = window.go(key)
        for i, name in enumerate(tabs):
            screen.tabs.setCurrentIndex(i)
            qtbot.wait(100)  # laid out
            cut[f"{key}.{name}"] = cut_combos(getattr(screen, name))
    return cut


def test_no_combo_box_cuts_its_text(qtbot, window):
    window.resize(1280, 820)
    cut = cut_in_every_tab(qtbot, window)
    assert not any(cut.values()), cut


def test_the_exam_and_consultation_screens_fit_a_narrow_window(qtbot, window):
    """At the window's minimum size nothing is cut; the Exam and Consultation screens let
    it be 1000 px wide (the window is never narrower than its screens need)."""
    qtbot.waitUntil(lambda: window.ctx.model_list is not None, timeout=LONG)
    for key, tabs in TABS.items():
        if key == "french":
            continue
        screen = window.go(key)
        for i in range(len(tabs)):
            screen.tabs.setCurrentIndex(i)
            qtbot.wait(50)
    assert window.minimumWidth() <= 1000
    cut_in_every_tab(qtbot, window)  # every screen built: the minimum is theirs
    window.resize(window.minimumSize())
    qtbot.wait(100)
    assert window.width() == window.minimumWidth()
    cut = cut_in_every_tab(qtbot, window)
    assert not any(cut.values()), (window.width(), cut)


def indicator(button: QRadioButton) -> tuple[object, object]:
    """Where the style draws the button's indicator and its label."""
    opt = QStyleOptionButton()
    button.initStyleOption(opt)
    style = button.style()
    box = style.subElementRect(QStyle.SubElement.SE_RadioButtonIndicator, opt, button)
    label = style.subElementRect(QStyle.SubElement.SE_RadioButtonContents, opt, button)
    return box, label


def test_a_checked_radio_button_keeps_its_size_and_label_place(qtbot, window):
    practice = window.go("exam").practice
    practice.stack.setCurrentIndex(0)
    practice.part.mode_timed.setChecked(True)
    QApplication.processEvents()
    unchecked = indicator(practice.part.mode_practice)
    practice.part.mode_practice.setChecked(True)
    QApplication.processEvents()
    checked = indicator(practice.part.mode_practice)
    assert checked == unchecked
    assert checked[0].width() == checked[0].height() == 18  # 16 px and a 1 px border


def test_a_disabled_field_looks_disabled(qtbot, window):
    p = window.go("exam").practice
    p.part.mode_practice.setChecked(True)  # the time limit is for a timed exam only
    assert not p.part.minutes.isEnabled()
    off = p.part.minutes.grab().toImage()
    p.part.mode_timed.setChecked(True)
    assert p.part.minutes.isEnabled()
    on = p.part.minutes.grab().toImage()
    middle = (10, on.height() // 2)
    assert off.pixelColor(*middle) != on.pixelColor(*middle)


def test_a_progress_bar_counts_nothing_before_its_job(qtbot):
    from engine.core.progress import Progress
    from gui.widgets.common import ProgressRow

    row = ProgressRow()
    qtbot.addWidget(row)
    assert row.bar.text() == ""  # not "0 / 1" before anything started
    row.started(5)
    assert row.bar.text() == "0 / 5"
    row.update(Progress(done=2, total=5))
    assert row.bar.text() == "2 / 5"
