"""The fixed solver's answers after each share of a consultation (the paper's Figure 5).

A consultation run with ``answer_at`` (``medexam consult run --answer-at 0.2,0.4,0.6,0.8``)
has the solver answer the task again from the first part of each dialogue: at share *s* of a
consultation of *n* questions, from the opening and the first ``ceil(s × n)`` questions with
their replies (the doctor's closing words left out,
:func:`engine.consult.scoring.metrics.truncate`). The whole consultation (share 1, always one of the
shares) is the run's own answer. The answers are stored with the case's answer
(``extra["answer_at"]``), so a stopped run goes on with them and :func:`answer_at` scores them as
the run's other scorers do (``medexam rescore`` scores them again): ``correct_at_20`` (the task, as
:func:`engine.consult.scoring.scorers.task` scores it), ``patient_recall_at_20`` and
``doctor_recall_at_20`` (ROUGE-1 recall of the replies and of the questions so far against the
case's facts), one of each per share in percent.

>>> parse_shares("0.6, 0.2,0.2")
(0.2, 0.6, 1.0)
>>> shares_text((0.2, 0.6, 1.0)), share_key("correct", 0.2)
('0.2,0.6,1', 'correct_at_20')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.consult.cases.cases import Case
from engine.consult.scoring.metrics import (
    FRACTIONS,
    dialogue,
    doctor_score,
    patient_score,
    share_key,
    truncate,
)
from engine.core.scoring import Context, ScoreValue, Value
from engine.fields import SettingError
from engine.registry import register
from engine.types import Turn

if TYPE_CHECKING:
    from engine.consult.doctor.final_task import Solver
    from engine.core.progress import Cancel
    from engine.types import JSONDict, Row

#: What each share is scored for (``{kind}_at_{percent}``).
SHARE_KINDS = ("correct", "patient_recall", "doctor_recall")


def parse_shares(text: str) -> tuple[float, ...]:
    """The shares of ``text`` (comma-separated fractions above 0 and at most 1, in hundredths),
    sorted, each once, with 1 (the whole consultation) always among them; one line
    (:class:`~engine.fields.SettingError`) for anything else."""
    shares = set()
    for part in text.split(","):
        word = part.strip()
        if not word:
            continue
        try:
            share = float(word)
        except ValueError:
            raise SettingError(f"answer_at takes shares such as 0.2,0.5 (got {word!r})") from None
        if not (0 < share <= 1) or not math.isfinite(share):
            raise SettingError(f"answer_at: each share is above 0 and at most 1 (got {word!r})")
        if abs(share * 100 - round(share * 100)) > 1e-6:
            raise SettingError(f"answer_at: shares are in hundredths, like 0.25 (got {word!r})")
        shares.add(round(share, 2))
    if not shares:
        raise SettingError("answer_at takes shares such as 0.2,0.4,0.6,0.8")
    return tuple(sorted(shares | {1.0}))


def shares_text(shares: Sequence[float]) -> str:
    """The shares as stored on a run: ``0.2,0.4,1``."""
    return ",".join(f"{s:g}" for s in shares)


def run_shares(settings: JSONDict) -> tuple[float, ...]:
    """The shares a run's stored settings ask answers at (none without ``answer_at``)."""
    text = settings.get("answer_at")
    return parse_shares(str(text)) if text else ()


def questions(turns: Sequence[Turn]) -> int:
    """The doctor's questions in a stored dialogue."""
    return len(dialogue(turns)[0])


def kept(share: float, n: int) -> int:
    """The questions of ``n`` kept at ``share`` (as
    :func:`engine.consult.scoring.metrics.truncate`)."""
    return math.ceil(share * n - 1e-9)


def answers_along(
    case: Case,
    turns: Sequence[Turn],
    shares: Sequence[float],
    solver: Solver,
    *,
    context: str = "dialogue",
    conclusions: bool = True,
    cancel: Cancel | None = None,
) -> list[JSONDict]:
    """The solver's answer after each share of a finished consultation: ``{share,
    questions, chosen, response}``, or ``{share, questions, whole: True}`` where the share
    keeps every question (the run's own answer stands); two shares keeping the same
    questions are answered once."""
    n = questions(turns)
    out: list[JSONDict] = []
    done: dict[int, JSONDict] = {}
    for share in shares:
        k = kept(share, n)
        if k >= n:
            out.append({"share": share, "questions": n, "whole": True})
            continue
        if k not in done:
            if cancel is not None:
                cancel.check()
            part = truncate(turns, share)
            result = solver.answer(case, part, context=context, conclusions=conclusions)
            done[k] = {"chosen": result.chosen, "response": result.response}
        out.append({"share": share, "questions": k, **done[k]})
    return out


#: The keys of a run asking at the default shares (a run's own shares give its keys).
_KEYS = tuple(share_key(kind, s) for s in FRACTIONS for kind in SHARE_KINDS)


@register(
    "scorer",
    name="consult.answer-at",
    activities=("consult",),
    keys=_KEYS,
    applies=lambda context: bool(context.settings.get("answer_at")),
)
def answer_at(answer: Row, item: Case, context: Context) -> dict[str, ScoreValue | Value]:
    """The task answered after each share of the consultation, and the patient's and the
    doctor's ROUGE-1 recall of the dialogue so far (fractions 0–1): the curves of Figure 5."""
    from engine.consult.scoring.scorers import task

    if context.store is None:
        raise ValueError("the answer-at scorer reads the stored turns: it needs the store")
    turns = context.store.turns(int(context.run["id"]), item.id)
    extra = answer.get("extra") or {}
    stored = {float(e["share"]): e for e in extra.get("answer_at") or []}
    final = (answer.get("scores") or {}).get("correct", answer.get("correct"))
    out: dict[str, ScoreValue | Value] = {}
    correct: ScoreValue | Value
    for share in run_shares(context.settings):
        asked, replies, _ = dialogue(truncate(turns, share))
        out[share_key("patient_recall", share)] = patient_score(replies, item.facts).recall
        out[share_key("doctor_recall", share)] = doctor_score(asked, item.facts).recall
        entry = stored.get(share)
        if share >= 1.0 or (entry is not None and entry.get("whole")):
            correct = None if final is None else bool(final)  # the run's own answer
        elif entry is None:
            correct = None  # not answered at this share
        else:
            partial = {"chosen": entry.get("chosen"), "gold": answer.get("gold"), "extra": extra}
            correct = task(partial, item, context)["correct"]
        out[share_key("correct", share)] = correct
    return out


def share_curve(answers: Sequence[Row], shares: Sequence[float]) -> list[JSONDict]:
    """A run's curve from its answers' scores: per share, the cases ``n`` with a score, the
    ``accuracy`` and the patient's and the doctor's recall (means in percent)."""
    rows = []
    for share in shares:
        row: JSONDict = {"share": share}
        for kind in SHARE_KINDS:
            values = [
                float(v)
                for a in answers
                if isinstance(v := (a.get("scores") or {}).get(share_key(kind, share)), int | float)
            ]
            name = "accuracy" if kind == "correct" else kind
            row[name] = round(100 * sum(values) / len(values), 2) if values else None
            if kind == "correct":
                row["n"] = len(values)
        rows.append(row)
    return rows
