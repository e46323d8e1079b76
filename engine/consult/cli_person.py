"""A person at the consultation in the terminal: ``medexam consult chat`` (be the doctor of a
case, with ``/mark`` and ``/note`` on it) and ``medexam stats --activity consult`` (the cases
you saw: right or not, the facts you elicited, those most often left unasked)."""

from __future__ import annotations

import json
from typing import Any

import click

from engine.cli.common import AppContext, echo_json, pass_app
from engine.consult.cases import cases as cases_mod
from engine.consult.scoring.metrics import fact_view
from engine.consult.settings import MAX_TURNS, ConsultSettings
from engine.store.store import Store
from engine.text.columns import visible


def case_set(app: AppContext, name: str | None) -> str:
    """The case set ``name``, or the sample cases (imported on first use)."""
    return name or cases_mod.ensure_sample(app.store)


def _notebook_command(store: Any, dataset: str, case_id: str, typed: str) -> bool:
    """``/mark`` (again: unmark) and ``/note TEXT`` on the case; True when ``typed`` was one."""
    from engine.bank.notebook import set_note, toggle_mark
    from engine.review.profiles import DEFAULT_PROFILE

    word, _, rest = typed.partition(" ")
    if word == "/mark":
        on = toggle_mark(store, DEFAULT_PROFILE, "consult", dataset, case_id)
        click.echo("(case marked)" if on else "(case unmarked)")
        return True
    if word == "/note":
        set_note(store, DEFAULT_PROFILE, "consult", dataset, case_id, rest)
        click.echo("(note kept)")
        return True
    return False


@click.command("chat")
@click.option("--case", "case_id", help="Case id (needed unless --resume).")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@click.option("--patient", "patient_name", help="Patient model (default: the default chat model).")
@click.option(
    "--max-turns",
    type=click.IntRange(1, MAX_TURNS),
    default=ConsultSettings.max_turns,
    show_default=True,
)
@click.option(
    "--resume",
    type=int,
    metavar="ID",
    help="Go on with consultation ID (quit or killed) where it stopped, with its own case.",
)
@pass_app
def consult_chat(
    app: AppContext,
    case_id: str | None,
    cases_name: str | None,
    patient_name: str | None,
    max_turns: int,
    resume: int | None,
) -> None:
    """Be the doctor: ask questions (/done or an empty line to stop), then answer the task.
    /mark marks the case to come back to it, /note TEXT writes a note on it (your notebook:
    `medexam notes`). Each turn is stored as it happens: --resume ID goes on with a
    consultation quit or killed (its run id, shown at the start) where it stopped."""
    from engine.consult.doctor import person
    from engine.models.pool import default_pool

    store = app.store
    if resume is not None:
        settings = store.run(resume)["settings"] or {}
        patient_name = patient_name or settings.get("patient")
    elif case_id is None:
        raise click.UsageError("--case is needed (or --resume ID)")
    with default_pool().lease(patient_name) as model:
        if resume is not None:
            c = person.resume_person_consultation(store, resume, model)
        else:
            name = case_set(app, cases_name)
            case = cases_mod.get_case(store, name, str(case_id))
            c = person.start_person_consultation(store, name, case, model, max_turns)
        run_id, case = c.run_id, c.case
        if run_id is None:  # a person's consultation is stored from its start
            raise click.ClickException("the consultation was not stored")
        name = str(store.run(run_id)["dataset"])
        click.echo(f"stored as run {run_id} (--resume {run_id} goes on with it)")
        try:
            _dialogue(store, name, c)
            try:
                answer = click.prompt("Your answer", default="", show_default=False)
            except click.Abort:
                answer = ""
            result = person.finish_person_consultation(c, answer)
        except BaseException:
            person.abandon_person_consultation(c)
            raise
    verdict = "correct" if result.correct else "wrong"
    click.echo(visible(f"{verdict}: the answer is {result.task.gold}"))
    if result.task.similarity is not None:
        click.echo(f"similarity to the gold diagnosis: {result.task.similarity:.2f}")
    view = fact_view(case, result.turns)
    revealed = [v["key"] for v in view if v["status"] == "revealed"]
    never = [v["key"] for v in view if v["status"] == "never_asked"]
    click.echo(
        visible(f"facts revealed: {len(revealed)}/{len(view)}; never asked: {', '.join(never)}")
    )
    from engine.consult.scoring.audit import audit_lines, person_audit

    click.echo("The patient audited:")
    for line in audit_lines(person_audit(case, result.turns)):
        click.echo(visible(f"  {line}"))
    click.echo(json.dumps({"run_id": run_id, **result.metrics}, default=str))


def _dialogue(store: Store, dataset: str, c: Any) -> None:
    """The turns so far, then the doctor's questions at the prompt until /done, an empty
    line or the last question; then the task."""
    for turn in c.turns:
        who = "Patient" if turn["role"] == "patient" else "Doctor"
        click.echo(visible(f"{who}: {turn['text']}", newlines=True))
    while c.questions_left:
        try:
            question = click.prompt("Doctor", default="", show_default=False).strip()
        except click.Abort:
            question = ""
        if not question or question == "/done":
            break
        if _notebook_command(store, dataset, c.case.id, question):
            continue
        click.echo(visible(f"Patient: {c.ask(question)['text']}", newlines=True))
    click.echo("")
    click.echo(visible(c.task_text, newlines=True))


def standing(store: Store, profile: str, as_json: bool) -> None:
    """``medexam stats --activity consult``: the person's consultations, each case's date,
    diagnosis right or wrong and facts elicited, then the facts most often missed."""
    from engine.consult.practice_log import consult_log

    log = consult_log(store, profile)
    if as_json:
        echo_json(log)
        return
    click.echo(f"{len(log['cases'])} consultations, {log['right']} right")
    for c in log["cases"]:
        right = "right" if c["correct"] else "wrong"
        click.echo(
            visible(f"  {c['date']} {c['case']}: {right}, {c['elicited']}/{c['facts']} facts")
        )
    if log["most_missed"]:
        click.echo(
            "facts most often missed: "
            + ", ".join(f"{m['fact']} ({m['times']})" for m in log["most_missed"])
        )
