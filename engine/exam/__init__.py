"""The pharmacist exam activity (ExplainCPE and other single-answer multiple-choice sets).

Modules, one per concern:

* :mod:`engine.exam.dataset` — read, validate and import question files; the sample bank;
* :mod:`engine.exam.prompts` — the paper's prompts (Chinese and English, 0/1/4/8 shots);
* :mod:`engine.exam.extract` — the answer letter in a free-text reply;
* :mod:`engine.exam.metrics` — accuracy, ROUGE as the paper computed it, per-type accuracy,
  calibration, explanation–answer consistency, scoring a file of responses;
* :mod:`engine.exam.runner` — a model's run over a data set (``generate`` or ``logprob``);
* :mod:`engine.exam.person` — a person's sitting (practice, timed exam, review) through the run
  loop;
* :mod:`engine.exam.candidates` — where a person or a model stands among the real
  candidates who answered the same questions (a Rasch model of their rates).
"""

from __future__ import annotations

import lazy_loader

# Public names, each imported from its submodule on first use.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "dataset": ["DatasetError", "ensure_sample", "import_file", "load_file"],
        "extract": ["extract_answer", "find_answer"],
        "metrics": ["score_responses"],
        "prompts": ["PromptSettings", "build_messages", "build_prompt"],
        "runner": ["ExamSettings", "exam_sections", "run_exam"],
        "person": ["ExamSitting", "missed_items", "session_result"],
    },
)
