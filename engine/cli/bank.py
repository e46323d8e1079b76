"""The question bank in the terminal: ``medexam notes`` (the notebook: marked questions and
notes), ``medexam stats`` (where a student stands beside the models), and the block options
and in-session marks of ``exam take`` (:func:`block_options`, :func:`take_commands`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from engine.cli.common import AppContext, echo_json, json_option, pass_app
from engine.text.columns import fmt_number, pad, short_text, visible

if TYPE_CHECKING:
    from engine.bank.standing import Standing

F = TypeVar("F", bound=Callable[..., Any])


def block_options(func: F) -> F:
    """``--pool``, ``--subject``, ``--difficulty``, ``--seed``, ``--in-order``, ``--block``
    and ``--save-block``: a custom block of questions."""
    from engine.bank.difficulty import LEVELS
    from engine.bank.pools import POOLS

    for option in reversed(
        [
            click.option(
                "--pool",
                type=click.Choice(POOLS),
                help="Questions by what you did with them last time.",
            ),
            click.option(
                "--subject",
                "subjects",
                multiple=True,
                metavar="NAME",
                help="Only this subject (a question type's value; repeat for several). "
                "`medexam stats` lists them.",
            ),
            click.option(
                "--difficulty",
                type=click.Choice(LEVELS),
                multiple=True,
                help="Only questions this hard (by real candidates' rates where known, else "
                "people's and models' answers).",
            ),
            click.option(
                "--seed",
                type=click.IntRange(0),
                help="Draw the same questions in the same order again (the seed a session shows).",
            ),
            click.option(
                "--in-order",
                is_flag=True,
                help="The questions in file order (with --limit, the first N), not drawn at "
                "random.",
            ),
            click.option("--block", "block_name", metavar="NAME", help="Take a saved block again."),
            click.option(
                "--save-block", metavar="NAME", help="Save this block under NAME to take it again."
            ),
        ]
    ):
        func = option(func)
    return func


def chosen_block(
    store: Any,
    profile: str,
    activity: str,
    dataset: str,
    limit: int | None,
    minutes: float | None,
    given: dict[str, Any],
) -> Any:
    """The custom block the ``block_options`` ask for (a saved one, or one made of --pool,
    --subject and --difficulty, saved when --save-block names it); None when none is asked.
    ``given["seed"]`` becomes the seed of the draw (:func:`block_seed`; a saved block drawn
    with its own seed keeps it)."""
    from dataclasses import replace

    from engine.bank.blocks import Block, describe, load_block, save_block

    block_seed(given)
    if given.get("block_name"):
        block = load_block(store, profile, given["block_name"])
        if block.seed is not None and not given.get("in_order"):
            given["seed"] = block.seed
        else:
            block = replace(block, seed=given.get("seed"))
    elif given.get("pool") or given.get("subjects") or given.get("difficulty"):
        block = Block(
            activity,
            dataset,
            pool=given.get("pool") or "all",
            subjects=tuple(given.get("subjects") or ()),
            difficulty=tuple(given.get("difficulty") or ()),
            count=limit,
            minutes=minutes,
            seed=given.get("seed"),
        )
    else:
        return None
    if given.get("save_block"):
        save_block(store, profile, given["save_block"], block)
        click.echo(f"saved block {given['save_block']!r}: {describe(block)}", err=True)
    return block


def block_seed(given: dict[str, Any]) -> int | None:
    """The seed a person's block is drawn with: ``--seed``, else a new one; None with
    ``--in-order`` (the questions in file order). Stored in ``given["seed"]``."""
    from engine.bank.blocks import new_seed

    if given.get("in_order"):
        if given.get("seed") is not None:
            raise click.UsageError("--seed and --in-order exclude each other")
        return None
    if given.get("seed") is None:
        given["seed"] = new_seed()
    return int(given["seed"])


def drawn_line(n: int, seed: int | None) -> str:
    """How a block was drawn, in words ("5 questions drawn at random (seed 4821: --seed 4821
    draws them again)")."""
    what = f"{n} question{'s' if n != 1 else ''}"
    if seed is None:
        return f"{what} in file order"
    return f"{what} drawn at random (seed {seed}: --seed {seed} draws them again)"


