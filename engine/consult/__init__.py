"""Multi-turn consultations with a simulated patient.

A case (:mod:`engine.consult.cases.cases`, where the JSON format is documented) holds the patient's
medical information M as key–value facts, the opening request P0 and a final task T (a
multiple-choice question or a diagnosis). A doctor — a person, a chat model or an oracle —
asks questions turn by turn; the patient (:mod:`engine.consult.patient.simulated`) answers, either
as the paper's patient model that knows every fact (``paper``) or from the facts the question
asks about (``grounded``, :mod:`engine.consult.patient.facts`); when the doctor stops, the task is
answered and scored by a fixed solver (:mod:`engine.consult.doctor.final_task`).
:class:`Consultation` runs one consultation step by step (for the CLI and the GUI);
:func:`run_consult` runs a doctor or a baseline over a data set;
:mod:`engine.consult.scoring.metrics` holds the evaluation metrics and
:mod:`engine.consult.report.tables` the paper-shaped outputs (Table 2, golden dialogues).

Pipeline: load (cases, :mod:`~engine.consult.cases.agentclinic`, :mod:`~engine.consult.cases.draft`
and, for a whole data set of questions, :mod:`~engine.consult.cases.convert`; a case set's
Table 1 and Figure 4 in :mod:`~engine.consult.cases.stats`) → prompt (patient, doctor, solver) → run
(:mod:`~engine.consult.doctor.dialogue`, a person's in :mod:`~engine.consult.doctor.person`,
:mod:`~engine.consult.doctor.runner`) → parse (stop detection, letter extraction) → score
(:mod:`~engine.consult.scoring.metrics`) → store (every turn as it happens).
"""

from __future__ import annotations

import lazy_loader

# Public names, each imported from its submodule on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "cases.cases": ["Case", "CaseError", "Fact", "Task", "ensure_sample", "load_cases"],
        "doctor.runner": ["run_consult"],
        "doctor.dialogue": ["ConsultResult", "Consultation", "ConsultationError"],
    },
)
