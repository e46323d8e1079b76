"""Run a model over an exam data set: load → prompt → run → parse → score → store.

Two answering methods:

``generate``
    The model writes an answer and an explanation; the letter is extracted from the text
    (:mod:`engine.exam.extract`) and the explanation is scored with ROUGE against the gold one.
``logprob``
    One forward pass reads the probabilities of the letters A–E right after ``答案：``
    (``Answer:``), renormalised over the options; the most probable letter is the answer and
    the distribution is stored (``answer.extra["probs"]``) for confidence and calibration.
    The examples before the question are the same for every question, so the model keeps
    their computed prefix (KV cache) from one question to the next.

Chat models get the prompt through their chat template (``settings.template = "auto"``):
an instruction-tuned model has only ever seen its conversations in that format, and out of it
a small one tends to continue the exam text (writing the next question) instead of answering.
Each solved example becomes a user question and an assistant answer, which shows the answer
format in the way the model learnt to follow turns, and keeps the examples an identical
prefix, so prefix reuse still works. For ``logprob`` the letter is read at the start of the
assistant's turn, after ``答案：``, where a chat model states its answer. Base models (no
template, or ``template = "plain"``) get the plain-text prompt of the paper.

>>> summary = run_exam(store, "explaincpe-sample", ExamSettings(model="smollm2", limit=3))
... # doctest: +SKIP
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from engine.activities import EXAM
from engine.exam.dataset import letters_for
from engine.exam.extract import argued_letter, find_answer, split_answer_explanation
from engine.exam.metrics import (
    ROUGE_KEYS,
    accuracy,
    by_type,
    calibration,
    consistency,
    normalise,
)
from engine.exam.prompts import (
    PromptSettings,
    ShotPlan,
    answer_prefix,
    build_messages,
    build_prompt,
    stop_sequences,
)
from engine.models.protocol import ChatModel, ModelCrashed, ModelError
from engine.progress import Cancel, ProgressCallback
from engine.rouge import rouge_scores
from engine.runs import Job
from engine.store import Store

if TYPE_CHECKING:
    from engine.models.pool import ModelPool

METHODS = ("generate", "logprob")
TEMPLATES = ("auto", "chat", "plain")


@dataclass
class ExamSettings:
    """Everything that decides a run's answers (stored with the run, reused on resume)."""

    model: str | None = None
    shots: int = 0
    instruction: bool = True
    lang: str = "zh"
    method: str = "generate"
    limit: int | None = None
    seed: int = 0
    max_tokens: int = 320
    template: str = "auto"
    shots_from: str | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS} (got {self.method!r})")
        if self.template not in TEMPLATES:
            raise ValueError(f"template must be one of {TEMPLATES} (got {self.template!r})")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be at least 1")
        self.prompt_settings()  # validates shots and lang

    def prompt_settings(self) -> PromptSettings:
        return PromptSettings(self.shots, self.instruction, self.lang, self.seed)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExamSettings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def shot_pool(
    store: Store, dataset: str, shots_from: str | None = None
) -> tuple[list[dict[str, Any]], str, bool]:
    """Where the examples come from: ``(items, data set name, same as the asked set)``.

    ``shots_from`` names a data set; without it a train split is looked for by name (``test``
    → ``train``, ``explaincpe-dev`` → ``explaincpe-train``), and failing that the asked data
    set itself is the pool (each question then never sees itself as an example).
    """
    if shots_from:
        return store.items(shots_from), shots_from, shots_from == dataset
    for split in ("test", "dev", "val", "validation"):
        if dataset == split or dataset.endswith(("-" + split, "_" + split)):
            name = dataset[: len(dataset) - len(split)] + "train"
            if store.has_dataset(name):
                return store.items(name), name, False
    return store.items(dataset), dataset, True


def uses_chat(model: ChatModel, template: str = "auto") -> bool:
    """Whether prompts go through the model's chat template (see the module docstring)."""
    if template == "plain":
        return False
    if template == "chat":
        return True
    return bool(getattr(model, "has_chat_template", False))


def _candidates(item: dict[str, Any], lang: str) -> dict[str, str]:
    """Continuation text → letter: ``"A"`` after ``答案：``, ``" A"`` after ``Answer:``."""
    space = " " if lang == "en" else ""
    return {space + letter: letter for letter in letters_for(item)}


def prompt_text(
    model: ChatModel,
    item: dict[str, Any],
    shots: list[dict[str, Any]],
    settings: ExamSettings,
    chat: bool,
) -> str:
    """The exact text the model reads: the chat-formatted conversation (followed by
    ``答案：`` for ``logprob``) or the plain prompt ending with ``答案：``."""
    ps = settings.prompt_settings()
    if not chat:
        return build_prompt(item, shots, ps, answer_cue=True)
    text = model.chat_prompt(build_messages(item, shots, ps))
    return text + answer_prefix(ps.lang) if settings.method == "logprob" else text


