"""The static-to-consultation drop: one multiple-choice set played both ways per model, as
exam questions (every fact handed over in the stem) and as the consultation cases ``consult
convert`` made of them (the paper's filter applied: a question with no patient is no case),
where the model is the doctor who must ask for the facts of a grounded patient, then answers
the same question as the solver (CRAFT-MD's and AgentClinic's measure: GPT-4 went from
0.820 to 0.627 when the case had to be asked for).

The ``static-vs-consult`` preset (:mod:`engine.consult.presets`) plans, per model, an exam
run on the questions the conversion came from (letter probabilities, as the consultation's
solver answers) and a consultation run on the cases. Its summary pairs the two runs by the
question each case was converted from (``meta.converted_from.item``) and gives, on the
questions kept in both, each model's accuracy both ways, the paired drop (static minus
consultation, in points, with Newcombe's interval and McNemar's p) and how much of the
case the doctor gathered: the patient's word recall of the facts' values and the share of facts
revealed.

>>> drop([True, True, False], [False, True, False])["drop"]
33.3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.consult.cases.cases import ACTIVITY
from engine.errors import UserError
from engine.experiments.plan import Cell, PlanError, Request
from engine.reports.stats import METHODS, paired_difference
from engine.text.language import item_language

if TYPE_CHECKING:
    from engine.reports.shapes import Cell as TableCell
    from engine.reports.shapes import ScoreCell
    from engine.store.store import Store
    from engine.types import JSONDict

#: The multiple-choice activity whose data sets are converted, and its runs' way.
EXAM = "exam"
STATIC, CONSULTATION = "static", "consultation"
WAYS = (STATIC, CONSULTATION)
#: How both ways answer: the letters' probabilities (the exam's and the solver's names).
EXAM_METHOD, SOLVER_METHOD = "logprob", "logprobs"
PATIENT_MODE = "grounded"
#: The most questions the model doctor may ask per case (the consultation's own default).
QUESTIONS = 10


def _source(case: JSONDict) -> str | None:
    """The id of the question a stored case was converted from (None: not a conversion)."""
    found = ((case.get("meta") or {}).get("converted_from") or {}).get("item")
    return None if found is None else str(found)


def conversions_of(store: Store, dataset: str) -> list[str]:
    """The case data sets converted from exam data set ``dataset``, by name."""
    return [
        str(d["name"])
        for d in store.datasets(ACTIVITY)
        if (d.get("meta") or {}).get("converted_from") == dataset
    ]


def data_sets(store: Store, dataset: str) -> tuple[str, str]:
    """(the exam data set, its conversion) that ``dataset`` names: an exam data set with one
    stored conversion, or a case data set converted from a stored exam data set. One line
    otherwise, saying how to make the conversion or which to choose."""
    found = store.dataset(dataset)
    if found["activity"] == EXAM:
        made = conversions_of(store, dataset)
        if not made:
            raise PlanError(
                f"{dataset!r} has no consultation cases yet: make them first with "
                f"medexam consult convert --dataset {dataset} --name {dataset}-cases"
            )
        if len(made) > 1:
            raise PlanError(
                f"{dataset!r} was converted more than once ({', '.join(made)}): give the "
                "cases to play with --dataset"
            )
        return dataset, made[0]
    source = (found.get("meta") or {}).get("converted_from")
    if found["activity"] != ACTIVITY or not source:
        raise PlanError(
            f"{dataset!r} is neither a multiple-choice data set nor cases converted from one"
        )
    if not store.has_dataset(str(source)):
        raise PlanError(f"{dataset!r} was converted from {source!r}, which is no longer stored")
    return str(source), dataset


def _exam_limit(store: Store, exam: str, cases: list[JSONDict]) -> int:
    """The fewest first questions of ``exam`` that hold every question ``cases`` came from."""
    order = {str(item["id"]): i for i, item in enumerate(store.items(exam))}
    places = [order[s] for c in cases if (s := _source(c)) in order]
    if not places:
        raise PlanError(f"no case of the conversion comes from a question of {exam!r}")
    return max(places) + 1


def static_consult_cells(request: Request) -> list[Cell]:
    """Per model: the exam run on the questions the cases came from, then the consultation
    run on the cases (the model the doctor and the solver, the patient grounded)."""
    if request.store is None:
        raise PlanError("static-vs-consult needs the data set's store")
    store = request.store
    exam, cases = data_sets(store, request.dataset)
    drawn = store.items(cases, limit=request.limit)
    limit = _exam_limit(store, exam, drawn)
    lang = "zh" if item_language(store.items(exam, limit=1)[0]) == "zh" else "en"
    out = []
    for model in request.models:
        static = {"model": model, "method": EXAM_METHOD, "lang": lang, "limit": limit}
        consult = {"doctor": model, "solver": model, "patient_mode": PATIENT_MODE,
                   "answer_method": SOLVER_METHOD, "max_turns": QUESTIONS,
                   "limit": request.limit}  # fmt: skip
        out.append(Cell(EXAM, exam, static, f"{model} · exam questions",
                        {"model": model, "way": STATIC}))  # fmt: skip
        out.append(Cell(ACTIVITY, cases, consult, f"{model} · consultation",
                        {"model": model, "way": CONSULTATION}))  # fmt: skip
    return out


# -- the drop -------------------------------------------------------------------------


def drop(static: Sequence[bool], consultation: Sequence[bool]) -> JSONDict:
    """Accuracy both ways on paired questions (``static[i]`` and ``consultation[i]`` the same
    question's) and the drop static − consultation in points with its 95% interval and p
    (:func:`paired_difference`: Newcombe's interval, McNemar's exact p)."""
    if len(static) != len(consultation):
        raise ValueError("the two ways need one answer each per question")
    n = len(static)
    pair = paired_difference(
        [100.0 * bool(x) for x in consultation],
        [100.0 * bool(x) for x in static],
        right_wrong=True,
        top=100.0,
    )

    def points(value: float | None) -> float | None:
        return None if value is None else round(value, 1)

    return {
        "items": n,
        "static": points(100 * sum(map(bool, static)) / n) if n else None,
        "consultation": points(100 * sum(map(bool, consultation)) / n) if n else None,
        "drop": points(pair["diff"]),
        "low": points(pair["low"]),
        "high": points(pair["high"]),
        "p": pair["p"],
        "method": pair["method"],
        "test": pair["test"],
        "too_few": pair["too_few"],
        "lost": pair["only_b"],  # right as an exam question only
        "gained": pair["only_a"],  # right in the consultation only
    }


def _runs_by_way(experiment: JSONDict) -> dict[str, dict[str, list[int]]]:
    """Each model's finished runs of each way, in the experiment's order."""
    out: dict[str, dict[str, list[int]]] = {}
    for cell in experiment["cells"]:
        coords = cell.get("coords") or {}
        if cell["status"] != "finished" or coords.get("way") not in WAYS:
            continue
        ways = out.setdefault(str(coords["model"]), {w: [] for w in WAYS})
        ways[coords["way"]].append(int(cell["run_id"]))
    return out


def _mean(values: list[float]) -> float | None:
    return round(100 * sum(values) / len(values), 1) if values else None


def model_drop(store: Store, static_run: int, consult_run: int) -> JSONDict:
    """One model's drop from its exam run and its consultation run, paired by question,
    with the patient's recall and the facts revealed over the paired consultations."""
    static = {str(a["item_key"]): bool(a.get("correct")) for a in store.answers(static_run)}
    cases = store.items_by_key(str(store.run(consult_run)["dataset"])) or {}
    right, asked, recall, revealed, facts = [], [], [], 0, 0
    for answer in store.answers(consult_run):
        source = _source(cases.get(str(answer["item_key"])) or {})
        if source is None or source not in static:
            continue
        scores = answer.get("scores") or {}
        right.append(static[source])
        asked.append(bool(answer.get("correct")))
        if isinstance(value := scores.get("patient_recall"), int | float):
            recall.append(float(value))
        revealed += int(scores.get("revealed") or 0)
        facts += int(scores.get("n_facts") or 0)
    return drop(right, asked) | {
        "static_run": static_run,
        "consultation_run": consult_run,
        "patient_recall": _mean(recall),
        "facts_revealed": round(100 * revealed / facts, 1) if facts else None,
    }


def static_consult_result(store: Store, experiment: JSONDict) -> JSONDict | None:
    """Each model with both ways finished: its accuracy both ways on the questions kept in
    both, the paired drop with its interval, the patient's recall (None: no model yet)."""
    rows = []
    for model, ways in _runs_by_way(experiment).items():
        if ways[STATIC] and ways[CONSULTATION]:
            rows.append(
                {"model": model, **model_drop(store, ways[STATIC][0], ways[CONSULTATION][0])}
            )
    if not rows:
        return None
    cells = [c for c in experiment["cells"] if (c.get("coords") or {}).get("way") in WAYS]
    exam = next(c["dataset"] for c in cells if c["coords"]["way"] == STATIC)
    cases = next(c["dataset"] for c in cells if c["coords"]["way"] == CONSULTATION)
    meta = store.dataset(cases).get("meta") or {}
    return {
        "dataset": exam,
        "cases": cases,
        "questions": meta.get("questions"),
        "converted": store.dataset(cases)["n_items"],
        "filtered": len(meta.get("filtered") or []),
        "models": rows,
        "notes": notes(),
    }


def notes() -> list[str]:
    """How the numbers were made, as the text and the report say it."""
    return [
        "Drop: accuracy on the exam questions minus accuracy in the consultation, in points, "
        "on the questions kept in both (a case keeps the question it was converted from); "
        "above 0: the model lost when it had to ask for the facts.",
        f"Interval: {METHODS['newcombe']}; p: {METHODS['McNemar']}.",
        "Patient recall: the patient's replies' word recall of the facts' values (ROUGE-1); "
        "facts revealed: the share of the case's facts the patient told.",
    ]


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


def _interval(row: JSONDict) -> str:
    if row["drop"] is None:
        return "–"
    if row["low"] is None:
        return f"{row['drop']:+.1f} (too few items)"
    return f"{row['drop']:+.1f} [{row['low']:+.1f}, {row['high']:+.1f}]"


COLUMNS = ["Model", "Items", "Exam (%)", "Consultation (%)", "Drop (points) [95% CI]", "p",
           "Patient recall (%)", "Facts revealed (%)"]  # fmt: skip


def _text_row(row: JSONDict) -> list[str]:
    p = "–" if row["p"] is None else f"{row['p']:.3g}"
    return [str(row["model"]), str(row["items"]), _number(row["static"]),
            _number(row["consultation"]), _interval(row), p, _number(row["patient_recall"]),
            _number(row["facts_revealed"])]  # fmt: skip


def format_result(result: JSONDict) -> str:
    """The drop as a text table with its notes."""
    import textwrap

    from engine.text.columns import align_rows

    head = (
        f"Exam questions vs consultation on {result['dataset']} (cases {result['cases']}: "
        f"{result['converted']} of {result['questions']} questions, {result['filtered']} "
        "left out by the filter)"
    )
    lines = align_rows(COLUMNS, [_text_row(r) for r in result["models"]], [False, *[True] * 7])
    notes = [textwrap.fill(n, 100) for n in result["notes"]]
    return "\n".join([head, "", *lines, "", *notes]) + "\n"


def static_consult_summary(
    store: Store, experiment: JSONDict, **_options: Any
) -> tuple[JSONDict, str] | None:
    """The drop per model as JSON and text (None before a model has both ways finished)."""
    try:
        result = static_consult_result(store, experiment)
    except UserError:
        return None
    return None if result is None else (result, format_result(result))


def static_consult_report(store: Store, experiment: JSONDict) -> JSONDict:
    """The drop as a report table: per model its accuracy both ways, the drop with its
    interval and p, the patient's recall and the facts revealed."""
    from engine.reports.shapes import table

    result = static_consult_result(store, experiment)
    if result is None:
        return {"tables": [], "charts": []}
    rows: list[list[TableCell]] = []
    for r in result["models"]:
        shown: ScoreCell = {
            "value": r["drop"],
            "low": r["low"],
            "high": r["high"],
            "too_few": r["too_few"],
        }
        rows.append([str(r["model"]), r["items"], r["static"], r["consultation"], shown,
                     r["p"], r["patient_recall"], r["facts_revealed"]])  # fmt: skip
    title = f"Exam questions vs consultation on {result['dataset']} (cases {result['cases']})"
    return {"tables": [table(title, COLUMNS, rows, *result["notes"])], "charts": []}
