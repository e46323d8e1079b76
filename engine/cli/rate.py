"""``medexam rate RUN…``: a person rates the explanations of stored runs in the terminal, on
the five perspectives of the ExplainCPE paper — blind (the model is not named), in a seeded
random order, each rating stored as it is given (a session stopped and started again goes
on where it stopped)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engine.cli.common import AppContext, pass_app
from engine.ratings.perspectives import KEYS, PERSPECTIVES, RatingError
from engine.text.columns import visible
from engine.types import Explained

if TYPE_CHECKING:
    from engine.ratings.people import RatingSession

STOP, SKIP = "q", "s"


def show(explained: Explained, number: int, total: int, drawn_left: int | None = None) -> None:
    """One answer as the rater reads it (control characters in its texts shown escaped,
    never sent to the terminal); ``drawn_left``: it is one of the answers drawn at random
    for people to rate, with that many of them left counting it."""
    drawn = f" · drawn to check the judges, {drawn_left} left" if drawn_left else ""
    click.echo(click.style(f"\n── Explanation {number} of {total}{drawn} ──", bold=True))
    click.echo(visible(explained.question, newlines=True))
    for letter, text in explained.options:
        click.echo(f"  {visible(letter)}. {visible(text)}")
    click.echo(f"Right answer: {visible(explained.gold_shown)}")
    if explained.gold_explanation:
        click.echo(f"Reference explanation: {visible(explained.gold_explanation, newlines=True)}")
    click.echo(click.style(f"Answer given: {visible(explained.answer_shown)}", bold=True))
    click.echo("Explanation given:")
    for line in explained.explanation.strip().splitlines():
        click.echo(f"  {visible(line)}")


def ask(prompt: str) -> str:
    return str(click.prompt(prompt, default="", show_default=False)).strip().lower()


def read_comment() -> str:
    """The optional comment, as typed (its case kept), asked again while too long."""
    from engine.ratings.people import clean_comment

    while True:
        typed = click.prompt(" Comment (Enter for none)", default="", show_default=False)
        try:
            return clean_comment(str(typed))
        except RatingError as exc:
            click.echo(f"   {exc}: type a shorter one (Enter for none)")


def read_ratings() -> dict[str, int] | str:
    """The five ratings typed one by one (or all five digits at once at the first
    question); ``"s"`` to skip the answer, ``"q"`` to stop."""
    out: dict[str, int] = {}
    n = 0
    while n < len(PERSPECTIVES):
        p = PERSPECTIVES[n]
        reply = ask(f" {n + 1} {p.name}: {p.question} [1-5]")
        if reply in (STOP, SKIP):
            return reply
        if n == 0 and len(reply) == len(KEYS) and all(c in "12345" for c in reply):
            return dict(zip(KEYS, (int(c) for c in reply), strict=True))
        if reply in ("1", "2", "3", "4", "5"):
            out[p.key] = int(reply)
            n += 1
        else:
            click.echo("   a whole number from 1 to 5 (s skips this answer, q stops)")
    return out


@click.command("rate")
@click.argument("run_ids", nargs=-1, type=int, required=True)
@click.option(
    "--rater",
    default="default",
    show_default=True,
    help="Who rates: your review profile's name, or any name (each rater's ratings are kept "
    "apart).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Fixes the order the answers come in (the same seed resumes the same order).",
)
@click.option(
    "--diagnoses",
    is_flag=True,
    help="Judge consultation runs' diagnoses in words instead: correct, partly or wrong "
    "(beside a judge model's verdicts, which the report then corrects).",
)
@pass_app
def rate(app: AppContext, run_ids: tuple[int, ...], rater: str, seed: int, diagnoses: bool) -> None:
    """Rate the explanations of runs RUN_IDS from 1 to 5 on five perspectives: well-formed,
    support, correctness, validity, novelty (the ExplainCPE paper's Table 4).

    Several runs are rated in one session, mixed in a random order and without the model's
    name, so two models can be compared blind. Type each rating and Enter (or all five
    digits at once, e.g. 45342), `s` to skip an answer, `q` to stop; a comment is optional.
    Every rating is stored at once: run the same command again to go on.

    \b
    medexam rate 12 14 --rater dr-li
    """
    from engine.ratings.people import RatingSession

    if diagnoses:
        judge_diagnoses(app, run_ids, rater)
        return
    session = RatingSession(app.store, list(run_ids), rater, seed)
    rated = 0
    click.echo(
        f"{session.total} explanations in runs {', '.join(map(str, session.run_ids))}; "
        f"{session.done} already rated by {session.rater}. {drawn_line(session)}"
    )
    try:
        for entry in session.pending():
            left = session.drawn_left if session.is_drawn(entry) else None
            show(entry.explained, session.position(entry), session.total, left)
            found = read_ratings()
            if found == STOP:
                break
            comment = read_comment()
            if found == SKIP:
                session.skip(entry, comment)
            else:
                session.rate(entry, found, comment)  # type: ignore[arg-type]
                rated += 1
    except click.Abort:
        click.echo("")
    left = len(session.pending())
    click.echo(
        f"{rated} rated now; {session.done} of {session.total} done by {session.rater}"
        + (f", {left} left (run the same command to go on)." if left else ".")
    )
    click.echo(drawn_line(session))


def drawn_line(session: RatingSession) -> str:
    """How many of the answers drawn at random to check the judges are left to rate."""
    left, drawn = session.drawn_left, len(session.drawn)
    if not left:
        return f"All {drawn} answers drawn at random to check the judges are rated."
    return (
        f"{drawn} answers drawn at random to check the judges come first: {left} left "
        "(the report corrects a judge's means by them)."
    )


def judge_diagnoses(app: AppContext, run_ids: tuple[int, ...], rater: str) -> None:
    """A person's verdicts on the diagnoses in words a judge model judged (those drawn at
    random first): c correct, p partly, w wrong, s skips, q stops."""
    from engine.consult.scoring.verdicts import give_verdict, to_judge

    words = {"c": "correct", "p": "partly", "w": "wrong"}
    given = 0
    found = {run_id: to_judge(app.store, run_id, rater) for run_id in dict.fromkeys(run_ids)}
    for run_id, left in found.items():
        drawn = sum(t.drawn for t in left)
        click.echo(f"Run {run_id}: {len(left)} diagnoses to judge, {drawn} of them drawn "
                   "at random to check the judges (they come first).")  # fmt: skip
        for t in left:
            mark = f" · drawn, {drawn} left" if t.drawn else ""
            click.echo(
                click.style(f"\n── Run {run_id}, case {visible(t.item_key)}{mark} ──", bold=True)
            )
            click.echo(
                f"Complaint: {visible(t.complaint)}\nRight diagnosis: {visible(t.reference)}"
            )
            click.echo(click.style(f"Diagnosis given: {visible(t.said) or '(none)'}", bold=True))
            reply = ask(" c correct, p partly, w wrong (s skips, q stops)")
            while reply not in (*words, SKIP, STOP):
                reply = ask("   c, p or w (s skips, q stops)")
            if reply == STOP:
                click.echo(f"{given} verdicts given now.")
                return
            if reply in words:
                give_verdict(app.store, run_id, t.item_key, rater, words[reply])
                given += 1
            drawn -= t.drawn
    click.echo(f"{given} verdicts given now.")
