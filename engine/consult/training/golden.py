"""Golden dialogues: the consultations a doctor model is fine-tuned on, built as the
consultation paper built them (its §4.2): in each turn the doctor asks about one key of the
case's medical information and the patient model answers it; the doctor ends with the
case's diagnosis.

A golden set is a consultation run of the ``oracle-direct`` doctor (every key asked, in the
case's order) with the chosen patient model, tagged with the set's name: it is stored,
resumed, shown and exported like any run (``medexam consult show``, ``consult
export-dialogues``), and a set that was stopped goes on when it is built again. Its questions
are the template's (``Can you tell me about {key}?``) or, with a ``writer`` model, written by
that model for each key with the doctor's closing analysis, as the paper had ChatGPT write
them (:mod:`engine.consult.doctor.written`; each checked, the template where one fails).
:func:`doctor_dialogues` reads a set (or a JSON Lines file of chat dialogues) as the
doctor's training conversations: the doctor's own system prompt, the opening request, the
questions and answers, and a closing turn naming the diagnosis (after the written analysis).

>>> build_golden(store, "agentclinic-train", "golden-train", patient="smollm2")  # doctest: +SKIP
>>> len(doctor_dialogues(store, "golden-train"))                                 # doctest: +SKIP
77
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.consult.settings import ConsultSettings
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: The doctor of a golden set: every key of the case, in its order.
GOLDEN_DOCTOR = "oracle-direct"
#: The run setting that names the golden set a run belongs to.
TAG = "golden"


class GoldenError(UserError, ValueError):
    """No golden set (or dialogue file) of that name, or one that holds no dialogue."""


def golden_sets(store: Store) -> dict[str, list[int]]:
    """Every golden set by name, with its runs, oldest first."""
    out: dict[str, list[int]] = {}
    for r in sorted(store.runs("consult"), key=lambda r: r["id"]):
        tag = (r.get("settings") or {}).get(TAG)
        if tag:
            out.setdefault(str(tag), []).append(int(r["id"]))
    return out


@dataclass
class GoldenPlan:
    """How a call builds golden set ``name``: the run's settings and tags, the runs of an
    older set of that name it replaces (deleted once it finishes), and the set's stopped run
    it goes on with (None: a new run)."""

    settings: ConsultSettings
    tags: JSONDict
    old: list[int]
    resume: int | None = None


def _differences(run: Row, cases: str | None, settings: ConsultSettings) -> list[str]:
    """What a stopped golden run was started with that this call asks otherwise."""
    stored = run.get("settings") or {}
    wanted: JSONDict = {"writer": settings.writer, "limit": settings.limit,
                        "patient_mode": settings.patient_mode}  # fmt: skip
    if settings.patient is not None:
        wanted["patient"] = settings.patient
    out = [f"{k} {stored.get(k)!r}, not {v!r}" for k, v in wanted.items() if stored.get(k) != v]
    if cases is not None and run["dataset"] != cases:
        out.insert(0, f"cases {run['dataset']!r}, not {cases!r}")
    return out


def golden_settings(
    store: Store,
    name: str,
    *,
    patient: str | None = None,
    limit: int | None = None,
    patient_mode: str = "paper",
    writer: str | None = None,
    replace: bool = False,
    cases: str | None = None,
) -> GoldenPlan:
    """The run that builds golden set ``name`` from case set ``cases``: the ``oracle-direct``
    doctor (its questions and closing written by ``writer`` when given, else the template's),
    ``patient`` (the default chat model when None) answering every key. A set of that name
    that was stopped is gone on with (the same settings only); a finished one is refused
    unless ``replace``."""
    from engine.consult.settings import ConsultSettings
    from engine.train.artefacts import check_name

    check_name(name)
    runs = golden_sets(store).get(name, [])
    settings = ConsultSettings(doctor=GOLDEN_DOCTOR, patient=patient, limit=limit,
                               patient_mode=patient_mode, writer=writer)  # fmt: skip
    if not runs or replace:
        return GoldenPlan(settings, {TAG: name}, runs)
    last = store.run(runs[-1])
    if last["status"] == "finished":
        raise GoldenError(
            f"golden set {name!r} exists (run {runs[-1]}); give --replace or another name"
        )
    differ = _differences(last, cases, settings)
    if differ:
        raise GoldenError(
            f"golden set {name!r} was stopped (run {runs[-1]}) and was started with "
            f"{'; '.join(differ)}: go on with its settings, or give --replace"
        )
    return GoldenPlan(settings, {TAG: name}, runs[:-1], runs[-1])


def forget_runs(store: Store, runs: list[int], summary: JSONDict) -> None:
    """Delete the replaced set's ``runs`` once the new set's run (``summary``) finished."""
    from engine.store.deleted import delete_runs

    if summary.get("status") == "finished":
        for run_id in runs:
            delete_runs(store, [run_id])


def build_golden(
    store: Store,
    cases: str,
    name: str,
    *,
    patient: str | None = None,
    limit: int | None = None,
    patient_mode: str = "paper",
    writer: str | None = None,
    replace: bool = False,
    **loop: Any,
) -> JSONDict:
    """Build golden set ``name`` from the cases of data set ``cases`` (see
    :func:`golden_settings`), or go on with it where it stopped; return the run's summary.
    ``loop`` holds :func:`engine.core.runs.run`'s keywords (``progress``, ``cancel``,
    ``on_start``…)."""
    from engine.consult.doctor.runner import run_consult

    if loop.get("resume") is not None:
        return run_consult(store, cases, **loop)
    plan = golden_settings(store, name, patient=patient, limit=limit, patient_mode=patient_mode,
                           writer=writer, replace=replace, cases=cases)  # fmt: skip
    if plan.resume is not None:
        summary = run_consult(store, cases, resume=plan.resume, **loop)
    else:
        summary = run_consult(store, cases, settings=plan.settings, tags=plan.tags, **loop)
    forget_runs(store, plan.old, summary)
    return summary


def writer_counts(store: Store, run_id: int) -> JSONDict:
    """Who wrote a golden set's finished consultations: the ``writer`` (None: the
    template), its ``questions`` ``written`` and those that fell back to the ``template``
    (``why``: how many for each reason), and the closings written or the template's."""
    from engine.consult.doctor.written import TEMPLATE, WRITTEN

    done = store.answered_keys(run_id)
    out: JSONDict = {"writer": (store.run(run_id).get("settings") or {}).get("writer"),
                     "questions": 0, WRITTEN: 0, TEMPLATE: 0, "why": {},
                     "closings_written": 0, "closings_template": 0}  # fmt: skip
    for t in store.turns(run_id):
        extra = t.get("extra") or {}
        who = extra.get("writer")
        if t["role"] != "doctor" or who not in (WRITTEN, TEMPLATE) or t["item_key"] not in done:
            continue
        if extra.get("kind") == "conclusion":
            out[f"closings_{who}"] += 1
            continue
        out["questions"] += 1
        out[who] += 1
        if who == TEMPLATE:
            why = str(extra.get("fallback") or "")
            out["why"][why] = out["why"].get(why, 0) + 1
    return out


