"""Consultation runs in the paper's shapes: Table 2 and the golden dialogues.

:func:`paper_table` lays runs out as Table 2 of the multi-turn consultation evaluation paper
(Data set | Patient Rec/Pre/F1/Len | Doctor Rec/Pre/F1/Len | Turn | Acc), with the upper and lower
bound rows; :func:`render_table` prints it as text, Markdown, CSV or JSON.

:func:`dialogue_records` turns stored consultations into chat-format training records (the
"golden dialogue" format the paper fine-tuned on): a system prompt for the doctor, the
patient's words as ``user`` turns, the doctor's as ``assistant`` turns, and the final answer
as the last ``assistant`` turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TextIO, TypedDict

from engine.errors import UserError
from engine.store.store import Store
from engine.text.columns import align_rows, markdown_rule
from engine.text.sheets import csv_text

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case
    from engine.types import JSONDict, JSONValue, Row

#: Table 2's columns: (header, summary key).
COLUMNS = (
    ("Data set", "dataset"),
    ("Doctor", "doctor"),
    ("Patient", "patient"),
    ("Patient Rec", "patient_recall"),
    ("Patient Pre", "patient_precision"),
    ("Patient F1", "patient_f1"),
    ("Patient Len", "patient_length"),
    ("Doctor Rec", "doctor_recall"),
    ("Doctor Pre", "doctor_precision"),
    ("Doctor F1", "doctor_f1"),
    ("Doctor Len", "doctor_length"),
    ("Turn", "avg_turns"),
    ("Acc", "accuracy"),
)
FORMATS = ("text", "markdown", "csv", "json")


def columns() -> list[tuple[str, str]]:
    """Table 2's :data:`COLUMNS`, then a column for each measure of the scorers added to the
    consultation's own (:func:`engine.core.scoring.activity_metrics`), headed by its label."""
    from engine.activities import metric_label
    from engine.core.scoring import activity_metrics

    added = activity_metrics("consult", added=True)
    return [*COLUMNS, *((metric_label(k, "consult"), k) for k in added)]


BOUND_NAMES = {"upper": "Upper-B", "lower": "Lower-B"}


class ReportError(UserError, ValueError):
    """A run that is not a consultation run, or an unknown format."""


class PaperTable(TypedDict):
    """Table 2 (see :func:`paper_table`): one row per run (its Table 2 columns by summary
    key, plus ``run_id``, ``solver``, ``patient_mode`` and ``bound``) and the warnings."""

    rows: list[JSONDict]
    warnings: list[str]


def _row(run: Row) -> JSONDict:
    summary = run.get("summary") or {}
    settings = run.get("settings") or {}
    runner = run.get("runner") or "model"
    doctor = BOUND_NAMES.get(runner) or (run.get("model") if runner == "model" else runner)
    row: JSONDict = {"run_id": run["id"], "dataset": run["dataset"], "doctor": doctor}
    bound = runner in BOUND_NAMES  # no consultation, so no patient
    row["patient"] = None if bound else settings.get("patient_model") or settings.get("patient")
    for _header, key in columns()[3:]:
        row[key] = summary.get(key)
    row["solver"] = settings.get("solver_model") or settings.get("solver")
    row["patient_mode"] = settings.get("patient_mode")
    row["bound"] = runner if runner in BOUND_NAMES else None
    return row


def _latest_bound(store: Store, dataset: str, bound: str) -> Row | None:
    runs = [
        r
        for r in store.runs(activity="consult")
        if r["dataset"] == dataset and r.get("runner") == bound and r["status"] == "finished"
    ]
    return max(runs, key=lambda r: r["id"]) if runs else None


