"""Where a student stands: per subject, their score beside the scores of the models evaluated
on the same questions (the models as peers), their trend from session to session, the
subjects to work on first, why they missed questions. (An activity may show a standing of
its own: ``Activity.standing``, such as the consultation's practice log,
:mod:`engine.consult.practice_log`.)

A student's score on a subject counts each question once, by its latest answer; a model's
counts the same questions, by that model's latest answer to each.

>>> found = standing(store, "default", "exam")                           # doctest: +SKIP
>>> [(s.subject, s.score, s.models) for s in found.subjects][:1]         # doctest: +SKIP
[('药品知识题', 40.0, {'smollm2': 25.0})]
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from engine.activities import get_activity
from engine.bank.notebook import entries
from engine.bank.pools import is_review, latest, omitted, person_runs
from engine.core.scoring import right_key
from engine.exam.candidates import candidates_of
from engine.exam.candidates import standing as among_candidates
from engine.review.cards import NO_TOPIC

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict

#: What each question type field holds, in words (the headings of a standing).
FIELD_NAMES = {
    "type1": "wording",
    "type2": "kind of question",
    "type3": "subject",
    "type": "right answers (one or several)",
    "subject_name": "subject",
}
MIN_FOR_ADVICE = 3  # questions answered in a subject before it can be advised
WORK_FIRST = 3


def _pct(right: int, n: int) -> float | None:
    return round(100 * right / n, 1) if n else None


@dataclass
class Subject:
    """One subject: the student's questions answered and right, their score (%), and each
    model's score (%) on those same questions."""

    field: str
    subject: str
    n: int = 0
    right: int = 0
    # dataclasses' field by its module: this class has a field named ``field``
    models: dict[str, float | None] = dataclasses.field(default_factory=dict)

    @property
    def score(self) -> float | None:
        return _pct(self.right, self.n)

    def as_dict(self) -> JSONDict:
        return {**asdict(self), "score": self.score}


@dataclass
class Standing:
    """A profile's standing in one activity (see the module's docstring)."""

    profile: str
    activity: str
    answered: int = 0
    right: int = 0
    subjects: list[Subject] = field(default_factory=list)
    trend: list[JSONDict] = field(default_factory=list)
    work_first: list[str] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    # Where the latest answers stand among the real candidates who answered the same
    # questions (:class:`engine.exam.candidates.Standing`), when the data sets say how they did.
    candidates: JSONDict | None = None

    @property
    def score(self) -> float | None:
        return _pct(self.right, self.answered)

    def as_dict(self) -> JSONDict:
        out = asdict(self)
        out["score"] = self.score
        out["subjects"] = [s.as_dict() for s in self.subjects]
        return out


def _model_latest(store: Store, activity: str, dataset: str) -> dict[str, dict[str, bool]]:
    """Each model's latest answer to each question of ``dataset``: right or not."""
    out: dict[str, dict[str, bool]] = {}
    runs = [
        r
        for r in reversed(store.runs(activity))
        if r["runner"] == "model" and r["dataset"] == dataset
    ]
    for run in runs:  # oldest first: a later run's answer replaces an earlier one
        mine = out.setdefault(str(run["model"]), {})
        for a in store.answers(int(run["id"])):
            if not (a.get("extra") or {}).get("error"):
                mine[str(a["item_key"])] = bool(a["correct"]) and not omitted(a)
    return out


def _subjects(
    store: Store, profile: str, activity: str, datasets: list[str]
) -> tuple[list[Subject], int, int, list[str]]:
    fields_ = get_activity(activity).mastery_fields
    table: dict[tuple[str, str], Subject] = {}
    per_model: dict[tuple[str, str], dict[str, list[int]]] = {}
    answered = right = 0
    names: set[str] = set()
    for dataset in datasets:
        mine = latest(store, activity, dataset, profile)
        items = store.items_by_key(dataset) or {}
        models = _model_latest(store, activity, dataset)
        names |= set(models)
        for key, last in mine.items():
            answered += 1
            right += int(last.correct)
            item = items.get(key, {})
            for f in fields_:
                value = item.get(f)
                if value in (None, ""):
                    continue
                s = table.setdefault((f, str(value)), Subject(f, str(value)))
                s.n += 1
                s.right += int(last.correct)
                for model, theirs in models.items():
                    if key in theirs:
                        counts = per_model.setdefault((f, str(value)), {}).setdefault(model, [0, 0])
                        counts[0] += 1
                        counts[1] += int(theirs[key])
    for where, s in table.items():
        s.models = {m: _pct(c[1], c[0]) for m, c in sorted(per_model.get(where, {}).items())}
    order = {f: i for i, f in enumerate(fields_)}
    found = sorted(table.values(), key=lambda s: (order[s.field], -s.n, s.subject))
    return found, answered, right, sorted(names)


def _among_candidates(
    store: Store, profile: str, activity: str, datasets: list[str]
) -> JSONDict | None:
    """Where the latest answers to the questions whose candidates' rates are known stand
    among those candidates (None without such a question)."""
    answers = []
    for dataset in datasets:
        items = store.items_by_key(dataset) or {}
        for key, last in latest(store, activity, dataset, profile).items():
            rate = candidates_of(items.get(key, {}))
            if rate is not None:
                answers.append((rate, bool(last.correct)))
    found = among_candidates(answers)
    return found.as_dict() if found is not None else None


def trend(store: Store, profile: str, activity: str, dataset: str | None = None) -> list[JSONDict]:
    """The profile's sessions of ``activity`` (of one data set, when given; not reviews),
    oldest first: each one's date, data set, questions and score and, where its data set
    says how real candidates did, where it stood among them (``candidates``)."""
    out = []
    for run in person_runs(store, activity, profile, dataset):
        if is_review(run):
            continue
        summary = run.get("summary") or {}
        out.append(
            {
                "run_id": run["id"],
                "date": str(run.get("started") or "")[:10],
                "dataset": run["dataset"],
                "n": summary.get("n"),
                "score": summary.get("score", summary.get(right_key(activity) or "")),
                "candidates": summary.get("candidates"),  # where the session stood among them
            }
        )
    return out


def standing(store: Store, profile: str, activity: str, dataset: str | None = None) -> Standing:
    """Where ``profile`` stands in ``activity`` (over one data set, or all it practised)."""
    runs = person_runs(store, activity, profile, dataset)
    datasets = [dataset] if dataset else sorted({str(r["dataset"]) for r in runs})
    out = Standing(profile, activity)
    out.subjects, out.answered, out.right, out.models = _subjects(
        store, profile, activity, datasets
    )
    out.trend = trend(store, profile, activity, dataset)
    out.candidates = _among_candidates(store, profile, activity, datasets)
    overall = out.score or 0.0
    topics = get_activity(activity).topic_fields
    advised = set(topics[:-1] if len(topics) > 2 else topics)  # not the wording of a question
    weak = [
        s
        for s in out.subjects
        if s.field in advised
        and s.subject.lower() not in NO_TOPIC
        and s.n >= MIN_FOR_ADVICE
        and (s.score or 0.0) < overall
    ]
    weak.sort(key=lambda s: (s.score or 0.0, -s.n))
    out.work_first = list(dict.fromkeys(s.subject for s in weak))[:WORK_FIRST]
    reasons = Counter(e.reason for e in entries(store, profile, activity=activity) if e.reason)
    out.reasons = dict(reasons.most_common())
    return out
