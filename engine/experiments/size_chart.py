"""The quality-per-size chart of a comparison (:mod:`engine.experiments.compare`): each
model run's file size against its first score with that score's 95% interval, drawn with
matplotlib as SVG (reports) or PNG (the app).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import UnknownFormat

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from engine.types import JSONDict


def size_chart(result: JSONDict) -> JSONDict:
    """Quality per size: each model run's file size (bytes) against its first metric with
    its interval (``{title, axis, points}``; no point for a run whose size is unknown)."""
    lead = result["metrics"][0] if result["metrics"] else None
    points = []
    for row in result["rows"]:
        cell = (row["scores"] or {}).get(lead["key"]) if lead else None
        if cell is None or not row.get("file_size"):
            continue
        quant = f" {row['quantization']}" if row.get("quantization") else ""
        points.append({"name": f"{row['model']}{quant}", "size": row["file_size"], **cell})
    axis = f"{lead['label']}{' (%)' if lead and lead['percent'] else ''}" if lead else ""
    return {"title": f"{axis} against file size", "axis": axis, "points": points}


def size_svg(chart: JSONDict) -> str:
    """The quality-per-size chart as SVG text (matplotlib, as the reports draw): each model
    a point at its file size (MiB, log scale) with its score's 95% interval; points are not
    joined, as different models make no trend. "" without a point."""
    return drawn_size(chart, "svg").decode("utf-8")


def size_png(chart: JSONDict) -> bytes:
    """The quality-per-size chart as PNG bytes (as the app shows it); b"" without a point."""
    return drawn_size(chart, "png")


#: The formats the quality-per-size chart is written in, by a file's suffix.
CHART_SUFFIXES = {".svg": "svg", ".png": "png"}


def chart_format(path: str | Path) -> str:
    """The format a chart file's suffix names (``svg`` or ``png``); :class:`UnknownFormat`
    for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in CHART_SUFFIXES:
        given = f"a {suffix} file" if suffix else "a file without a suffix"
        raise UnknownFormat(
            f"the chart is written as SVG or PNG, not {given}: name a .svg or .png file"
        )
    return CHART_SUFFIXES[suffix]


def drawn_size(chart: JSONDict, kind: str) -> bytes:
    """The quality-per-size chart (:func:`size_svg`) as the bytes of a ``kind`` file (a
    format of :data:`CHART_SUFFIXES`); b"" without a point."""
    import io

    import matplotlib

    from engine.reports.charts import drawable

    if not chart["points"]:
        return b""
    with matplotlib.rc_context({"text.parse_math": False}):  # names are text, not math
        fig = _size_figure(drawable(chart))
        if kind == "svg":
            from engine.reports.charts import svg

            return svg(fig).encode("utf-8")
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=90)
        return out.getvalue()


def _size_figure(chart: JSONDict) -> Figure:
    from engine.reports.charts import figure

    points = chart["points"]
    fig = figure(3.8)
    ax = fig.add_subplot()
    for p in points:
        x = p["size"] / 2**20
        low = p["value"] - p["low"] if p.get("low") is not None else 0
        high = p["high"] - p["value"] if p.get("high") is not None else 0
        ax.errorbar([x], [p["value"]], yerr=[[low], [high]], fmt="o", capsize=4, color="#1d4ed8")
        ax.annotate(p["name"], (x, p["value"]), textcoords="offset points", xytext=(6, 4),
                    fontsize=8)  # fmt: skip
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log")
    plain = FuncFormatter(lambda v, _pos: f"{v:g}")  # 100, 200: no math text
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.margins(x=0.3)
    if chart["axis"].endswith("(%)"):
        ax.set_ylim(0, 100)
    ax.set_xlabel("File size (MiB)")
    ax.set_ylabel(chart["axis"])
    ax.grid(color="#e5e7eb")
    ax.set_title(chart["title"], fontsize=10)
    return fig
