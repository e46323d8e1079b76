"""``medexam experiment …``: a grid of runs — a paper's protocol or an experiment file —
planned, played as one resumable job and listed (:mod:`engine.experiments`)."""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

import click

from engine.cli.common import (
    COUNT,
    F,
    echo_document,
    echo_json,
    json_option,
    load_options,
    pass_app,
    verdict_options,
)
from engine.text.columns import align_rows, visible

if TYPE_CHECKING:
    from engine.cli.common import AppContext
    from engine.core.progress import Progress
    from engine.experiments.plan import Plan
    from engine.models.load import LoadSettings
    from engine.types import JSONDict


def _models(value: str | None) -> list[str]:
    return [m.strip() for m in (value or "").split(",") if m.strip()]


def grid_options(func: F) -> F:
    """``WHAT`` (a preset or an experiment file), ``--models``, ``--dataset``, ``--limit``,
    ``--trials``."""

    @functools.wraps(func)
    def wrapper(*args: Any, models: str | None, **kw: Any) -> Any:
        return func(*args, models=_models(models), **kw)

    wrapper = click.option("--limit", type=COUNT, help="Only the first N items of every run.")(
        wrapper
    )
    wrapper = click.option(
        "--trials",
        type=click.IntRange(min=1),
        default=None,
        help="Play every run N times, seeds seed, seed + 1, … (it must sample: "
        "a temperature above 0); the tables give the mean ± spread.",
    )(wrapper)
    wrapper = click.option("--dataset", help="The data set every run answers.")(wrapper)
    wrapper = click.option(
        "--models",
        metavar="A,B",
        help="The models, separated by commas (a file's own if left out).",
    )(wrapper)
    wrapper = click.argument("what", metavar="PRESET|FILE")(wrapper)
    return wrapper  # type: ignore[return-value]


@click.group()
def experiment() -> None:
    """A grid of runs as one job: a paper's protocol (a preset) or models × settings written in
    a TOML file.

    \b
    medexam experiment presets
    medexam experiment plan explaincpe-table8 --models smollm2,gemma3-270m --dataset cpe-test
    medexam experiment run explaincpe-table8 --models smollm2 --dataset cpe-test --limit 10
    medexam experiment show            # every experiment, its runs and their status
    medexam report --experiment 1 --out table8.html
    """


@experiment.command("presets")
@json_option
def experiment_presets(as_json: bool) -> None:
    """The presets: the papers' protocols and compare-models."""
    from engine.experiments.plan import presets

    found = {n: {"title": p.title, "data set": p.dataset_hint} for n, p in presets().items()}
    if as_json:
        echo_json(found)
        return
    rows = [[name, p["title"]] for name, p in found.items()]
    for line in align_rows(["preset", "protocol"], rows):
        click.echo(line)


def _plan(
    app: AppContext,
    what: str,
    models: list[str],
    dataset: str | None,
    limit: int | None,
    trials: int | None,
) -> Plan:
    from engine.experiments.plan import make_plan

    return make_plan(app.store, what, models, dataset, limit, trials)


def _plan_lines(plan: Plan) -> None:
    from engine.core.estimate import duration_text

    stored = f" (experiment {plan.experiment_id})" if plan.experiment_id is not None else ""
    click.echo(visible(f"{plan.title}{stored}: {len(plan.cells)} runs of {plan.spec['dataset']}"))
    rows = []
    for i, c in enumerate(plan.cells, start=1):
        if c.own is not None:
            what = f"run {c.own['id']} {c.own['status']}" + (
                "" if c.own["status"] == "finished" else f", {c.estimate.items} left to answer"
            )
        elif c.reuse is not None:
            what = f"reuses run {c.reuse}"
        elif c.same_as is not None:
            what = f"the same run as #{c.same_as + 1}"
        elif c.estimate.seconds is not None:
            other = ", other settings" if c.rough else ""
            took = f"as run #{c.estimate.run_id} took{other}"
            what = f"≈ {duration_text(c.estimate.seconds)} ({took})"
        else:
            what = "to play"
        if c.stale is not None and c.own is None:
            what += f"; run {c.stale} answered the data set's earlier items"
        rows.append([str(i), c.cell.label, str(c.estimate.items), what])
    for line in align_rows(["#", "run", "items", "plan"], rows):
        click.echo(f"  {line}")
    click.echo(plan.time_text())


