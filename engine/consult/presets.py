"""The consultation's experiment presets (:mod:`engine.experiments`): the automatic
evaluation framework's Table 2 protocol as far as the consultation's settings go — every
model as the doctor with the detailed and the short prompt, then the bounds (``upper``: the
solver reads every fact; ``lower``: no consultation) and the oracles (every key question
asked, in order, at random, in reverse). The patient and the solver are the run's defaults
(the default chat model; the fixed solver of ``consult solver``), the same in every run, so
that the doctors alone differ; the model doctors and the oracles also have the solver answer
after each fifth of the questions (``answer_at``). The report's consultation section prints
Table 2 from them, the experiment's section Table 3 (diversity) and Figures 5, 6 and 7
(:mod:`engine.consult.report.figures`). ``static-vs-consult`` plays an exam data set as questions
and as the cases converted from it, per model (:mod:`engine.consult.static`).
"""

from __future__ import annotations

from engine.consult.settings import ORACLES
from engine.consult.static import static_consult_cells
from engine.experiments.plan import Cell, Preset, Request
from engine.registry import FUNCTION, Lazy, register

STYLES = ("long", "short")
#: The shares of each consultation after which the solver answers too (Figures 5 and 6).
ANSWER_AT = "0.2,0.4,0.6,0.8,1"


def table2_cells(request: Request) -> list[Cell]:
    """Each model as the doctor × each prompt style, then the bounds and the oracles."""
    cells = []
    for model in request.models:
        for style in STYLES:
            settings = {"doctor": model, "style": style, "limit": request.limit,
                        "answer_at": ANSWER_AT}  # fmt: skip
            coords = {"model": model, "doctor": model, "style": style}
            cells.append(
                Cell("consult", request.dataset, settings, f"{model} · {style} prompt", coords)
            )
    for doctor in ("upper", *ORACLES, "lower"):
        settings = {"doctor": doctor, "limit": request.limit}
        if doctor in ORACLES:
            settings["answer_at"] = ANSWER_AT
        cells.append(Cell("consult", request.dataset, settings, doctor, {"doctor": doctor}))
    return cells


register(
    "preset",
    Preset(
        "consult-table2",
        "Consultation Table 2: doctors, prompts, bounds and oracles",
        "consult",
        table2_cells,
        report=Lazy("engine.consult.report.figures", "table2_report", FUNCTION),
        dataset_hint="a case data set: medexam import agentclinic agentclinic_medqa.jsonl",
    ),
)

register(
    "preset",
    Preset(
        "static-vs-consult",
        "Exam questions vs consultation: the drop when the case must be asked for",
        None,
        static_consult_cells,
        report=Lazy("engine.consult.static", "static_consult_report", FUNCTION),
        dataset_hint="an exam data set converted with medexam consult convert, or its cases",
        summary=Lazy("engine.consult.static", "static_consult_summary", FUNCTION),
    ),
)
