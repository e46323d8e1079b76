"""A person at the consultation: the doctor of one case, through the one run loop.

A person's consultation is a person's run of one item, the case
(:class:`engine.core.solvers.Sitting`): the patient is the one a model doctor talks to, each turn is
stored as it happens beside the case's answer, and the answer (the task the person answers at the
end) is scored by the consultation's scorers and stored by the run loop, as a model doctor's is; the
run is scored again with ``medexam rescore`` like a model's. A consultation quit or killed midway
goes on where it stopped (:func:`resume_person_consultation`, ``medexam consult chat --resume ID``):
its turns are read back and the patient is told them again.

>>> c = start_person_consultation(store, "cases-sample", case, patient)   # doctest: +SKIP
>>> c.ask("How long has it hurt?")["text"]                               # doctest: +SKIP
>>> finish_person_consultation(c, "B").correct                           # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from engine.consult.cases.cases import ACTIVITY, Case, get_case
from engine.consult.doctor.dialogue import Consultation, ConsultationError, ConsultResult
from engine.consult.settings import ConsultSettings
from engine.core.solvers import PERSON, Sitting

if TYPE_CHECKING:
    from engine.consult.scoring.metrics import CaseMetrics
    from engine.models.protocol import ChatModel
    from engine.store.store import Store


def start_person_consultation(
    store: Store,
    dataset: str,
    case: Case,
    patient_model: ChatModel,
    max_turns: int = ConsultSettings.max_turns,
) -> Consultation:
    """A person's consultation of one case, stored as a ``person`` run of one item; the
    patient's opening request is already recorded."""
    patient = getattr(patient_model, "name", None) or "model"
    settings = {
        "doctor": PERSON, "patient": patient, "case": case.id, "max_turns": max_turns,
        "keys": [case.id],
    }  # fmt: skip
    sitting = Sitting(store, ACTIVITY, dataset, settings, seconds=False)
    consultation = _consultation(store, sitting, case, patient_model, max_turns)
    consultation.start()
    return consultation


def resume_person_consultation(store: Store, run_id: int, patient_model: ChatModel) -> Consultation:
    """Go on with person consultation ``run_id`` (quit or killed before its task was
    answered): its turns so far read back, the patient told them again."""
    run = store.run(run_id)
    settings = run["settings"] or {}
    if run["activity"] != ACTIVITY or run["runner"] != PERSON or "case" not in settings:
        raise ConsultationError(f"run {run_id} is not a person's consultation")
    case = get_case(store, run["dataset"], str(settings["case"]))
    max_turns = int(settings.get("max_turns") or ConsultSettings.max_turns)
    sitting = Sitting(store, ACTIVITY, None, {}, resume=run_id, seconds=False)
    consultation = _consultation(store, sitting, case, patient_model, max_turns)
    turns = store.turns(run_id, case.id)
    if not turns:
        consultation.start()
        return consultation
    consultation.turns = list(turns)
    consultation._started = True
    asked = {t["turn"]: t["text"] for t in turns if t["role"] == "doctor"}
    told = [(asked[t["turn"]], t["text"]) for t in turns if t["role"] == "patient" and t["turn"]]
    consultation.patient.history = [(q, r) for q, r in told]
    return consultation


def _consultation(
    store: Store, sitting: Sitting, case: Case, patient_model: ChatModel, max_turns: int
) -> Consultation:
    consultation = Consultation(
        case, patient_model, store=store, run_id=sitting.run_id, max_turns=max_turns, position=0
    )
    consultation.sitting = sitting
    return consultation


def finish_person_consultation(consultation: Consultation, answer: str) -> ConsultResult:
    """Score the person's answer: the run loop stores it with the consultation's scorers'
    verdict, and ends the run (``finished``) with the activity's summary."""
    sitting = consultation.sitting
    if sitting is None:
        raise ConsultationError("the consultation is not a person's stored one")
    result = consultation.finish(answer)
    stored = sitting.give(result.answer_fields(consultation.questions_asked))
    values = {**(stored.get("scores") or {}), "correct": stored.get("correct")}
    result.task.correct = bool(stored.get("correct"))  # the scorers' verdict is the one
    similarity = values.get("similarity")
    if isinstance(similarity, int | float):
        result.task.similarity = float(similarity)
    result.metrics = cast("CaseMetrics", values)
    sitting.stop()
    consultation.sitting = None
    return result


def abandon_person_consultation(consultation: Consultation) -> None:
    """Close the run of a consultation left before its task was answered (``cancelled``);
    its turns stay, to go on with it later."""
    if consultation.sitting is not None:
        consultation.sitting.stop()
        consultation.sitting = None
