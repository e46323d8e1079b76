"""Free-text answers judged: a diagnosis named in words (a diagnosis case, or a
multiple-choice case answered with ``answer_form="free"``, CRAFT-MD's free-response form) is
compared with the case's answer by a judge model, which says ``correct``, ``partly`` or
``wrong`` and why (the scorer ``consult.diagnosis-judge``, stored as
``consult.diagnosis-judge@MODEL``; a reply with no verdict is stored as not parsed, with
the reply, never as a made-up verdict). The string match of :mod:`engine.consult.doctor.final_task`
stays the run's accuracy; the judge's verdicts stand beside it.

On a multiple-choice case answered in words the solver also picks a letter in a second,
separate answer (:class:`engine.consult.doctor.final_task.Solver`); :func:`judged_summary` reports
how often the judge's verdict and the letter agree.

>>> parse_verdict('{"verdict": "partly", "reason": "Too broad."}')
('partly', 'Too broad.')
>>> parse_verdict("Verdict: wrong. The candidate named asthma.")[0]
'wrong'
>>> parse_verdict("I cannot tell.") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from engine.consult.cases.cases import Case, reference
from engine.consult.scoring.verdicts import JUDGE as NAME
from engine.consult.scoring.verdicts import VERDICTS, corrected_verdicts
from engine.core.scoring import Context, ScoreValue, Value
from engine.ratings.judge import ask, json_object
from engine.registry import register

if TYPE_CHECKING:
    from engine.core.progress import Cancel, ProgressCallback
    from engine.core.scoring import Rescored
    from engine.models.pool import ModelPool
    from engine.reports.shapes import Table
    from engine.store.store import Store
    from engine.types import JSONDict, Row

#: Raised whenever the prompt or how the reply is read change (the scorer's version).
PROMPT_VERSION = 3
MAX_TOKENS = 96
REPLY_CHARS = 1000

SCHEMA: JSONDict = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
SYSTEM = (
    "You are an experienced physician examining candidates. A candidate named a diagnosis "
    "for a case; compare it with the reference diagnosis. The verdict is: correct when it "
    "names the same condition (a synonym, an abbreviation or a more specific form counts); "
    "partly when it is related but less specific, or names only a part or a cause of it; "
    "wrong otherwise. Reply with a JSON object only: "
    '{"verdict": "correct" | "partly" | "wrong", "reason": "one short sentence"}.'
)


def judge_messages(case: Case, said: str, reference: str) -> list[dict[str, str]]:
    """The judge's conversation for one answer: the rules, then the case's complaint, the
    reference diagnosis and the candidate's."""
    user = (
        f"The patient's complaint: {case.initial_request}\n"
        f"Reference diagnosis: {reference}\n"
        f"Candidate's diagnosis: {said.strip() or '(no answer)'}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


# A verdict without JSON: a line that is the verdict ("Verdict: wrong.", "INCORRECT: …",
# "Partly"), its word first and then nothing but punctuation or the reason after a mark.
_VERDICT_LINE = re.compile(
    r"^[ \t]*\**[ \t]*(?:verdict[ \t]*\**[ \t]*[:：=][ \t]*\**[ \t]*)?"
    r"(?P<word>correct|partly|partially|wrong|incorrect)\**"
    r"(?=[ \t]*$|[ \t]*[.,;:!。，；：！]|[ \t]+[-–—][ \t])",
    re.IGNORECASE | re.MULTILINE,
)
_SYNONYMS = {"partially": "partly", "incorrect": "wrong"}
# What takes a verdict line back: its rest negates or questions it ("correct: no",
# "Correct - not really", "Correct?"); such a reply is not parsed.
_TAKEN_BACK = re.compile(
    r"\b(?:no|not|never|hardly|nope)\b|n['’]t\b|[?？]|[不没沒否]", re.IGNORECASE
)


def parse_verdict(text: str) -> tuple[str, str] | None:
    """``(verdict, reason)`` from a judge's reply, read from the schema's fields only: the
    ``verdict`` of the JSON object the reply holds (then nothing else counts), one of
    :data:`VERDICTS`; else a line that states the verdict. None, not parsed, for anything
    else ("not correct", "maybe", null, a list, two different verdicts, a verdict line
    whose rest negates or questions it: "correct: no")."""
    found = json_object(text)
    if found is not None:
        verdict, reason = found.get("verdict"), found.get("reason")
        if not isinstance(verdict, str) or verdict.strip().lower() not in VERDICTS:
            return None
        return verdict.strip().lower(), reason.strip() if isinstance(reason, str) else ""
    lines = list(_VERDICT_LINE.finditer(text))
    rests = (text[m.end() :].split("\n", 1)[0] for m in lines)
    if any(_TAKEN_BACK.search(rest) for rest in rests):
        return None
    words = {_SYNONYMS.get(m["word"].lower(), m["word"].lower()) for m in lines}
    if len(words) != 1:
        return None
    return words.pop(), text.strip()


@register(
    "scorer",
    name=NAME,
    activities=("consult",),
    keys=("judged", "parsed"),
    version=PROMPT_VERSION,
    needs_model=True,
    by="judge",
)
def diagnosis_judge(answer: Row, item: Case, context: Context) -> dict[str, ScoreValue | Value]:
    """A judge model's verdict on a diagnosis answered in words: 1 correct, 0.5 partly, 0
    wrong, with its reason (none for an answer given as a letter)."""
    if item.task.kind == "mcq" and (answer.get("extra") or {}).get("answer_form") != "free":
        return {}
    said = str(answer.get("chosen") or answer.get("response") or "")
    model = context.models[str(context.options["judge"])]
    reply, error = ask(model, judge_messages(item, said, reference(item)), SCHEMA, MAX_TOKENS)
    found = None if error else parse_verdict(reply)
    if found is None:
        return {"judged": None, "parsed": Value(False, (error or reply)[:REPLY_CHARS])}
    verdict, reason = found
    return {"judged": Value(VERDICTS[verdict], reason[:REPLY_CHARS]), "parsed": True}


def judge_run(
    store: Store,
    run_id: int,
    judge: str,
    *,
    pool: ModelPool | None = None,
    progress: ProgressCallback | None = None,
    cancel: Cancel | None = None,
) -> Rescored:
    """Judge the answers in words of consultation run ``run_id`` with model ``judge``
    (answers it already judged are skipped, so a stopped judging goes on)."""
    from engine.core.scoring import rescore

    return rescore(
        store, run_id, [NAME], pool=pool, progress=progress, cancel=cancel,
        options={"judge": judge},
    )  # fmt: skip


def judged_summary(store: Store, run_id: int) -> dict[str, JSONDict]:
    """Per judge of run ``run_id``: the answers ``judged`` and ``unparsed``, the shares
    ``correct``, ``partly`` and ``wrong`` (percent of those judged), ``string_match`` (the
    run's own accuracy on them) and, where a letter was also picked, ``letter_accuracy``,
    ``agreement`` (percent of answers where "correct" and the letter's rightness agree)
    and Cohen's ``kappa`` (None when it is undefined)."""
    verdicts: dict[str, dict[str, float | None]] = {}
    for row in store.rated_rows([run_id], NAME):
        if row["key"] == "judged":
            who = str(row["scorer"]).split("@", 1)[1]
            verdicts.setdefault(who, {})[str(row["item_key"])] = row["value"]
    if not verdicts:  # most runs: no answer read for nothing
        return {}
    answers = {str(a["item_key"]): a for a in store.answers(run_id)}
    return {who: _summary(found, answers) for who, found in verdicts.items()}


def _summary(found: dict[str, float | None], answers: Mapping[str, Row]) -> JSONDict:
    judged = {k: v for k, v in found.items() if v is not None}
    n = len(judged)

    def pct(count: float) -> float | None:
        return round(100.0 * count / n, 2) if n else None

    out: JSONDict = {
        "judged": n,
        "unparsed": len(found) - n,
        **{name: pct(sum(v == score for v in judged.values())) for name, score in VERDICTS.items()},
        "string_match": pct(sum(bool(answers[k]["correct"]) for k in judged if k in answers)),
    }
    letters = [
        (v == 1.0, bool(extra["letter_correct"]))
        for k, v in judged.items()
        if "letter_correct" in (extra := (answers.get(k) or {}).get("extra") or {})
    ]
    out["letter_accuracy"] = out["agreement"] = out["kappa"] = None
    if letters:
        out["letter_accuracy"] = round(100.0 * sum(b for _, b in letters) / len(letters), 2)
        out["agreement"] = round(100.0 * sum(a == b for a, b in letters) / len(letters), 2)
        out["kappa"] = _kappa(letters)
    return out


def _kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two yes/no raters; None when it is undefined (one rater constant)."""
    from sklearn.metrics import cohen_kappa_score

    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    if len(set(a)) < 2 and len(set(b)) < 2:
        return None
    value = float(cohen_kappa_score(a, b))
    return None if value != value else round(value, 3)  # NaN: undefined


def judged_tables(store: Store, run_ids: Sequence[int]) -> list[Table]:
    """The report table of the free-text answers judged among ``run_ids`` (none when no
    run was judged): per run and judge, the verdicts, the string match and the agreement
    with the letter picked in a second answer."""
    from engine.reports.label import run_label
    from engine.reports.shapes import table

    rows: list[list[Any]] = []
    for run_id in run_ids:
        run = store.run(int(run_id))
        if run["activity"] != "consult":
            continue
        for who, s in judged_summary(store, int(run_id)).items():
            rows.append([f"#{run_id}", run_label(run), who, s["judged"], s["unparsed"],
                         s["correct"], s["partly"], s["wrong"], s["string_match"],
                         s["letter_accuracy"], s["agreement"], s["kappa"]])  # fmt: skip
    if not rows:
        return []
    corrected = corrected_verdicts(store, [int(r) for r in run_ids])
    headers = ["Run", "Setting", "Judge", "Judged", "Unparsed", "Correct (%)", "Partly (%)",
               "Wrong (%)", "String match (%)", "Letter right (%)", "Agreement (%)", "κ"]  # fmt: skip
    return [
        table(
            "Diagnoses in words, judged",
            headers,
            rows,
            "A judge model compares each diagnosis given in words with the case's answer: "
            "correct, partly (related but less specific) or wrong. String match: the run's "
            "own accuracy (normalised words) on the same answers. On multiple-choice cases "
            "answered in words, the solver also picked a letter in a separate answer: "
            "agreement is how often 'correct' and a right letter go together, κ Cohen's "
            "kappa. "
            + (
                "People's verdicts correct each judge's share in the next table."
                if corrected
                else "The judge's agreement with people was not measured: read its "
                "verdicts as a second opinion (medexam rate RUN --diagnoses)."
            ),
        ),
        *([corrected] if corrected else []),
    ]
