"""A report (see :func:`engine.reports.build_report`) as text, Markdown, CSV, JSON or one
self-contained HTML page (inline styles and SVG charts, nothing fetched)."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.errors import UnknownFormat
from engine.reports.stats import TOO_FEW
from engine.text.columns import fmt_number, markdown_rule, number_unit, numeric_header, visible
from engine.text.sheets import csv_text

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Report, ScoreCell, Table
    from engine.types import JSONValue

FORMATS = ("text", "md", "csv", "html", "json")


def fmt_together(*values: JSONValue) -> list[str]:
    """Numbers shown together (a score and its interval) in one precision: three decimals
    when none is beyond 1 (a fraction and its interval), else one decimal each
    (``4.9 [0.1, 35.8]``, never ``4.9 [0.100, 35.8]``)."""
    floats = [v for v in values if isinstance(v, float)]
    digits = 3 if all(abs(v) <= 1 for v in floats) else 1
    return [f"{v:.{digits}f}" if isinstance(v, float) else fmt_number(v) for v in values]


def _value_and_interval(cell: ScoreCell, unit: str = "") -> tuple[str, str]:
    """A score cell's value and its ``[low, high]`` ("" without one), in one precision."""
    if cell.get("low") is None or cell.get("high") is None:
        return fmt_number(cell.get("value"), unit=unit), ""
    value, low, high = fmt_together(cell.get("value"), cell["low"], cell["high"])
    return value, f"[{low}, {high}]"


def fmt_cell(cell: Cell, unit: str = "") -> str:
    """A cell in words: ``45.2 [38.1, 52.4]`` for a score with its interval, ``54.7 (12)``
    for a score over ``n`` items, ``25.0 [too few items]`` for one from too few items for
    an interval, ``–`` for none; ``unit`` is its column's (:func:`number_unit`: a p-value
    always with three decimals, a percentage with one)."""
    if isinstance(cell, dict):
        text, interval = _value_and_interval(cell, unit)
        if interval:
            text += f" {interval}"
        elif cell.get("too_few"):
            text += f" [{TOO_FEW}]"
        if cell.get("n") is not None:
            text += f" ({cell['n']})"
        return text
    return fmt_number(cell, unit=unit)


def _row_cells(t: Table, row: list[Cell]) -> list[str]:
    """A table row's cells in words, each in its column's unit."""
    return [fmt_cell(c, number_unit(h)) for c, h in zip(row, t["columns"], strict=True)]


def _all_tables(report: Report) -> list[tuple[str, Table]]:
    """``(section name, table)`` for every table, the runs overview first."""
    out = [("Runs", report["overview"])]
    for section in report["sections"]:
        out += [(section["name"], t) for t in section["tables"]]
    return out


# -- text and Markdown ---------------------------------------------------------------------


