"""Run a model over an exam data set: load → prompt → run → parse → score → store.

Two answering methods:

``generate``
    The model writes an answer and an explanation (after the paper's prompt, which ends with
    the options); the letter is extracted from the text (:mod:`engine.exam.extract`) and the
    explanation is scored with ROUGE against the gold one. This is how the paper scored.
``logprob``
    One forward pass reads the probabilities of the letters A–E after the answer cue
    ``答案：`` (``Answer:``), which this method adds after the prompt: the letter needs a place
    where the answer starts. They are renormalised over the options; the most probable
    letter is the answer and the distribution is stored (``answer.extra["probs"]``) for
    confidence and calibration. The examples before the question are the same for every
    question, so the model keeps their computed prefix (KV cache) from one question to the
    next.

Chat models get the prompt through their chat template (``settings.template = "auto"``):
an instruction-tuned model has only ever seen its conversations in that format, and out of it
a small one tends to continue the exam text (writing the next question) instead of answering.
Each solved example becomes a user question and an assistant answer, which shows the answer
format in the way the model learnt to follow turns, and keeps the examples an identical
prefix, so prefix reuse still works. For ``logprob`` the letter is read at the start of the
assistant's turn, after ``答案：``, where a chat model states its answer. Base models (no
template, or ``template = "plain"``) get the plain-text prompt of the paper as printed
(:mod:`engine.exam.prompts`).

Examples are never cut to fit: a question whose prompt, examples and room for the answer
exceed the model's context is skipped with the reason (:func:`too_long`), and a run in which
not even the shortest question fits is refused in one line, as the paper skipped 8-shot for
models whose context could not hold it. Every run records its ``prompt_version``; a run of
an older version is not resumed with today's prompts, and never counts as a run of the same
settings.

>>> summary = run_exam(store, "explaincpe-sample", ExamSettings(model="smollm2", limit=3))
... # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from engine.core.chance import single_answer_chance
from engine.core.runs import Job, NoRoom, RunError, Spec
from engine.core.scoring import failed
from engine.core.solvers import PERSON
from engine.exam.activity import EXAM
from engine.exam.dataset import letters_for
from engine.exam.extract import argued_letter, find_answer, split_answer_explanation
from engine.exam.metrics import (
    accuracy,
    by_type,
    calibration,
    consistency,
    normalise,
)
from engine.exam.prompts import (
    PROMPT_VERSION,
    ShotPlan,
    answer_prefix,
    build_messages,
    build_prompt,
    stop_sequences,
)
from engine.exam.settings import ExamSettings, prompt_version_of
from engine.models.load import LoadSettings, sized_context
from engine.models.protocol import ChatModel, ModelCrashed, ModelError
from engine.store.store import Store

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.exam.dataset import Question
    from engine.models.pool import ModelPool
    from engine.types import Row


def shot_pool(
    store: Store, dataset: str, shots_from: str | None = None
) -> tuple[list[Question], str, bool]:
    """Where the examples come from: ``(items, data set name, same as the asked set)``.

    ``shots_from`` names a data set; without it a train split is looked for by name (``test``
    → ``train``, ``explaincpe-dev`` → ``explaincpe-train``), and failing that the asked data
    set itself is the pool (each question then never sees itself as an example).
    """
    if shots_from:
        return _questions(store, shots_from), shots_from, shots_from == dataset
    for split in ("test", "dev", "val", "validation"):
        if dataset == split or dataset.endswith(("-" + split, "_" + split)):
            name = dataset[: len(dataset) - len(split)] + "train"
            if store.has_dataset(name):
                return _questions(store, name), name, False
    return _questions(store, dataset), dataset, True


def _questions(store: Store, dataset: str) -> list[Question]:
    """An exam data set's items: questions, checked when they were imported."""
    return cast("list[Question]", store.items(dataset))


def uses_chat(model: ChatModel, template: str = "auto") -> bool:
    """Whether prompts go through the model's chat template (see the module docstring)."""
    if template == "plain":
        return False
    if template == "chat":
        return True
    return bool(getattr(model, "has_chat_template", False))


def _candidates(item: Question, lang: str) -> dict[str, str]:
    """Continuation text → letter: ``"A"`` after ``答案：``, ``" A"`` after ``Answer:``."""
    space = " " if lang == "en" else ""
    return {space + letter: letter for letter in letters_for(item)}


