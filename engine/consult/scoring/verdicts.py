"""People's verdicts on diagnoses answered in words, beside a judge model's
(:mod:`engine.consult.scoring.judging`): a person says ``correct``, ``partly`` or ``wrong`` for the
answers a judge gave a verdict on, those drawn at random first (:mod:`engine.ratings.draw`),
stored per rater (``consult.diagnosis-rating@RATER``, 1, 0.5 or 0 as the judge's); the report
then corrects each judge's share of right diagnoses by them (prediction-powered,
:func:`engine.reports.ppi.ppi_mean`).

>>> to_judge(store, 12, "dr-li")[0].said                          # doctest: +SKIP
'community-acquired pneumonia'
>>> give_verdict(store, 12, "case-3", "dr-li", "partly")          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.core.scoring import Context, Scored, ScoreValue, Value
from engine.errors import UserError
from engine.registry import register

if TYPE_CHECKING:
    from engine.reports.shapes import Cell, Table
    from engine.store.store import Store
    from engine.types import Row

#: The judge model's scorer (:mod:`engine.consult.scoring.judging`) and people's.
JUDGE = "consult.diagnosis-judge"
PEOPLE = "consult.diagnosis-rating"
#: Each verdict, judge's or person's, as the share of the diagnosis right.
VERDICTS = {"correct": 1.0, "partly": 0.5, "wrong": 0.0}
#: The half-width (points of the share right) "more verdicts" aims the interval at.
HALF_WIDTH = 10.0
TITLE = "Diagnosis verdicts corrected by people's (prediction-powered)"


@register("scorer", name=PEOPLE, activities=("consult",), keys=("judged",), by="rater", person=True)
def diagnosis_rating(answer: Row, item: Row, context: Context) -> dict[str, ScoreValue | Value]:
    """A person's verdict on a diagnosis answered in words: 1 correct, 0.5 partly, 0 wrong
    (given with `medexam rate RUN --diagnoses`)."""
    raise UserError("diagnoses are judged by people: use `medexam rate RUN --diagnoses`")


@dataclass(frozen=True)
class ToJudge:
    """One diagnosis in words a person judges: the case's complaint, its answer in words
    and the candidate's; ``drawn``: one of the answers drawn at random."""

    item_key: str
    complaint: str
    reference: str
    said: str
    drawn: bool


def _judged(store: Store, run_ids: Sequence[int], scorer_name: str) -> dict[str, dict]:
    """``{who: {(run id, item key): verdict}}`` of ``scorer_name`` (unparsed left out)."""
    found: dict[str, dict] = {}
    for r in store.rated_rows(list(run_ids), scorer_name):
        if r["key"] == "judged" and r["value"] is not None:
            who = str(r["scorer"]).split("@", 1)[1]
            found.setdefault(who, {})[(int(r["run_id"]), str(r["item_key"]))] = float(r["value"])
    return found


def to_judge(store: Store, run_id: int, rater: str) -> list[ToJudge]:
    """The answers of run ``run_id`` a judge gave a verdict on and ``rater`` has not, those
    drawn at random first."""
    from engine.consult.cases.cases import Case, reference
    from engine.ratings.draw import drawn

    judged = {k for found in _judged(store, [run_id], JUDGE).values() for _r, k in found}
    mine = _judged(store, [run_id], PEOPLE).get(rater, {})
    run = store.run(run_id)
    if run["activity"] != "consult":
        raise UserError(f"run {run_id} is not a consultation run: it has no diagnoses to judge")
    items = store.items_by_key(run["dataset"]) or {}
    picked = drawn(run_id, judged)
    out = []
    for a in store.answers(run_id):
        key = str(a["item_key"])
        if key not in judged or (run_id, key) in mine or key not in items:
            continue
        case = Case.from_dict(items[key])
        said = str(a.get("chosen") or a.get("response") or "")
        out.append(ToJudge(key, case.initial_request, reference(case), said, key in picked))
    return sorted(out, key=lambda t: not t.drawn)


def give_verdict(store: Store, run_id: int, item_key: str, rater: str, verdict: str) -> None:
    """Store ``rater``'s verdict (one of :data:`VERDICTS`) on one answer of ``run_id``."""
    from engine.ratings.people import check_rater

    if verdict not in VERDICTS:
        raise UserError(f"a verdict is one of {', '.join(VERDICTS)} (got {verdict!r})")
    scored = Scored(f"{PEOPLE}@{check_rater(rater)}", 1, {"judged": VERDICTS[verdict]})
    store.add_scores(run_id, item_key, [scored])


def corrected_verdicts(store: Store, run_ids: Sequence[int]) -> Table | None:
    """Per run and judge: the judge's share right (correct 1, partly ½), people's share on
    the answers they judged and the prediction-powered share, in percent with 95%
    intervals; None where no person judged an answer a judge judged."""
    from engine.ratings.corrected import cell_of, more_cell
    from engine.reports.ppi import ppi_mean
    from engine.reports.shapes import table

    judges = _judged(store, run_ids, JUDGE)
    people: dict[tuple[int, str], list[float]] = {}
    for found in _judged(store, run_ids, PEOPLE).values():
        for a, v in found.items():
            people.setdefault(a, []).append(v)
    rows: list[list[Cell]] = []
    for who, verdicts in sorted(judges.items()):
        for run_id in run_ids:
            mine = {a: 100 * v for a, v in verdicts.items() if a[0] == int(run_id)}
            both = [a for a in mine if a in people]
            if not both:
                continue
            y = [100 * sum(people[a]) / len(people[a]) for a in both]
            more = [v for a, v in mine.items() if a not in people]
            ppi = ppi_mean(y, [mine[a] for a in both], more)
            rows.append([f"Judge {who}", f"#{run_id}", ppi.n, ppi.n_judge_only,
                         ppi.judge_mean, cell_of(ppi.people_mean, ppi.people_low,
                                                 ppi.people_high, ppi.n),
                         cell_of(ppi.mean, ppi.low, ppi.high, ppi.n), ppi.lam,
                         more_cell(ppi, HALF_WIDTH)])  # fmt: skip
    if not rows:
        return None
    return table(
        TITLE,
        ["Judge", "Run", "People judged", "Judge only", "Judge's share right (%)",
         "People's (%)", "Corrected (%)", "λ", f"More verdicts for ±{HALF_WIDTH:g}"],
        rows,
        "Correct counts 1, partly ½. The corrected share is the judge's over the answers "
        "it alone judged plus people's mean difference from it on the answers both judged, "
        "weighted by λ (prediction-powered inference with PPI++'s λ; see the explanation "
        "ratings' table). People are offered a random draw of the answers first "
        "(medexam rate RUN --diagnoses).",
    )  # fmt: skip
