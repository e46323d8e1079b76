"""The patient audited: of the patient's replies in a consultation, the statements that match
no fact of the case (possibly made up: measured by word overlap, labelled so — a statement
whose content words are less than :data:`~engine.consult.scoring.requirements.SUPPORT` covered by
every fact is unsupported) and the replies not in a patient's own voice (a reply that speaks as an
assistant, a refusal included, or as the doctor; its sentences are not counted as statements).
Leakage, the facts told unasked, is the dialogue scorer's.

>>> from engine.consult.cases.cases import Case, Fact, Task
>>> case = Case("c", [Fact("Fever", "38.5 °C since Monday")], "I feel hot", Task(diagnosis="flu"))
>>> turns = [{"role": "patient", "turn": 1,
...           "text": "I have had a fever since Monday. My dog is called Rex.",
...           "extra": {"kind": "reply"}}]
>>> audit(case, turns)["patient_unsupported"]
0.5
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.consult.scoring.requirements import (
    CATEGORIES,
    fact_words,
    read_reply,
    statements,
    supported,
    voice,
)
from engine.consult.text import UNKNOWN_PHRASES

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case
    from engine.store.store import Store
    from engine.types import JSONDict, Row


def off_voice(reply: str) -> bool:
    """Whether a reply is not in a patient's voice
    (:func:`engine.consult.scoring.requirements.voice`: an assistant's, a doctor's, a record's, in
    the third person, a refusal, an apology)."""
    return voice(reply) != "ok"


#: The share of a consultation's replies that break each requirement
#: (:data:`engine.consult.scoring.requirements.CATEGORIES`), by the key it is stored under.
SHARES = {
    "honesty": "patient_dishonest",
    "strictness": "patient_unasked",
    "colloquialism": "patient_jargon",
    "voice": "patient_off_voice",
}
#: How a person reads each requirement broken.
BROKEN = {
    "honesty": "not honest",
    "strictness": "told a fact unasked",
    "colloquialism": "in medical jargon",
    "voice": "not in a patient's voice",
}


def readings(case: Case, turns: Sequence[Row]) -> list[JSONDict]:
    """Each reply of the patient (the opening request left out), with the question it
    answers and how it reads against each requirement
    (:func:`engine.consult.scoring.requirements.read_reply`)."""
    questions = {
        int(t.get("turn") or 0): str(t.get("text") or "")
        for t in turns
        if t.get("role") == "doctor" and (t.get("extra") or {}).get("kind") in (None, "question")
    }
    out = []
    for t in turns:
        turn, text = int(t.get("turn") or 0), str(t.get("text") or "").strip()
        if t.get("role") != "patient" or turn <= 0 or not text:
            continue
        matched = [int(m["index"]) for m in (t.get("extra") or {}).get("facts") or []]
        question = questions.get(turn, "")
        read = read_reply(case, question, text, matched)
        out.append({"case": case.id, "turn": turn, "question": question, "text": text, **read})
    return out


def audit(case: Case, turns: Sequence[Row]) -> JSONDict:
    """The audit of one consultation's patient: its replies and the share of them that
    break each requirement (:data:`SHARES`), and its statements and the share that no fact
    of the case supports by word overlap (fractions 0–1; none without replies)."""
    language = case.language
    facts = [fact_words(f"{f.key} {f.value}", language) for f in case.facts]
    facts.append(fact_words(case.initial_request, language))
    unknown = UNKNOWN_PHRASES.get(language, UNKNOWN_PHRASES["en"])
    read = readings(case, turns)
    verdicts = [  # "I don't know" (a whole reply, or one part's answer) states nothing
        found
        for r in read
        if r["voice"] == "ok"
        for s in statements(r["text"].replace(unknown, " "))
        if (found := supported(s, facts, language)) is not None
    ]
    n = len(read)
    shares = {
        key: round(sum(r[c] != "ok" for r in read) / n, 4) if n else None
        for c, key in SHARES.items()
    }
    return {
        "patient_statements": len(verdicts),
        "patient_unsupported": (
            round(verdicts.count(False) / len(verdicts), 4) if verdicts else None
        ),
        "patient_replies": n,
        **shares,
    }


def tally(read: Sequence[JSONDict]) -> JSONDict:
    """Replies read (:func:`readings`, of one consultation or many) summed up per
    requirement: how many break it, the share, how many of each kind, and one reply that
    breaks it (of its most common kind) as the example."""
    out: JSONDict = {"replies": len(read), "categories": {}}
    for category in CATEGORIES:
        broken = [r for r in read if r[category] != "ok"]
        kinds: dict[str, int] = {}
        for r in broken:
            kinds[r[category]] = kinds.get(r[category], 0) + 1
        kinds = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
        first = next((r for r in broken if r[category] == next(iter(kinds))), None)
        out["categories"][category] = {
            "broken": len(broken),
            "share": round(100 * len(broken) / len(read), 1) if read else None,
            "kinds": kinds,
            "example": (
                {k: first[k] for k in ("case", "turn", "question", "text")}
                | {"kind": first[category]}
                if first
                else None
            ),
        }
    return out


def run_audit(store: Store, run_id: int) -> JSONDict:
    """:func:`tally` of every reply of a consultation run's patient (none when its cases
    were deleted since: the replies cannot be read against them)."""
    from engine.consult.cases.cases import Case

    run = store.run(run_id)
    turns: dict[str, list[Row]] = {}
    for t in store.turns(run_id):
        turns.setdefault(str(t["item_key"]), []).append(t)
    items = store.items_by_key(str(run["dataset"])) or {}
    read = [
        r
        for key, item in items.items()
        if key in turns
        for r in readings(Case.from_dict(item), turns[key])
    ]
    return tally(read)


def tally_lines(found: JSONDict) -> list[str]:
    """:func:`tally`'s findings as lines for a person: per requirement, the replies that
    break it, its kinds and one example."""
    n = int(found.get("replies") or 0)
    lines = []
    for category, kinds in CATEGORIES.items():
        c = found["categories"][category]
        how = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in c["kinds"].items())
        lines.append(
            f"{category.capitalize()}: {c['broken']} of {n} replies"
            + (f" ({c['share']:.0f}%)" if n else "")
            + f" {BROKEN[category]}"
            + (f": {how}" if how and len(kinds) > 1 else "")
        )
        if c["example"]:
            e = c["example"]
            lines.append(f"  e.g. {e['case']} reply {e['turn']}: “{e['text']}”")
    return lines


def contradicting(case: Case, turns: Sequence[Row]) -> JSONDict:
    """The patient's replies that contradict a fact of the case
    (:mod:`engine.consult.patient.contradict`: sex, numbers, negations), each reply read with the
    question it answers: their share of the replies (none without replies) and what each
    said against which fact."""
    from engine.consult.patient.contradict import contradictions

    questions = {
        int(t.get("turn") or 0): str(t.get("text") or "")
        for t in turns
        if t.get("role") == "doctor" and (t.get("extra") or {}).get("kind") in (None, "question")
    }
    unknown = UNKNOWN_PHRASES.get(case.language, UNKNOWN_PHRASES["en"])
    replies = [  # the replies :func:`audit` counts
        t
        for t in turns
        if t.get("role") == "patient"
        and int(t.get("turn") or 0) > 0
        and str(t.get("text") or "").strip() not in ("", unknown)
    ]
    found = []
    for t in replies:
        turn = int(t.get("turn") or 0)
        said = contradictions(str(t["text"]), case.facts, case.language, questions.get(turn, ""))
        found += [{"turn": turn, **c.to_dict()} for c in said]
    wrong = {c["turn"] for c in found}
    return {
        "patient_contradicting": round(len(wrong) / len(replies), 4) if replies else None,
        "contradictions": found,
    }


def person_audit(case: Case, turns: Sequence[Row]) -> JSONDict:
    """The audit shown to a person after a consultation: :func:`audit`, the replies that
    contradict a fact (:func:`contradicting`), how the grounded patient's replies were made
    (``patient_sources``: said as the model said them, asked again, the facts read out, not
    known) and each requirement with an example (``requirements``: :func:`tally`)."""
    sources: dict[str, int] = {}
    for t in turns:
        extra = t.get("extra") or {}
        if t.get("role") == "patient" and extra.get("kind") == "reply":
            source = str(extra.get("source") or "model")
            sources[source] = sources.get(source, 0) + 1
    return {
        **audit(case, turns),
        **contradicting(case, turns),
        "patient_sources": sources,
        "requirements": tally(readings(case, turns)),
    }


def audit_lines(found: JSONDict) -> list[str]:
    """:func:`person_audit`'s findings as lines for a person to read."""
    replies = int(found.get("patient_replies") or 0)
    if not replies:
        return ["The patient said nothing to audit."]

    def share(value: float | None, of: int) -> str:
        n = round(float(value or 0) * of)
        return f"{n} of {of}" + (f" ({100 * float(value or 0):.0f}%)" if of else "")

    lines = [
        "Replies contradicting a fact of the case: "
        f"{share(found['patient_contradicting'], replies)}",
    ]
    for c in found.get("contradictions") or []:
        lines.append(f"  reply {c['turn']}: “{c['said']}” against {c['key']}: {c['value']}")
    if found.get("requirements"):
        lines += tally_lines(found["requirements"])
    sources = found.get("patient_sources") or {}
    changed = [
        f"{sources[s]} {label}"
        for s, label in (("retry", "asked again"), ("guard", "the case's own words read out"))
        if sources.get(s)
    ]
    if changed:
        lines.append("Replies checked before they were shown: " + ", ".join(changed))
    return lines
