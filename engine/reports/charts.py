"""A report's charts drawn with matplotlib as inline SVG or PNG (no file, no network).

Two kinds every activity may use: ``interval`` (each run's score with its 95% interval) and
``lines`` (a score against a number, one line per series, each point with its 95% interval,
a panel per ``panel`` of the series, the ticks named by ``x_labels`` where it has them: an
experiment's figures, :mod:`engine.reports.experiment`); an activity registers the kinds
only its sections draw, each a :class:`Drawing` registered with ``@register("chart",
name=KIND)`` over the function drawing its figure (:func:`engine.registry.register`: the
exam's reliability diagram, :mod:`engine.exam.reliability`). Every text is
drawn as it is written: a ``$`` in a model's name is a dollar sign, never math markup.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.registry import get, register

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from engine.reports.shapes import Chart

WIDTH_IN = 7.0
ROW_IN = 0.42


def figure(height: float) -> Figure:
    """A figure of the report's width and ``height`` inches."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH_IN, height), layout="constrained")


def svg(fig: Figure) -> str:
    """The SVG text of ``fig``, to be put inline in a page."""
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg") :]


def png(fig: Figure, dpi: int = 150) -> bytes:
    """The PNG bytes of ``fig``."""
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=dpi)
    return out.getvalue()


@dataclass(frozen=True)
class Drawing:
    """A kind of chart (``name``: a chart's ``kind``) and what draws its matplotlib figure."""

    name: str
    draw: Callable[[Chart], Figure]

    @classmethod
    def from_function(cls, function: Callable[[Chart], Figure], name: str) -> Drawing:
        """The charts of kind ``name`` drawn by ``function``."""
        return cls(name, function)


@register("chart", name="interval")
def interval_figure(chart: Chart) -> Figure:
    points = chart["points"]
    fig = figure(1.2 + ROW_IN * len(points))
    ax = fig.add_subplot()
    ys = list(range(len(points)))[::-1]
    values = [p["value"] for p in points]
    low = [_gap(p["value"], p.get("low")) for p in points]
    high = [_gap(p.get("high"), p["value"]) for p in points]
    style: dict[str, Any] = {
        "fmt": "o",
        "color": "#1d4ed8",
        "ecolor": "#93c5fd",
        "elinewidth": 3,
        "capsize": 4,
    }
    # matplotlib draws a None value as missing; its stubs want numbers
    ax.errorbar(values, ys, xerr=[low, high], **style)  # type: ignore[arg-type]
    ax.set_yticks(ys, [p["name"] for p in points], fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.7, len(points) - 0.3)
    ax.set_xlabel(chart["axis"])
    ax.grid(axis="x", color="#e5e7eb")
    ax.set_title(chart["title"], fontsize=10)
    return fig


def chance_line(ax: Axes, level: float | None) -> None:
    """The chance level of a score (percent, :mod:`engine.core.chance`) as a dashed line
    across ``ax``, named in its legend with the level; nothing without one."""
    from engine.text.columns import fmt_number

    if level is None:
        return
    label = f"chance ({fmt_number(level, unit='%')}%)"
    ax.axhline(level, linestyle="--", linewidth=1.2, color="#6b7280", label=label)


def _gap(top: float | None, bottom: float | None) -> float:
    """An error bar's length: 0 without both ends."""
    return top - bottom if top is not None and bottom is not None else 0


@register("chart", name="lines")
def lines_figure(chart: Chart) -> Figure:
    """The figure of a ``lines`` chart: ``series`` of ``{name, panel, dashed, points}``, each
    point ``{x, value, low, high}``; x ``x_axis``, y ``axis`` (0–100)."""
    series: list[Any] = list(chart.get("series") or [])
    panels = list(dict.fromkeys(str(s.get("panel") or "") for s in series))
    fig = figure(4.2)
    fig.set_figwidth(max(WIDTH_IN, 4.2 * len(panels)))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    ticks = sorted({p["x"] for s in series for p in s["points"]})
    gap = min((b - a for a, b in zip(ticks, ticks[1:], strict=False)), default=1)
    labels = chart.get("x_labels") or {}
    names = list(dict.fromkeys(str(s["name"]) for s in series))  # a series' colour in every panel
    for ax, panel in zip(axes, panels, strict=True):
        shown = [s for s in series if str(s.get("panel") or "") == panel]
        for i, s in enumerate(shown):
            points = sorted(s["points"], key=lambda p: p["x"])
            dodge = (i - (len(shown) - 1) / 2) * 0.06 * max(gap, 1)  # side by side, not on top
            xs = [p["x"] + dodge for p in points]
            ys = [p["value"] for p in points]
            low = [p["value"] - p["low"] if p.get("low") is not None else 0 for p in points]
            high = [p["high"] - p["value"] if p.get("high") is not None else 0 for p in points]
            style = "--" if s.get("dashed") else "-"
            color = f"C{names.index(str(s['name'])) % 10}"
            ax.errorbar(xs, ys, yerr=[low, high], fmt="o" + style, capsize=3, label=s["name"],
                        color=color)  # fmt: skip
        ax.set_xticks(ticks, [str(labels.get(str(t), t)) for t in ticks])
        ax.set_ylim(0, 100)
        ax.set_xlabel(chart.get("x_axis", ""))
        ax.grid(color="#e5e7eb")
        ax.legend(fontsize=7, loc="best")
        if panel:
            ax.set_title(panel, fontsize=9)
    axes[0].set_ylabel(chart.get("axis", ""))
    fig.suptitle(chart["title"], fontsize=10)
    return fig


def drawable(value: Any) -> Any:
    """``value`` (a chart, or any part of one) with the control characters of its texts
    escaped (:func:`engine.text.columns.visible`): drawn as ``\\x1b``, where a font has no
    glyph for them (and matplotlib would warn, printing them raw)."""
    from engine.text.columns import visible

    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {drawable(k): drawable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [drawable(v) for v in value]
    return value


def chart_figure(chart: Chart) -> Figure | None:
    """The figure of one chart of a report section (None when it has nothing to draw)."""
    import matplotlib

    draw = get("chart", chart["kind"]).draw
    if not chart["points" if chart["kind"] == "interval" else "series"]:
        return None
    with matplotlib.rc_context({"text.parse_math": False}):  # names are text, not math
        return draw(drawable(chart))


def chart_svg(chart: Chart) -> str:
    """The SVG text of one chart of a report section ("" when it has nothing to draw)."""
    fig = chart_figure(chart)
    return "" if fig is None else svg(fig)


def chart_png(chart: Chart, dpi: int = 150) -> bytes:
    """The PNG bytes of one chart of a report section (b"" when it has nothing to draw)."""
    fig = chart_figure(chart)
    return b"" if fig is None else png(fig, dpi)
