"""A person taking an exam: practice mode and timed exams.

* **practice** — after each answer the session says whether it was right and shows the gold
  explanation; on request a model explains the question, streamed piece by piece.
* **timed** — a time limit for the whole exam; no feedback until the end, and questions left
  when time is up count as wrong.
* **review** — going over the questions of a finished session again (its missed ones, all,
  or the marked ones): untimed, each answer explained at once, never an exam — no pass
  mark, not a past session nor a point of the trend; its answers still count as the
  latest ones (the pools, the questions still missed, the review cards).

A sitting is a person's run through the one run loop (:mod:`engine.core.solvers`): every answer
is scored and stored by the loop as soon as it is given (a ``person`` run), with the seconds
spent on the question, and a sitting killed midway is resumed where it stopped
(``resume=``, ``medexam exam take --resume ID``). The result has the score, whether it reaches the
pass mark (:class:`~engine.exam.settings.PracticeSettings`' unless told otherwise), accuracy per
question type, the questions missed and, where the data set says how real candidates did
on its questions, the candidates' score beside the person's and where the person stands
among them (:mod:`engine.exam.candidates`). :func:`missed_items` lists the questions a person
still gets wrong across past sessions, and a new session can replay exactly those
(``keys=``).

>>> # sitting = ExamSitting(store, "explaincpe-sample", limit=5)
>>> # q = sitting.next_question(); fb = sitting.answer("B"); fb.correct, fb.explanation
>>> # result = sitting.finish()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, cast

from engine.bank.blocks import block_items, stored_block
from engine.bank.pools import is_review
from engine.core.progress import Deadline
from engine.core.solvers import PERSON, Sitting, card_hook, time_spent
from engine.errors import UserError
from engine.exam.candidates import item_standing
from engine.exam.dataset import ACTIVITY, Question, letters_for
from engine.exam.metrics import TypeAccuracy, accuracy, by_type
from engine.exam.prompts import explanation_messages
from engine.exam.settings import PracticeSettings
from engine.models.protocol import ChatModel
from engine.review.profiles import resolve, run_profile
from engine.store.store import Store, StoreError

if TYPE_CHECKING:
    from engine.types import JSONDict, Row, Summary

REVIEW = "review"
MODES = ("practice", "timed", REVIEW)


class SessionError(UserError):
    """A request the session cannot serve (answer after the end, bad letter…)."""


@dataclass
class Feedback:
    """What a person learns after answering (in a timed exam, only at the end)."""

    key: str
    chosen: str | None
    gold: str
    correct: bool
    explanation: str
    seconds: float

    def as_dict(self) -> JSONDict:
        return asdict(self)


@dataclass
class SessionResult:
    """The outcome of a session."""

    run_id: int
    mode: str
    n: int
    answered: int
    correct: int
    score: float  # percent of all questions (left ones wrong); of a practice quit, of the answered
    accuracy: float  # the same, as for a model's run
    accuracy_answered: float  # percent of the answered questions
    pass_mark: float
    passed: bool  # never for a session quit before its end
    seconds: float
    seconds_per_question: float | None
    by_type: dict[str, dict[str, TypeAccuracy]]
    missed: list[str]
    status: str
    seed: int | None = None  # the seed the block was drawn with (None: in file order)
    # Where the score stands among the real candidates who answered the same questions
    # (:class:`engine.exam.candidates.Standing`), when the data set says how they did.
    candidates: JSONDict | None = None
    feedback: list[Feedback] = field(default_factory=list)

    def as_dict(self) -> JSONDict:
        out = asdict(self)
        out["feedback"] = [f.as_dict() for f in self.feedback]
        return out


class ExamSitting:
    """One sitting of ``dataset`` by a person: a person's run of the exam through the run
    loop (:class:`engine.core.solvers.Sitting`), each answer scored and stored by the loop as it
    comes; every answer also reviews the question's card (:mod:`engine.review`).

    ``keys`` restricts the sitting to those questions (a review of missed ones); ``limit``
    keeps N of them: drawn at random in a random order with ``seed`` (the same block again
    for the same seed, stored on the run), the first N in data set order without one
    (:func:`engine.bank.blocks.block_items`). ``time_limit_s`` makes it a timed exam
    (``mode`` is then ``timed`` unless given): a deadline on the run. ``profile`` names the
    person (default: the default profile; a new name is created). ``resume`` continues
    stored run ``resume`` (killed, quit or interrupted) with its own settings, where it
    stopped: the questions answered stay answered and are not asked again.
    """

    def __init__(
        self,
        store: Store,
        dataset: str | None = None,
        *,
        mode: str | None = None,
        time_limit_s: float | None = None,
        limit: int | None = None,
        keys: Sequence[str] | None = None,
        pass_mark: float = PracticeSettings.pass_mark,
        clock: Callable[[], float] = time.monotonic,
        profile: str | None = None,
        seed: int | None = None,
        review_of: int | None = None,
        resume: int | None = None,
    ) -> None:
        self.store, self._clock = store, clock
        if resume is not None:
            settings = _resumed(store, resume)
            dataset = str(store.run(resume)["dataset"])
        else:
            if dataset is None:
                raise SessionError("no data set given")
            given = (mode, time_limit_s, pass_mark, review_of)
            settings = _settings(store, dataset, given, profile, (keys, limit, seed))
        self.dataset, self.mode = dataset, str(settings["mode"])
        self.profile = str(settings["profile"])
        self.time_limit_s = settings.get("time_limit_s")
        self.pass_mark = float(settings.get("pass_mark", PracticeSettings.pass_mark))
        self.seed = settings.get("seed")
        block = stored_block(store.items(dataset), settings)
        self.questions: list[Question] = block  # type: ignore[assignment]
        spent = time_spent(store, resume) if resume is not None else 0.0
        self.feedback = feedback_of(store, resume, self.questions) if resume is not None else []
        self.started = clock() - spent
        limit_s = self.time_limit_s
        self.deadline = Deadline(limit_s - spent, clock) if limit_s is not None else None
        self.sitting = Sitting(
            store, ACTIVITY, dataset, {} if resume is not None else settings, resume=resume,
            deadline=self.deadline, on_answer=card_hook(ACTIVITY, dataset, self.profile), clock=clock,
        )  # fmt: skip
        self.run_id: int = self.sitting.run_id  # type: ignore[assignment]
        self.index = len(self.feedback)
        self._current: Question | None = None
        self._shown_at: float | None = None
        self.finished = False
        self.result: SessionResult | None = None

    # -- time ------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self._clock() - self.started

    def time_left(self) -> float | None:
        """Seconds left in a timed exam (never below 0); None without a limit."""
        return self.deadline.left() if self.deadline is not None else None

    @property
    def expired(self) -> bool:
        return self.deadline is not None and self.deadline.passed()

    # -- questions ---------------------------------------------------------------------------

    @property
    def remaining(self) -> int:
        return len(self.questions) - self.index

    def next_question(self) -> Question | None:
        """The question to show now (its clock starts), or None when the sitting is over
        (all asked, time up, or finished)."""
        if self.finished or self.expired:
            return None
        if self._current is None:
            asked = self.sitting.asked()
            if asked is None:
                return None
            self._current, self._shown_at = asked[0][1], self._clock()
        return self._current

    def answer(self, letter: str | None) -> Feedback | None:
        """Answer the current question (``None`` skips it); the run loop scores and stores
        it. Returns the feedback in practice mode, None in a timed exam (feedback comes with
        :meth:`finish`). An answer given after the time is up is not accepted."""
        item = self.next_question()
        if item is None:
            raise SessionError("the session is over" if not self.expired else "time is up")
        chosen = None
        if letter is not None:
            chosen = letter.strip().upper()
            if chosen not in letters_for(item):
                raise SessionError(
                    f"answer with one of {', '.join(letters_for(item))} (got {letter!r})"
                )
        now = self._clock()
        seconds = now - (self._shown_at if self._shown_at is not None else now)
        stored = self.sitting.give(person_answer(item, chosen, seconds, self.mode))
        fb = Feedback(
            str(item["id"]), chosen, item["answer"], bool(stored.get("correct")),
            item.get("explanation", ""), seconds,
        )  # fmt: skip
        self.feedback.append(fb)
        self.index += 1
        self._current = self._shown_at = None
        return fb if self.explained else None

    @property
    def explained(self) -> bool:
        """Whether each answer is explained at once (practice and review)."""
        return self.mode != "timed"

    def skip(self) -> Feedback | None:
        """Leave the current question unanswered (it counts as wrong)."""
        return self.answer(None)

    def stream_explanation(
        self, model: ChatModel, key: str | None = None, lang: str = "zh", max_tokens: int = 400
    ) -> Iterator[str]:
        """A model's explanation of a question (default: the last one answered), piece by
        piece as ``model.stream_chat`` produces it; the whole text is stored with the run's
        answer afterwards. Practice mode only. ``model.cancel()`` stops it early."""
        if self.mode != "practice" and not self.finished:
            raise SessionError("explanations are shown after a timed exam")
        if key is None:
            if not self.feedback:
                raise SessionError("no question answered yet")
            key = self.feedback[-1].key
        item = next((q for q in self.questions if str(q["id"]) == str(key)), None)
        if item is None:
            raise SessionError(f"no question {key!r} in this session")
        stream = model.stream_chat(explanation_messages(item, lang), max_tokens=max_tokens)
        pieces: list[str] = []
        t0 = time.perf_counter()
        for piece in stream:
            pieces.append(piece)
            yield piece
        n = len(self.store.turns(self.run_id, str(key)))
        self.store.add_turn(
            self.run_id,
            str(key),
            n,
            "model",
            "".join(pieces),
            extra={"model": getattr(model, "path", "")},
            latency_s=time.perf_counter() - t0,
        )

    # -- the end -------------------------------------------------------------------------------

    def finish(self) -> SessionResult:
        """End the sitting (``finished`` when every question is answered or the time is up,
        else ``cancelled``) and return its result, stored as the run's summary."""
        if self.result is not None:
            return self.result
        self.finished = True
        summary = self.sitting.stop(time_up=self.expired)
        status = str(summary.get("status", "finished"))
        result = session_result(self.store, self.run_id, self.questions, self.pass_mark, status)
        result.seconds = float(summary.get("seconds", round(self.elapsed(), 3)))
        result.feedback = list(self.feedback)
        self.result = result
        return result


