"""Pools of questions, as question banks offer them: by what a student did with each question
of a data set the last time they answered it (in their person sessions of that profile, or
on the Review screen).

* ``all`` — every question; ``unused`` — never answered;
* ``incorrect`` — last answered wrong; ``correct`` — last answered right;
* ``omitted`` — last left without an answer (skipped, or time ran out);
* ``marked`` — marked in the notebook (:mod:`engine.bank.notebook`).

>>> pool_keys(store, "exam", "cpe-test", "default", "incorrect")          # doctest: +SKIP
['3', '17', '42']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.bank.notebook import by_item
from engine.errors import UserError
from engine.review.profiles import run_profile

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.store.store import Store
    from engine.types import Row

POOLS = ("all", "unused", "incorrect", "omitted", "marked", "correct")


class PoolError(UserError):
    """A pool medexam does not know."""


@dataclass(frozen=True)
class Last:
    """A student's latest answer to one question: right or not, or left unanswered, when."""

    correct: bool
    omitted: bool
    when: str
    run_id: int


def omitted(answer: Row) -> bool:
    """Whether an answer was left empty (skipped, or the time ran out)."""
    extra = answer.get("extra")
    if isinstance(extra, dict) and extra.get("skipped"):
        return True
    return (
        not str(answer.get("chosen") or "").strip()
        and not str(answer.get("response") or "").strip()
    )


def is_review(run: Row) -> bool:
    """Whether a person's session went over a finished one again (a review, never an exam:
    no past session, no point of the trend; its answers still count as the latest)."""
    return (run.get("settings") or {}).get("mode") == "review"


def person_runs(store: Store, activity: str, profile: str, dataset: str | None = None) -> list[Row]:
    """A profile's sessions of an activity (of one data set, when given), oldest first."""
    return [
        r
        for r in reversed(store.runs(activity))
        if r["runner"] == "person"
        and run_profile(r) == profile
        and (dataset is None or r["dataset"] == dataset)
    ]


#: The statuses of a person's session left before its end (quit, or its app killed), which
#: Go on answers the rest of.
GOES_ON = ("cancelled", "interrupted")


def left_session(
    store: Store,
    activity: str,
    profile: str,
    dataset: str,
    where: Callable[[Row], bool] | None = None,
) -> int | None:
    """The run of the profile's latest session of ``dataset`` (of those ``where`` keeps) if
    it was left before its end: what Go on goes on with (None: the latest ended)."""
    runs = [r for r in person_runs(store, activity, profile, dataset) if where is None or where(r)]
    return next((int(r["id"]) for r in runs[-1:] if r["status"] in GOES_ON), None)


def history(store: Store, activity: str, dataset: str, profile: str) -> dict[str, list[Last]]:
    """Every answer of the profile's sessions of ``dataset`` and of its Review screen,
    oldest first, by question (a review's ``run_id`` is 0)."""
    out: dict[str, list[Last]] = {}
    order = [str(i["id"]) for i in store.items(dataset)]
    for run in person_runs(store, activity, profile, dataset):
        answered = set()
        for a in store.answers(int(run["id"])):
            left = omitted(a)
            found = Last(bool(a["correct"]) and not left, left, str(a["created"]), int(run["id"]))
            out.setdefault(str(a["item_key"]), []).append(found)
            answered.add(str(a["item_key"]))
        for key in _timed_out(run, order):
            if key not in answered:  # the time ran out before it was reached
                out.setdefault(key, []).append(
                    Last(False, True, str(run["finished"] or ""), int(run["id"]))
                )
    for key, correct, when in _card_reviews(store, activity, dataset, profile):
        out.setdefault(key, []).append(Last(correct, False, when, 0))
    for lasts in out.values():
        lasts.sort(key=lambda last: last.when)
    return out


def _card_reviews(
    store: Store, activity: str, dataset: str, profile: str
) -> list[tuple[str, bool, str]]:
    """The profile's answers to the questions of ``dataset`` on the Review screen (its
    cards' reviews not given in a session): question key, right or not, when."""
    rows = store.db.execute(
        "SELECT c.item_key, r.correct, r.reviewed FROM card_reviews r "
        "JOIN cards c ON c.id = r.card_id WHERE c.profile = ? AND c.activity = ? "
        "AND c.dataset = ? AND r.source = 'review' ORDER BY r.id",
        [profile, activity, dataset],
    ).fetchall()
    return [(str(key), bool(correct), str(when or "")) for key, correct, when in rows]


def _timed_out(run: Row, order: list[str]) -> list[str]:
    """The questions of a timed session that ended with its time up (none otherwise)."""
    settings = run.get("settings") or {}
    summary = run.get("summary") or {}
    if settings.get("mode") != "timed" or run.get("status") != "finished":
        return []
    if summary.get("answered", 0) >= summary.get("n", 0):
        return []
    keys = settings.get("keys")
    return (
        [str(k) for k in keys] if isinstance(keys, list) else order[: settings.get("limit") or None]
    )


def latest(store: Store, activity: str, dataset: str, profile: str) -> dict[str, Last]:
    """The profile's latest answer to each question of ``dataset`` it answered."""
    return {k: v[-1] for k, v in history(store, activity, dataset, profile).items()}


def pools(store: Store, activity: str, dataset: str, profile: str) -> dict[str, list[str]]:
    """Every pool's question keys for ``profile``, in data set order, from one reading of
    the profile's answers."""
    keys = [str(i["id"]) for i in store.items(dataset)]
    marked = {k for k, e in by_item(store, profile, dataset).items() if e.marked}
    last = latest(store, activity, dataset, profile)
    return {
        "all": keys,
        "unused": [k for k in keys if k not in last],
        "incorrect": [k for k in keys if k in last and not last[k].correct and not last[k].omitted],
        "omitted": [k for k in keys if k in last and last[k].omitted],
        "marked": [k for k in keys if k in marked],
        "correct": [k for k in keys if k in last and last[k].correct],
    }


def pool_keys(store: Store, activity: str, dataset: str, profile: str, pool: str) -> list[str]:
    """The keys of the questions of ``dataset`` in ``pool`` for ``profile``, in data set
    order."""
    if pool not in POOLS:
        raise PoolError(f"unknown pool {pool!r} (choose from {', '.join(POOLS)})")
    if pool == "all":  # no answer need be read
        return [str(i["id"]) for i in store.items(dataset)]
    return pools(store, activity, dataset, profile)[pool]


def pool_sizes(store: Store, activity: str, dataset: str, profile: str) -> dict[str, int]:
    """How many questions each pool holds (what a block picker shows)."""
    return {p: len(keys) for p, keys in pools(store, activity, dataset, profile).items()}
