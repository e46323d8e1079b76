"""What the charts show: every axis label at its own value, dates that tell ticks apart,
and a 0% bar that still reads 0%."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from PySide6.QtCharts import QDateTimeAxis, QValueAxis
from PySide6.QtCore import QDateTime
from PySide6.QtWidgets import QApplication, QGraphicsSimpleTextItem, QGraphicsTextItem

from gui.widgets import charts

pytestmark = pytest.mark.gui


def shown_texts(chart) -> list[str]:
    """The texts the chart draws once laid out in a view."""
    view = charts.view(chart)
    view.resize(640, 360)
    view.show()
    QApplication.processEvents()
    view.grab()
    out = []
    for item in view.scene().items():
        if isinstance(item, QGraphicsTextItem):
            out.append(item.toPlainText())
        elif isinstance(item, QGraphicsSimpleTextItem):
            out.append(item.text())
    view.close()
    return out


def axis(chart, kind):
    return next(a for a in chart.axes() if isinstance(a, kind))


@pytest.mark.parametrize("top", [0.4, 3.2, 4.9, 13.0, 260.0])
def test_seconds_axis_labels_stand_at_their_values(qtbot, top):
    chart = charts.seconds_per_question([(top / 3, True), (top, False)])
    y = axis(chart, QValueAxis)
    step = y.tickInterval()
    assert y.tickType() == QValueAxis.TickType.TicksDynamic and y.tickAnchor() == 0
    assert y.max() >= top and (y.max() / step) == pytest.approx(round(y.max() / step))
    assert 2 <= round(y.max() / step) <= 6
    labels = [y.labelFormat() % (i * step) for i in range(round(y.max() / step) + 1)]
    assert len(set(labels)) == len(labels)  # "%d" of 1.25, 2.5… would repeat or lie
    assert [float(x) for x in labels] == pytest.approx([i * step for i in range(len(labels))])


@pytest.mark.parametrize("gap", [timedelta(seconds=20), timedelta(minutes=3), timedelta(days=2)])
def test_scores_over_time_ticks_differ(qtbot, gap):
    start = datetime(2026, 11, 30, 9, 0, 0)
    points = [(start + i * gap, 40.0 + 10 * i) for i in range(3)]
    chart = charts.scores_over_time({"smollm2": points}, "Scores over time")
    x = axis(chart, QDateTimeAxis)
    lo, hi = x.min().toMSecsSinceEpoch(), x.max().toMSecsSinceEpoch()
    n = x.tickCount()
    ticks = [lo + (hi - lo) * i // (n - 1) for i in range(n)]
    labels = [QDateTime.fromMSecsSinceEpoch(t).toString(x.format()) for t in ticks]
    assert len(set(labels)) == len(labels), labels


def test_a_zero_bar_still_reads_zero(qtbot):
    chart = charts.bars([("正向", 0.0, 3), ("反向", 50.0, 2)], "Accuracy (%)")
    texts = shown_texts(chart)
    assert "正向\n0.0% · n=3" in texts and "反向\n50.0% · n=2" in texts


def test_each_seconds_bar_stands_on_its_question(qtbot):
    from PySide6.QtCore import QPointF

    chart = charts.seconds_per_question([(2.0, True), (2.0, False)])
    view = charts.view(chart)
    view.resize(640, 360)
    view.show()
    QApplication.processEvents()
    image = view.grab().toImage()
    series = chart.series()[0]
    y = round(view.mapFromScene(chart.mapToPosition(QPointF(0, 1.0), series)).y())
    for question, colour in ((0, "#16a34a"), (1, "#dc2626")):
        tick = view.mapFromScene(chart.mapToPosition(QPointF(question, 1.0), series)).x()
        xs = [x for x in range(image.width()) if image.pixelColor(x, y).name() == colour]
        assert xs, colour
        assert abs((min(xs) + max(xs)) / 2 - tick) <= 3  # centred on its question's tick
    view.close()
