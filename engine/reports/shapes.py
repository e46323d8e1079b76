"""The shape of a report, as :func:`engine.reports.build_report` makes it and the renderers
read it: plain JSON throughout, typed here so each part says what it holds.

>>> cell: ScoreCell = {"value": 45.2, "low": 38.1, "high": 52.4}
>>> t: Table = {"title": "Accuracy", "columns": ["Run", "Accuracy (%)"],
...             "rows": [["#3", cell]], "notes": []}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, Required, TypeAlias, TypedDict

if TYPE_CHECKING:
    from engine.types import JSONDict, Row, Scalar


class McNemar(TypedDict):
    """McNemar's test of two runs (see :func:`engine.reports.stats.mcnemar`)."""

    only_a: int
    only_b: int
    p_exact: float
    chi2: float | None
    p_chi2: float | None


class PairedBootstrap(TypedDict):
    """The paired bootstrap of two runs' scores (see :func:`engine.reports.stats.paired_bootstrap`);
    ``too_few``: fewer than :data:`engine.reports.stats.MIN_ITEMS` pairs, so no interval nor p."""

    n: int
    diff: float | None
    low: float | None
    high: float | None
    p: float | None
    too_few: bool


class ReliabilityBin(TypedDict):
    """One confidence bin of a reliability diagram
    (:func:`engine.exam.reliability.reliability_bins`)."""

    low: float
    high: float
    n: int
    confidence: float
    accuracy: float


class ScoreCell(TypedDict, total=False):
    """A score with its 95% interval (``low``, ``high``) or over ``n`` items; ``too_few``:
    too few items for an interval (:data:`engine.reports.stats.MIN_ITEMS`)."""

    value: Required[float | None]
    low: float | None
    high: float | None
    n: int | None
    too_few: bool


#: One cell of a table: a number, a string, None or a score.
Cell: TypeAlias = "Scalar | ScoreCell"


class Table(TypedDict):
    """A table of a report: its title, column headers, rows of cells and notes under it."""

    title: str
    columns: list[str]
    rows: list[list[Cell]]
    notes: list[str]


class ChartPoint(ScoreCell, total=False):
    """One run's score (with its interval) on an ``interval`` chart."""

    name: Required[str]


class ChartSeries(TypedDict):
    """One run's bins on a ``reliability`` chart."""

    run_id: int
    name: str
    bins: list[ReliabilityBin]


class Chart(TypedDict):
    """A chart of a section: ``interval`` (``axis`` and ``points``) or ``reliability``
    (``series``)."""

    kind: str
    title: str
    axis: NotRequired[str]
    points: NotRequired[list[ChartPoint]]
    series: NotRequired[list[ChartSeries]]
    x_axis: NotRequired[str]  # a ``lines`` chart's x axis, and its ticks' labels
    x_labels: NotRequired[dict[str, str]]
    chance: NotRequired[float | None]  # the score's chance level, drawn as a dashed line


class Comparison(TypedDict):
    """Runs ``a`` and ``b`` on the items both answered (see
    :func:`engine.reports.layouts.compare`)."""

    a: int
    b: int
    n: int
    different_answers: int
    accuracy_diff: float
    accuracy_low: float
    accuracy_high: float
    mcnemar: McNemar
    score: str
    score_label: str
    paired_bootstrap: PairedBootstrap | None


class Section(TypedDict):
    """The part of a report for one activity; ``activity`` and ``name`` are set once the
    section joins the report."""

    tables: list[Table]
    comparisons: list[Comparison]
    charts: list[Chart]
    activity: NotRequired[str]
    name: NotRequired[str]
    #: Each comparison's two runs item by item (:meth:`engine.reports.diff.RunsDiff.as_dict`).
    sides: NotRequired[list[JSONDict]]


class Report(TypedDict):
    """A whole report: the stored runs (each with its ``label``), their overview table and
    one section per activity."""

    title: str
    created: str
    runs: list[Row]
    overview: Table
    sections: list[Section]


def table(title: str, columns: list[str], rows: list[list[Cell]], *notes: str) -> Table:
    """A report table: its title, column headers, rows of cells and the notes under it."""
    return {"title": title, "columns": columns, "rows": rows, "notes": [n for n in notes if n]}