def to_text(report: Report, width: int = 160) -> str:
    """The report as plain text tables; names and titles are printed as they are written
    (no console markup), their control characters escaped."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    def text(value: str) -> Text:
        return Text(visible(value))

    out = io.StringIO()
    console = Console(file=out, width=width, no_color=True, highlight=False)
    console.print(text(f"{report['title']} · {report['created']}"))
    current = None
    for section, t in _all_tables(report):
        if section != current:
            console.print()
            console.print(text(f"== {section} =="))
            current = section
        grid = Table(title=text(t["title"]), box=box.SIMPLE_HEAD, title_justify="left")
        for col, number in zip(t["columns"], _number_columns(t), strict=True):
            grid.add_column(text(col), justify="right" if number else "left", overflow="fold")
        for row in t["rows"]:
            grid.add_row(*(text(c) for c in _row_cells(t, row)))
        console.print(grid)
        for note in t["notes"]:
            console.print(text(note), style="dim")
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _number_columns(t: Table) -> list[bool]:
    """For each column of a table, whether it holds numbers (or scores), not words; a column
    with no values at all is numeric when its header names a number ("Bootstrap p")."""
    out = []
    for i, header in enumerate(t["columns"]):
        cells = [row[i] for row in t["rows"] if row[i] is not None]
        if cells:
            out.append(not all(isinstance(c, str) for c in cells))
        else:
            out.append(numeric_header(header))
    return out


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report) -> str:
    lines = [f"# {report['title']}", "", f"Made {report['created']}.", ""]
    current = None
    for section, t in _all_tables(report):
        if section != current:
            lines += [f"## {section}", ""]
            current = section
        lines += [f"### {t['title']}", ""]
        lines.append("| " + " | ".join(_md_escape(c) for c in t["columns"]) + " |")
        lines.append(markdown_rule(_number_columns(t)))
        for row in t["rows"]:
            lines.append("| " + " | ".join(_md_escape(c) for c in _row_cells(t, row)) + " |")
        lines.append("")
        lines += [f"*{_md_escape(n)}*" for n in t["notes"]]
        lines.append("")
    return "\n".join(lines)


# -- CSV and JSON --------------------------------------------------------------------------

_PARTS = (("low", "95% low"), ("high", "95% high"), ("n", "n"))


def _csv_columns(t: Table) -> list[tuple[int, str | None, str]]:
    """``(column index, part of a dict cell or None, header)``: a column holding intervals
    or counts gets one more column for each part, so every number stands alone."""
    out: list[tuple[int, str | None, str]] = []
    for i, col in enumerate(t["columns"]):
        cells = [c for row in t["rows"] if isinstance(c := row[i], dict)]
        out.append((i, "value" if cells else None, col))
        for part, name in _PARTS:
            if any(c.get(part) is not None for c in cells):
                out.append((i, part, f"{col} {name}"))
    return out


def to_csv(report: Report) -> str:
    """Every table one after the other: a row with its title, its header row, its rows and
    an empty row. Numbers are plain numbers (intervals and counts in columns of their own);
    text a spreadsheet would run as a formula is written as text."""
    lines: list[list[object]] = []
    for section, t in _all_tables(report):
        columns = _csv_columns(t)
        lines.append([f"{section}: {t['title']}"])
        lines.append([name for _, _, name in columns])
        for row in t["rows"]:
            cells = []
            for i, part, _name in columns:
                cell = row[i]
                cells.append(cell.get(part) if isinstance(cell, dict) and part else cell)
            lines.append(["" if c is None else c for c in cells])
        lines.append([])
    return csv_text(lines)


def to_json(report: Report) -> str:
    return json.dumps(report, ensure_ascii=False, indent=2, default=str) + "\n"


# -- HTML ----------------------------------------------------------------------------------

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC",
       sans-serif; color: #111827; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.2rem; border-bottom: 2px solid #e5e7eb; padding-bottom: 0.2rem;
     margin-top: 2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 0.4rem; }
.meta, .note { color: #6b7280; font-size: 0.85rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.3rem 0; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e5e7eb; vertical-align: top; }
th { background: #f3f4f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.ci { color: #6b7280; font-size: 0.8rem; }
figure { margin: 0.8rem 0; }
figure svg { max-width: 100%; height: auto; }
@media print {
  body { margin: 0; max-width: none; }
  h2 { break-after: avoid; }
  table, figure { break-inside: avoid; }
}
"""


def _html_cell(cell: Cell, unit: str = "") -> str:
    if isinstance(cell, dict):
        value, ci = _value_and_interval(cell, unit)
        body = html.escape(value)
        if ci:
            body += f" <span class='ci'>{html.escape(ci)}</span>"
        elif cell.get("too_few"):
            body += f" <span class='ci'>[{TOO_FEW}]</span>"
        if cell.get("n") is not None:
            body += f" <span class='ci'>({cell['n']})</span>"
        return f"<td class='num'>{body}</td>"
    if isinstance(cell, int | float) or cell is None:
        return f"<td class='num'>{html.escape(fmt_number(cell, unit=unit))}</td>"
    return f"<td>{html.escape(str(cell))}</td>"


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t["columns"])
    units = [number_unit(h) for h in t["columns"]]
    body = "".join(
        "<tr>" + "".join(_html_cell(c, u) for c, u in zip(row, units, strict=True)) + "</tr>"
        for row in t["rows"]
    )
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in t["notes"])
    return (
        f"<h3>{html.escape(t['title'])}</h3><table cellpadding='4' cellspacing='0'>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}"
    )


def to_html(report: Report, charts: bool = True) -> str:
    """The report as one HTML page; ``charts=False`` leaves the charts out (for a viewer
    that shows tables only)."""

    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(report['title'])}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(report['title'])}</h1>",
        f"<p class='meta'>Made {html.escape(report['created'])} by medexam.</p>",
        "<h2>Runs</h2>",
        _html_table(report["overview"]),
    ]
    for section in report["sections"]:
        parts.append(f"<h2>{html.escape(section['name'])}</h2>")
        parts += [_html_table(t) for t in section["tables"]]
        from engine.reports.diff import sides_html

        parts += [sides_html(found) for found in section.get("sides", [])]
        for chart in section["charts"] if charts else []:
            from engine.reports.charts import chart_svg

            svg = chart_svg(chart)
            if svg:
                parts.append(f"<figure>{svg}</figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": to_text,
    "md": to_markdown,
    "csv": to_csv,
    "html": to_html,
    "json": to_json,
}


def render(report: Report, fmt: str = "text") -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`)."""
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise UnknownFormat(
            f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})"
        ) from None
    return renderer(report)
