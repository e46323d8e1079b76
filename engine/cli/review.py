"""``medexam review …``: spaced-repetition review of the questions a person answered (a thin
shell over :mod:`engine.review`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from engine.cli.common import (
    COUNT,
    ActivityChoice,
    AppContext,
    echo_json,
    json_option,
    pass_app,
)
from engine.review.anki import ExportError
from engine.review.queue import ReviewError, Shown
from engine.text.columns import visible

if TYPE_CHECKING:
    from engine.review.queue import ReviewSession

F = TypeVar("F", bound=Callable[..., Any])
RATING_HELP = "rate 1 again, 2 hard, 3 good, 4 easy"


def profile_option(func: F) -> F:
    """Add ``--profile NAME`` (whose cards) to a review subcommand."""
    return click.option(
        "--profile",
        help="Whose cards (default: the one given to 'medexam review', else the default profile).",
    )(func)


def _profile(app: AppContext, name: str | None) -> str:
    """The profile named here or on ``medexam review``; an unknown name is refused."""
    from engine.review.profiles import resolve

    ctx = click.get_current_context()
    if name is None and ctx.parent is not None:
        name = ctx.parent.params.get("profile")
    return resolve(app.store, name)


@click.group(invoke_without_command=True)
@click.option("--profile", help="Whose cards (default: the default profile).")
@click.option("--activity", type=ActivityChoice(), help="Only this activity.")
@click.option("--limit", type=COUNT, help="Stop after N cards.")
@click.option(
    "--why",
    type=click.Choice(["knowledge", "misread", "reasoning", "time"]),
    help="Only the questions you said you missed for this reason (knowledge gap, misread, "
    "reasoning, ran out of time).",
)
@json_option
@click.pass_context
@pass_app
def review(
    app: AppContext,
    ctx: click.Context,
    profile: str | None,
    activity: str | None,
    limit: int | None,
    why: str | None,
    as_json: bool,
) -> None:
    """Review the questions due now: answer A-E (French questions: several letters, e.g.
    A + D), s to skip, q to quit; then rate the card (Enter keeps the suggested rating). Your
    note on a question and why you missed it are shown after you answer."""
    if ctx.invoked_subcommand is not None:
        return
    from engine.review.queue import ReviewSession

    session = ReviewSession(
        app.store, _profile(app, profile), activity=activity, limit=limit, why=why
    )

    def say(text: str) -> None:  # the cards' control characters escaped, line breaks kept
        click.echo(visible(text, newlines=True), err=as_json)

    if not session.due():
        say(f"nothing is due now in profile {session.profile!r}")
    while (shown := session.next_card()) is not None:
        if not _ask(session, shown, say, as_json):
            break
    summary = session.summary()
    if as_json:
        echo_json(summary)
        return
    if summary["reviewed"]:
        click.echo(
            f"\nreviewed {summary['reviewed']} (right {summary['correct']}), "
            f"{summary['due_left']} still due now"
        )


def _show(shown: Shown, say: Callable[..., None]) -> None:
    from engine.activities import activity_name

    card = shown.card
    where = " · ".join(x for x in (activity_name(card.activity), card.dataset, card.topic) if x)
    say(f"\n(card {shown.position}, {shown.due_left} due) {where}")
    say(shown.face.question)
    for letter, text in shown.face.options:
        say(f"  {letter}. {text}")


def _ask(session: ReviewSession, shown: Shown, say: Callable[..., None], as_json: bool) -> bool:
    """Ask one card and rate it; False when the person quits."""
    _show(shown, say)
    letters = shown.face.letters
    hint = "letters, e.g. A + D" if shown.face.multi else f"{letters[0]}-{letters[-1]}"
    while True:
        raw = _prompt(f"answer ({hint}, s skip, q quit)", as_json)
        if raw is None or raw.lower() in ("q", "quit"):
            return False
        try:
            if raw:
                fb = session.answer(None if raw.lower() == "s" else raw)
                break
        except ReviewError:
            pass
        say(
            f"please type {'letters' if shown.face.multi else 'one'} of "
            f"{', '.join(letters)}, s or q"
        )
    texts = dict(shown.face.options)
    gold = ", ".join(fb.gold)
    say(f"{'right' if fb.correct else f'wrong, the answer is {gold}'} ({fb.seconds:.0f} s)")
    for letter in fb.gold if not fb.correct else []:
        say(f"  {letter}. {texts.get(letter, '')}")
    if fb.explanation:
        say(f"{shown.face.heading}{fb.explanation}")
    _noted(session, shown, say)
    return _rate(session, fb.suggested, say, as_json)


def _noted(session: ReviewSession, shown: Shown, say: Callable[..., None]) -> None:
    """The student's own note on the question, and why they said they missed it."""
    from engine.bank.notebook import REASONS, entry

    found = entry(session.store, session.profile, shown.card.dataset, shown.card.item_key)
    if found is not None and found.reason:
        say(f"you missed it before: {REASONS[found.reason].lower()}")
    if found is not None and found.note:
        say(f"your note: {found.note}")