def prompt_text(
    model: ChatModel,
    item: Question,
    shots: Sequence[Question],
    settings: ExamSettings,
    chat: bool,
) -> str:
    """The exact text the model reads: the plain prompt as the paper prints it, or the
    chat-formatted conversation; for ``logprob`` followed by the cue ``答案：`` (``Answer:``)
    after which the letters' probabilities are read."""
    ps = settings.prompt_settings()
    logprob = settings.method == "logprob"
    if not chat:
        return build_prompt(item, shots, ps, answer_cue=logprob)
    text = model.chat_prompt(build_messages(item, shots, ps))
    return text + answer_prefix(ps.lang) if logprob else text


def too_long(model: ChatModel, n_prompt: int, settings: ExamSettings) -> str | None:
    """Why a prompt of ``n_prompt`` tokens cannot be put to ``model`` (None when it fits):
    it must leave room in the model's context for the answer (``max_tokens`` when
    generating, one token for ``logprob``). Such a question is skipped with this reason, as
    the paper skipped the 8-shot setting where a model's context could not hold it: its
    examples are never cut."""
    n_ctx = (getattr(model, "info", None) or {}).get("n_ctx")
    reserve = reply_budget(settings)
    if not n_ctx or n_prompt + reserve <= n_ctx:
        return None
    return (
        f"skipped: the {settings.shots}-shot prompt takes {n_prompt} tokens and the answer "
        f"{reserve}, more than {model.name}'s context of {n_ctx}"
    )


def reply_budget(settings: ExamSettings) -> int:
    """The tokens a prompt leaves room for after it: ``max_tokens`` when generating, one
    for ``logprob``."""
    return 1 if settings.method == "logprob" else settings.max_tokens


def answer_question(
    model: ChatModel,
    item: Question,
    shots: Sequence[Question],
    settings: ExamSettings,
    chat: bool | None = None,
) -> dict[str, Any]:
    """Put one question to ``model``; return the fields of its stored answer
    but its scores (``response``, ``chosen``, ``gold``, ``extra``, ``latency_s``,
    ``prompt_tokens``, ``completion_tokens``). ``extra["shots"]`` holds the ids of the
    examples in the prompt. A question whose prompt does not fit the model's context is
    skipped (:func:`too_long`): a failed answer with the reason and ``extra["skipped"]``."""
    chat = uses_chat(model, settings.template) if chat is None else chat
    t0 = time.perf_counter()
    prompt = prompt_text(model, item, shots, settings, chat)
    n_prompt = model.count_tokens(prompt)
    reason = too_long(model, n_prompt, settings)
    if reason is not None:
        answer = _failed_answer(item, reason)
        answer["extra"].update(skipped="context", prompt_tokens=n_prompt)
        return answer
    if settings.method == "logprob":
        answer = _by_letters(model, item, prompt, settings.lang, chat)
        answer["prompt_tokens"] = n_prompt
    else:
        answer = _by_generation(model, item, shots, prompt, settings, chat)
    answer["extra"]["shots"] = [s["id"] for s in shots]
    answer["latency_s"] = time.perf_counter() - t0
    return answer


def _by_letters(
    model: ChatModel, item: Question, prompt: str, lang: str, chat: bool
) -> dict[str, Any]:
    """The ``logprob`` answer: the most probable letter after the prompt's answer cue."""
    cands = _candidates(item, lang)
    raw = model.logprobs(prompt, list(cands), reuse_prefix=True, chat_formatted=chat)
    logprobs = {cands[c]: lp for c, lp in raw.items()}
    probs = normalise(logprobs)
    chosen = max(probs, key=probs.__getitem__)
    return {
        "response": chosen,
        "chosen": chosen,
        "gold": item["answer"],
        "extra": {
            "method": "logprob",
            "probs": {k: round(v, 6) for k, v in probs.items()},
            "logprobs": {k: round(v, 4) for k, v in logprobs.items()},
            "confidence": round(probs[chosen], 6),
        },
        "completion_tokens": 0,
    }


