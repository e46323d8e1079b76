"""A comparison's verdicts: each model against the reference (the top model, or one named) on the
first score, from the paired equivalence test of :mod:`engine.reports.equivalence` —
``equivalent``, ``not equivalent``, ``worse`` or ``too few items`` within ± a margin in
points — with the difference its items would detect and the items that would settle it.
Only a right/wrong score in percent (accuracy) is judged; a row of any other gets none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine.errors import UserError
from engine.reports import equivalence

if TYPE_CHECKING:
    from engine.types import JSONDict, Row


class UnknownReference(UserError):
    """A reference that is none of the compared runs."""


class Judged(Protocol):
    """The score judged: its key, and whether it is in percent."""

    @property
    def key(self) -> str: ...

    @property
    def percent(self) -> bool: ...


def reference_run(runs: list[Row], name: str) -> Row:
    """The run named by ``name``: a model's name (its first run) or a run's id (``3``,
    ``#3``); :class:`UnknownReference` naming the choices for any other."""
    wanted = name.strip()
    for r in runs:
        if str(r.get("model")) == wanted or f"#{r['id']}" in (wanted, f"#{wanted}"):
            return r
    choices = ", ".join(f"{r.get('model')} (#{r['id']})" for r in runs)
    raise UnknownReference(f"no compared run is {name!r}: the reference is one of {choices}")


def judge(
    row: JSONDict,
    values: dict[str, dict[int, dict[str, float]]],
    lead: Judged | None,
    ref_id: int,
    margin: float,
) -> None:
    """The row's ``verdict`` against the reference on the first score, with ``margin`` (in
    points) and the test's numbers (``equivalence``: its p, the share of items disagreed
    on, the difference detectable and the items needed); None for the reference itself and
    where the first score is not right/wrong in percent."""
    row.update(verdict=None, margin=margin, equivalence=None)
    run_id = row["run_id"]
    if lead is None or run_id == ref_id or not lead.percent:
        return
    mine, theirs = values[lead.key][run_id], values[lead.key][ref_id]
    keys = [k for k in mine if k in theirs]
    if not all(v in (0.0, 100.0) for k in keys for v in (mine[k], theirs[k])):
        return
    pairs = [(theirs[k] == 100.0, mine[k] == 100.0) for k in keys]
    table = [sum(1 for p in pairs if p == cell) for cell in
             ((True, True), (True, False), (False, True), (False, False))]  # fmt: skip
    both, only_a, only_b, neither = table
    found = equivalence.verdict(both, only_a, only_b, neither, margin=margin / 100)
    detectable = found["detectable"]
    row["verdict"] = found["verdict"]
    row["equivalence"] = {
        "p": found["p"],
        "disagree": 100 * found["discordant"],
        "detectable": None if detectable is None else 100 * detectable,
        "needed": found["needed"],
        "n": found["n"],
    }


def reference_name(result: JSONDict) -> str:
    """``top model (#3)``, or ``reference (#4)`` when another was named."""
    ref = result["reference"]
    return f"top model (#{ref})" if ref == result.get("top") else f"reference (#{ref})"


def verdict_note(result: JSONDict) -> str:
    """What the verdicts say and how they are made, with each judged model's power."""
    margin = f"{result['margin']:g}"
    text = (
        f"Verdict: each model against the {reference_name(result)} on the first score, "
        f"within ± {margin} points (--margin): {equivalence.METHOD}. A difference that is "
        "not significant is not equivalence."
    )
    for row in result["rows"]:
        found = row.get("equivalence")
        if not found:
            continue
        shown = found["detectable"]
        detects = (
            f"detect {shown:.1f} points with 80% power"
            if shown is not None
            else "detect no difference with 80% power (too few disagreements)"
        )
        text += (
            f" #{row['run_id']}: disagrees on {found['disagree']:.1f}% of {found['n']} items, "
            f"which {detects}; {found['needed']} items would settle ± {margin}."
        )
    return text


def verdict_text(row: JSONDict) -> str:
    """A row's verdict as the table shows it (``ref`` for the reference)."""
    if row.get("reference"):
        return "ref"
    return str(row.get("verdict") or "–")
