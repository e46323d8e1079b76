"""Plain-text tables that line up in a terminal, Chinese included: widths are display
columns (a CJK character takes two), text is left-aligned and numbers right-aligned. Control
characters in the text (a terminal's escape sequences, BEL, NUL, right-to-left overrides…)
are shown escaped, never sent to the terminal (:func:`visible`; in JSON, as JSON's escapes:
:func:`visible_json`).

>>> print("\\n".join(align_rows(["Data set", "n"], [["华法林", "12"], ["fr-dev", "3"]])))
Data set   n
华法林    12
fr-dev     3
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len

if TYPE_CHECKING:
    from engine.types import JSONValue

#: C0 and C1 controls, DEL, and the marks that reorder text (bidirectional overrides and
#: isolates, line and paragraph separators): what a terminal acts on instead of showing.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_NUMBER = re.compile(r"^[-+−–]?[\d.,]+%?( [\[(].*[\])])?$|^[–—-]$|^\d+/\d+$")
_NUMBER_HEADER = re.compile(r"\((%|points|\d+ right)\)$|\bp$")


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def visible(text: str, newlines: bool = False) -> str:
    """``text`` with every control character written as its escape (``\\x1b``,
    ``\\u202e``), so printing it shows it and the terminal does nothing; ``newlines`` keeps
    line breaks (``\\n``) as they are, for text shown on several lines.

    >>> visible("ab\\x1b]0;title\\x07 \\u202eZ\\nC")
    'ab\\\\x1b]0;title\\\\x07 \\\\u202eZ\\\\nC'
    >>> visible("line 1\\nline 2", newlines=True)
    'line 1\\nline 2'
    """
    if newlines:
        return "\n".join(_CONTROL.sub(_escaped, line) for line in str(text).split("\n"))
    return _CONTROL.sub(_escaped, str(text))


def visible_json(text: str) -> str:
    """JSON text (``json.dumps``'s) with the control characters it leaves as they are (DEL,
    C1, the marks that reorder text) written as JSON escapes: the same JSON, safe to print.
    Its line breaks are kept: inside its strings ``json.dumps`` has escaped them already.

    >>> visible_json('{"name": "a\\u001bb \u202e\x9b"}')
    '{"name": "a\\\\u001bb \\\\u202e\\\\u009b"}'
    """
    return _CONTROL.sub(lambda m: "\n" if m.group() == "\n" else f"\\u{ord(m.group()):04x}", text)


def without_controls(text: str) -> str:
    """``text`` with its control characters (:func:`visible`'s) left out, tabs and line
    breaks as spaces: for one line of text a person typed, to be stored.

    >>> without_controls("ok\\x00\\x1b[31m red\\tcell\\u202e")
    'ok[31m red cell'
    """
    return _CONTROL.sub(lambda m: " " if m.group() in _NAMED else "", str(text))


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide (CJK) characters count two."""
    return cell_len(text)


def short_text(text: str, width: int) -> str:
    """``text`` on one line, its control characters escaped (:func:`visible`), cut with "…"
    to at most ``width`` display columns."""
    text = visible(" ".join(str(text).split()))
    if display_width(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out).rstrip() + "…"


def pad(text: str, width: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` display columns (on the left if ``right``)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def fmt_number(value: JSONValue, missing: str = "–", unit: str = "") -> str:
    """A value in words: ``missing`` for none, yes/no, three decimals below 1, else one
    (zero as ``0.0``, as a score of 0% beside 100.0). A ``unit`` fixes the precision: ``"%"``
    (a percentage, or points of one) one decimal, ``"p"`` (a p-value) three, so a column or a
    line of the same kind of number reads the same (see :func:`number_unit`).

    >>> [fmt_number(v, unit=u) for v, u in ((0.5, "%"), (1.0, "p"), (0.5, "p"), (0.5, ""))]
    ['0.5', '1.000', '0.500', '0.500']
    """
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and unit in _DIGITS:
        return f"{value:.{_DIGITS[unit]}f}"
    if isinstance(value, float):
        if value == 0:
            return "0.0"
        return f"{value:.3f}" if abs(value) < 1 else f"{value:.1f}"
    return str(value)


_DIGITS = {"%": 1, "p": 3}


def number_unit(header: str) -> str:
    """The unit a column header or a label names, for :func:`fmt_number`: ``"%"`` for a
    percentage or points ("Accuracy (%)", "Accuracy B − A (points)"), ``"p"`` for a p-value
    ("McNemar p"), else ``""``.

    >>> [number_unit(h) for h in ("Accuracy (%)", "McNemar p", "Items")]
    ['%', 'p', '']
    """
    found = _NUMBER_HEADER.search(header.strip())
    if not found:
        return ""
    if found.group().endswith("p"):
        return "p"
    return "%" if found.group() in ("(%)", "(points)") else ""


def numeric(text: str) -> bool:
    """Whether a cell reads as a number ("45.2", "66.7%", "–", "45.2 [38.1, 52.4]", "3/5").

    >>> [numeric(x) for x in ("45.2", "–", "12/14", "54.7 (12)", "cpe-test", "2024")]
    [True, True, True, True, False, True]
    """
    return bool(_NUMBER.match(text.strip()))


def numeric_header(header: str) -> bool:
    """Whether a column header names a number: a unit in brackets ("Hamming (%)", "Accuracy
    B − A (points)", "EMR (3 right)") or a p-value ("Bootstrap p").

    >>> [numeric_header(h) for h in ("Own passage retrieved (%)", "Bootstrap p", "Model")]
    [True, True, False]
    """
    return bool(_NUMBER_HEADER.search(header.strip()))


def numeric_columns(
    rows: Sequence[Sequence[str]], n_columns: int, headers: Sequence[str] | None = None
) -> list[bool]:
    """For each column, whether every non-empty cell is a number; a column of only dashes or
    blanks is numeric when its header names a number (see :func:`numeric_header`)."""
    out = []
    for i in range(n_columns):
        cells = [r[i] for r in rows if i < len(r) and r[i].strip()]
        if any(c[:1].isdigit() for c in cells):
            out.append(all(numeric(c) for c in cells))
        else:
            known = all(numeric(c) for c in cells)  # dashes only, or nothing
            out.append(known and headers is not None and numeric_header(headers[i]))
    return out


def align_rows(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Sequence[bool] | None = None,
    gap: str = "  ",
) -> list[str]:
    """The header and the rows as lines of padded columns, control characters escaped
    (:func:`visible`); ``right`` says which columns are right-aligned (default: the numeric
    ones, see :func:`numeric_columns`)."""
    headers = [visible(h) for h in headers]
    rows = [[visible(c) for c in r] for r in rows]
    right = list(right) if right is not None else numeric_columns(rows, len(headers), headers)
    widths = [
        max([display_width(h), *(display_width(r[i]) for r in rows)]) for i, h in enumerate(headers)
    ]
    lines = []
    for row in [list(headers), *(list(r) for r in rows)]:
        cells = [pad(c, w, r) for c, w, r in zip(row, widths, right, strict=True)]
        lines.append(gap.join(cells).rstrip())
    return lines


def markdown_rule(right: Sequence[bool]) -> str:
    """The Markdown line under a table's header: ``---`` for text, ``---:`` for numbers."""
    return "|" + "|".join("---:" if r else "---" for r in right) + "|"