def _by_generation(
    model: ChatModel,
    item: Question,
    shots: Sequence[Question],
    prompt: str,
    settings: ExamSettings,
    chat: bool,
) -> dict[str, Any]:
    """The ``generate`` answer: the reply (the chat turns' for a chat model, the prompt's
    continuation for a completion model) and the letter found in it."""
    ps = settings.prompt_settings()
    options = {
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "seed": settings.seed,
        "stop": stop_sequences(ps.lang),
    }
    if chat:
        g = model.chat(build_messages(item, shots, ps), **options)
    else:
        g = model.complete(prompt, **options)
    response = g.text.strip()
    found = find_answer(response, item["options"], letters_for(item), g.finish_reason)
    _, explanation = split_answer_explanation(response)
    return {
        "response": response,
        "chosen": found.letter,
        "gold": item["answer"],
        "extra": {
            "method": "generate",
            "rule": found.rule,
            **({"no_answer": found.reason} if found.reason else {}),
            "argued": argued_letter(explanation),
            "finish_reason": g.finish_reason,
        },
        "prompt_tokens": g.prompt_tokens,
        "completion_tokens": g.completion_tokens,
    }


def exam_sections(store: Store, run_id: int) -> dict[str, Any]:
    """The exam's own entries of a run's summary, laid over its counts and its scorers'
    metrics (:func:`engine.core.scoring.summarize`): the settings that tell runs apart, accuracy
    of the answered questions, replies without a letter, accuracy by question type, the
    chance accuracy, seconds per question, the examples actually used (:func:`shots_used`),
    calibration (``logprob``) and explanation–answer consistency (``generate``). A person's
    run: the sitting's result (:func:`engine.exam.person.person_summary`)."""
    run = store.run(run_id)
    if run["runner"] == PERSON:
        from engine.exam.person import person_summary

        return person_summary(store, run_id)
    settings = ExamSettings.from_dict(run["settings"])
    items = store.items(run["dataset"], limit=settings.limit)
    answers = {a["item_key"]: a for a in store.answers(run_id)}
    tried = [answers[str(i["id"])] for i in items if str(i["id"]) in answers]
    answered = [i for i in items if str(i["id"]) in answers and not failed(answers[str(i["id"])])]
    rows = [answers[str(i["id"])] for i in answered]
    correct = [bool(r["correct"]) for r in rows]
    latencies = [r["latency_s"] for r in rows if r["latency_s"] is not None]  # none: published
    summary: dict[str, Any] = {
        "run_id": run_id,
        "dataset": run["dataset"],
        "model": run["model"],
        "method": settings.method,
        "shots": settings.shots,
        "instruction": settings.instruction,
        "lang": settings.lang,
        "accuracy_answered": round(accuracy(correct), 1),
        "no_letter": sum(1 for r in rows if not r["chosen"]),
        "chance": {"accuracy": single_answer_chance(items)},
        "by_type": by_type(answered, correct),
        "seconds_per_question": round(sum(latencies) / len(latencies), 3) if latencies else None,
    }
    old = prompt_version_of(run["settings"]) < PROMPT_VERSION
    summary.update(shots_used(tried, settings.shots if old else None))
    if settings.method == "generate":
        summary["consistency"] = consistency(
            [r["response"] for r in rows], [r["chosen"] for r in rows]
        )
    else:
        dists = [r["extra"].get("probs", {}) for r in rows]
        cal = calibration(dists, [r["gold"] or "" for r in rows]) if rows else {}
        summary["calibration"] = {k: round(v, 4) for k, v in cal.items()}
    return summary


def shots_used(rows: Sequence[Row], nominal: int | None) -> dict[str, Any]:
    """What the stored answers (``rows``, those tried) say of the examples:
    ``shots_used_mean``, the mean number of examples in the prompts of the answered
    questions (None when none records it); ``shots_cut``, how many of them had fewer than
    planned (``shots_planned``, else ``nominal``: prompt version 1 dropped examples that
    did not fit, version 2 never does and passes None);
    ``too_long`` (version 2 only: version 1 never skipped a question, so its stored
    summaries stay as they were), the questions skipped because their prompt did not fit
    the model's context (:func:`too_long`)."""
    used, cut, skipped = [], 0, 0
    for r in rows:
        extra = r.get("extra") or {}
        skipped += extra.get("skipped") == "context"
        if "shots" not in extra or extra.get("error"):
            continue
        n = len(extra["shots"])
        used.append(n)
        planned = extra.get("shots_planned", nominal)
        cut += planned is not None and n < int(planned)
    mean = round(sum(used) / len(used), 2) if used else None
    found = {"shots_used_mean": mean, "shots_cut": cut}
    return found if nominal is not None else found | {"too_long": skipped}


