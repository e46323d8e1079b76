"""``medexam consult …`` (consultations with a simulated patient) and the case importers."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from engine.cli.common import COUNT, AppContext, echo_json, json_option, load_options, pass_app
from engine.cli.importing import import_options
from engine.cli.running import (
    RunOptions,
    cancelled_on_interrupt,
    execute,
    execute_run,
    metric_lines,
    progress_bar,
    run_options,
    run_title,
    trial_options,
)
from engine.consult.cases import agentclinic
from engine.consult.cases import cases as cases_mod
from engine.consult.cli_person import case_set, consult_chat
from engine.consult.report.tables import FORMATS
from engine.consult.scoring.metrics import (
    SUMMARY_KEYS,
    asked_nothing_line,
    fact_view,
    turn_analysis,
)
from engine.consult.settings import MAX_TURNS, ConsultSettings
from engine.core.progress import Progress
from engine.core.scoring import activity_metrics
from engine.fields import settings_options
from engine.text.columns import visible

if TYPE_CHECKING:
    from engine.models.load import LoadSettings
    from engine.types import JSONDict

#: Shown after the summary keys by `consult run`.
EXTRA_KEYS = ("leakage", "patient_mode", "solver_model")


def _note(p: Progress) -> str:
    """``osce-002 ✓ 4 turns``, or what the run said of the case instead of its turns."""
    if p.info.get("correct") is not None:
        said = p.info.get("note") or f"{p.info.get('turns')} turns"
        return f"{p.message} {'✓' if p.info['correct'] else '✗'} {said}"
    return p.message


def _imported(app: AppContext, name: str, as_json: bool) -> None:
    ds = app.store.dataset(name)
    if as_json:
        echo_json(ds)
        return
    found = (ds.get("meta") or {}).get("agentclinic_format")
    kind = f" ({agentclinic.FORMAT_NAMES.get(found, found)})" if found else ""
    click.echo(f"imported {ds['n_items']} cases{kind} as {ds['name']!r}")


@click.command("agentclinic")
@import_options(exists=True)
def import_agentclinic(
    app: AppContext, path: str, name: str | None, replace: bool, as_json: bool
) -> None:
    """Import AgentClinic cases (MedQA, MedQA-extended, MIMIC-IV OSCE or NEJM; JSONL) as
    consultation cases; says which format it found."""
    from pathlib import Path

    name = name or Path(path).stem
    agentclinic.import_agentclinic(app.store, path, name, replace=replace)
    _imported(app, name, as_json)


@click.command("cases")
@import_options(exists=True)
def import_cases(
    app: AppContext, path: str, name: str | None, replace: bool, as_json: bool
) -> None:
    """Import consultation cases in medexam's native JSON format."""
    from pathlib import Path

    from engine.importers import named_if_other_format

    name = name or Path(path).stem
    with named_if_other_format(path, ("consult", "cases")):
        cases_mod.import_cases(app.store, path, name, replace=replace)
    _imported(app, name, as_json)


@click.group()
def consult() -> None:
    """Consultations with a simulated patient: chat, run doctors, convert questions."""


@consult.command("cases")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@json_option
@pass_app
def consult_cases(app: AppContext, cases_name: str | None, as_json: bool) -> None:
    """List the cases of a data set."""
    found = cases_mod.load_cases(app.store, case_set(app, cases_name))
    if as_json:
        echo_json([c.to_dict() for c in found])
        return
    for c in found:
        line = f"{c.id:<18} {c.task.kind:<9} {len(c.facts):>3} facts  {c.initial_request[:60]}"
        click.echo(visible(line))


