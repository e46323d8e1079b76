"""The consultation activity registered: its descriptor (labels, headline, parts) and
importers."""

from __future__ import annotations

from collections.abc import Callable

from engine.activities import RUN_SPEC, Activity
from engine.core.no_answer import SUMMARY_LABELS
from engine.importers import Format, Importer, Request
from engine.registry import CLASS, COMMAND, FUNCTION, Lazy, register
from engine.store.store import Store
from engine.types import Row

CONSULT = register(
    "activity",
    Activity(
        "consult",
        "Consultation",
        "accuracy",
        "case",
        {
            "asked_nothing": "Cases where the doctor asked no question (it answered at once)",
            "by_share": "Answered after each share of the questions",
            "patient_mode": "Patient mode",
            "solver": "Solver",
            "solver_model": "Solver model",
            "judged": "Diagnoses in words, judged",
            "judged.judge": "Judge",
            "judged.judged": "Judged answers",
            "judged.correct": "Judged correct (%)",
            "judged.partly": "Judged partly correct (%)",
            "judged.wrong": "Judged wrong (%)",
            "judged.string_match": "String match on the judged answers (%)",
            "judged.letter_accuracy": "Letter picked separately: right (%)",
            "judged.agreement": "Judge agrees with the letter (%)",
            "judged.kappa": "Judge vs letter, Cohen's kappa",
            **SUMMARY_LABELS,
        },
        (
            "accuracy",
            "patient_f1",
            "doctor_f1",
            "avg_turns",
            "leakage",
            "cut_off",
            "chance.accuracy",
        ),
        spec=Lazy("engine.consult.doctor.runner", "SPEC", RUN_SPEC),
        settings=Lazy("engine.consult.settings", "ConsultSettings", CLASS),
        scorers=("consult.task", "consult.dialogue", "consult.patient-audit", "consult.answer-at"),
        scorers_from=(
            "engine.consult.scoring.scorers",
            "engine.consult.scoring.judging",
            "engine.consult.scoring.verdicts",
            "engine.consult.scoring.shares",
            "engine.ratings.scorers",
        ),
        presets_from=("engine.consult.presets",),
        trainings_from=("engine.consult.training.finetune",),
        explained=Lazy("engine.consult.cases.cases", "explained", FUNCTION),
        cli=Lazy("engine.consult.cli", "consult", COMMAND),
        cli_standing=Lazy("engine.consult.cli_person", "standing", FUNCTION),
        import_commands={
            "agentclinic": Lazy("engine.consult.cli", "import_agentclinic", COMMAND),
            "cases": Lazy("engine.consult.cli", "import_cases", COMMAND),
        },
        import_title="Consultation cases",
        report=Lazy("engine.consult.report.section", "consult_section", FUNCTION),
        run_label=Lazy("engine.consult.report.label", "consult_parts", FUNCTION),
        sample=Lazy("engine.consult.cases.cases", "ensure_sample", FUNCTION),
        sample_dataset="cases-sample",
        screen=Lazy("gui.consult.screen", "ConsultScreen", CLASS),
        item_widget=Lazy("gui.consult.item", "ConsultItem", CLASS),
        description="Interview a simulated patient, then make your diagnosis",
        standing=Lazy("gui.consult.standing", "PracticeLog", CLASS),
        compare_warnings={
            "solver_model|solver": "different solvers answered the tasks ({a} and {b}): "
            "accuracies differ"
        },
    ),
)

_CASES = "Imported {n_items} cases as “{name}”."


def _cases_from(reader: Lazy[Callable[[Store, str, str, bool], object]]) -> Importer:
    """An importer of cases with ``reader`` (``reader(store, source, name, replace)``)."""

    def run(store: Store, req: Request) -> Row:
        name = req.name or req.stem
        reader.load()(store, req.source, name, req.replace)
        return store.dataset(name)

    return run


register(
    "format",
    Format(
        "consult",
        "cases",
        "medexam cases (JSON or JSON Lines)",
        _cases_from(Lazy("engine.consult.cases.cases", "import_cases", FUNCTION)),
        "Cases (*.json *.jsonl);;All files (*)",
        message=_CASES,
    ),
)
register(
    "format",
    Format(
        "consult",
        "agentclinic",
        "AgentClinic cases (MedQA, MedQA-extended, MIMIC-IV or NEJM; JSON Lines)",
        _cases_from(Lazy("engine.consult.cases.agentclinic", "import_agentclinic", FUNCTION)),
        "AgentClinic (*.jsonl *.json);;All files (*)",
        message=_CASES,
        marks=("OSCE_Examination",),
    ),
)
