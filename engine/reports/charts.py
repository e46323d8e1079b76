"""A report's charts drawn with matplotlib as inline SVG (no file, no network).

Two kinds: ``interval`` (each run's score with its 95% interval) and ``reliability`` (mean
confidence against the share right, per confidence bin, for ``logprob`` runs). Every text is
drawn as it is written: a ``$`` in a model's name is a dollar sign, never math markup.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

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


def chart_svg(chart: Chart) -> str:
    """The SVG text of one chart of a report section ("" when it has nothing to draw)."""
    import matplotlib

    draw = {"interval": interval_svg, "reliability": reliability_svg}.get(chart["kind"])
    if draw is None:
        raise ValueError(f"unknown chart kind {chart['kind']!r}")
    if not chart["points" if chart["kind"] == "interval" else "series"]:
        return ""
    with matplotlib.rc_context({"text.parse_math": False}):  # names are text, not math
        return draw(chart)