def fit_shots(
    model: ChatModel,
    item: dict[str, Any],
    shots: list[dict[str, Any]],
    settings: ExamSettings,
    chat: bool,
) -> tuple[list[dict[str, Any]], str, int]:
    """Drop examples from the front until the prompt leaves room in the model's context
    for the answer (``max_tokens`` when generating, one token for ``logprob``).

    Returns the examples kept, the prompt text and its length in tokens. Short examples are
    chosen in the first place (:data:`engine.exam.prompts.MAX_SHOT_CHARS`), so this only
    matters for long questions or small contexts.
    """
    n_ctx = (getattr(model, "info", None) or {}).get("n_ctx")
    reserve = 1 if settings.method == "logprob" else settings.max_tokens
    shots = list(shots)
    while True:
        text = prompt_text(model, item, shots, settings, chat)
        n = model.count_tokens(text)
        if not n_ctx or n + reserve <= n_ctx or not shots:
            return shots, text, n
        shots = shots[1:]


def answer_question(
    model: ChatModel,
    item: dict[str, Any],
    shots: list[dict[str, Any]],
    settings: ExamSettings,
    chat: bool | None = None,
) -> dict[str, Any]:
    """Put one question to ``model``; return the fields of its stored answer
    (``response``, ``chosen``, ``gold``, ``correct``, ``scores``, ``extra``, ``latency_s``,
    ``prompt_tokens``, ``completion_tokens``). ``extra["shots"]`` holds the ids of the
    examples actually in the prompt (after :func:`fit_shots`), ``extra["shots_planned"]``
    how many were planned."""
    chat = uses_chat(model, settings.template) if chat is None else chat
    answer = _answer(model, item, shots, settings, chat)
    answer["extra"]["shots_planned"] = len(shots)
    return answer


def _answer(
    model: ChatModel,
    item: dict[str, Any],
    shots: list[dict[str, Any]],
    settings: ExamSettings,
    chat: bool,
) -> dict[str, Any]:
    ps = settings.prompt_settings()
    gold = item["answer"]
    t0 = time.perf_counter()
    shots, prompt, n_prompt = fit_shots(model, item, shots, settings, chat)
    if settings.method == "logprob":
        cands = _candidates(item, ps.lang)
        raw = model.logprobs(prompt, list(cands), reuse_prefix=True, chat_formatted=chat)
        latency = time.perf_counter() - t0
        logprobs = {cands[c]: lp for c, lp in raw.items()}
        probs = normalise(logprobs)
        chosen = max(probs, key=probs.get)
        return {
            "response": chosen,
            "chosen": chosen,
            "gold": gold,
            "correct": chosen == gold,
            "scores": {},
            "extra": {
                "method": "logprob",
                "probs": {k: round(v, 6) for k, v in probs.items()},
                "logprobs": {k: round(v, 4) for k, v in logprobs.items()},
                "confidence": round(probs[chosen], 6),
                "shots": [s["id"] for s in shots],
            },
            "latency_s": latency,
            "prompt_tokens": n_prompt,
            "completion_tokens": 0,
        }
    if chat:
        g = model.chat(
            build_messages(item, shots, ps),
            max_tokens=settings.max_tokens,
            temperature=0.0,
            seed=settings.seed,
            stop=stop_sequences(ps.lang),
        )
        response = g.text.strip()
    else:
        g = model.complete(
            prompt,
            max_tokens=settings.max_tokens,
            temperature=0.0,
            seed=settings.seed,
            stop=stop_sequences(ps.lang),
        )
        response = (answer_prefix(ps.lang) + g.text).strip()
    latency = time.perf_counter() - t0
    found = find_answer(response, item["options"], letters_for(item))
    _, explanation = split_answer_explanation(response)
    scores = {}
    if item.get("explanation"):
        scores = {
            k: round(v.fmeasure, 6) for k, v in rouge_scores(response, item["explanation"]).items()
        }
    return {
        "response": response,
        "chosen": found.letter,
        "gold": gold,
        "correct": found.letter == gold,
        "scores": scores,
        "extra": {
            "method": "generate",
            "rule": found.rule,
            "argued": argued_letter(explanation),
            "finish_reason": g.finish_reason,
            "shots": [s["id"] for s in shots],
        },
        "latency_s": latency,
        "prompt_tokens": g.prompt_tokens,
        "completion_tokens": g.completion_tokens,
    }


