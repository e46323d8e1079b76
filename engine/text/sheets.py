"""Cells for spreadsheets that a spreadsheet never runs as formulas.

Imported data can hold text such as ``=HYPERLINK("http://…")``: written raw into a CSV or
an XLSX cell, a spreadsheet runs it. Following OWASP's guidance on CSV injection, text that
begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written as text: a CSV
cell gets a leading ``'``, an XLSX cell is stored as a string (never a formula). Numbers,
negative ones included, stay numbers.

>>> [csv_cell(v) for v in ("=1+2", "-3.5", -3.5, "@SUM(A1)", "plain")]
["'=1+2", '-3.5', -3.5, "'@SUM(A1)", 'plain']
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from openpyxl.worksheet.worksheet import Worksheet

#: What a cell a spreadsheet would run as a formula begins with (OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def formula_like(value: object) -> TypeGuard[str]:
    """Whether ``value`` is text a spreadsheet would read as a formula (a plain number
    written as text, ``-3.5``, is not)."""
    return (
        isinstance(value, str)
        and value.startswith(FORMULA_STARTS)
        and not _PLAIN_NUMBER.fullmatch(value)
    )


def csv_cell(value: object) -> object:
    """``value`` as a CSV cell: formula-like text behind a ``'``, anything else as it is."""
    return f"'{value}" if formula_like(value) else value


def csv_text(rows: Iterable[Sequence[object]], lineterminator: str = "\r\n") -> str:
    """``rows`` as CSV text, each cell through :func:`csv_cell` (None is an empty cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=lineterminator)
    writer.writerows([csv_cell(c) for c in row] for row in rows)
    return out.getvalue()


def append_row(sheet: Worksheet, values: Sequence[object]) -> None:
    """Append ``values`` as a row of an openpyxl sheet; formula-like text is stored as a
    string cell shown as text (openpyxl would otherwise write any text starting with ``=``
    as a live formula)."""
    from openpyxl.cell.cell import Cell

    cells: list[object] = []
    for value in values:
        if formula_like(value):
            cell = Cell(sheet)  # type: ignore[call-arg]  # the stubs miss row and column's defaults
            cell.value = value
            cell.data_type = "s"
            cell.quotePrefix = True
            cells.append(cell)
        else:
            cells.append(value)
    sheet.append(cells)
