"""Multi-turn consultations with a simulated patient.

A case (:mod:`engine.consult.cases`, where the JSON format is documented) holds the patient's
medical information M as key–value facts, the opening request P0 and a final task T (a
multiple-choice question or a diagnosis). A doctor — a person, a chat model or an oracle —
asks questions turn by turn; the patient (:mod:`engine.consult.patient`) answers from the
facts the question asks about (:mod:`engine.consult.facts`); when the doctor stops, the task
is answered and scored (:mod:`engine.consult.solve`). :class:`Consultation` runs one
consultation step by step (for the CLI and the GUI); :func:`run_consult` runs a doctor or a
baseline over a data set; :mod:`engine.consult.metrics` holds the evaluation metrics.

Pipeline: load (cases, :mod:`~engine.consult.agentclinic`, :mod:`~engine.consult.convert`)
→ prompt (patient, doctor, solver) → run (:mod:`~engine.consult.session`,
:mod:`~engine.consult.run`) → parse (stop detection, letter extraction) → score
(:mod:`~engine.consult.metrics`) → store (every turn as it happens).
"""

from engine.consult.cases import Case, CaseError, Fact, Task, ensure_sample, load_cases
from engine.consult.run import run_consult
from engine.consult.session import Consultation, ConsultationError, ConsultResult

__all__ = [
    "Case",
    "CaseError",
    "ConsultResult",
    "Consultation",
    "ConsultationError",
    "Fact",
    "Task",
    "ensure_sample",
    "load_cases",
    "run_consult",
]
