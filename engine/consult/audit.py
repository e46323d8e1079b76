"""The patient audited: of the patient's replies in a consultation, the statements that match
no fact of the case (possibly made up: measured by word overlap, labelled so — a statement
whose content words are less than :data:`SUPPORT` covered by every fact is unsupported) and
the replies not in a patient's own voice (a reply that speaks as an assistant, a refusal
included, or as the doctor; its sentences are not counted as statements). Leakage, the facts told unasked, is the dialogue scorer's.

>>> from engine.consult.cases import Case, Fact, Task
>>> case = Case("c", [Fact("Fever", "38.5 °C since Monday")], "I feel hot", Task(diagnosis="flu"))
>>> turns = [{"role": "patient", "turn": 1, "text": "I have had a fever since Monday. My dog is called Rex.",
...           "extra": {"kind": "reply"}}]
>>> audit(case, turns)["patient_unsupported"]
0.5
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.consult.text import UNKNOWN_PHRASES, content_words, lay_words

if TYPE_CHECKING:
    from engine.consult.cases import Case
    from engine.types import JSONDict

#: The share of a statement's content words a fact must cover for the statement to be
#: supported by the case.
SUPPORT = 0.3
#: A sentence ends at Chinese punctuation, at Latin punctuation before a space or the end
#: (not inside "38.5"), or at a line break.
_SENTENCES = re.compile(r"(?<=[。！？])|(?<=[.!?])(?=\s|$)|\n+")
#: Phrases that are not a patient's: an assistant's (a refusal included) or a doctor's
#: (lower case).
OFF_VOICE = (
    "as an ai", "language model", "i am an ai", "i'm an ai", "as a doctor", "your diagnosis",
    "i recommend", "i would recommend", "you should see", "your symptoms", "doctor:", "patient:",
    "unable to provide", "can't provide", "cannot provide", "not able to provide",
    "unable to assist", "can't assist", "cannot assist", "can't help with", "here to help you",
    "how can i help", "how can i assist", "an assistant", "record assistant",
    "sorry for any confusion", "sorry for any misunderstanding",
    "作为ai", "作为一个ai", "语言模型", "我建议您", "无法提供", "en tant qu'ia",
    "je vous recommande", "je ne peux pas fournir",
)  # fmt: skip


def off_voice(reply: str) -> bool:
    """Whether a reply speaks as an assistant or as the doctor, not as the patient."""
    low = reply.lower()
    return any(p in low for p in OFF_VOICE)


def statements(text: str) -> list[str]:
    """The sentences of a reply (Latin or Chinese punctuation), empty ones left out."""
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip()]


def _fact_words(text: str, language: str) -> frozenset[str]:
    """The content words of a fact and of the everyday words a patient says it in
    ("dysuria": "pain when peeing"; "non-smoker": "smoke")."""
    from engine.consult.contradict import SAME

    words = content_words(text, language)
    if language == "en":
        words += content_words(lay_words(text), language)
    return frozenset(words + [SAME[w] for w in words if w in SAME])


def supported(sentence: str, facts: Sequence[frozenset[str]], language: str) -> bool | None:
    """Whether some fact covers :data:`SUPPORT` of the sentence's content words (None for a
    sentence without any: a greeting, "yes")."""
    words = set(content_words(sentence, language))
    if not words:
        return None
    return any(len(words & f) / len(words) >= SUPPORT for f in facts)


def audit(case: Case, turns: Sequence[JSONDict]) -> JSONDict:
    """The audit of one consultation's patient: statements, the share unsupported by the
    case's facts, replies, the share not in a patient's voice (fractions 0–1; none without
    replies)."""
    language = case.language
    facts = [_fact_words(f"{f.key} {f.value}", language) for f in case.facts]
    facts.append(_fact_words(case.initial_request, language))
    unknown = UNKNOWN_PHRASES.get(language, UNKNOWN_PHRASES["en"])
    replies = [
        str(t.get("text") or "")
        for t in turns
        if t.get("role") == "patient" and int(t.get("turn") or 0) > 0
    ]
    # "I don't know" (a whole reply, or one part's answer of a two-part question) states nothing
    replies = [r.replace(unknown, " ").strip() for r in replies]
    replies = [r for r in replies if r]
    verdicts = [  # a reply out of voice states nothing of the patient's
        found
        for r in replies
        if not off_voice(r)
        for s in statements(r)
        if (found := supported(s, facts, language)) is not None
    ]
    off = [r for r in replies if off_voice(r)]
    return {
        "patient_statements": len(verdicts),
        "patient_unsupported": (
            round(verdicts.count(False) / len(verdicts), 4) if verdicts else None
        ),
        "patient_replies": len(replies),
        "patient_off_voice": round(len(off) / len(replies), 4) if replies else None,
    }


def contradicting(case: Case, turns: Sequence[JSONDict]) -> JSONDict:
    """The patient's replies that contradict a fact of the case
    (:mod:`engine.consult.contradict`: sex, numbers, negations), each reply read with the
    question it answers: their share of the replies (none without replies) and what each
    said against which fact."""
    from engine.consult.contradict import contradictions

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


def person_audit(case: Case, turns: Sequence[JSONDict]) -> JSONDict:
    """The audit shown to a person after a consultation: :func:`audit`, the replies that
    contradict a fact (:func:`contradicting`), and how the grounded patient's replies were
    made (``patient_sources``: said as the model said them, asked again, the facts read out,
    not known)."""
    sources: dict[str, int] = {}
    for t in turns:
        extra = t.get("extra") or {}
        if t.get("role") == "patient" and extra.get("kind") == "reply":
            source = str(extra.get("source") or "model")
            sources[source] = sources.get(source, 0) + 1
    return {**audit(case, turns), **contradicting(case, turns), "patient_sources": sources}


def audit_lines(found: JSONDict) -> list[str]:
    """:func:`person_audit`'s findings as lines for a person to read."""
    replies = int(found.get("patient_replies") or 0)
    statements = int(found.get("patient_statements") or 0)
    if not replies:
        return ["The patient said nothing to audit (no reply beyond “I don't know”)."]

    def share(value: object, of: int) -> str:
        n = round(float(value or 0) * of)
        return f"{n} of {of}" + (f" ({100 * float(value or 0):.0f}%)" if of else "")

    lines = [
        f"Replies contradicting a fact of the case: {share(found['patient_contradicting'], replies)}",
        f"Statements matching no fact (word overlap, possibly made up): "
        f"{share(found['patient_unsupported'], statements)}",
        f"Replies not in a patient's voice: {share(found['patient_off_voice'], replies)}",
    ]
    for c in found.get("contradictions") or []:
        lines.append(f"  reply {c['turn']}: “{c['said']}” against {c['key']}: {c['value']}")
    sources = found.get("patient_sources") or {}
    changed = [
        f"{sources[s]} {label}"
        for s, label in (("retry", "asked again"), ("guard", "the case's own words read out"))
        if sources.get(s)
    ]
    if changed:
        lines.append("Replies checked before they were shown: " + ", ".join(changed))
    return lines