def person_answer(item: Question, chosen: str | None, seconds: float, mode: str) -> JSONDict:
    """A person's answer to ``item`` as the run loop stores it (a model's answer's fields)."""
    return {
        "response": chosen or "",
        "chosen": chosen,
        "gold": item["answer"],
        "latency_s": seconds,
        "extra": {"mode": mode, "skipped": chosen is None},
    }


def _settings(
    store: Store,
    dataset: str,
    given: tuple[str | None, float | None, float, int | None],
    profile: str | None,
    block: tuple[Sequence[str] | None, int | None, int | None],
) -> JSONDict:
    """The settings stored on a new sitting's run, checked; its block drawn."""
    mode, time_limit_s, pass_mark, review_of = given
    mode = mode or (REVIEW if review_of else "timed" if time_limit_s else "practice")
    if mode not in MODES:
        raise SessionError(f"mode must be one of {MODES} (got {mode!r})")
    if mode == REVIEW and time_limit_s is not None:
        raise SessionError("a review has no time limit")
    if time_limit_s is not None and time_limit_s <= 0:
        raise SessionError("the time limit must be positive")
    if not 0 <= pass_mark <= 100:
        raise SessionError("the pass mark is a percentage between 0 and 100")
    profile = resolve(store, profile, create=True)
    keys, limit, seed = block
    items, drawn = block_items(store.items(dataset), keys, limit, seed)
    if not items:
        raise SessionError("no questions to ask")
    return {
        "mode": mode,
        "time_limit_s": time_limit_s,
        "pass_mark": float(pass_mark),
        **drawn,
        "profile": profile,
        **({"review_of": review_of} if review_of else {}),
    }


