"""``medexam exam …`` and ``medexam import explaincpe|mcq|responses``: the pharmacist exam
activity (a thin shell over :mod:`engine.exam`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from engine.bank.blocks import choose
from engine.cli.bank import (
    ask_reason,
    block_options,
    chosen_block,
    drawn_line,
    take_command,
)
from engine.cli.common import COUNT, MAX_CONTEXT, AppContext, echo_json, json_option, pass_app
from engine.cli.importing import import_options, sample_command
from engine.cli.running import (
    RunOptions,
    execute,
    metric_lines,
    run_options,
    run_title,
    trial_options,
)
from engine.core.progress import Progress
from engine.core.scoring import activity_metrics
from engine.exam import dataset as dataset_mod
from engine.exam.metrics import score_responses
from engine.exam.person import ExamSitting, missed_items
from engine.exam.prompts import format_question
from engine.exam.responses import read_responses
from engine.exam.settings import ExamSettings, PracticeSettings
from engine.fields import settings_options
from engine.review.profiles import resolve
from engine.text.columns import display_width, fmt_number, pad, visible


def _note_right() -> Callable[[Progress], str]:
    """A progress note with each answer's question id and the running count of right ones
    (a resumed run's earlier sessions counted too: ``id 2 ✓  3/4 right``)."""
    right = [0, 0]

    def note(p: Progress) -> str:
        if "scored" in p.info:  # the run's start: what its earlier sessions answered
            right[:] = [int(p.info.get("right") or 0), int(p.info["scored"] or 0)]
        if p.info.get("correct") is None:
            return p.message
        right[0] += bool(p.info["correct"])
        right[1] += 1
        mark = "✓" if p.info["correct"] else "✗"
        return f"id {p.message} {mark}  {right[0]}/{right[1]} right"

    return note


def _import(
    app: AppContext, path: str, fmt: str, name: str | None, replace: bool, as_json: bool
) -> None:
    from engine.importers import named_if_other_format

    with named_if_other_format(path, ("exam", fmt)):
        ds = dataset_mod.import_file(app.store, path, fmt, name, replace=replace)
    if as_json:
        echo_json(ds)
        return
    known = (ds.get("meta") or {}).get("with_candidates")
    said = f" ({known} with how real candidates did)" if known else ""
    click.echo(f"imported {ds['n_items']} questions as {ds['name']!r}{said}")


@click.command("explaincpe")
@import_options()
def import_explaincpe(
    app: AppContext, path: str, name: str | None, replace: bool, as_json: bool
) -> None:
    """Import an ExplainCPE JSON file (id, question, 5 options, answer, explanation, optional
    analyse and type1/type2/type3). Every record is checked first; nothing is imported when
    one is invalid."""
    _import(app, path, "explaincpe", name, replace, as_json)


@click.command("mcq")
@import_options()
def import_mcq(app: AppContext, path: str, name: str | None, replace: bool, as_json: bool) -> None:
    """Import single-answer multiple-choice questions from JSON, JSON Lines or CSV (the
    ExplainCPE fields, or MedQA's own JSONL; 2 to 10 options; CSV options as columns A-J or
    a JSON/"|" list)."""
    _import(app, path, "mcq", name, replace, as_json)


@click.command("responses")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--dataset", required=True, help="The data set the responses answer.")
@click.option("--model", required=True, help="The model that wrote them, e.g. gpt-3.5-turbo.")
@click.option("--field", required=True, help="The response field or its setting, e.g. one_without.")
@click.option("--again", is_flag=True, help="Store responses already stored as a run once more.")
@json_option
@pass_app
def import_responses(
    app: AppContext, path: str, dataset: str, model: str, field: str, again: bool, as_json: bool
) -> None:
    """Store published responses (a JSON list of objects with the question's id and the
    field) as a finished run of MODEL over the data set, scored as `exam score` scores
    them: its explanations can then be rated and compared beside other runs. Responses
    already stored (the same texts and judgements to the same questions) are refused
    unless --again is given."""
    from engine.exam.responses import import_responses as store_responses

    run_id = store_responses(app.store, path, dataset, model, field, again)
    run = app.store.run(run_id)
    if as_json:
        echo_json(run)
        return
    s = run["summary"]
    line = (
        f"stored run {run_id}: {run['model']} · {run['settings']['setting']} · "
        f"{s['answered']} answers · accuracy {fmt_number(s['accuracy'], unit='%')}%"
    )
    if s["answered"] < s["n"]:
        line += f" ({s['n'] - s['answered']} questions without a response count as wrong)"
    if s.get("unmatched_responses"):
        line += f" ({s['unmatched_responses']} responses match no question: left out)"
    click.echo(visible(line))


@click.group()
def exam() -> None:
    """Pharmacist exam questions: run a model, score responses, take an exam."""


sample_command(
    exam,
    dataset_mod.ensure_sample,
    lambda name: f"data set {name!r} is ready",
    "questions as 'explaincpe-sample'",
)


@exam.command("score")
@click.option(
    "--gold",
    "gold_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="The questions (ExplainCPE JSON, JSON Lines or CSV).",
)
@click.option(
    "--responses",
    "responses_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="JSON list of objects with 'id' and the response field.",
)
@click.option("--field", required=True, help="The response field or its setting, e.g. one_with.")
@json_option
def exam_score(gold_path: str, responses_path: str, field: str, as_json: bool) -> None:
    """Score published responses: accuracy, ROUGE-1/2/L against the gold explanations, by
    question type. Published judgements (<setting>_judge) give the accuracy when present."""
    gold = dataset_mod.load_file(gold_path, "mcq")
    responses = read_responses(responses_path)
    result = score_responses(gold, responses, field)
    if as_json:
        echo_json(result)
        return
    click.echo(f"questions  {result['n']}")
    line = f"accuracy   {result['accuracy']:.1f}"
    if result["accuracy_source"] == "judge":
        line += (
            f"  (published judgements; extracted letters {result['accuracy_extracted']:.1f},"
            f" agreement {result['judge_agreement']:.2f}%)"
        )
    click.echo(line)
    click.echo(f"ROUGE-1    {result['rouge1']:.3f}")
    click.echo(f"ROUGE-2    {result['rouge2']:.3f}")
    click.echo(f"ROUGE-L    {result['rougeL']:.3f}")
    _by_type_lines(result["by_type"])


def _by_type_lines(by_type: dict[str, Any], answered: str = "") -> None:
    """Accuracy by each type field; ``answered`` ("1 of 2 answered") heads each table."""
    for field, groups in by_type.items():
        if not groups:  # nothing answered (a run that failed at once): no empty heading
            continue
        click.echo(f"{field} ({answered}):" if answered else f"{field}:")
        width = max([10, *(display_width(visible(v)) for v in groups)])
        for value, block in groups.items():
            name = pad(visible(value), width)
            shown = fmt_number(block["accuracy"], unit="%")
            click.echo(f"  {name} n={block['n']:<4} accuracy {shown:>5}%")


@exam.command("run")
@click.option("--dataset", help="Data set name (default: the sample questions).")
@settings_options(ExamSettings)
@click.option(
    "--n-ctx",
    type=click.IntRange(256, MAX_CONTEXT),
    default=None,
    help="Context length the model is loaded with, in tokens (default: 4096, more when the "
    "prompts need it, up to the model's trained context).",
)
@trial_options
@run_options
@pass_app
def exam_run(
    app: AppContext,
    dataset: str | None,
    settings: ExamSettings,
    n_ctx: int | None,
    trials: int,
    resume_set: str | None,
    run: RunOptions,
) -> None:
    """Run a model over an exam data set, storing each answer as it comes.

    \b
    medexam exam run --method generate --temperature 0.7 --trials 5 --limit 50
    """
    if run.resume is None and resume_set is None:
        dataset = dataset or dataset_mod.ensure_sample(app.store)
    title = run_title(app, settings.model, dataset, run)
    show = echo_json if run.quiet else _summary_lines
    run = dataclasses.replace(run, load=dataclasses.replace(run.load, n_ctx=n_ctx))
    execute(app, "exam", dataset, settings, run, trials, resume_set, title=title, show=show,
            note=_note_right())  # fmt: skip


def _summary_lines(s: dict[str, Any]) -> None:
    click.echo(f"run {s['run_id']} ({s['status']}): {s['answered']}/{s['n']} answered")
    keys = (*activity_metrics("exam"), "seconds_per_question")  # accuracy, ROUGE…
    metric_lines("exam", s, [key for key in keys if s.get(key) is not None])
    if s.get("calibration"):
        c = s["calibration"]
        click.echo(
            f"calibration ECE {c['ece']:.3f}  Brier {c['brier']:.3f}  "
            f"mean confidence {c['mean_confidence']:.3f}"
        )
    if s.get("consistency", {}).get("n"):
        c = s["consistency"]
        click.echo(f"consistency {c['consistent']:.1f}% (n={c['n']})")
    _by_type_lines(s["by_type"])
    if s.get("error"):
        click.echo(visible(f"error      {s['error']}"))


@exam.command("take")
@click.option("--dataset", help="Data set name (default: the sample questions).")
@click.option(
    "--timed",
    "minutes",
    type=click.FloatRange(min=0, min_open=True),
    help="A timed exam of this many minutes (feedback at the end).",
)
@click.option("--limit", type=COUNT, help="N questions drawn at random (see --in-order).")
@click.option("--review", is_flag=True, help="Only the questions missed in past sessions.")
@click.option(
    "--pass-mark",
    type=click.FloatRange(0, 100),
    default=PracticeSettings.pass_mark,
    show_default=True,
    help="Percent needed to pass.",
)
@click.option("--profile", help="Who is taking it (default: the default profile).")
@click.option(
    "--resume",
    type=int,
    metavar="ID",
    help="Go on with session ID (quit or killed) where it stopped, with its own settings.",
)
@block_options
@json_option
@pass_app
def exam_take(
    app: AppContext,
    /,
    dataset: str | None,
    minutes: float | None,
    limit: int | None,
    review: bool,
    pass_mark: float,
    profile: str | None,
    resume: int | None,
    as_json: bool,
    **block: Any,
) -> None:
    """Take an exam in the terminal: answer A-E (or a-e), s to skip, q to quit (answers so
    far are kept); m marks the question, n writes a note on it; after a miss, w and a key
    says why (wk knowledge gap, wr misread, we reasoning, wt out of time).

    The questions are drawn at random, in a random order (--limit N: N of them); the
    session shows its seed, and --seed takes the same block again; --in-order takes them in
    file order instead. A custom block: --pool (unused, incorrect, omitted, marked,
    correct), --subject, --difficulty; --save-block NAME keeps it, --block NAME takes it
    again.

    \b
    medexam exam take --pool incorrect --subject 药品知识题 --limit 20 --timed 30

    Every answer is stored as it is given: a session quit or killed goes on where it
    stopped with --resume ID (its run id, shown at the start).
    """
    store = app.store
    if resume is not None:
        _take(store, ExamSitting(store, resume=resume), as_json)
        return
    profile = resolve(store, profile, create=True)
    dataset = dataset or dataset_mod.ensure_sample(store)
    chosen = chosen_block(store, profile, "exam", dataset, limit, minutes, block)
    keys = choose(store, chosen, profile) if chosen is not None else None
    if chosen is not None:
        minutes, limit = chosen.minutes, None
    if review:
        keys = missed_items(store, dataset, profile)
        if not keys:
            click.echo("nothing to review: no missed questions in past sessions")
            return
    session = ExamSitting(
        store,
        dataset,
        time_limit_s=minutes * 60 if minutes else None,
        limit=limit,
        keys=keys,
        pass_mark=pass_mark,
        profile=profile,
        seed=block["seed"],
    )
    _take(store, session, as_json)


def _take(store: Any, session: ExamSitting, as_json: bool) -> None:
    """Ask the sitting's questions at the prompt, each answer going to its run loop, and
    show the result."""
    profile, dataset = session.profile, session.dataset

    # With --json the questions go to stderr and stdout carries only the result; the
    # questions' control characters are shown escaped, their line breaks kept.
    def say(text: str) -> None:
        click.echo(visible(text, newlines=True), err=as_json)

    total = len(session.questions)
    say(drawn_line(total, session.seed))
    done = f", {session.index} answered before" if session.index else ""
    say(f"stored as run {session.run_id}{done} (--resume {session.run_id} goes on with it)")
    missed: str | None = None  # the last question missed (``wk`` etc. says why)
    while (item := session.next_question()) is not None:
        left = session.time_left()
        clock = f"  [{int(left // 60)}:{int(left % 60):02d} left]" if left is not None else ""
        say(f"\n({session.index + 1}/{total}){clock}")
        say(format_question(item))
        raw = _typed_answer(item, say, as_json, (store, profile, dataset, missed))
        if raw.lower() in ("q", "quit"):
            break
        if session.expired:
            say("time is up: that answer came too late")
            break
        fb = session.skip() if raw.lower() == "s" else session.answer(raw)
        if fb is not None:
            say(
                f"{'right' if fb.correct else f'wrong, the answer is {fb.gold}'} "
                f"({fb.seconds:.0f} s)"
            )
            if fb.explanation:
                say(f"解析：{fb.explanation}")
            if not fb.correct:
                missed = fb.key
                ask_reason(store, profile, "exam", dataset, fb.key, say, as_json)
    result = session.finish()
    if as_json:
        echo_json(result.as_dict())
        return
    _result_lines(result, session.mode)


def _result_lines(result: Any, mode: str) -> None:
    """A finished session's result: each answer (a timed exam's), the score and pass mark,
    accuracy by type, what was missed, the run it is stored as."""
    if mode == "timed":
        for fb in result.feedback:
            mark = "✓" if fb.correct else f"✗ {fb.gold}"
            click.echo(visible(f"  {fb.key}: {fb.chosen or '-'} {mark}"))
    answered = f"{result.answered} of {result.n} answered" if result.answered < result.n else ""
    score, mark = (fmt_number(v, unit="%") for v in (result.score, result.pass_mark))
    if result.status == "cancelled" and answered and mode == "practice":  # what was answered
        click.echo(
            f"\nscore {score}% of the questions answered ({result.correct}/"
            f"{result.answered}; {answered}): quit before the end, not passed"
        )
    else:
        verdict = "passed" if result.passed else "not passed"
        click.echo(f"\nscore {score}% ({result.correct}/{result.n}; pass mark {mark}%): {verdict}")
    if result.candidates:
        _candidate_lines(result.candidates)
    _by_type_lines(result.by_type, answered)
    if result.missed:
        click.echo(f"missed: {visible(', '.join(result.missed))} (replay with --review)")
    drawn = f" (seed {result.seed})" if result.seed is not None else ""
    click.echo(f"session stored as run {result.run_id}{drawn}")


def _candidate_lines(found: dict[str, Any]) -> None:
    """The candidates' score beside the person's, and the standing among them."""
    from engine.exam.candidates import ASSUMPTION, Standing, ordinal

    s = Standing(**found)
    plural = "s" if s.n != 1 else ""
    click.echo(
        f"candidates {fmt_number(s.candidates, unit='%')}% on these {s.n} question{plural} "
        f"({s.answers_per_question:.0f} answers each on average); "
        f"you {fmt_number(s.score, unit='%')}%"
    )
    click.echo(
        f"standing   {ordinal(s.percentile)} percentile among candidates "
        f"(95% interval {s.low:.0f}–{s.high:.0f})"
    )
    click.echo(f"           ({ASSUMPTION})")


def _typed_answer(
    item: dataset_mod.Question,
    say: Callable[[str], None],
    as_json: bool,
    where: tuple[Any, str, str, str | None],
) -> str:
    """What is typed for one question: a letter, ``s`` or ``q``; ``m``, ``n`` and ``w…`` mark,
    note or tag it on the way (``where``: the store, profile, data set and the last miss)."""
    store, profile, dataset, missed = where
    letters = dataset_mod.letters_for(item)
    while True:
        raw = click.prompt(
            f"answer ({letters[0]}-{letters[-1]}, s skip, q quit)",
            default="",
            show_default=False,
            err=as_json,
        ).strip()
        if raw.lower() in ("q", "quit", "s") or (len(raw) == 1 and raw.upper() in letters):
            return raw
        key = str(item["id"])
        if not take_command(raw, store, profile, "exam", dataset, key, say, as_json, missed):
            say(f"please type one of {', '.join(letters)}, s or q (m marks, n notes)")


@exam.command("missed")
@click.option("--dataset", help="Data set name (default: the sample questions).")
@json_option
@pass_app
def exam_missed(app: AppContext, dataset: str | None, as_json: bool) -> None:
    """Questions whose latest answer in past sessions was wrong."""
    dataset = dataset or dataset_mod.SAMPLE_NAME
    keys = missed_items(app.store, dataset)
    if as_json:
        echo_json(keys)
        return
    click.echo("\n".join(keys) if keys else "no missed questions")