@consult.command("run")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@settings_options(ConsultSettings)
@trial_options
@run_options
@pass_app
def consult_run(
    app: AppContext,
    cases_name: str | None,
    settings: ConsultSettings,
    trials: int,
    resume_set: str | None,
    run: RunOptions,
) -> None:
    """Run a doctor (or a baseline) over the cases; the last line is the summary as JSON.

    \b
    medexam consult run --cases osce --doctor model --temperature 0.7 --trials 5
    """
    name = case_set(app, cases_name) if run.resume is None and resume_set is None else None

    def show(summary: dict[str, Any]) -> None:
        if not run.quiet:
            click.echo(f"run {summary['run_id']} ({summary['status']}), {summary['n']} cases")
            added = tuple(activity_metrics("consult", added=True))  # measures added since
            metric_lines("consult", summary, SUMMARY_KEYS + EXTRA_KEYS + added)
            if summary.get("asked_nothing"):
                click.echo(asked_nothing_line(summary))
        click.echo(json.dumps(summary, default=str))

    title = run_title(app, settings.doctor, name, run)
    found = execute(app, "consult", name, settings, run, trials, resume_set, title=title,
                    show=show, note=_note)  # fmt: skip
    run_ids = [int(r) for r in found.get("run_ids") or [found["run_id"]]]
    judge = (app.store.run(run_ids[0]).get("settings") or {}).get("judge")
    if judge:
        _judge_runs(app, run_ids, str(judge), run.quiet)


def _judge_runs(app: AppContext, run_ids: list[int], judge: str, quiet: bool) -> None:
    """Judge the diagnoses in words of each run (``--judge``), a line per run; the last line
    is the verdicts' summaries by run as JSON. Ctrl-C stops, saying how to go on."""
    from engine.consult.scoring.judging import NAME, judge_run
    from engine.core.progress import Cancel

    out: dict[int, Any] = {}
    for run_id in run_ids:
        try:
            with progress_bar(f"{judge} judging run {run_id}", quiet) as update:
                done = judge_run(app.store, run_id, judge, progress=update, cancel=Cancel())
        except KeyboardInterrupt:
            click.echo(f"judging stopped; go on with: medexam rescore {run_id} --scorer {NAME} "
                       f"--judge {judge}", err=True)  # fmt: skip
            sys.exit(130)
        s = out[run_id] = done.summary.get("judged") or {}
        if not quiet and s:
            agree = (f"; agrees with the letter {s['agreement']:.1f}% (κ {s['kappa']})"
                     if s.get("agreement") is not None else "")  # fmt: skip
            click.echo(
                f"run {run_id} judged by {judge}: {s['judged']} answers, correct "
                f"{s['correct'] or 0:.1f}%, partly {s['partly'] or 0:.1f}%, wrong "
                f"{s['wrong'] or 0:.1f}% (string match {s['string_match'] or 0:.1f}%){agree}"
            )
    click.echo(json.dumps({"judged": out}, default=str))


@consult.command("budget")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@click.option(
    "--turns",
    default="1,2,4,8",
    show_default=True,
    help=f"The budgets: how many questions the doctor may ask (1 to {MAX_TURNS} each), "
    "comma-separated.",
)
@settings_options(ConsultSettings, exclude=("max_turns",))
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    help="Cases in flight at once (default: as many as the models take, a local model's slots).",
)
@load_options
@json_option
@pass_app
def consult_budget(
    app: AppContext,
    cases_name: str | None,
    turns: str,
    settings: ConsultSettings,
    concurrency: int | None,
    as_json: bool,
    load: LoadSettings,
) -> None:
    """Accuracy and patient recall against the questions allowed: the same settings played
    at each budget of --turns (a finished run of the same settings and budget is reused).
    `medexam report` of the runs draws the curve.

    \b
    medexam consult budget --cases osce --doctor model --turns 1,2,4,8,16 --limit 20
    """
    from engine.consult.doctor.budget import parse_turns, questions_allowed, turn_budget
    from engine.core.progress import Cancel
    from engine.fields import as_dict

    budgets = parse_turns(turns)
    name = case_set(app, cases_name)
    given = {k: v for k, v in as_dict(settings).items() if k != "max_turns"}
    at: list[str] = [""]
    started: list[int] = []

    def said() -> str:  # the run of the budget played when Ctrl-C came
        if not started:
            return "cancelled"
        return (f"run {started[-1]} cancelled ({at[0].rstrip(' ·')}); run the same command "
                "again to go on (finished budgets are reused)")  # fmt: skip

    bar = progress_bar(f"{settings.doctor} on {name}", as_json, lambda p: at[0] + p.message)
    with cancelled_on_interrupt(said), bar as update:
        rows = turn_budget(
            app.store, name, given, budgets, progress=update, cancel=Cancel(),
            concurrency=concurrency, on_start=started.append, load=load,
            on_budget=lambda t: at.__setitem__(0, f"{questions_allowed(t)} · "),
        )  # fmt: skip
    if as_json:
        echo_json(rows)
        return
    click.echo(f"{'questions':>9}  {'run':>5}  {'accuracy':>8}  {'patient R':>9}  {'asked':>5}")
    for r in rows:
        reused = " (reused)" if r["reused"] else ""
        click.echo(
            f"{r['turns']:>9}  {r['run_id']:>5}  {r['accuracy'] or 0:>8.1f}  "
            f"{r['patient_recall'] or 0:>9.1f}  {r['avg_turns'] or 0:>5.1f}{reused}"
        )
    click.echo(f"medexam report {' '.join(str(r['run_id']) for r in rows)} --out budget.html")


