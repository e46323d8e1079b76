"""The pharmacist exam activity (ExplainCPE and other single-answer multiple-choice sets).

Modules, one per concern:

* :mod:`engine.exam.dataset` — read, validate and import question files; the sample bank;
* :mod:`engine.exam.prompts` — the paper's prompts (Chinese and English, 0/1/4/8 shots);
* :mod:`engine.exam.extract` — the answer letter in a free-text reply;
* :mod:`engine.exam.metrics` — accuracy, ROUGE as the paper computed it, per-type accuracy,
  calibration, explanation–answer consistency, scoring a file of responses;
* :mod:`engine.exam.runner` — a model's run over a data set (``generate`` or ``logprob``);
* :mod:`engine.exam.session` — a person's practice session or timed exam.
"""

from engine.exam.dataset import DatasetError, ensure_sample, import_file, load_file
from engine.exam.extract import extract_answer, find_answer
from engine.exam.metrics import score_responses
from engine.exam.prompts import PromptSettings, build_messages, build_prompt
from engine.exam.runner import ExamSettings, run_exam, summarize
from engine.exam.session import ExamSession, missed_items, session_result

__all__ = [
    "DatasetError",
    "ExamSession",
    "ExamSettings",
    "PromptSettings",
    "build_messages",
    "build_prompt",
    "ensure_sample",
    "extract_answer",
    "find_answer",
    "import_file",
    "load_file",
    "missed_items",
    "run_exam",
    "score_responses",
    "session_result",
    "summarize",
]