def summarize(
    store: Store, run_id: int, items: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The summary of an exam run from its stored answers: accuracy over the run's questions
    (unanswered ones count as wrong), ROUGE for generated answers, accuracy by type, seconds
    per question, the examples actually used (:func:`shots_used`), calibration (``logprob``)
    and explanation–answer consistency (``generate``)."""
    run = store.run(run_id)
    settings = ExamSettings.from_dict(run["settings"])
    if items is None:
        items = store.items(run["dataset"], limit=settings.limit)
    answers = {a["item_key"]: a for a in store.answers(run_id)}
    answered = [i for i in items if str(i["id"]) in answers]
    correct = [bool(answers[str(i["id"])]["correct"]) for i in answered]
    latencies = [answers[str(i["id"])]["latency_s"] or 0.0 for i in answered]
    summary: dict[str, Any] = {
        "run_id": run_id,
        "dataset": run["dataset"],
        "model": run["model"],
        "method": settings.method,
        "shots": settings.shots,
        "instruction": settings.instruction,
        "lang": settings.lang,
        "n": len(items),
        "answered": len(answered),
        "accuracy": round(accuracy(correct + [False] * (len(items) - len(answered))), 1),
        "accuracy_answered": round(accuracy(correct), 1),
        "no_letter": sum(1 for i in answered if not answers[str(i["id"])]["chosen"]),
        "by_type": by_type(answered, correct),
        "seconds_per_question": round(sum(latencies) / len(latencies), 3) if latencies else None,
    }
    rows = [answers[str(i["id"])] for i in answered]
    summary.update(shots_used(rows, settings.shots))
    if settings.method == "generate":
        scored = [r["scores"] for r in rows if r["scores"]]
        for key in ROUGE_KEYS:
            summary[key] = round(sum(s[key] for s in scored) / len(scored), 3) if scored else None
        summary["consistency"] = consistency(
            [r["response"] for r in rows], [r["chosen"] for r in rows]
        )
    else:
        dists = [r["extra"].get("probs", {}) for r in rows]
        cal = calibration(dists, [r["gold"] for r in rows]) if rows else {}
        summary["calibration"] = {k: round(v, 4) for k, v in cal.items()}
    return summary


def shots_used(rows: list[dict[str, Any]], nominal: int) -> dict[str, Any]:
    """``shots_used_mean``: the mean number of examples actually in the prompts of the
    answered questions (None when none records it); ``shots_cut``: how many of them had
    fewer examples than planned because the prompt did not fit the model's context."""
    used, cut = [], 0
    for r in rows:
        extra = r.get("extra") or {}
        if "shots" not in extra:
            continue
        n = len(extra["shots"])
        used.append(n)
        cut += n < int(extra.get("shots_planned", nominal))
    mean = round(sum(used) / len(used), 2) if used else None
    return {"shots_used_mean": mean, "shots_cut": cut}


def _failed_answer(item: dict[str, Any], error: str) -> dict[str, Any]:
    """The stored answer of a question the model could not take (too long for its context…):
    wrong, with the reason."""
    return {
        "response": "",
        "chosen": None,
        "gold": item["answer"],
        "correct": False,
        "scores": {},
        "extra": {"error": error},
        "latency_s": None,
        "prompt_tokens": None,
        "completion_tokens": None,
    }


class ExamJob(Job):
    """One model's run over an exam data set."""

    def __init__(self, store: Store, dataset: str, settings: ExamSettings, pool: ModelPool):
        super().__init__()
        self.exam = settings
        self.items = store.items(dataset, limit=settings.limit)
        pool_items, pool_name, same_pool = shot_pool(store, dataset, settings.shots_from)
        self.plan = ShotPlan(pool_items, settings.shots, settings.seed, same_pool=same_pool)
        self.model = self.lease(pool, settings.model)
        self.model_label = self.model.name
        self.chat = uses_chat(self.model, settings.template)
        self.settings = {
            **settings.as_dict(),
            "model": self.model.name,
            "shots_pool": pool_name,
            "shot_ids": self.plan.ids,
            "chat_template": self.chat,
        }

    def answer(self, item: dict[str, Any], position: int) -> dict[str, Any]:
        try:
            return answer_question(self.model, item, self.plan.for_item(item), self.exam, self.chat)
        except ModelCrashed:
            raise
        except ModelError as exc:  # this question only
            return _failed_answer(item, str(exc))


class ExamSpec:
    """The exam activity for :func:`engine.runs.run`: settings are :class:`ExamSettings`'
    fields (``model`` names the model)."""

    activity = EXAM

    def settings(self, given: dict[str, Any]) -> dict[str, Any]:
        return ExamSettings.from_dict(given).as_dict()

    def open(
        self, store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool
    ) -> ExamJob:
        return ExamJob(store, dataset, ExamSettings.from_dict(settings), pool)

    def summarize(self, store: Store, run_id: int) -> dict[str, Any]:
        return summarize(store, run_id)


SPEC = ExamSpec()


def run_exam(
    store: Store,
    dataset: str | None,
    settings: ExamSettings | None = None,
    *,
    resume: int | None = None,
    pool: ModelPool | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    on_answer: Any = None,
) -> dict[str, Any]:
    """Answer every question of ``dataset`` (its first ``settings.limit``) with the model
    ``settings.model`` names, storing each answer as soon as it is produced; return the
    run's summary. A shorthand for :func:`engine.runs.run` (see there for ``resume``,
    cancelling and how a run ends)."""
    from engine.runs import run

    given = settings.as_dict() if settings is not None and resume is None else {}
    return run(
        store,
        EXAM.id,
        dataset,
        given,
        resume=resume,
        pool=pool,
        progress=progress,
        cancel=cancel,
        on_answer=on_answer,
    )
