"""How hard a question is, from how it was answered: the share of real candidates who got
it right where the data set says (ExplainCPE's "本题共被作答68次 正确率75%",
:mod:`engine.exam.candidates`), else the share of people's and models' answers to it here
that were right (as AMBOSS rates questions by the share of its users who got them right).
A question with fewer than :data:`MIN_ANSWERS` answers has no level yet.

>>> Difficulty(people=4, people_right=1, models=2, models_right=0).level
'hard'
>>> Difficulty(people=4, people_right=1, candidates=68, candidates_right=0.75).level
'easy'
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from engine.bank.pools import omitted
from engine.exam.candidates import candidates_of

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict

LEVELS = ("easy", "medium", "hard")
MIN_ANSWERS = 3
EASY, HARD = 0.7, 0.4  # right at least this share: easy; below that: hard


@dataclass(frozen=True)
class Difficulty:
    """How many people's and models' answers a question has, and how many were right."""

    people: int = 0
    people_right: int = 0
    models: int = 0
    models_right: int = 0
    candidates: int = 0
    candidates_right: float | None = None  # the share of the candidates' answers right

    @property
    def n(self) -> int:
        """The answers the difficulty is from: the candidates', else those stored here."""
        return self.candidates if self.candidates else self.people + self.models

    @property
    def share(self) -> float | None:
        """The share of those answers that were right (None without answers)."""
        if self.candidates:
            return self.candidates_right
        return (self.people_right + self.models_right) / self.n if self.n else None

    @property
    def level(self) -> str | None:
        """``easy``, ``medium`` or ``hard``; None with fewer than :data:`MIN_ANSWERS`."""
        share = self.share
        if share is None or self.n < MIN_ANSWERS:
            return None
        return "easy" if share >= EASY else "hard" if share < HARD else "medium"

    def words(self) -> str:
        """The difficulty in words ("hard: 2 of 9 answers right (people 1/4, models 1/5)";
        "easy: 75% of 68 candidates right (here: people 1/4, models 1/5)")."""
        head = f"{self.level}: " if self.level else ""
        parts = (
            f"people {self.people_right}/{self.people}, models {self.models_right}/{self.models}"
        )
        if self.candidates:
            here = f" (here: {parts})" if self.people + self.models else ""
            share = 100 * (self.candidates_right or 0.0)
            return f"{head}{share:.0f}% of {self.candidates} candidates right{here}"
        if not self.n:
            return "no answers yet"
        right = self.people_right + self.models_right
        return f"{head}{right} of {self.n} answers right ({parts})"

    def as_dict(self) -> JSONDict:
        return {**asdict(self), "share": self.share, "level": self.level}


def difficulty(store: Store, dataset: str) -> dict[str, Difficulty]:
    """Each question's difficulty: from the real candidates' rate the data set gives
    for it, and over every stored run of ``dataset`` (people's sessions of every profile
    and models' runs; an answer the model could not give, or a person left empty, counts as
    not right); a question without either is left out."""
    counts: dict[str, list[int]] = {}
    rows = store.db.execute(
        "SELECT r.runner = 'person', a.item_key, a.chosen, a.response, a.extra, "
        "(SELECT s.value FROM scores s WHERE s.run_id = a.run_id AND s.item_key = a.item_key "
        "AND s.key = 'correct' AND instr(s.scorer, '@') = 0 ORDER BY s.id DESC LIMIT 1) "
        "FROM answers a JOIN runs r ON r.id = a.run_id WHERE r.dataset = ? "
        "AND r.runner IN ('person', 'model')",
        [dataset],
    )
    for person, key, chosen, response, extra, correct in rows:
        answer = {
            "chosen": chosen,
            "response": response,
            "extra": json.loads(extra) if extra else {},
        }
        if (answer["extra"] or {}).get("error"):
            continue  # the model could not take it: not an answer
        right = bool(correct) and not omitted(answer)
        c = counts.setdefault(str(key), [0, 0, 0, 0])
        base = 0 if person else 2
        c[base] += 1
        c[base + 1] += int(right)
    found = {k: Difficulty(*v) for k, v in counts.items()}
    for key, item in (store.items_by_key(dataset) or {}).items():
        rate = candidates_of(item)
        if rate is not None:
            got = found.get(key, Difficulty())
            found[key] = replace(got, candidates=rate.n, candidates_right=rate.right)
    return found
