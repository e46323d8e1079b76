"""``medexam consult …`` (consultations with a simulated patient) and the case importers."""

from __future__ import annotations

import json
from typing import Any

import click

from engine.cli import cli, import_group
from engine.cli.common import AppContext, echo_json, friendly_errors, json_option, pass_app
from engine.cli.common import progress_bar as common_progress_bar
from engine.consult import agentclinic
from engine.consult import cases as cases_mod
from engine.consult.cases import CaseError
from engine.consult.metrics import SUMMARY_KEYS, fact_view, turn_analysis
from engine.consult.run import BASELINES, ORACLES, run_consult
from engine.consult.session import Consultation, ConsultationError
from engine.progress import Cancel, Progress
from engine.runtime import ModelError
from engine.store import StoreError

ERRORS = (StoreError, CaseError, ConsultationError, ModelError, ValueError, FileNotFoundError)
DOCTOR_HELP = "model (the default chat model), a catalog model name, " + ", ".join(
    ORACLES + BASELINES
)


def _note(p: Progress) -> str:
    if "correct" in p.info:
        return f"{p.message} {'✓' if p.info['correct'] else '✗'} {p.info['turns']} turns"
    return p.message


def progress_bar(description: str, quiet: bool = False) -> Any:
    """The shared progress bar, noting each case's result and its number of turns."""
    return common_progress_bar(description, quiet, _note)


def _imported(app: AppContext, name: str, as_json: bool) -> None:
    ds = app.store.dataset(name)
    if as_json:
        echo_json(ds)
    else:
        click.echo(f"imported {ds['n_items']} cases as {ds['name']!r}")


@import_group.command("agentclinic")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", help="Data set name (default: the file name).")
@click.option("--replace", is_flag=True, help="Replace a data set of the same name.")
@json_option
@pass_app
@friendly_errors(*ERRORS)
def import_agentclinic(
    app: AppContext, path: str, name: str | None, replace: bool, as_json: bool
) -> None:
    """Import AgentClinic OSCE cases (JSONL) as consultation cases."""
    from pathlib import Path

    name = name or Path(path).stem
    agentclinic.import_agentclinic(app.store, path, name, replace=replace)
    _imported(app, name, as_json)


@import_group.command("cases")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", help="Data set name (default: the file name).")
@click.option("--replace", is_flag=True, help="Replace a data set of the same name.")
@json_option
@pass_app
@friendly_errors(*ERRORS)
def import_cases(
    app: AppContext, path: str, name: str | None, replace: bool, as_json: bool
) -> None:
    """Import consultation cases in medexam's native JSON format."""
    from pathlib import Path

    name = name or Path(path).stem
    cases_mod.import_cases(app.store, path, name, replace=replace)
    _imported(app, name, as_json)


@cli.group()
def consult() -> None:
    """Consultations with a simulated patient: chat, run doctors, convert questions."""


def _cases_name(app: AppContext, name: str | None) -> str:
    return name or cases_mod.ensure_sample(app.store)


@consult.command("cases")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@json_option
@pass_app
@friendly_errors(*ERRORS)
def consult_cases(app: AppContext, cases_name: str | None, as_json: bool) -> None:
    """List the cases of a data set."""
    found = cases_mod.load_cases(app.store, _cases_name(app, cases_name))
    if as_json:
        echo_json([c.to_dict() for c in found])
        return
    for c in found:
        click.echo(f"{c.id:<18} {c.task.kind:<9} {len(c.facts):>3} facts  {c.initial_request[:60]}")


@consult.command("chat")
@click.option("--case", "case_id", required=True, help="Case id.")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@click.option("--patient", "patient_name", help="Patient model (default: the default chat model).")
@click.option("--max-turns", type=click.IntRange(1), default=10, show_default=True)
@pass_app
@friendly_errors(*ERRORS)
def consult_chat(
    app: AppContext,
    case_id: str,
    cases_name: str | None,
    patient_name: str | None,
    max_turns: int,
) -> None:
    """Be the doctor: ask questions (/done or an empty line to stop), then answer the task."""
    from engine.catalog import open_model

    store = app.store
    name = _cases_name(app, cases_name)
    case = cases_mod.get_case(store, name, case_id)
    model = open_model(patient_name, n_ctx=4096)
    run_id = store.start_run(
        "consult",
        name,
        "person",
        {
            "doctor": "person",
            "patient": patient_name or "model",
            "max_turns": max_turns,
            "case": case.id,
        },
        runner="person",
        n_total=1,
    )
    try:
        c = Consultation(case, model, store=store, run_id=run_id, max_turns=max_turns)
        click.echo(f"Patient: {c.start()}")
        while c.questions_left:
            try:
                question = click.prompt("Doctor", default="", show_default=False).strip()
            except click.Abort:
                question = ""
            if not question or question == "/done":
                break
            click.echo(f"Patient: {c.ask(question)['text']}")
        click.echo("")
        click.echo(c.task_text)
        try:
            answer = click.prompt("Your answer", default="", show_default=False)
        except click.Abort:
            answer = ""
        result = c.finish(answer)
    except BaseException:
        store.finish_run(run_id, _summary_of(store, run_id), "cancelled")
        raise
    finally:
        model.close()
    store.finish_run(run_id, _summary_of(store, run_id))
    verdict = "correct" if result.correct else "wrong"
    click.echo(f"{verdict}: the answer is {result.task.gold}")
    if result.task.similarity is not None:
        click.echo(f"similarity to the gold diagnosis: {result.task.similarity:.2f}")
    view = fact_view(case, result.turns)
    revealed = [v["key"] for v in view if v["status"] == "revealed"]
    never = [v["key"] for v in view if v["status"] == "never_asked"]
    click.echo(f"facts revealed: {len(revealed)}/{len(view)}; never asked: {', '.join(never)}")
    click.echo(json.dumps({"run_id": run_id, **result.metrics}, default=str))