REASON_KEYS = {"k": "knowledge", "r": "misread", "e": "reasoning", "t": "time"}


def ask_reason(
    store: Any,
    profile: str,
    activity: str,
    dataset: str,
    key: str,
    say: Callable[[str], None],
    err: bool,
) -> None:
    """After a miss, at a terminal: one key tags why (stored at once); Enter leaves it
    untagged. Input from a pipe is not asked (``w`` + the key at the next prompt tags it)."""
    import sys

    from engine.bank.notebook import REASONS, set_reason

    if not sys.stdin.isatty():
        return
    words = ", ".join(f"{k} {REASONS[v].lower()}" for k, v in REASON_KEYS.items())
    raw = click.prompt(
        f"why missed? ({words}; Enter: skip)", default="", show_default=False, err=err
    )
    reason = REASON_KEYS.get(raw.strip().lower())
    if reason:
        set_reason(store, profile, activity, dataset, key, reason)
        say(f"tagged: {REASONS[reason]}")


def take_command(
    raw: str,
    store: Any,
    profile: str,
    activity: str,
    dataset: str,
    key: str,
    say: Callable[[str], None],
    err: bool,
    missed: str | None = None,
) -> bool:
    """``m`` marks (or unmarks) the question, ``n`` writes a note on it, ``w`` and a reason
    key (``wk``: knowledge gap…) says why the question before was missed — each stored at
    once; True when ``raw`` was one of them (``missed``: the key of the last miss)."""
    from engine.bank.notebook import REASONS, entry, set_note, set_reason, toggle_mark

    word = raw.strip().lower()
    if len(word) == 2 and word[0] == "w" and word[1] in REASON_KEYS:
        if not missed:
            say("no question missed yet")
            return True
        set_reason(store, profile, activity, dataset, missed, REASON_KEYS[word[1]])
        say(f"tagged {missed}: {REASONS[REASON_KEYS[word[1]]]}")
        return True
    if word == "m":
        say("marked" if toggle_mark(store, profile, activity, dataset, key) else "unmarked")
        return True
    if word == "n":
        found = entry(store, profile, dataset, key)
        text = click.prompt(
            "note",
            default=found.note if found else "",
            show_default=bool(found and found.note),
            err=err,
        )
        set_note(store, profile, activity, dataset, key, text)
        say("note kept")
        return True
    return False


@click.command("notes")
@click.option("--profile", help="Whose notebook (default: the default profile).")
@click.option("--marked", is_flag=True, help="Only marked questions.")
@click.option("--search", default="", help="Only notes holding these words.")
@click.option("--activity", "activity_id", metavar="ID", help="Only this activity's questions.")
@json_option
@pass_app
def notes(
    app: AppContext,
    profile: str | None,
    marked: bool,
    search: str,
    activity_id: str | None,
    as_json: bool,
) -> None:
    """Your notebook: the questions you marked, noted or said why you missed, newest first.

    \b
    medexam notes --marked
    medexam exam take --pool marked        # take the marked questions again
    """
    from engine.bank.notebook import REASONS, entries
    from engine.review.profiles import resolve

    who = resolve(app.store, profile)
    found = entries(
        app.store, who, activity=activity_id, marked=True if marked else None, search=search
    )
    items: dict[str, dict[str, Any]] = {}
    if as_json:
        echo_json([e.as_dict() for e in found])
        return
    if not found:
        click.echo(
            f"{who}'s notebook is empty: mark a question (m) or note it (n) while taking an exam"
        )
        return
    for e in found:
        if e.dataset not in items:
            items[e.dataset] = app.store.items_by_key(e.dataset) or {}
        question = str(
            items[e.dataset].get(e.item_key, {}).get("question", "(no longer in the data set)")
        )
        flags = ("★ " if e.marked else "  ") + (f"[{REASONS[e.reason]}] " if e.reason else "")
        click.echo(visible(f"{flags}{e.dataset} #{e.item_key}: {short_text(question, 70)}"))
        if e.note:
            click.echo(visible(f"    {e.note}", newlines=True))