@experiment.command("plan")
@grid_options
@json_option
@pass_app
def experiment_plan(
    app,
    what: str,
    models: list[str],
    dataset: str | None,
    limit: int | None,
    trials: int | None,
    as_json: bool,
) -> None:
    """The runs PRESET or FILE needs, which finished runs it reuses, and the time it should
    take."""
    plan = _plan(app, what, models, dataset, limit, trials)
    if as_json:
        echo_json(plan.as_json())
        return
    _plan_lines(plan)


def _note(p: Progress) -> str:
    """The run played, after the progress bar's own percentage and time left."""
    from engine.experiments.run import progress_line

    return visible(progress_line(p.info, p.message, with_left=False))


def _play(
    app: AppContext,
    experiment_id: int,
    quiet: bool,
    concurrency: int | None,
    again: str,
    load: LoadSettings,
) -> JSONDict:
    from engine.cli.running import cancelled_on_interrupt, progress_bar
    from engine.core.progress import Cancel
    from engine.experiments.run import run_experiment

    said = f"experiment {experiment_id} cancelled; go on with: {again}"

    def line(cell: JSONDict, summary: JSONDict) -> None:
        if not quiet:
            run = "–" if summary.get("run_id") is None else summary["run_id"]
            click.echo(f"run {run} ({summary.get('status')}): {visible(cell['label'])}", err=True)

    title = f"experiment {experiment_id}"
    with cancelled_on_interrupt(lambda: said), progress_bar(title, quiet, _note) as update:
        return run_experiment(
            app.store, experiment_id, progress=update, cancel=Cancel(),
            concurrency=concurrency, on_cell=line, load=load,
        )  # fmt: skip


@experiment.command("run")
@grid_options
@load_options(
    context="Context length the local models are loaded with, in tokens (default: each "
    "run's, sized to its longest prompt and reply, at least 4096 and at most the model's "
    "trained context)."
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=None,
    help="Items answered at once in each run (default: as many as its models take).",
)
@verdict_options
@json_option
@pass_app
def experiment_run(
    app,
    what: str,
    models: list[str],
    dataset: str | None,
    limit: int | None,
    trials: int | None,
    concurrency: int | None,
    margin: float,
    reference: str | None,
    as_json: bool,
    load: LoadSettings,
) -> None:
    """Play the runs of PRESET or FILE as one job (or go on with an experiment by its id:
    medexam experiment run ID): finished runs with the same settings are reused, a stopped
    run is resumed where it stopped. Ctrl-C stops it; the same command goes on with it.
    compare-models ends with the comparison, each model judged against the top model (or
    --reference) within ± --margin."""
    from engine.experiments.run import open_experiment

    if what.isdigit():
        experiment_id, new = int(what), False
        from engine.experiments.records import get

        get(app.store, experiment_id)  # one line when there is none
        again = f"medexam experiment run {experiment_id}"
    else:
        plan = _plan(app, what, models, dataset, limit, trials)
        experiment_id, new = open_experiment(app.store, plan)
        again = f"medexam experiment run {experiment_id}"
        if not as_json and new:
            said = f"experiment {experiment_id}: {plan.title}; {plan.time_text()}"
            click.echo(visible(said), err=True)
    if not as_json and not new:
        found = _shown(app, experiment_id)
        done = sum(r["status"] == "finished" for r in found["runs"])
        said = f"experiment {experiment_id} goes on: {found['title']}; "
        click.echo(visible(f"{said}{done} of {len(found['runs'])} runs finished"), err=True)
    result = _play(app, experiment_id, as_json, concurrency, again, load)
    shown = _shown(app, experiment_id)
    summary = _summary(app, experiment_id, margin=margin, reference=reference)
    if as_json:
        echo_json({**shown, "played": result["played"], "summary": summary and summary[0]})
    else:
        _show_lines(shown)
        if summary is not None:
            echo_document("\n" + summary[1], "text")
    if result["failed"]:
        first = result["failed"][0]
        which = f"run {first['run_id']} " if first["run_id"] is not None else ""
        click.echo(
            f"Error: {len(result['failed'])} run(s) failed or could not start, the first "
            f"{which}({visible(first['label'])}): {visible(first['error'])} "
            f"(try again with: {again})",
            err=True,
        )
        sys.exit(1)
    if result["status"] == "cancelled":
        click.echo(f"experiment {experiment_id} stopped; go on with: {again}", err=True)
        sys.exit(130)


