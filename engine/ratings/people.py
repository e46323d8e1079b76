"""People rate explanations: a rating session over one or more stored runs, blind (the
model's name is not shown, the answers of all runs come in one seeded random order) and
resumable (each rating is stored the moment it is given; a session opened again by the same
rater goes on with what is not rated yet).

>>> session = RatingSession(store, [12, 14], rater="dr-li", seed=7)     # doctest: +SKIP
>>> entry = session.next()                                              # doctest: +SKIP
>>> session.rate(entry, {"well_formed": 5, "support": 4, "correctness": 3,  # doctest: +SKIP
...                      "validity": 4, "novelty": 2}, comment="misses the antidote")
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.core.scoring import Scored, get_scorer, items_by_key, scorers
from engine.ratings.draw import drawn
from engine.ratings.perspectives import RatingError, check_ratings, explained
from engine.ratings.scorers import PERSON
from engine.types import Explained

if TYPE_CHECKING:
    from engine.store.store import Store

#: The longest comment a rater may give with a rating, in characters.
MAX_COMMENT = 2000


@dataclass(frozen=True)
class Entry:
    """One answer to rate: where it is stored, and what the rater reads of it."""

    run_id: int
    item_key: str
    explained: Explained

    @property
    def key(self) -> tuple[int, str]:
        return (self.run_id, self.item_key)


def clean_comment(comment: str) -> str:
    """A rater's comment as stored: as typed (its case kept), without control characters
    (NUL, a terminal's escapes), trimmed; :class:`RatingError` when it is longer than
    :data:`MAX_COMMENT` characters."""
    from engine.text.columns import without_controls

    text = without_controls(comment).strip()
    if len(text) > MAX_COMMENT:
        raise RatingError(
            f"a comment holds at most {MAX_COMMENT} characters (this one {len(text)})"
        )
    return text


def check_rater(name: str) -> str:
    """A rater's name (a review profile's, or any name a profile could have)."""
    from engine.review.profiles import ProfileError, check_name

    try:
        return check_name(name)
    except ProfileError as exc:
        raise RatingError(str(exc).replace("a profile", "a rater")) from None


class RatingSession:
    """``rater`` rates the explanations of runs ``run_ids`` in an order fixed by ``seed``.
    :attr:`entries` are all the answers with an explanation, those :attr:`drawn` at random
    for people to rate (:mod:`engine.ratings.draw`) first; :meth:`pending` those this rater
    has not rated or skipped yet."""

    def __init__(self, store: Store, run_ids: Sequence[int], rater: str, seed: int = 0) -> None:
        if not run_ids:
            raise RatingError("name at least one run to rate")
        self.store, self.rater, self.seed = store, check_rater(rater), seed
        self.run_ids = list(dict.fromkeys(int(r) for r in run_ids))
        self.scorer = get_scorer(PERSON)
        self.stored_as = f"{PERSON}@{self.rater}"
        self.drawn: set[tuple[int, str]] = set()
        self.entries = self._entries()
        self._done = self._given()

    def _entries(self) -> list[Entry]:
        found: list[Entry] = []
        for run_id in self.run_ids:
            run = self.store.run(run_id)
            if run.get("runner") == "person":
                raise RatingError(f"run {run_id} is a person's session: it has no explanations")
            items = items_by_key(self.store, run)
            mine = []
            for answer in self.store.answers(run_id):
                item = items.get(str(answer["item_key"]))
                seen = explained(run, item, answer) if item is not None else None
                if seen is not None:
                    mine.append(Entry(run_id, str(answer["item_key"]), seen))
            if not mine:
                raise RatingError(_none_to_rate(run_id, str(run["activity"])))
            found += mine
            self.drawn |= {(run_id, k) for k in drawn(run_id, (e.item_key for e in mine))}
        random.Random(self.seed).shuffle(found)
        return sorted(found, key=lambda e: e.key not in self.drawn)  # drawn first

    def _given(self) -> dict[tuple[int, str], bool]:
        """Each answer this rater has seen: True when rated, False when skipped."""
        rows = self.store.rated_rows(self.run_ids, PERSON)
        return {
            (int(r["run_id"]), str(r["item_key"])): bool(r["value"])
            for r in rows
            if r["scorer"] == self.stored_as and r["key"] == "rated"
        }

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def done(self) -> int:
        """How many answers this rater has rated or skipped."""
        return sum(1 for e in self.entries if e.key in self._done)

    @property
    def rated(self) -> int:
        """How many answers this rater has rated."""
        return sum(1 for e in self.entries if self._done.get(e.key))

    @property
    def skipped(self) -> int:
        """How many answers this rater has skipped."""
        return self.done - self.rated

    @property
    def drawn_left(self) -> int:
        """How many of the answers drawn for people to rate this rater has not seen yet."""
        return sum(1 for key in self.drawn if key not in self._done)

    def is_drawn(self, entry: Entry) -> bool:
        """Whether ``entry`` is one of the answers drawn for people to rate."""
        return entry.key in self.drawn

    def pending(self) -> list[Entry]:
        """The answers left to rate, in the session's order."""
        return [e for e in self.entries if e.key not in self._done]

    def next(self) -> Entry | None:
        """The next answer to rate (None when all are rated)."""
        left = self.pending()
        return left[0] if left else None

    def position(self, entry: Entry) -> int:
        """``entry``'s place in the session (1 for the first)."""
        return self.entries.index(entry) + 1

    def rate(self, entry: Entry, ratings: Mapping[str, object], comment: str = "") -> None:
        """Store this rater's five ratings (1 to 5) of ``entry`` with an optional comment."""
        values = check_ratings(ratings)
        self._store(entry, {**values, "rated": 1}, comment)

    def skip(self, entry: Entry, comment: str = "") -> None:
        """Store that this rater skipped ``entry`` (it is not asked again)."""
        self._store(entry, {"rated": 0}, comment)

    def _store(self, entry: Entry, values: dict[str, int], comment: str) -> None:
        comment = clean_comment(comment)
        notes = {"rated": comment} if comment else {}
        scored = Scored(self.stored_as, self.scorer.version, dict(values), notes)
        self.store.add_scores(entry.run_id, entry.item_key, [scored])
        self._done[entry.key] = bool(values.get("rated"))

    def given(self, entry: Entry) -> dict[str, object] | None:
        """What this rater gave ``entry`` (ratings, ``rated``, ``comment``), None if nothing."""
        rows = [
            r
            for r in self.store.rated_rows([entry.run_id], PERSON)
            if r["scorer"] == self.stored_as and str(r["item_key"]) == entry.item_key
        ]
        if not rows:
            return None
        out: dict[str, object] = {r["key"]: r["value"] for r in rows}
        out["comment"] = next((r["explanation"] for r in rows if r["explanation"]), "")
        return out


def _none_to_rate(run_id: int, activity_id: str) -> str:
    """Why run ``run_id`` has no explanation to rate, and where its activity's answers are
    judged by people instead (another person's scorer: ``rate RUN --diagnoses``)."""
    others = [n for n, s in scorers(activity_id).items() if s.person and n != PERSON]
    if others:
        return (
            f"run {run_id} has no explanations to rate: its answers are judged with "
            f"medexam rate {run_id} --diagnoses"
        )
    return (
        f"run {run_id} has no explanations to rate (a run of the 'generate' method writes "
        "them; letters picked by probabilities have none)"
    )