def _resumed(store: Store, run_id: int) -> JSONDict:
    """The settings of person run ``run_id`` to resume (refused when it is not an exam's)."""
    run = store.run(run_id)
    if run["activity"] != ACTIVITY or run["runner"] != PERSON:
        raise SessionError(f"run {run_id} is not a person's exam session")
    settings = dict(run["settings"] or {})
    settings.setdefault("mode", "practice")
    settings["profile"] = run_profile(run)
    return settings


def feedback_of(store: Store, run_id: int, questions: Sequence[Question]) -> list[Feedback]:
    """The feedback of a run's stored answers, in the order the questions were asked."""
    answers = {a["item_key"]: a for a in store.answers(run_id)}
    out = []
    for q in questions:
        a = answers.get(str(q["id"]))
        if a is not None:
            fb = Feedback(
                str(q["id"]), a["chosen"], q["answer"], bool(a["correct"]),
                q.get("explanation", ""), a["latency_s"] or 0.0,
            )  # fmt: skip
            out.append(fb)
    return out


def person_summary(store: Store, run_id: int) -> Summary:
    """The summary of a person's exam run (:func:`session_result`) as its stored answers and
    scores give it, what :meth:`ExamSitting.finish` stores and a rescore gives again; the
    sitting's own length (``seconds``, its clock's) is stored beside it when it ends."""
    out = _summary(session_result(store, run_id))
    out.pop("seconds")
    return out


