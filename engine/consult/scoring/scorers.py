"""The consultation's scorers: the final task (the letter or diagnosis against the case's),
and the dialogue's measures of the consultation paper (patient and doctor word overlap with
the case's facts, questions, lengths, diversity, leakage) from the stored turns.
"""

from __future__ import annotations

from engine.consult.cases.cases import Case, reference
from engine.consult.scoring.metrics import (
    DIVERSITY_KINDS,
    SUMMARY_KEYS,
    bound_metrics,
    complexity,
    consultation_metrics,
    leakage,
    patient_length,
    words_per_turn,
)
from engine.core.scoring import (
    Context,
    Metric,
    ScoreValue,
    percent,
    percent_of_mean,
    rounded_mean,
    share_of_all,
)
from engine.registry import register
from engine.types import Row

#: What the dialogue scorer gives each case (fractions 0–1, counts, words).
DIALOGUE_KEYS = (
    *SUMMARY_KEYS[:6],  # patient and doctor ROUGE-1 recall, precision, F1
    "turns",
    "length",
    "doctor_length",
    "patient_length",
    "diversity",
    *(f"diversity_{kind}" for kind in DIVERSITY_KINDS),
    "n_facts",
    "revealed",
    "leaked",
)
#: The question diversities a summary averages (``diversity`` is ROUGE-L's).
DIVERSITY = ("diversity", *(f"diversity_{kind}" for kind in DIVERSITY_KINDS))
BOUNDS = ("upper", "lower")
#: The short headers of the measures a trial set is summed up by
#: (:func:`engine.core.trials.table_keys`).
SHORT = {"patient_recall": "Patient R", "patient_f1": "Patient F1", "doctor_f1": "Doctor F1"}
#: The labels of the consultation's metrics, by summary key. ROUGE-1 word overlap (Table 2 of
#: the consultation paper), not fact coverage: the patient's replies against the facts'
#: values, the doctor's questions against their keys.
LABELS = {
    "accuracy": "Accuracy (%)",
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
    "patient_unsupported": "Patient statements matching no fact (word overlap, %)",
    "patient_dishonest": "Patient replies not honest (%)",
    "patient_unasked": "Patient replies telling a fact unasked (%)",
    "patient_jargon": "Patient replies in medical jargon (%)",
    "patient_off_voice": "Patient replies not in a patient's voice (%)",
}
#: What the patient audit gives each consultation (:mod:`engine.consult.scoring.audit`).
AUDIT_KEYS = (
    "patient_statements",
    "patient_unsupported",
    "patient_replies",
    "patient_dishonest",
    "patient_unasked",
    "patient_jargon",
    "patient_off_voice",
)


@register(
    "scorer",
    name="consult.task",
    activities=("consult",),
    keys=("correct", "similarity"),
    metrics={
        "accuracy": Metric("correct", share_of_all(), LABELS["accuracy"], short="Accuracy (%)"),
        "similarity": Metric(
            "similarity", percent_of_mean(), LABELS["similarity"], optional=True, valued=True
        ),
    },
)
def task(answer: Row, item: Case, context: Context) -> dict[str, ScoreValue]:
    """The final task: the letter chosen against the right one, or a diagnosis in words
    matched with the case's (and its MiniLM similarity to it); a multiple-choice case
    answered in words is matched with the right option's text."""
    chosen, gold = answer.get("chosen"), answer.get("gold")
    in_words = (answer.get("extra") or {}).get("answer_form") == "free"
    if item.task.kind == "mcq" and not in_words:
        return {"correct": chosen is not None and chosen == gold}
    from engine.consult.doctor.final_task import diagnosis_match
    from engine.consult.scoring.similarity import similarity

    said, truth = str(chosen or ""), str(gold or reference(item))
    return {
        "correct": diagnosis_match(said, truth),
        "similarity": round(similarity(said, truth), 4),
    }


@register(
    "scorer",
    name="consult.dialogue",
    version=2,  # 2: a fact revealed or leaked twice counts once (leakage)
    activities=("consult",),
    keys=DIALOGUE_KEYS,
    metrics={
        **{
            k: Metric(k, percent_of_mean(empty=0.0), LABELS[k], short=SHORT.get(k, ""))
            for k in SUMMARY_KEYS[:6]
        },
        "avg_turns": Metric("turns", rounded_mean(empty=0.0), LABELS["avg_turns"], short="Turns"),
        # averaged over the consultations of two turns or more (None when there is none)
        **{k: Metric(k, percent(), LABELS[k]) for k in DIVERSITY},
        "avg_length": Metric("length", words_per_turn("length"), LABELS["avg_length"], rows=True),
        "patient_length": Metric(
            "patient_length", patient_length, LABELS["patient_length"], rows=True
        ),
        "doctor_length": Metric(
            "doctor_length", words_per_turn("doctor_length"), LABELS["doctor_length"], rows=True
        ),
        "leakage": Metric("leaked", leakage, LABELS["leakage"], rows=True),
        "by_complexity": Metric("n_facts", complexity, LABELS["by_complexity"], rows=True),
    },
)
def dialogue(answer: Row, item: Case, context: Context) -> dict[str, ScoreValue]:
    """The consultation paper's measures of one case from its stored turns (a bound, which
    has no consultation, is scored on the facts it was given)."""
    correct = (answer.get("scores") or {}).get("correct")
    right = None if correct is None else bool(correct)
    runner = str(context.run.get("runner") or "")
    if runner in BOUNDS:
        found = bound_metrics(item, runner, right)
    else:
        if context.store is None:
            raise ValueError("the dialogue scorer reads the stored turns: it needs the store")
        turns = context.store.turns(int(context.run["id"]), item.id)
        found = consultation_metrics(item, turns, right)
    return {k: found[k] for k in DIALOGUE_KEYS if k in found}


@register(
    "scorer",
    name="consult.patient-audit",
    version=2,  # 2: honesty, strictness, everyday words and voice read as people labelled them
    activities=("consult",),
    keys=AUDIT_KEYS,
    metrics={  # when the audit was run (None when no case had anything to audit)
        k: Metric(k, percent(), LABELS[k], optional=True)
        for k in ("patient_unsupported", *AUDIT_KEYS[3:])
    },
)
def patient_audit(answer: Row, item: Case, context: Context) -> dict[str, ScoreValue]:
    """The patient audited from the stored turns: the share of its statements that match no
    fact of the case (by word overlap) and of its replies that break each requirement —
    honesty, strictness, everyday words, a patient's voice (none for a bound, which has no
    consultation)."""
    from engine.consult.scoring.audit import audit

    if str(context.run.get("runner") or "") in BOUNDS or context.store is None:
        return {}
    found = audit(item, context.store.turns(int(context.run["id"]), item.id))
    return {k: found[k] for k in AUDIT_KEYS}