def _failed_answer(item: Question, error: str) -> dict[str, Any]:
    """The stored answer of a question the model could not take (too long for its context…):
    wrong, with the reason."""
    return {
        "response": "",
        "chosen": None,
        "gold": item["answer"],
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
        try:
            self.chat = uses_chat(self.model, settings.template)
            if getattr(pool, "load", LoadSettings()).n_ctx is None:  # left to the default
                self._size_context(pool)
            self.model_label = self.model.name
            self._check_room()
        except BaseException:
            self.close()
            raise
        self.settings = {
            **settings.as_dict(),
            "model": self.model.name,
            "shots_pool": pool_name,
            "shot_ids": self.plan.ids,
            "chat_template": self.chat,
            "prompt_version": PROMPT_VERSION,
        }

    def _size_context(self, pool: ModelPool) -> None:
        """Load the model with a context that holds the longest prompt of the run and its
        reply (:func:`~engine.models.load.sized_context`, within its trained context), when
        the default one does not; :class:`~engine.core.runs.NoRoom` when not even the shortest
        fits. A model whose trained context is not known here (a served one) keeps its own."""
        trained = int(getattr(self.model.model_info, "context_length", 0) or 0)
        loaded = int(self.model.info.get("n_ctx") or 0)
        if not trained or not loaded or not self.items:
            return
        lengths = [
            self.model.count_tokens(
                prompt_text(self.model, item, self.plan.for_item(item), self.exam, self.chat)
            )
            for item in self.items
        ]
        found = sized_context(lengths, reply_budget(self.exam), trained)
        if isinstance(found, str):
            raise NoRoom(f"{self.exam.shots}-shot skipped for {self.model.name}: {found}")
        if found > loaded:
            small = self.model
            self.model = self.lease(pool, self.exam.model, LoadSettings(n_ctx=found))
            self.leases.remove(small)
            small.close()
        self.load = self.model.load

    def _check_room(self) -> None:
        """Refuse the run when not even its shortest question fits the model's context with
        the examples (the paper skipped such a setting): one line saying why
        (:class:`~engine.core.runs.NoRoom`)."""
        if not self.items or not self.exam.shots:
            return
        item = min(self.items, key=lambda i: len(i["question"]) + sum(map(len, i["options"])))
        prompt = prompt_text(self.model, item, self.plan.for_item(item), self.exam, self.chat)
        reason = too_long(self.model, self.model.count_tokens(prompt), self.exam)
        if reason is not None:
            raise NoRoom(
                f"{self.exam.shots}-shot skipped for {self.model.name}: even the shortest "
                f"question does not fit ({reason.removeprefix('skipped: ')})"
            )

    def answer(self, item: Question, position: int) -> dict[str, Any]:
        try:
            return answer_question(self.model, item, self.plan.for_item(item), self.exam, self.chat)
        except ModelCrashed:
            raise
        except ModelError as exc:  # this question only
            return _failed_answer(item, str(exc))


def _exam_settings(given: dict[str, Any]) -> dict[str, Any]:
    """A run's settings with their defaults and the prompts' version (so that a run stored
    with other prompts never counts as one of these settings); a stored run's settings of
    other prompts are refused: resumed with today's prompts its answers would mix two."""
    version = prompt_version_of(given)
    if version != PROMPT_VERSION:
        raise RunError(
            f"this run was made with prompt version {version}; today's prompts are version "
            f"{PROMPT_VERSION} (as the paper prints them), and resuming would mix the two. "
            "Start a new run"
        )
    return {**ExamSettings.from_dict(given).as_dict(), "prompt_version": PROMPT_VERSION}


def _exam_job(store: Store, dataset: str, settings: dict[str, Any], pool: ModelPool) -> ExamJob:
    return ExamJob(store, dataset, ExamSettings.from_dict(settings), pool)


#: The exam activity for :func:`engine.core.runs.run`: settings are :class:`ExamSettings`' fields
#: (``model`` names the model).
SPEC = Spec(
    EXAM, _exam_settings, _exam_job, exam_sections,
    derived=("shots_pool", "shot_ids", "chat_template", "prompt_version"),
)  # fmt: skip


def run_exam(
    store: Store,
    dataset: str | None,
    settings: ExamSettings | None = None,
    **given: Any,
) -> dict[str, Any]:
    """Answer every question of ``dataset`` (its first ``settings.limit``) with the model
    ``settings.model`` names, storing each answer as soon as it is produced; return the
    run's summary. A shorthand for :func:`engine.core.runs.run`, whose keywords it takes (see
    there for ``resume``, cancelling and how a run ends); settings given as keywords are
    laid over ``settings``."""
    from engine.core.runs import run_settings

    return run_settings(store, EXAM.id, dataset, {**given, "settings": settings})