def _summary(result: SessionResult) -> Summary:
    out = result.as_dict()
    out.pop("feedback")
    return out


def session_result(
    store: Store,
    run_id: int,
    questions: Sequence[Question] | None = None,
    pass_mark: float | None = None,
    status: str | None = None,
) -> SessionResult:
    """The result of a (past or current) person run from its stored answers, ended with
    ``status`` (default: the run's). A practice session quit before its end (``cancelled``)
    is scored on the questions answered, and not passed; in a timed exam (handed in early,
    or out of time) a question left counts as wrong."""
    run = store.run(run_id)
    if run["runner"] != PERSON:
        raise StoreError(f"run {run_id} is not a person's session")
    settings = run["settings"] or {}
    if questions is None:
        questions = cast("list[Question]", stored_block(store.items(run["dataset"]), settings))
    if pass_mark is None:
        pass_mark = float(settings.get("pass_mark", PracticeSettings.pass_mark))
    answers = {a["item_key"]: a for a in store.answers(run_id)}
    answered = [q for q in questions if str(q["id"]) in answers]
    oks = [bool(answers[str(q["id"])]["correct"]) for q in answered]
    secs = [answers[str(q["id"])]["latency_s"] or 0.0 for q in answered]
    status = status or run["status"]
    mode = settings.get("mode", "practice")
    quit_early = status == "cancelled" and mode != "timed" and len(answered) < len(questions)
    left = [] if quit_early else [False] * (len(questions) - len(answered))
    score = accuracy(oks + left) if questions else 0.0
    # Missed: answered wrong, or left unanswered where that counts wrong (not the questions
    # a session quit never asked: they are neither missed nor replayed with --review).
    missed = [
        str(q["id"])
        for q in questions
        if (not answers[str(q["id"])]["correct"] if str(q["id"]) in answers else not quit_early)
    ]
    return SessionResult(
        run_id=run_id,
        mode=mode,
        n=len(questions),
        answered=len(answered),
        correct=sum(oks),
        score=round(score, 1),
        accuracy=round(score, 1),
        accuracy_answered=round(accuracy(oks), 1),
        pass_mark=pass_mark,
        passed=score >= pass_mark and not quit_early and mode != REVIEW,
        seconds=round(sum(secs), 3),
        seconds_per_question=round(sum(secs) / len(secs), 3) if secs else None,
        by_type=by_type(answered, oks),
        missed=missed,
        status=status,
        seed=settings.get("seed"),
        candidates=_standing(answered if quit_early else questions, answers),
    )


def _standing(questions: Sequence[Question], answers: Mapping[str, Row]) -> JSONDict | None:
    """Where the answers to ``questions`` stand among real candidates (None when the data
    set does not say how they did); a question left counts as wrong."""
    right = {k for k, a in answers.items() if a["correct"]}
    found = item_standing(questions, right)  # type: ignore[arg-type]
    return found.as_dict() if found is not None else None


def person_runs(
    store: Store,
    dataset: str | None = None,
    profile: str | None = None,
    reviews: bool = False,
) -> list[Row]:
    """Past person sessions (newest first), optionally of one data set and one profile;
    reviews (:data:`REVIEW`) only with ``reviews``."""
    return [
        r
        for r in store.runs(ACTIVITY)
        if r["runner"] == PERSON
        and (dataset is None or r["dataset"] == dataset)
        and (profile is None or run_profile(r) == profile)
        and (reviews or not is_review(r))
    ]


def missed_items(store: Store, dataset: str, profile: str | None = None) -> list[str]:
    """Keys of the questions of ``dataset`` whose latest answer in a person's sessions (of
    ``profile``, when given) was wrong (or skipped), in data set order: what a review
    session replays."""
    latest: dict[str, bool] = {}
    for run in reversed(person_runs(store, dataset, profile, reviews=True)):  # oldest first
        for a in store.answers(run["id"]):
            latest[a["item_key"]] = bool(a["correct"])
    order = [str(i["id"]) for i in store.items(dataset)]
    return [k for k in order if latest.get(k) is False]
