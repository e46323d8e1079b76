"""A report's charts drawn with matplotlib as inline SVG (no file, no network).

Three kinds: ``interval`` (each run's score with its 95% interval), ``reliability`` (mean
confidence against the share right, per confidence bin, for ``logprob`` runs) and ``lines``
(a score against a number, one line per series, each point with its 95% interval, a panel
per ``panel`` of the series, the ticks named by ``x_labels`` where it has them: an
experiment's figures, :mod:`engine.reports.experiment`). Every text is
drawn as it is written: a ``$`` in a model's name is a dollar sign, never math markup.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from engine.reports.shapes import Chart

WIDTH_IN = 7.0
ROW_IN = 0.42


def _figure(height: float) -> Figure:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH_IN, height), layout="constrained")


def _svg(fig: Figure) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg") :]


def interval_svg(chart: Chart) -> str:
    points = chart["points"]
    fig = _figure(1.2 + ROW_IN * len(points))
    ax = fig.add_subplot()
    ys = list(range(len(points)))[::-1]
    values = [p["value"] for p in points]
    low = [p["value"] - p["low"] if p.get("low") is not None else 0 for p in points]
    high = [p["high"] - p["value"] if p.get("high") is not None else 0 for p in points]
    style = {"fmt": "o", "color": "#1d4ed8", "ecolor": "#93c5fd", "elinewidth": 3, "capsize": 4}
    ax.errorbar(values, ys, xerr=[low, high], **style)
    ax.set_yticks(ys, [p["name"] for p in points], fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.7, len(points) - 0.3)
    ax.set_xlabel(chart["axis"])
    ax.grid(axis="x", color="#e5e7eb")
    ax.set_title(chart["title"], fontsize=10)
    return _svg(fig)


def reliability_svg(chart: Chart) -> str:
    fig = _figure(4.2)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], linestyle="--", color="#9ca3af", label="perfect calibration")
    for s in chart["series"]:
        xs = [b["confidence"] for b in s["bins"]]
        ys = [b["accuracy"] for b in s["bins"]]
        sizes = [12 + 8 * b["n"] for b in s["bins"]]
        line = ax.plot(xs, ys, linewidth=1.2, label=s["name"])[0]
        ax.scatter(xs, ys, s=sizes, color=line.get_color(), alpha=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("Confidence (probability of the chosen letter)")
    ax.set_ylabel("Share right")
    ax.grid(color="#e5e7eb")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(chart["title"] + " (marker size: items in the bin)", fontsize=10)
    return _svg(fig)


def lines_figure(chart: Chart) -> Figure:
    """The figure of a ``lines`` chart: ``series`` of ``{name, panel, dashed, points}``, each
    point ``{x, value, low, high}``; x ``x_axis``, y ``axis`` (0–100)."""
    series: list[Any] = list(chart.get("series") or [])
    panels = list(dict.fromkeys(str(s.get("panel") or "") for s in series))
    fig = _figure(4.2)
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


def lines_svg(chart: Chart) -> str:
    return _svg(lines_figure(chart))


def chart_svg(chart: Chart) -> str:
    """The SVG text of one chart of a report section ("" when it has nothing to draw)."""
    import matplotlib

    draws = {"interval": interval_svg, "reliability": reliability_svg, "lines": lines_svg}
    draw = draws.get(chart["kind"])
    if draw is None:
        raise ValueError(f"unknown chart kind {chart['kind']!r}")
    if not chart["points" if chart["kind"] == "interval" else "series"]:
        return ""
    with matplotlib.rc_context({"text.parse_math": False}):  # names are text, not math
        return draw(chart)