@consult.command("solver")
@click.argument("model_name", required=False)
@click.option("--reset", is_flag=True, help="Back to the default chat model.")
@pass_app
def consult_solver(app: AppContext, model_name: str | None, reset: bool) -> None:
    """Show or set the fixed solver: the model that answers the task of every consultation
    run (so that doctors are compared on the same footing). `model` is the default chat
    model. Stored in the user data folder's settings.json; `consult run --solver` overrides
    it for one run."""
    from engine import settings

    if reset:
        settings.set("solver", None)
    elif model_name:
        if model_name != "model":
            from engine.models.catalog import resolve

            resolve(model_name)  # an unknown model fails here, in one line
        settings.set("solver", model_name)
    click.echo(f"solver: {settings.get('solver')}")


@consult.command("table")
@click.argument("run_ids", nargs=-1, type=int, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option(
    "--no-bounds",
    is_flag=True,
    help="Do not add the latest upper/lower bound runs of the same data set.",
)
@pass_app
def consult_table(app: AppContext, run_ids: tuple[int, ...], fmt: str, no_bounds: bool) -> None:
    """Runs in the paper's Table 2 layout (Case | Patient Rec/Pre/F1/Len | Doctor
    Rec/Pre/F1/Len | Turn | Acc), upper bound first and lower bound last; warns when the
    runs' solvers differ."""
    from engine.consult.report.tables import paper_table, render_table

    click.echo(render_table(paper_table(app.store, run_ids, bounds=not no_bounds), fmt))


#: What `consult compare` pairs by case: the task, the facts elicited, the questions.
COMPARED = ("accuracy", "patient_recall", "patient_f1", "doctor_f1", "turns")


@consult.command("compare")
@click.argument("run_a", type=int)
@click.argument("run_b", type=int)
@json_option
@pass_app
def consult_compare(app: AppContext, run_a: int, run_b: int, as_json: bool) -> None:
    """Two consultation runs paired case by case (a base and a fine-tuned doctor, say): per
    score, A's and B's means over the shared cases, B − A with its 95% interval and the
    two-sided p of a bootstrap over cases, and how many cases are higher in each."""
    from engine.consult.scoring.metrics import PERCENT_SCORES
    from engine.core.trials import header, paired_sets
    from engine.reports.stats import TOO_FEW

    for run_id in (run_a, run_b):
        if app.store.run(run_id)["activity"] != "consult":
            raise click.UsageError(f"run {run_id} is not a consultation run")
    found = {
        k: paired_sets(app.store, [run_a], [run_b], k, 100.0 if k in PERCENT_SCORES else 1.0)
        for k in COMPARED
    }
    compared = {k: v for k, v in found.items() if v is not None}
    if as_json:
        echo_json({"a": run_a, "b": run_b, "compared": compared})
        return
    if not compared:
        raise click.UsageError(f"runs {run_a} and {run_b} share no answered case")
    first = next(iter(compared.values()))
    click.echo(f"run {run_a} (A) against run {run_b} (B), paired on {first['cases']} cases")
    click.echo(f"{'':<13} {'A':>7} {'B':>7} {'B − A':>7}  {'95% interval':<17} {'p':>6}  A>B  B>A")
    for key, f in compared.items():
        none = TOO_FEW if f.get("too_few") else "—"  # engine.reports.stats.MIN_ITEMS
        span = f"[{f['low']:.2f}, {f['high']:.2f}]" if f["low"] is not None else none
        p = f"{f['p']:.3f}" if f["p"] is not None else none
        label = header(key, "consult")
        click.echo(
            f"{label:<13} {f['mean_a']:>7.2f} {f['mean_b']:>7.2f} {f['diff']:>7.2f}  "
            f"{span:<17} {p:>6}  {f['only_a']:>3}  {f['only_b']:>3}"
        )


@consult.command("export-dialogues")
@click.argument("run_ids", nargs=-1, type=int, required=True)
@click.option(
    "--out", "out_path", type=click.Path(dir_okay=False), required=True, help="JSONL file."
)
@click.option(
    "--answer",
    type=click.Choice(["gold", "run"]),
    default="gold",
    show_default=True,
    help="Final turn: the case's answer (golden dialogues) or the answer the run gave.",
)
@click.option("--correct-only", is_flag=True, help="Only consultations answered right.")
@pass_app
def consult_export_dialogues(
    app: AppContext, run_ids: tuple[int, ...], out_path: str, answer: str, correct_only: bool
) -> None:
    """Write consultations (oracle or model runs) as chat-format JSONL for fine-tuning:
    system, user (patient) and assistant (doctor) turns, then the final answer."""
    from engine.consult.report.tables import write_dialogues

    with open(out_path, "w", encoding="utf-8") as out:
        n = write_dialogues(app.store, run_ids, out, answer=answer, correct_only=correct_only)
    click.echo(f"wrote {n} dialogues to {out_path}")


@consult.command("golden")
@click.option("--cases", "cases_name", help="Case data set (default: cases-sample).")
@click.option("--name", help="Name of the golden set (what 'train doctor --dialogues' takes).")
@click.option("--patient", "patient_name", help="Patient model (default: the default chat model).")
@click.option(
    "--patient-mode",
    type=click.Choice(["paper", "grounded"]),
    default="paper",
    show_default=True,
    help="How the patient plays (see 'consult run --help').",
)
@click.option("--writer", "--converter", "writer", help="Model that writes the doctor's "
              "question for each key and the closing analysis, as the paper had ChatGPT "
              "write them (each checked; a question that fails is the template's).")  # fmt: skip
@click.option("--template", is_flag=True, help="The template question per key and a one-line "
              "closing (the default when no --writer is given).")  # fmt: skip
@click.option("--limit", type=COUNT, help="Only the first N cases.")
@click.option("--replace", is_flag=True, help="Replace a golden set of that name.")
@run_options
@pass_app
def consult_golden(
    app: AppContext,
    cases_name: str | None,
    name: str | None,
    patient_name: str | None,
    patient_mode: str,
    writer: str | None,
    template: bool,
    limit: int | None,
    replace: bool,
    run: RunOptions,
) -> None:
    """Build golden dialogues to fine-tune a doctor on: in each turn the doctor asks about
    one key of the case and the patient model answers; the doctor ends with the case's
    diagnosis. With --writer a model writes each question and the closing analysis.
    Stored as a consultation run (show it with 'consult show', write it with 'consult
    export-dialogues'); Ctrl-C, then the same command goes on where it stopped; the last
    line is the summary as JSON.

    \b
    medexam consult golden --cases agentclinic-train --patient smollm2 --name golden-train
    medexam consult golden --cases medqa-cases --writer smollm2 --name golden-written
    """
    from dataclasses import replace as replaced

    from engine.consult.training.golden import forget_runs, golden_settings, writer_counts

    if template and writer:
        raise click.UsageError("give --writer MODEL or --template, not both")
    settings: Any = ConsultSettings()
    tags, old = None, []
    if run.resume is None:
        if not name:
            raise click.UsageError("give --name (or --resume RUN)")
        cases_name = case_set(app, cases_name)
        plan = golden_settings(
            app.store, name, patient=patient_name, limit=limit, patient_mode=patient_mode,
            writer=writer, replace=replace, cases=cases_name,
        )  # fmt: skip
        settings, tags, old = plan.settings, plan.tags, plan.old
        if plan.resume is not None:
            run, tags = replaced(run, resume=plan.resume), None
            if not run.quiet:
                click.echo(f"going on with golden set {name!r} (run {plan.resume})", err=True)

    def show(summary: dict[str, Any]) -> None:
        counts = writer_counts(app.store, summary["run_id"])
        if not run.quiet:
            found = app.store.run(summary["run_id"])["settings"].get("golden")
            click.echo(
                f"golden set {found!r}: run {summary['run_id']} ({summary['status']}), "
                f"{summary['n']} dialogues, {summary.get('avg_turns') or 0:.1f} questions each"
            )
            if counts["writer"]:
                why = "; ".join(f"{n} {k}" for k, n in counts["why"].items())
                click.echo(visible(
                    f"written by {counts['writer']}: {counts['written']} of "
                    f"{counts['questions']} questions ({counts['template']} the template's"
                    f"{': ' + why if why else ''}), {counts['closings_written']} of "
                    f"{counts['closings_written'] + counts['closings_template']} closings"
                ))  # fmt: skip
            click.echo(f"train a doctor on it: medexam train doctor --dialogues {found} "
                       f"--name {found}-doctor")  # fmt: skip
        click.echo(json.dumps(summary | ({"writer": counts} if counts["writer"] else {}),
                              default=str))  # fmt: skip

    title = f"golden set {name or ''}" + (f" written by {writer}" if writer else "")
    summary = execute_run(app, "consult", cases_name, settings, run, title=title,
                          show=show, note=_note, tags=tags)  # fmt: skip
    forget_runs(app.store, old, summary)


@consult.command("show")
@click.argument("run_id", type=int)
@click.option("--case", "case_id", help="Only this case.")
@json_option
@pass_app
def consult_show(app: AppContext, run_id: int, case_id: str | None, as_json: bool) -> None:
    """A consultation run: each dialogue, the facts it reached, and the turn analysis."""
    store = app.store
    run = store.run(run_id)
    found = {c.id: c for c in cases_mod.load_cases(store, run["dataset"])}
    answers = [a for a in store.answers(run_id) if case_id in (None, a["item_key"])]
    detail: list[JSONDict] = []
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
    for d in detail:  # the texts' control characters shown escaped, never sent to the terminal
        click.echo(visible(
            f"== {d['case']}  answer {d['answer']['chosen']!r}  gold "
            f"{d['answer']['gold']!r}  {'✓' if d['answer']['correct'] else '✗'}"
        ))  # fmt: skip
        for t in d["turns"]:
            who = "Doctor " if t["role"] == "doctor" else "Patient"
            given = [f["key"] for f in t["extra"].get("facts", [])]
            note = f"   [facts: {', '.join(given)}]" if given else ""
            click.echo(visible(f"{t['turn']:>2} {who}: {t['text']}{note}", newlines=True))
        never = [f["key"] for f in d["facts"] if f["status"] == "never_asked"]
        click.echo(visible(f"   never asked: {', '.join(never) or '—'}"))
    click.echo("fraction  patient_f1  doctor_f1  accuracy")
    for row in analysis:
        acc = "—" if row["accuracy"] is None else f"{row['accuracy']:.1f}"
        click.echo(
            f"{row['fraction']:>8.2f}  {row['patient_f1']:>10.1f}  "
            f"{row['doctor_f1']:>9.1f}  {acc:>8}"
        )


def _add_data_commands() -> None:
    from engine.consult.cli_data import consult_convert, consult_stats

    consult.add_command(consult_chat)
    consult.add_command(consult_convert)
    consult.add_command(consult_stats)


_add_data_commands()


@consult.command("audit")
@click.argument("run_id", type=int)
@json_option
@pass_app
def consult_audit(app: AppContext, run_id: int, as_json: bool) -> None:
    """The patient of a consultation run audited: per requirement of the paper's patient
    (honest, strict, everyday words, a patient's voice) the share of its replies that break
    it, how, and one reply that does."""
    from engine.consult.scoring.audit import run_audit, tally_lines

    run = app.store.run(run_id)
    if run.get("activity") != "consult":
        raise click.ClickException(f"run {run_id} is not a consultation run")
    settings = run.get("settings") or {}
    patient = settings.get("patient_model") or settings.get("patient")
    mode = settings.get("patient_mode")
    found = run_audit(app.store, run_id)
    if as_json:
        echo_json({"run_id": run_id, "patient": patient, "patient_mode": mode, **found})
        return
    click.echo(f"run {run_id}: {patient} as the patient ({mode} mode)")
    for line in tally_lines(found):
        click.echo(visible(line))