def _summary(app: AppContext, experiment_id: int, **options: Any) -> tuple[JSONDict, str] | None:
    """What the experiment's preset makes of its runs (compare-models: the comparison, with
    ``options`` such as its margin and reference), as JSON and text; None when it has
    nothing to say (yet)."""
    from engine.experiments.plan import preset_of
    from engine.experiments.records import get

    found = get(app.store, experiment_id)
    preset = preset_of(found)
    if preset is None or not preset.summary:
        return None
    return preset.summary.load()(app.store, found, **options)


def _shown(app: AppContext, experiment_id: int) -> JSONDict:
    """An experiment as ``show`` gives it: its runs without their whole rows."""
    from engine.experiments.records import get

    return _public(app, get(app.store, experiment_id))


def _public(app: AppContext, found: JSONDict) -> JSONDict:
    """An experiment's runs without their whole rows, and the spread over each cell's
    trials (none without ``--trials``)."""
    from engine.experiments.run import trial_spreads
    from engine.reports.export import headline

    runs = []
    for c in found["cells"]:
        run = c["run"] or {}
        runs.append(
            {
                "run_id": c["run_id"],
                "label": c["label"],
                "status": c["status"],
                "error": c["error"] or (run.get("error") if run else None),
                "reused": c["reused"],
                "activity": c["activity"],
                "dataset": c["dataset"],
                "settings": c["settings"],
                "coords": c["coords"],
                "done": run.get("n_done"),
                "total": run.get("n_total"),
                "score": headline(run) if run else None,
            }
        )
    keys = ("id", "name", "title", "status", "created", "spec")
    return {**{k: found[k] for k in keys}, "runs": runs, "trials": trial_spreads(app.store, found)}


def _show_lines(found: JSONDict) -> None:
    done = sum(r["status"] == "finished" for r in found["runs"])
    click.echo(
        visible(
            f"experiment {found['id']}: {found['title']} · {found['status']} · "
            f"{done}/{len(found['runs'])} runs finished"
        )
    )
    rows = [
        [
            "–" if r["run_id"] is None else f"#{r['run_id']}",
            r["label"],
            r["status"] + (" (reused)" if r["reused"] else ""),
            "" if r["done"] is None else f"{r['done']}/{r['total']}",
            r["score"] or "",
        ]
        for r in found["runs"]
    ]
    for line in align_rows(["run", "setting", "status", "done", "score"], rows):
        click.echo(f"  {line}")
    _trial_lines(found["trials"])
    for r in found["runs"]:
        if r["status"] in ("could not start", "failed", "does not fit") and r["error"]:
            click.echo(f"  {visible(r['label'])}: {visible(r['error'])}")


def _trial_lines(sets: list[JSONDict]) -> None:
    """Each cell's spread over its trials: its first score's mean ± SD [95% interval]."""
    from engine.core.trials import header, spread_text

    if not sets:
        return
    click.echo("  over the trials: mean ± SD between trials [95% interval]")
    rows = []
    for s in sets:
        key = next(iter(s["spread"]), None)
        shown = f"{header(key)} {spread_text(s['spread'][key])}" if key else "–"
        rows.append([s["label"], f"{len(s['runs'])}/{s['trials']} trials", shown])
    for line in align_rows(["setting", "finished", "score"], rows):
        click.echo(f"  {line}")


@experiment.command("show")
@click.argument("experiment_id", type=int, required=False)
@verdict_options
@json_option
@pass_app
def experiment_show(
    app, experiment_id: int | None, margin: float, reference: str | None, as_json: bool
) -> None:
    """Every experiment with its runs and their status (or experiment EXPERIMENT_ID's,
    compare-models' with its comparison: --margin and --reference as for runs compare)."""
    from engine.experiments.records import all_experiments, get

    found = (
        [get(app.store, experiment_id)] if experiment_id is not None else all_experiments(app.store)
    )
    shown = [_public(app, f) for f in found]
    summary = (
        _summary(app, experiment_id, margin=margin, reference=reference)
        if experiment_id is not None
        else None
    )
    if as_json:
        one = {**shown[0], "summary": summary and summary[0]} if shown and experiment_id else None
        echo_json(one if experiment_id is not None else shown)
        return
    if not shown:
        click.echo("no experiments yet")
    for f in shown:
        _show_lines(f)
    if summary is not None:
        echo_document("\n" + summary[1], "text")
