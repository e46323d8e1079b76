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

>>> # store, model = Store(), catalog.open_model()
>>> # summary = run_exam(store, model, "explaincpe-sample", ExamSettings(limit=3))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from engine.exam.dataset import ACTIVITY, letters_for
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
from engine.progress import Cancel, Cancelled, ProgressCallback, report
from engine.rouge import rouge_scores
from engine.store import Store, StoreError

METHODS = ("generate", "logprob")
TEMPLATES = ("auto", "chat", "plain")


@dataclass
class ExamSettings:
    """Everything that decides a run's answers (stored with the run, reused on resume)."""

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


def uses_chat(model: Any, template: str = "auto") -> bool:
    """Whether prompts go through the model's chat template (see the module docstring)."""
    if template == "plain":
        return False
    if template == "chat":
        return True
    return bool(getattr(model, "has_chat_template", False))


def _model_errors() -> tuple[type[BaseException], type[BaseException]]:
    from engine.runtime import ModelCrashed, ModelError

    return ModelCrashed, ModelError


def _candidates(item: dict[str, Any], lang: str) -> dict[str, str]:
    """Continuation text → letter: ``"A"`` after ``答案：``, ``" A"`` after ``Answer:``."""
    space = " " if lang == "en" else ""
    return {space + letter: letter for letter in letters_for(item)}


def prompt_text(
    model: Any,
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
    model: Any,
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
    model: Any,
    item: dict[str, Any],
    shots: list[dict[str, Any]],
    settings: ExamSettings,
    chat: bool | None = None,
) -> dict[str, Any]:
    """Put one question to ``model``; return the fields of its stored answer
    (``response``, ``chosen``, ``gold``, ``correct``, ``scores``, ``extra``, ``latency_s``,
    ``prompt_tokens``, ``completion_tokens``)."""
    ps = settings.prompt_settings()
    chat = uses_chat(model, settings.template) if chat is None else chat
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
    per question, calibration (``logprob``) and explanation–answer consistency
    (``generate``)."""
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


def run_exam(
    store: Store,
    model: Any,
    dataset: str | None,
    settings: ExamSettings | None = None,
    *,
    model_name: str | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
    resume: int | None = None,
    on_answer: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Answer every question of ``dataset`` (its first ``settings.limit``) with ``model``,
    storing each answer as soon as it is produced; return the run's summary.

    ``resume`` continues an earlier run (its data set and settings are used; questions it
    answered are skipped). Cancelling keeps the answers so far (status ``cancelled``); a
    crash of the model process ends the run as ``failed`` with the error in the summary.
    ``on_answer(item, answer)`` is called after each stored answer.
    """
    model_crashed, model_error = _model_errors()
    if resume is not None:
        run = store.run(resume)
        if run["activity"] != ACTIVITY or run["runner"] != "model":
            raise StoreError(f"run {resume} is not a model exam run")
        settings = ExamSettings.from_dict(run["settings"])
        dataset, run_id = run["dataset"], resume
        items = store.items(dataset, limit=settings.limit)
        store.update_run(run_id, status="running", error=None, finished=None)
    else:
        if dataset is None:
            raise StoreError("no data set given")
        settings = settings or ExamSettings()
        items = store.items(dataset, limit=settings.limit)
        label = model_name or _model_label(model)
        run_id = store.start_run(ACTIVITY, dataset, label, settings.as_dict(), "model", len(items))
    pool, pool_name, same_pool = shot_pool(store, dataset, settings.shots_from)
    plan = ShotPlan(pool, settings.shots, settings.seed, same_pool=same_pool)
    chat = uses_chat(model, settings.template)
    store.update_run(
        run_id,
        settings={
            **settings.as_dict(),
            "shots_pool": pool_name,
            "shot_ids": plan.ids,
            "chat_template": chat,
        },
        n_total=len(items),
    )
    done_keys = store.answered_keys(run_id)
    total = len(items)
    done = sum(1 for i in items if str(i["id"]) in done_keys)
    report(progress, done, total, "starting", run_id=run_id)
    status, error = "finished", None
    try:
        for position, item in enumerate(items):
            key = str(item["id"])
            if key in done_keys:
                continue
            if cancel is not None:
                cancel.check()
            try:
                answer = answer_question(model, item, plan.for_item(item), settings, chat)
            except model_crashed:
                raise
            except model_error as exc:  # this question only (too long for the context…)
                answer = {
                    "response": "",
                    "chosen": None,
                    "gold": item["answer"],
                    "correct": False,
                    "scores": {},
                    "extra": {"error": str(exc)},
                    "latency_s": None,
                    "prompt_tokens": None,
                    "completion_tokens": None,
                }
            store.add_answer(run_id, key, position=position, **answer)
            done += 1
            if on_answer is not None:
                on_answer(item, answer)
            report(
                progress,
                done,
                total,
                f"{key}: {answer['chosen'] or '-'}",
                run_id=run_id,
                item=key,
                chosen=answer["chosen"],
                correct=answer["correct"],
            )
    except Cancelled:
        status = "cancelled"
    except model_crashed as exc:
        status, error = "failed", str(exc)
    summary = summarize(store, run_id, items)
    summary["status"] = status
    if error:
        summary["error"] = error
    store.finish_run(run_id, summary, status=status, error=error)
    return summary


def _model_label(model: Any) -> str:
    path = getattr(model, "path", None)
    return Path(path).stem if path else type(model).__name__