def paper_table(store: Store, run_ids: Sequence[int], bounds: bool = True) -> PaperTable:
    """Table 2 for the given consultation runs: ``{"rows", "warnings"}``.

    Rows are the upper bound first, the doctors' runs in the order given, the lower bound
    last. With ``bounds``, a data set whose bound runs were not given gets its latest finished
    ``upper``/``lower`` run when there is one. ``warnings`` says when the runs' solvers
    (or patient modes) differ: their accuracies are then not on the same footing.
    """
    runs: list[Row] = []
    for run_id in run_ids:
        run = store.run(run_id)
        if run["activity"] != "consult":
            raise ReportError(f"run {run_id} is not a consultation run")
        runs.append(run)
    if bounds:
        given = {(r["dataset"], r.get("runner")) for r in runs}
        for dataset in dict.fromkeys(r["dataset"] for r in runs):
            for bound in BOUND_NAMES:
                found = None if (dataset, bound) in given else _latest_bound(store, dataset, bound)
                if found is not None:
                    runs.append(found)
    rows = _with_trial_sets(store, runs)
    rows = (
        [r for r in rows if r["bound"] == "upper"]
        + [r for r in rows if r["bound"] is None]
        + [r for r in rows if r["bound"] == "lower"]
    )
    return {"rows": rows, "warnings": solver_warnings(rows)}


def _with_trial_sets(store: Store, runs: list[Row]) -> list[JSONDict]:
    """A row per run, the runs of one trial set as one row: each number the mean over the
    trials, with the between-trial SD beside it (``<key>_sd``) and ``trials`` counted."""
    from engine.core.trials import spread

    rows: list[JSONDict] = []
    sets: dict[str, JSONDict] = {}
    keys = [k for _h, k in columns()[3:]]
    for run in runs:
        name = (run.get("settings") or {}).get("trial_set")
        if not name:
            rows.append(_row(run))
        elif name in sets:
            sets[name]["run_ids"].append(run["id"])
        else:
            sets[name] = {**_row(run), "trial_set": name, "run_ids": [run["id"]]}
            rows.append(sets[name])
    for row in sets.values():
        found = spread(store, row["run_ids"], keys)
        row["trials"] = len(row["run_ids"])
        for key in keys:
            entry = found.get(key) or {}
            row[key], row[f"{key}_sd"] = entry.get("mean"), entry.get("sd")
    return rows


def solver_warnings(rows: Sequence[JSONDict]) -> list[str]:
    """One line when the rows' solvers differ, one when their patient modes differ."""
    out = []
    solvers = sorted({str(r["solver"]) for r in rows if r.get("solver")})
    if len(solvers) > 1:
        out.append(f"the runs used different solvers ({', '.join(solvers)}): accuracies differ")
    modes = sorted({str(r["patient_mode"]) for r in rows if r.get("patient_mode")})
    if len(modes) > 1:
        out.append(f"the runs used different patient modes ({', '.join(modes)})")
    return out


def _cell(value: JSONValue) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _spread_cell(row: JSONDict, key: str) -> str:
    """A cell, with the spread between trials for a trial set's row (``41.20 ± 3.10``); a
    set's doctor is followed by its number of trials."""
    if key == "doctor" and row.get("trials"):
        return f"{_cell(row.get(key))} ({row['trials']} trials)"
    sd = row.get(f"{key}_sd")
    return _cell(row.get(key)) + (f" ± {sd:.2f}" if isinstance(sd, int | float) else "")


def render_table(table: PaperTable, fmt: str = "text") -> str:
    """:func:`paper_table` as ``text`` (aligned columns), ``markdown``, ``csv`` or ``json``."""
    if fmt not in FORMATS:
        raise ReportError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    rows = table["rows"]
    if fmt == "json":
        return json.dumps(table, ensure_ascii=False, indent=2)
    shown = columns()
    headers = [h for h, _k in shown]
    cells = [[_spread_cell(r, k) for _h, k in shown] for r in rows]
    if fmt == "csv":
        values: list[Sequence[object]] = [headers, *([r.get(k) for _h, k in shown] for r in rows)]
        return csv_text(values, lineterminator="\n").rstrip("\n")
    names = ("dataset", "doctor", "patient")
    right = [k not in names for _h, k in shown]  # numbers right, names left
    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |", markdown_rule(right)]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
    else:
        lines = align_rows(headers, cells, right)
    lines += [f"warning: {w}" for w in table["warnings"]]
    return "\n".join(x.rstrip() for x in lines)


# -- golden dialogues -----------------------------------------------------------------------


