"""The exam activity registered: its descriptor (labels, headline, parts) and importers."""

from __future__ import annotations

from collections.abc import Callable

from engine.activities import RUN_SPEC, Activity
from engine.core.no_answer import SUMMARY_LABELS
from engine.importers import Format, Request
from engine.registry import CLASS, COMMAND, FUNCTION, Lazy, register
from engine.store.store import Store
from engine.types import Row

EXAM = register(
    "activity",
    Activity(
        "exam",
        "Exam",
        "accuracy",
        "question",
        {
            "no_letter": "Replies without a letter",
            **SUMMARY_LABELS,
            "consistency": "Explanation agrees with the letter",
            "consistency.consistent": "Explanation agrees with the letter (%)",
            "consistency.n": "Explanations checked",
            "calibration": "Calibration",
            "calibration.ece": "Calibration error (ECE)",
            "calibration.brier": "Brier score",
            "calibration.mean_confidence": "Mean confidence",
            # A person's session among the real candidates (engine.exam.candidates.Standing)
            "candidates.n": "Questions with candidates' rates",
            "candidates.right": "Right of those",
            "candidates.score": "Score on those (%)",
            "candidates.candidates": "Candidates' score on those (%)",
            "candidates.answers_per_question": "Candidates' answers per question",
            "candidates.percentile": "Percentile among candidates",
            "candidates.low": "Percentile: 95% interval from",
            "candidates.high": "Percentile: 95% interval to",
            "candidates.sd": "Candidates' assumed spread (logits)",
            "by_type": "By question type",
            "shots": "Examples per prompt",
            "instruction": "Task instruction",
            "lang": "Prompt language",
            "method": "Method",
            "shots_used_mean": "Examples used per prompt (mean)",
            "shots_cut": "Questions with examples cut (prompt version 1)",
            "too_long": "Questions skipped: prompt longer than the model's context",
            "accuracy_extracted": "Accuracy by the extracted letters (%)",
            "judge_agreement": "Extracted letters agree with the judgements (%)",
            "unmatched_responses": "Responses matching no question",
        },
        (
            "accuracy",
            "answered",
            "rouge1",
            "rougeL",
            "seconds_per_question",
            "cut_off",
            "chance.accuracy",
        ),
        spec=Lazy("engine.exam.runner", "SPEC", RUN_SPEC),
        settings=Lazy("engine.exam.settings", "ExamSettings", CLASS),
        # exam.published applies to published judged responses, exam.letter to the rest.
        scorers=("exam.published", "exam.letter", "exam.rouge"),
        scorers_from=("engine.exam.scorers", "engine.ratings.scorers"),
        presets_from=("engine.exam.presets", "engine.exam.quantizations"),
        explained=Lazy("engine.exam.dataset", "explained", FUNCTION),
        cli=Lazy("engine.exam.cli", "exam", COMMAND),
        import_commands={
            "explaincpe": Lazy("engine.exam.cli", "import_explaincpe", COMMAND),
            "mcq": Lazy("engine.exam.cli", "import_mcq", COMMAND),
            "responses": Lazy("engine.exam.cli", "import_responses", COMMAND),
        },
        import_title="Exam questions",
        report=Lazy("engine.exam.section", "exam_section", FUNCTION),
        run_label=Lazy("engine.exam.label", "exam_parts", FUNCTION),
        card=Lazy("engine.exam.card", "exam_face", FUNCTION),
        breakdown=Lazy("engine.exam.section", "by_type_scores", FUNCTION),
        sample=Lazy("engine.exam.dataset", "ensure_sample", FUNCTION),
        sample_dataset="explaincpe-sample",
        screen=Lazy("gui.exam.screen", "ExamScreen", CLASS),
        item_widget=Lazy("gui.exam.item", "ExamItem", CLASS),
        description="Pharmacist exam practice, timed exams and model evaluation",
        topic_fields=("type3", "type2", "type1"),
        mastery_fields=("type1", "type2", "type3"),
    ),
)


def _exam(fmt: str) -> Callable[[Store, Request], Row]:
    """The importer of exam questions in format ``fmt``."""

    def run(store: Store, req: Request) -> Row:
        from engine.exam.dataset import import_file

        return import_file(store, req.source, fmt, req.name, req.replace)

    return run


register(
    "format",
    Format(
        "exam",
        "explaincpe",
        "ExplainCPE (JSON list, five options and an explanation)",
        _exam("explaincpe"),
        "JSON (*.json);;All files (*)",
        marks=("options", "answer", "explanation"),
    ),
)
register(
    "format",
    Format(
        "exam",
        "mcq",
        "Multiple choice (JSON, JSON Lines or CSV, MedQA's JSONL; 2 to 10 options)",
        _exam("mcq"),
        "Question files (*.json *.jsonl *.csv);;All files (*)",
    ),
)
