"""The exam's reliability diagram of ``logprob`` runs: per confidence bin, the mean
confidence of the chosen letters against the share right, drawn as the report's
``reliability`` chart (registered with ``@register("chart", name="reliability")``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.registry import register
from engine.reports.charts import figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from engine.reports.shapes import Chart, ReliabilityBin


def reliability_bins(
    confidences: Sequence[float], correct: Sequence[bool], bins: int = 10
) -> list[ReliabilityBin]:
    """The points of a reliability diagram: for each non-empty equal-width confidence bin,
    ``{low, high, n, confidence, accuracy}`` (mean confidence and share right, 0–1)."""
    groups: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for conf, ok in zip(confidences, correct, strict=True):
        groups[min(int(conf * bins), bins - 1)].append((conf, bool(ok)))
    return [
        {
            "low": i / bins,
            "high": (i + 1) / bins,
            "n": len(g),
            "confidence": math.fsum(c for c, _ in g) / len(g),
            "accuracy": sum(ok for _, ok in g) / len(g),
        }
        for i, g in enumerate(groups)
        if g
    ]


@register("chart", name="reliability")
def reliability_figure(chart: Chart) -> Figure:
    """A reliability diagram: each series' bins, mean confidence against the share right."""
    fig = figure(4.2)
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
    return fig
