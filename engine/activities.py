"""The three activities as plain descriptors: id, display name, headline metric, metric
labels and the data sets each accepts. The CLI, the desktop app and the exports all read
labels and headline scores from here, so one measure has one name everywhere.

>>> activity("french").label("hamming")
'Hamming score (%)'
>>> headline_value({"activity": "exam", "summary": {"accuracy": 40.0}})
40.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Labels of the summary keys every activity shares.
COMMON_LABELS = {
    "accuracy": "Accuracy (%)",
    "n": "Items",
    "answered": "Answered",
    "accuracy_answered": "Accuracy of the answered (%)",
    "seconds_per_question": "Seconds per question",
    "mean_seconds": "Seconds per question",
    "seconds": "Time (s)",
    "correct": "Correct",
    "score": "Score (%)",
    "passed": "Passed",
    "pass_mark": "Pass mark (%)",
}


@dataclass(frozen=True)
class Activity:
    """What the app shows of an activity; its engine lives in ``engine.<id>``."""

    id: str
    name: str
    headline: str
    item_noun: str
    labels: dict[str, str] = field(default_factory=dict)
    run_keys: tuple[str, ...] = ()  # the summary entries a model run ends with, in order

    def label(self, key: str) -> str:
        """A summary key in words ("avg_turns" → "Questions per case")."""
        return metric_label(key, self.id)


EXAM = Activity(
    "exam",
    "Exam",
    "accuracy",
    "question",
    {
        "rouge1": "ROUGE-1",
        "rouge2": "ROUGE-2",
        "rougeL": "ROUGE-L",
        "no_letter": "Replies without a letter",
        "consistency": "Explanation agrees with the letter",
        "consistency.consistent": "Explanation agrees with the letter (%)",
        "consistency.n": "Explanations checked",
        "calibration": "Calibration",
        "calibration.ece": "Calibration error (ECE)",
        "calibration.brier": "Brier score",
        "calibration.mean_confidence": "Mean confidence",
        "by_type": "By question type",
        "shots": "Examples per prompt",
        "instruction": "Task instruction",
        "lang": "Prompt language",
        "method": "Method",
        "shots_used_mean": "Examples used per prompt (mean)",
        "shots_cut": "Questions with examples cut",
    },
    ("accuracy", "answered", "rouge1", "rougeL", "seconds_per_question"),
)
CONSULT = Activity(
    "consult",
    "Consultation",
    "accuracy",
    "case",
    {
        # ROUGE-1 word overlap (Table 2 of the consultation paper), not fact coverage: the
        # patient's replies against the facts' values, the doctor's questions against their keys
        "patient_recall": "Patient word overlap with fact values (ROUGE-1 recall, %)",
        "patient_precision": "Patient word overlap with fact values (ROUGE-1 precision, %)",
        "patient_f1": "Patient word overlap with fact values (ROUGE-1 F1, %)",
        "doctor_recall": "Doctor word overlap with fact names (ROUGE-1 recall, %)",
        "doctor_precision": "Doctor word overlap with fact names (ROUGE-1 precision, %)",
        "doctor_f1": "Doctor word overlap with fact names (ROUGE-1 F1, %)",
        "avg_turns": "Questions per case",
        "avg_length": "Words per question",
        "diversity": "Question diversity (%)",
        "leakage": "Leakage (%)",
        "similarity": "Diagnosis similarity (%)",
        "patient_length": "Patient words per turn",
        "doctor_length": "Doctor words per turn",
        "diversity_rouge1": "Question diversity, ROUGE-1 (%)",
        "diversity_rouge2": "Question diversity, ROUGE-2 (%)",
        "diversity_rougeL": "Question diversity, ROUGE-L (%)",
        "by_complexity": "By number of facts",
        "patient_mode": "Patient mode",
        "solver": "Solver",
        "solver_model": "Solver model",
    },
    ("accuracy", "patient_f1", "doctor_f1", "avg_turns", "leakage"),
)
FRENCH = Activity(
    "french",
    "French QA",
    "hamming",
    "question",
    {
        "hamming": "Hamming score (%)",
        "emr": "Exact match ratio (%)",
        "recall_at_k": "Recall at k",
        "recall_at_k.k": "Passages per question (k)",
        "recall_at_k.recall": "Own passage retrieved (%)",
        "recall_at_k.n": "Questions with their own passage",
        "by_n_answers": "By number of right answers",
        "own_passages_excluded": "Questions with their own passage left out",
        "oracle": "Oracle run (own passages given)",
    },
    ("hamming", "emr", "answered", "recall_at_k.recall"),
)

ACTIVITIES: dict[str, Activity] = {a.id: a for a in (EXAM, CONSULT, FRENCH)}


class UnknownActivity(ValueError):
    """An activity id medexam does not have."""


def activity(activity_id: str) -> Activity:
    """The descriptor of ``activity_id`` (exam, consult or french)."""
    try:
        return ACTIVITIES[activity_id]
    except KeyError:
        raise UnknownActivity(
            f"unknown activity {activity_id!r} (choose from {', '.join(ACTIVITIES)})"
        ) from None


def activity_name(activity_id: str) -> str:
    """The display name of an activity ("consult" → "Consultation")."""
    found = ACTIVITIES.get(activity_id)
    return found.name if found else activity_id


def find_label(key: str, activity_id: str | None = None) -> str | None:
    """The label of a summary key (``calibration.ece`` for a nested one), by the activity's
    labels when it is given, else any activity's; None when medexam has none."""
    found = ACTIVITIES.get(activity_id or "")
    if found is not None and key in found.labels:
        return found.labels[key]
    if key in COMMON_LABELS:
        return COMMON_LABELS[key]
    return next((a.labels[key] for a in ACTIVITIES.values() if key in a.labels), None)


def metric_label(key: str, activity_id: str | None = None) -> str:
    """A summary key in words (see :func:`find_label`), or the key made readable."""
    return find_label(key, activity_id) or key.replace("_", " ").capitalize()


def headline_value(run: dict[str, Any]) -> float | None:
    """The run's main score in percent (accuracy, or the Hamming score for French QA); a
    person's session is headlined by its ``score`` (unanswered questions count wrong)."""
    summary = run.get("summary") or {}
    if summary.get("answered") == 0:
        return None  # nothing answered: no score to show
    found = ACTIVITIES.get(run.get("activity", ""))
    keys = ["score"] if run.get("runner") == "person" else []
    keys += [found.headline if found else "accuracy", "accuracy", "hamming", "score"]
    for key in keys:
        value = summary.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None