@click.command("stats")
@click.option("--profile", help="Whose (default: the default profile).")
@click.option(
    "--activity",
    "activity_id",
    metavar="ID",
    help="An activity's id (default: the first whose questions have subjects).",
)
@click.option("--dataset", help="One data set (default: every one you practised).")
@json_option
@pass_app
def stats(
    app: AppContext,
    profile: str | None,
    activity_id: str | None,
    dataset: str | None,
    as_json: bool,
) -> None:
    """Where you stand: per subject your score beside the models evaluated on the same
    questions, your trend, the subjects to work on first, why you missed questions; an
    activity whose questions have no subjects shows its own practice log.

    \f
    That log is the activity's ``Activity.cli_standing``."""
    from engine.activities import activities, get_activity
    from engine.bank.standing import standing
    from engine.review.profiles import resolve

    who = resolve(app.store, profile)
    if activity_id is None:
        activity_id = next((a.id for a in activities().values() if a.topic_fields), "")
    found_activity = get_activity(activity_id)
    if found_activity.cli_standing is not None:
        found_activity.cli_standing.load()(app.store, who, as_json)
        return
    _standing_lines(standing(app.store, who, activity_id, dataset), as_json)


def _standing_lines(found: Standing, as_json: bool) -> None:
    """A standing by subject: the person's score per subject beside the models', the
    subjects to work on first, why questions were missed, the sessions' trend."""
    from engine.bank.notebook import REASONS
    from engine.bank.standing import FIELD_NAMES

    who, activity_id = found.profile, found.activity
    if as_json:
        echo_json(found.as_dict())
        return
    if not found.answered:
        click.echo(f"{who} has answered no {activity_id} questions yet")
        return
    click.echo(
        f"{who}: {found.right} of {found.answered} questions right ({found.score:.1f}%), "
        "by latest answer"
    )
    if found.candidates:
        from engine.exam.candidates import Standing as AmongCandidates
        from engine.exam.candidates import ordinal

        click.echo("among real candidates: " + AmongCandidates(**found.candidates).words())
        ranked = [
            ordinal(t["candidates"]["percentile"]) for t in found.trend if t.get("candidates")
        ]
        if ranked:
            click.echo(f"percentile by session: {' → '.join(ranked[-8:])}")
    width = max(10, *(len(visible(s.subject)) * 2 for s in found.subjects))
    head = "".join(f"{short_text(m, 12):>14}" for m in found.models)
    field = None
    for s in found.subjects:
        if s.field != field:
            field = s.field
            click.echo(f"{FIELD_NAMES.get(field, field)}:")
            click.echo(f"  {pad('', width)}  {'n':>4}  {'you':>6}{head}")
        theirs = "".join(f"{_pct(s.models.get(m)):>14}" for m in found.models)
        click.echo(visible(f"  {pad(s.subject, width)}  {s.n:>4}  {_pct(s.score):>6}{theirs}"))
    if found.work_first:
        click.echo("work on first: " + ", ".join(found.work_first))
    if found.reasons:
        click.echo(
            "why missed: " + ", ".join(f"{REASONS[r]} {n}" for r, n in found.reasons.items())
        )
    trend = " → ".join(
        _pct(t["score"]) for t in found.trend[-8:] if isinstance(t.get("score"), int | float)
    )
    if trend:
        click.echo(f"sessions: {trend}")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{fmt_number(value, unit='%')}%"