def _summary_of(store: Any, run_id: int) -> dict[str, Any]:
    from engine.consult.run import run_summary

    return run_summary(store, run_id)


@consult.command("run")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@click.option("--doctor", default="model", show_default=True, help=DOCTOR_HELP)
@click.option("--patient", "patient_name", help="Patient model (default: the default chat model).")
@click.option("--solver", "solver_name", help="Model answering the task (default: the doctor's).")
@click.option("--style", type=click.Choice(["long", "short"]), default="long", show_default=True)
@click.option("--max-turns", type=click.IntRange(1), default=10, show_default=True)
@click.option("--limit", type=click.IntRange(1), help="Only the first N cases.")
@click.option("--resume", type=int, help="Continue an interrupted run.")
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
@pass_app
@friendly_errors(*ERRORS)
def consult_run(
    app: AppContext,
    cases_name: str | None,
    doctor: str,
    patient_name: str | None,
    solver_name: str | None,
    style: str,
    max_turns: int,
    limit: int | None,
    resume: int | None,
    seed: int,
    as_json: bool,
) -> None:
    """Run a doctor (or a baseline) over the cases; the last line is the summary as JSON."""
    name = None if resume is not None else _cases_name(app, cases_name)
    cancel = Cancel()
    with progress_bar(f"{doctor} on {name or f'run {resume}'}", quiet=as_json) as update:
        try:
            summary = run_consult(
                app.store,
                name or "",
                doctor,
                patient=patient_name,
                solver=solver_name,
                style=style,
                max_turns=max_turns,
                limit=limit,
                resume=resume,
                seed=seed,
                progress=update,
                cancel=cancel,
            )
        except KeyboardInterrupt:
            cancel.set()
            raise
    if not as_json:
        click.echo(f"run {summary['run_id']} ({summary['status']}), {summary['n']} cases")
        for key in SUMMARY_KEYS + ("leakage",):
            value = summary.get(key)
            click.echo(f"{key:<18} {'—' if value is None else value}")
        if summary.get("error"):
            click.echo(f"error: {summary['error']}")
    click.echo(json.dumps(summary, default=str))


@consult.command("show")
@click.argument("run_id", type=int)
@click.option("--case", "case_id", help="Only this case.")
@json_option
@pass_app
@friendly_errors(*ERRORS)
def consult_show(app: AppContext, run_id: int, case_id: str | None, as_json: bool) -> None:
    """A consultation run: each dialogue, the facts it reached, and the turn analysis."""
    store = app.store
    run = store.run(run_id)
    found = {c.id: c for c in cases_mod.load_cases(store, run["dataset"])}
    answers = [a for a in store.answers(run_id) if case_id in (None, a["item_key"])]
    detail = []
    for a in answers:
        turns = store.turns(run_id, a["item_key"])
        case = found.get(a["item_key"])
        detail.append(
            {
                "case": a["item_key"],
                "answer": a,
                "turns": turns,
                "facts": fact_view(case, turns) if case else [],
            }
        )
    analysis = turn_analysis(store, run_id)
    if as_json:
        echo_json({"run": run, "consultations": detail, "turn_analysis": analysis})
        return
    for d in detail:
        click.echo(
            f"== {d['case']}  answer {d['answer']['chosen']!r}  gold "
            f"{d['answer']['gold']!r}  {'✓' if d['answer']['correct'] else '✗'}"
        )
        for t in d["turns"]:
            who = "Doctor " if t["role"] == "doctor" else "Patient"
            given = [f["key"] for f in t["extra"].get("facts", [])]
            note = f"   [facts: {', '.join(given)}]" if given else ""
            click.echo(f"{t['turn']:>2} {who}: {t['text']}{note}")
        never = [f["key"] for f in d["facts"] if f["status"] == "never_asked"]
        click.echo(f"   never asked: {', '.join(never) or '—'}")
    click.echo("fraction  patient_f1  doctor_f1  accuracy")
    for row in analysis:
        acc = "—" if row["accuracy"] is None else f"{row['accuracy']:.1f}"
        click.echo(
            f"{row['fraction']:>8.2f}  {row['patient_f1']:>10.1f}  "
            f"{row['doctor_f1']:>9.1f}  {acc:>8}"
        )


@consult.command("convert")
@click.option("--dataset", required=True, help="Exam data set holding the question.")
@click.option("--item", "item_id", required=True, help="Question id.")
@click.option("--model", "model_name", default=None, help="Chat model (default: the default).")
@click.option("--save", "save_name", help="Store the draft in this case data set.")
@click.option("--yes", is_flag=True, help="Save without asking.")
@pass_app
@friendly_errors(*ERRORS)
def consult_convert(
    app: AppContext,
    dataset: str,
    item_id: str,
    model_name: str | None,
    save_name: str | None,
    yes: bool,
) -> None:
    """Turn an exam question into a draft consultation case (printed as JSON)."""
    from engine.catalog import open_model
    from engine.consult.convert import draft_case

    item = next((i for i in app.store.items(dataset) if str(i.get("id")) == item_id), None)
    if item is None:
        raise CaseError(f"no item {item_id!r} in data set {dataset!r}")
    model = open_model(model_name, n_ctx=4096)
    try:
        case = draft_case(item, model, dataset=dataset, model_name=model_name or "model")
    finally:
        model.close()
    click.echo(json.dumps(case.to_dict(), ensure_ascii=False, indent=2))
    if save_name:
        if yes or click.confirm(f"Save this case to {save_name!r}?", default=False):
            cases_mod.add_case(app.store, save_name, case)
            click.echo(f"saved {case.id!r} in {save_name!r}")
        else:
            click.echo("not saved")