def _from_file(path: Path) -> list[list[dict[str, str]]]:
    """Chat dialogues from a JSON Lines file (``{"messages": [{"role", "content"}…]}`` per
    line, as ``consult export-dialogues`` writes them), read by the one JSON reader (a file
    that is not UTF-8, not JSON or nested too deeply is refused in one line)."""
    out = []
    for number, _, record in jsonio.numbered_records(path, jsonl=True, objects=False):
        try:
            loose: Any = record  # read as it comes: what is not a dialogue raises below
            messages = loose["messages"]
            ok = all(m["role"] in ("system", "user", "assistant") and isinstance(
                m["content"], str) for m in messages)  # fmt: skip
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok or not any(m["role"] == "assistant" for m in messages):
            raise GoldenError(
                f"{path.name} line {number}: not a chat dialogue "
                '({"messages": [{"role": …, "content": …}, …]} with a doctor turn)'
            )
        out.append([{"role": m["role"], "content": m["content"]} for m in messages])
    return out


def doctor_dialogues(store: Store, source: str) -> list[list[dict[str, str]]]:
    """The training conversations of ``source``: a golden set's name (each consultation as
    the doctor sees it, :func:`engine.consult.report.tables.dialogue_records` with
    ``for_doctor``), or a JSON Lines file of chat dialogues."""
    from engine.consult.report.tables import dialogue_records

    sets = golden_sets(store)
    if source in sets:
        out = []
        for run_id in sets[source]:
            out += [d["messages"] for d in dialogue_records(store, run_id, for_doctor=True)]
        if not out:
            raise GoldenError(f"golden set {source!r} holds no finished consultation yet")
        return out
    path = Path(source).expanduser()
    if path.is_file():
        found = _from_file(path)
        if not found:
            raise GoldenError(f"{path.name} holds no dialogue")
        return found
    known = ", ".join(sets) or "none yet"
    raise GoldenError(
        f"no golden set or dialogue file {source!r} (golden sets: {known}; build one with "
        "'medexam consult golden')"
    )
