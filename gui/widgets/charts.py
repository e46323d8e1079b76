"""QtCharts helpers: scores over time and bars by category, in the app's colours; and a
figure drawn elsewhere (matplotlib's PNG) shown whole at any window size."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

from PySide6.QtCharts import (
    QAbstractBarSeries,
    QBarCategoryAxis,
    QBarSeries,
    QBarSet,
    QChart,
    QChartView,
    QDateTimeAxis,
    QHorizontalBarSeries,
    QLineSeries,
    QScatterSeries,
    QStackedBarSeries,
    QValueAxis,
)
from PySide6.QtCore import QDateTime, QMargins, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QPixmap, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy

from engine.text.columns import fmt_number

PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#4b5563"]


def _chart(title: str) -> QChart:
    chart = QChart()
    chart.setTitle(title)
    font = QFont()
    font.setPointSizeF(10.5)
    font.setBold(True)
    chart.setTitleFont(font)
    chart.setBackgroundRoundness(8)
    chart.setMargins(QMargins(6, 6, 6, 6))
    chart.legend().setAlignment(Qt.AlignmentFlag.AlignBottom)
    chart.setAnimationOptions(QChart.AnimationOption.NoAnimation)
    return chart


class ChartView(QChartView):
    """A chart view that blends into the white card it sits in."""

    def setChart(self, chart: QChart) -> None:  # noqa: N802 - Qt's name
        chart.setBackgroundBrush(QColor("#ffffff"))
        chart.setBackgroundRoundness(0)
        chart.setMargins(QMargins(0, 0, 0, 0))
        super().setChart(chart)


def view(chart: QChart | None = None) -> QChartView:
    v = ChartView()
    v.setChart(chart or _chart(""))
    v.setRenderHint(QPainter.RenderHint.Antialiasing)
    v.setMinimumHeight(200)
    v.setBackgroundBrush(QColor("#ffffff"))
    v.setStyleSheet("QGraphicsView { border: none; background: #ffffff; }")
    return v


def nice_axis(axis: QValueAxis, top: float, ticks: int = 5) -> None:
    """Range ``axis`` from 0 to a round number at or above ``top``, with ticks at round
    steps (1, 2 or 5 times a power of ten) so every label stands at its own value."""
    raw = max(top, 1e-9) / max(1, ticks - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    axis.setRange(0, step * math.ceil(top / step) if top > 0 else step)
    axis.setTickType(QValueAxis.TickType.TicksDynamic)
    axis.setTickAnchor(0)
    axis.setTickInterval(step)
    axis.setLabelFormat("%d" if step >= 1 else f"%.{max(0, -math.floor(math.log10(step)))}f")


def date_format(span_s: float) -> str:
    """A date-time label format fine enough that ticks over ``span_s`` seconds differ."""
    if span_s < 10 * 60:
        return "HH:mm:ss"
    if span_s < 24 * 3600:
        return "d MMM HH:mm"
    return "d MMM yyyy"


def _percent_axis(title: str = "Score (%)") -> QValueAxis:
    axis = QValueAxis()
    axis.setRange(0, 100)
    axis.setTickType(QValueAxis.TickType.TicksDynamic)
    axis.setTickAnchor(0)
    axis.setTickInterval(20)
    axis.setLabelFormat("%d")
    axis.setTitleText(title)
    return axis


def scores_over_time(series: dict[str, list[tuple[datetime, float]]], title: str) -> QChart:
    """One line per name: ``(when, score %)`` points, sorted by time."""
    chart = _chart(title)
    points = [p for pts in series.values() for p in pts]
    if not points:
        chart.setTitle(f"{title} — no scored runs yet")
        return chart
    x = QDateTimeAxis()
    x.setTitleText("Started")
    y = _percent_axis()
    chart.addAxis(x, Qt.AlignmentFlag.AlignBottom)
    chart.addAxis(y, Qt.AlignmentFlag.AlignLeft)
    for i, (name, pts) in enumerate(sorted(series.items())):
        colour = QColor(PALETTE[i % len(PALETTE)])
        line = QLineSeries()
        line.setName(name)
        line.setPen(QPen(colour, 2))
        dots = QScatterSeries()
        dots.setColor(colour)
        dots.setBorderColor(colour)
        dots.setMarkerSize(8)
        for when, score in sorted(pts):
            ms = QDateTime(when).toMSecsSinceEpoch()
            line.append(ms, score)
            dots.append(ms, score)
        for s in (line, dots):
            chart.addSeries(s)
            s.attachAxis(x)
            s.attachAxis(y)
        chart.legend().markers(dots)[0].setVisible(False)
    lo = min(p[0] for p in points)
    hi = max(p[0] for p in points)
    if lo == hi:
        lo, hi = lo - timedelta(hours=1), hi + timedelta(hours=1)
    pad = (hi - lo) * 0.04
    x.setRange(QDateTime(lo - pad), QDateTime(hi + pad))
    x.setFormat(date_format((hi - lo + 2 * pad).total_seconds()))
    y.setRange(-4, 104)
    x.setTickCount(min(6, max(2, len({p[0] for p in points}))))
    return chart


def add_bars(
    chart: QChart,
    series: QAbstractBarSeries,
    labels: list[str],
    values: QValueAxis,
    horizontal: bool = False,
) -> QBarCategoryAxis:
    """Put ``series`` on ``chart``, a bar per label of the category axis (returned) along
    the bottom (the left when ``horizontal``), its values on ``values`` beside it."""
    chart.addSeries(series)
    cats = QBarCategoryAxis()
    cats.append(labels)
    bottom, left = Qt.AlignmentFlag.AlignBottom, Qt.AlignmentFlag.AlignLeft
    chart.addAxis(cats, left if horizontal else bottom)
    chart.addAxis(values, bottom if horizontal else left)
    series.attachAxis(cats)
    series.attachAxis(values)
    return cats


def bars(
    rows: Sequence[tuple[str, float, int]],
    title: str,
    horizontal: bool = True,
    mark: float | None = None,
) -> QChart:
    """A bar per ``(label, value %, n)``; the value and ``n`` are shown in the label (so a
    0% bar, which has no length, still reads as 0%)."""
    chart = _chart(title)
    if not rows:
        chart.setTitle(f"{title} — nothing to show")
        return chart
    bar_set = QBarSet("Score")
    bar_set.setColor(QColor(PALETTE[0]))
    bar_set.setBorderColor(QColor(PALETTE[0]))
    labels = []
    for label, value, n in rows:
        bar_set.append(float(value))
        shown = f"{fmt_number(value, unit='%')}%" + (f" · n={n}" if n else "")
        labels.append(f"{label}<br>{shown}")
    series: QAbstractBarSeries = QHorizontalBarSeries() if horizontal else QBarSeries()
    series.append(bar_set)
    series.setBarWidth(0.6)
    vals = _percent_axis()
    add_bars(chart, series, labels, vals, horizontal)
    chart.legend().setVisible(False)
    if mark is not None:
        line = QLineSeries()
        line.setName("Pass mark")
        line.setPen(QPen(QColor("#dc2626"), 2, Qt.PenStyle.DashLine))
        # a vertical (or horizontal) reference line across the category range
        if horizontal:
            line.append(mark, -0.5)
            line.append(mark, len(rows) - 0.5)
        else:
            line.append(-0.5, mark)
            line.append(len(rows) - 0.5, mark)
        chart.addSeries(line)
        ax = QValueAxis()
        ax.setRange(-0.5, len(rows) - 0.5)
        ax.setVisible(False)
        chart.addAxis(ax, Qt.AlignmentFlag.AlignRight if horizontal else Qt.AlignmentFlag.AlignTop)
        line.attachAxis(vals)
        line.attachAxis(ax)
    return chart


def seconds_per_question(rows: Sequence[tuple[float, bool]]) -> QChart:
    """A bar per question, ``(seconds, right)``: green when right, red when wrong or
    skipped; the seconds axis at round steps."""
    chart = _chart("Seconds")
    if not rows:
        return chart
    ok = QBarSet("Right")
    ok.setColor(QColor("#16a34a"))
    bad = QBarSet("Wrong or skipped")
    bad.setColor(QColor("#dc2626"))
    for seconds, right in rows:
        ok.append(seconds if right else 0.0)
        bad.append(0.0 if right else seconds)
    series = QStackedBarSeries()  # one bar per question, on its tick (one set is 0 there)
    series.append(ok)
    series.append(bad)
    series.setBarWidth(0.8)
    y = QValueAxis()
    nice_axis(y, max(seconds for seconds, _right in rows))
    add_bars(chart, series, [str(i) for i in range(1, len(rows) + 1)], y)
    return chart


class FittedImage(QLabel):
    """A drawn figure shown whole, never cut at an edge: scaled down (its proportions kept,
    never blown up past the size it was drawn at) to the label's size as it is resized; with
    ``fit_height=False`` to its width only, the label then as tall as the figure shown (for
    figures stacked in a scrolling column)."""

    def __init__(self, fit_height: bool = True) -> None:
        super().__init__()
        self.fit_height = fit_height
        self.image = QPixmap()
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(1, 1)
        ignored = QSizePolicy.Policy.Ignored
        self.setSizePolicy(ignored, ignored if fit_height else QSizePolicy.Policy.Preferred)

    def show_png(self, png: bytes) -> None:
        image = QPixmap()
        image.loadFromData(png, "PNG")
        self.show_image(image)

    def show_image(self, image: QPixmap) -> None:
        self.image = image
        self._fit()

    def clear(self) -> None:
        self.image = QPixmap()
        self.setMinimumHeight(1)
        super().clear()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        if self.image.isNull():
            return
        room = self.contentsRect().size()
        width = min(self.image.width(), max(room.width(), 1))
        height = min(self.image.height(), max(room.height(), 1)) if self.fit_height else None
        shown = self.image
        if width < self.image.width() or (height is not None and height < self.image.height()):
            shown = (
                self.image.scaledToWidth(width, Qt.TransformationMode.SmoothTransformation)
                if height is None
                else self.image.scaled(
                    width,
                    height,
                    Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation,
                )
            )
        if not self.fit_height:
            self.setMinimumHeight(shown.height())
        self.setPixmap(shown)