def final_answer(case: Case, chosen: str | None, use_gold: bool = True) -> str:
    """The doctor's closing turn: the task's answer (the gold one, or ``chosen``)."""
    task = case.task
    if task.kind == "mcq":
        letter = task.answer if use_gold else (chosen or "")
        text = task.options.get(letter, "")
        return f"The answer is {letter}. {text}".strip() if letter else "I cannot answer."
    diagnosis = task.diagnosis if use_gold else (chosen or "")
    return f"The most likely diagnosis is {diagnosis}." if diagnosis else "I cannot answer."


def closing_words(case: Case, chosen: str | None, use_gold: bool = True) -> str:
    """A doctor's closing turn in words, for a doctor that never sees the task's options:
    the diagnosis (a multiple-choice case's right option's text, or ``chosen``'s)."""
    task = case.task
    if task.kind == "mcq":
        diagnosis = task.options.get(task.answer if use_gold else (chosen or ""), "")
    else:
        diagnosis = task.diagnosis if use_gold else (chosen or "")
    if not diagnosis:
        return "I have no more questions, but I cannot name a diagnosis."
    return f"Thank you, I have no more questions. The most likely diagnosis is {diagnosis}."


def dialogue_records(
    store: Store,
    run_id: int,
    answer: str = "gold",
    correct_only: bool = False,
    for_doctor: bool = False,
) -> Iterator[JSONDict]:
    """One chat-format record per consultation of run ``run_id``: ``{"messages": [...],
    "case", "run_id", "doctor", "correct"}``. ``answer`` is ``gold`` (the case's answer, as
    golden dialogues have) or ``run`` (the answer the run gave); ``correct_only`` keeps the
    consultations whose task was answered right. ``for_doctor`` gives the dialogue as a
    model doctor meets it in a run (:class:`~engine.consult.doctor.doctors.ModelDoctor`'s own
    system prompt, no task) ending with the diagnosis in words (:func:`closing_words`): what
    a doctor is fine-tuned on. A golden dialogue whose closing a writer model wrote
    (:mod:`engine.consult.doctor.written`) ends with that closing (with ``gold``)."""
    from engine.consult.cases.cases import load_cases
    from engine.consult.doctor.doctors import ModelDoctor
    from engine.consult.doctor.final_task import task_text

    if answer not in ("gold", "run"):
        raise ReportError(f"unknown answer {answer!r} (gold or run)")
    run = store.run(run_id)
    if run["activity"] != "consult":
        raise ReportError(f"run {run_id} is not a consultation run")
    if run.get("runner") in BOUND_NAMES:
        raise ReportError(f"run {run_id} is a bound: it holds no consultation")
    cases = {c.id: c for c in load_cases(store, run["dataset"])}
    for a in store.answers(run_id):
        case = cases.get(a["item_key"])
        if case is None or (correct_only and not a["correct"]):
            continue
        system = ModelDoctor(None).system_prompt(case)  # the long prompt, in the case's language
        if not for_doctor:
            system = f"{system}\n\nTask:\n{task_text(case.task)}"
        messages = [{"role": "system", "content": system}]
        written = None  # a golden dialogue's closing written by its writer
        for t in store.turns(run_id, a["item_key"]):
            if (t["extra"] or {}).get("kind") == "conclusion":
                written = t if t["extra"].get("writer") else written
                continue
            role = "assistant" if t["role"] == "doctor" else "user"
            messages.append({"role": role, "content": t["text"]})
        use_gold = answer == "gold"
        closing = closing_words(case, a["chosen"], use_gold) if for_doctor else final_answer(
            case, a["chosen"], use_gold)  # fmt: skip
        if written is not None and use_gold:  # its analysis before the case's answer
            analysis = written["extra"].get("analysis")
            closing = written["text"] if for_doctor else f"{analysis or ''} {closing}".strip()
        messages.append({"role": "assistant", "content": closing})
        yield {
            "messages": messages,
            "case": case.id,
            "run_id": run_id,
            "doctor": run.get("runner") if run.get("runner") != "model" else run.get("model"),
            "correct": bool(a["correct"]),
        }


def write_dialogues(
    store: Store,
    run_ids: Sequence[int],
    out: TextIO,
    answer: str = "gold",
    correct_only: bool = False,
) -> int:
    """Write the dialogues of ``run_ids`` to ``out`` as JSON Lines; return how many."""
    n = 0
    for run_id in run_ids:
        for record in dialogue_records(store, run_id, answer, correct_only):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n