def _rate(session: ReviewSession, suggested: str, say: Callable[..., None], as_json: bool) -> bool:
    from engine.review.scheduling import interval_text, parse_rating

    while True:
        raw = _prompt(f"{RATING_HELP} (Enter: {suggested})", as_json)
        quit_ = raw is None or raw.lower() in ("q", "quit")
        try:
            rating = parse_rating(raw) if raw and not quit_ else parse_rating(suggested)
            break
        except ValueError:
            say(f"please type 1-4 or again, hard, good, easy (Enter: {suggested})")
    card = session.rate(rating)
    say(f"{rating.name.lower()}: next review {interval_text(card)}")
    return not quit_


def _prompt(text: str, as_json: bool) -> str | None:
    """One line of input; None at the end of input."""
    try:
        return click.prompt(text, default="", show_default=False, err=as_json).strip()
    except click.Abort:
        return None


@review.command("due")
@profile_option
@json_option
@pass_app
def review_due(app: AppContext, profile: str | None, as_json: bool) -> None:
    """The cards due now, counted by activity and topic, then listed."""
    from engine.review.queue import due_summary

    summary = due_summary(app.store, _profile(app, profile))
    if as_json:
        echo_json(summary)
        return
    click.echo(f"{summary['count']} due now (profile {summary['profile']})")
    for activity, block in summary["by_activity"].items():
        click.echo(f"  {visible(activity)}: {block['count']}")
        for topic, n in sorted(block["by_topic"].items(), key=lambda kv: -kv[1]):
            click.echo(f"    {n:>4}  {visible(topic)}")
    for card in summary["cards"]:
        question = visible(" ".join(card["question"].split()))
        key = visible(card["key"])
        key = key if len(key) <= 12 else key[:11] + "…"
        click.echo(f"  {visible(card['dataset'])} #{key:<8} {question[:60]}")


@review.command("stats")
@profile_option
@json_option
@pass_app
def review_stats(app: AppContext, profile: str | None, as_json: bool) -> None:
    """Cards learned, retention, due cards per day for the next 14 days, mastery by question
    type and category."""
    from engine.review.stats import review_stats as stats_of

    s = stats_of(app.store, _profile(app, profile))
    if as_json:
        echo_json(s.as_dict())
        return
    click.echo(f"profile {s.profile}: {s.cards} cards, {s.learned} learned, {s.due_now} due now")
    right = "—" if s.accuracy is None else f"{s.accuracy:.1f}%"
    kept = "— (no review after an interval yet)"
    if s.retention is not None:
        kept = f"{s.retention:.1f}% (n={s.retention_n})"
    click.echo(f"reviews {s.reviews}, right {right}, retention {kept}")
    click.echo("due per day:")
    for day in s.due_per_day:
        click.echo(f"  {day['date']}  {'█' * min(day['due'], 40)} {day['due']}")
    for activity, fields in s.mastery.items():
        for name, values in fields.items():
            click.echo(f"mastery, {activity} by {visible(name)}:")
            for value, cell in values.items():
                click.echo(f"  {cell['mastery']:5.1f}%  n={cell['n']:<4} {visible(value)}")


@review.command("export-anki")
@click.option("--out", required=True, type=click.Path(), help="The .apkg file to write.")
@click.option("--only-missed", is_flag=True, help="Only questions whose latest answer was wrong.")
@profile_option
@json_option
@pass_app
def review_export_anki(
    app: AppContext, out: str, only_missed: bool, profile: str | None, as_json: bool
) -> None:
    """Write the cards as Anki decks (one per activity); importing a newer export into Anki
    updates the same notes."""
    from engine.review.anki import export_anki

    if not out.lower().endswith(".apkg"):
        raise ExportError(f"the Anki package must be a .apkg file (got {out})")
    result = export_anki(app.store, out, _profile(app, profile), only_missed=only_missed)
    if as_json:
        echo_json(result)
        return
    decks = ", ".join(f"{name} {n}" for name, n in result["decks"].items())
    click.echo(f"wrote {result['notes']} notes to {result['path']} ({decks})")


@review.command("profiles")
@click.option("--add", "new", help="Create a profile with this name.")
@json_option
@pass_app
def review_profiles(app: AppContext, new: str | None, as_json: bool) -> None:
    """The profiles of this database, with their cards and cards due now."""
    from engine.review.cards import cards
    from engine.review.profiles import add_profile, profiles
    from engine.review.queue import due_cards

    if new:
        add_profile(app.store, new)
    rows = [
        {"profile": p, "cards": len(cards(app.store, p)), "due": len(due_cards(app.store, p))}
        for p in profiles(app.store)
    ]
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(f"{row['profile']:<20} {row['cards']:>5} cards  {row['due']:>4} due now")
