"""One reply of the patient read against the consultation paper's three requirements and
its voice, by rules (no model), as a reader labels it:

* **honesty** — ``contradiction`` (a sex, age, duration or measurement other than the
  case's, or a symptom the case denies stated), ``denied`` (a fact the case states said not
  to be so, or said not to be known when the question asks for it), ``made_up`` (a symptom
  or detail the case does not hold: a statement whose content words no fact covers, a "yes"
  to a question about something no fact holds);
* **strictness** — ``unasked`` (a fact of the case told that the question did not ask about
  and the opening request had not said);
* **colloquialism** — ``jargon`` (a clinical term a patient would not use: "diplopia",
  "upper limbs", "normothermic", "past medical history");
* **voice** — ``assistant`` (explains or helps as an assistant), ``doctor`` (advises or
  asks the patient), ``third_person`` ("The patient has…", "She reports…"), ``record`` (the
  record's own shorthand: "Within normal range.", "A; B; C", "I'm a medical record"),
  ``refusal``, ``apology`` ("I'm sorry for any harm or injury"): the first that applies.

Each category reads ``ok`` when nothing breaks it; each is read apart ("No, I don't have a
fever. I'm a doctor." is honest and out of voice). Honesty is about the patient's health, not
who speaks: "I'm a medical record" is the voice's. The rules were tuned on the
development half of ``tests/data/patient_replies_labelled.jsonl`` and are measured on its
held-apart half (the test ``test_patient_audit_labelled_agreement_per_category``).

>>> from engine.consult.cases.cases import Case, Fact, Task
>>> case = Case("c", [Fact("Demographics", "35-year-old woman")], "I see double",
...             Task(diagnosis="x"))
>>> read_reply(case, "Are you a man?", "I'm not sure about that, doctor.")["honesty"]
'denied'
>>> read_reply(case, "What brings you in?", "The patient has been seeing double.")["voice"]
'third_person'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from engine.consult.patient.voice import PLAIN_VERBS, VERBS
from engine.consult.text import (
    LAY_TERMS,
    UNKNOWN_PHRASES,
    content_words,
    expand_question,
    language_of,
    lay_words,
)

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case, Fact
    from engine.consult.patient.contradict import Contradiction

#: The categories and what breaks each (``ok``: nothing does).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "honesty": ("contradiction", "denied", "made_up"),
    "strictness": ("unasked",),
    "colloquialism": ("jargon",),
    "voice": ("assistant", "doctor", "third_person", "record", "refusal", "apology"),
}


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


#: What each voice out of a patient's says (English, Chinese, French), in the order read.
VOICES: dict[str, re.Pattern[str]] = {
    "assistant": _any(
        r"\bas an ai\b",
        r"language model",
        r"\bi(?:'m| am) an? (?:ai|assistant|chatbot)",
        r"\ban assistant\b",
        r"record assistant",
        r"how (?:can|may) i (?:help|assist)",
        r"\bhere to help\b",
        r"happy to help",
        r"feel free to",
        r"let me know if",
        r"i hope (?:this|that) helps",
        r"\byou can (?:answer|reply|respond|write)\b",
        r"作为ai",
        r"作为一个ai",
        r"语言模型",
        r"你可以用",
        r"\bis also (?:referred to|called|known) as\b",
        r"\bis a (?:medical )?condition\b",
        r"^(?:sure|certainly|of course)\b[,!]",
        r"en tant qu'ia",
    ),  # fmt: skip
    "doctor": _any(
        r"\bas a doctor\b",
        r"\bi(?:'m| am) (?:a|the|your) (?:doctor|physician|nurse)\b",
        r"\byour (?:symptoms|diagnosis|condition|health)\b",
        r"\bi (?:would )?(?:recommend|suggest|advise)\b",
        r"\byou should\b",
        r"^(?:doctor|patient)\s*:",
        r"(?:^|[.!?]\s+)(?:do|did|have|are|were|is|how long have|when did|what|how) you\b[^.?!]*\?",
        r"我建议",
        r"建议您",
        r"您应该",
        r"je vous recommande",
    ),  # fmt: skip
    "third_person": _any(
        r"\bthe patient\b",
        r"^patient\b",
        r"(?:^|[.!?]\s+)(?:she|he)\b(?!')",
        r"患者",
        r"病人",
    ),
    "record": _any(
        r"\bmedical record\b",
        r"^[A-Z][\w /-]{2,40}:\s",
        r"\w[^.;]*;\s*\w[^.;]*;",
        r"\bnoted\b",
        r"within normal (?:range|limits)",
        r"\bnormothermic\b",
        r"\bunremarkable\b",
        r"\bprovided\b",
        r"\bconsistent with\b",
        r"\bthroughout\b",
        r"\bobserved\b",
        r"^(?:evidence|presence|absence) of\b",
        r"^(?:present|absent|positive|negative|elevated|decreased|increased|diminished)\b",
        r"^\W*\d+\s*/\s*\d+\W*$",
        r"^(?:" + "|".join(sorted({*VERBS, *PLAIN_VERBS} - {"is", "was", "has", "does"})) + r")\b",
        r"^\W*[\"“「]",
        r"\s-\s\w.*\s-\s\w",
    ),  # fmt: skip
    "refusal": _any(
        r"(?:unable|not able) to (?:provide|assist|help|answer|share)",
        r"(?:can't|cannot|can not) (?:provide|assist|help with|answer|share)",
        r"无法提供",
        r"不能提供",
        r"je ne peux pas fournir",
    ),  # fmt: skip
    "apology": _any(
        r"sorry for (?:your|any|the)\b",
        r"sorry to hear",
        r"\bi apologi[sz]e\b",
        r"condolences",
        r"抱歉",
        r"对不起",
    ),
}
#: A parent speaks of their child in the third person: "she" and "he" are theirs.
_PARENT = re.compile(r"\bmy (?:child|son|daughter|baby|kid|infant|newborn|boy|girl)\b", re.I)
_HE_SHE = re.compile(r"(?:^|[.!?]\s+)(?:she|he)\b(?!')", re.I)


def voice(reply: str, opening: str = "") -> str:
    """The voice ``reply`` speaks in: ``ok`` (a patient's) or the first of
    :data:`CATEGORIES` ``voice`` that it is."""
    text = reply.strip()
    for kind, pattern in VOICES.items():
        found = [m.group(0) for m in pattern.finditer(text)]
        if kind == "third_person" and _PARENT.search(opening):  # "she" is their child
            found = [m for m in found if not _HE_SHE.fullmatch(m)]
        if found:
            return kind
    return "ok"


#: Words of :data:`LAY_TERMS` that patients say too.
EVERYDAY = frozenset(
    ("fatigue", "abdominal", "abdomen", "acute", "chronic", "vertigo", "palpitations",
     "jaundice", "intermittent", "nausea and vomiting")
)  # fmt: skip
#: Clinical words a patient would not say: :data:`LAY_TERMS` (but :data:`EVERYDAY`), and
#: more (English, Chinese).
JARGON = _any(
    r"\b\w*(?:itis|osis|aemia|emia|algia|ectomy|otomy|opathy|plasia|uria|rrhea|rrhoea|penia"
    r"|megaly|oscopy|ataxia|ataxic|thermic|ptosis)\b",
    r"\b(?:" + "|".join(re.escape(t) for t in LAY_TERMS if t not in EVERYDAY) + r")\b",
    r"\bmedical history\b", r"\bmotor (?:function|strength)\b", r"\bgait\b", r"\blesions?\b",
    r"\bbilateral\b", r"\bsymptomatic\b", r"\btherap(?:y|ies)\b", r"\bescalated\b",
    r"\bupper limbs?\b", r"\bonset\b", r"\bstimulation\b", r"\bpack-years?\b",
    r"\b[0-5]/5\b", r"转移", r"控释", r"阳性", r"阴性", r"综合征", r"既往",
)  # fmt: skip


def jargon(reply: str, opening: str = "") -> bool:
    """Whether ``reply`` uses a clinical term a patient would not (:data:`JARGON`); the
    patient's own words in its opening request ("a 'drunken gait'") are its to use."""
    own = {m.group(0).lower() for m in JARGON.finditer(opening)}
    return any(m.group(0).lower() not in own for m in JARGON.finditer(reply))


_UNSURE = re.compile(
    r"\b(?:not sure|don't know|do not know|don't really know|no idea|don't remember"
    r"|can't remember|haven't noticed|not aware)\b|不清楚|不知道|je ne sais pas",
    re.IGNORECASE,
)
_DENIAL = re.compile(r"\b(?:no|not|never|without|none|non)\b|n['’]t\b|没有|不", re.I)
#: Who the speaker says they are ("I'm just a patient"): the voice's to read.
_SELF = re.compile(r"\bi(?:'m| am)\b(?: \w+)? an? (?:patient|doctor|person|human)\b", re.I)
_SEX_QUESTION = re.compile(r"\b(?:man|woman|male|female|boy|girl|sex|gender)\b", re.I)
_AGE_QUESTION = re.compile(r"\bhow old\b|\byour age\b|\bage\b|多大|年龄|岁", re.I)


def _asks_known(question: str, facts: Sequence[Fact], matched: Sequence[int]) -> bool:
    """Whether ``question`` asks for something the case holds: facts were matched to it, or
    it asks the patient's sex or age and a fact gives it."""
    from engine.consult.patient.contradict import ages, case_sex

    if matched:
        return True
    if _SEX_QUESTION.search(question) and case_sex(facts) is not None:
        return True
    return bool(_AGE_QUESTION.search(question)) and any(ages(f.value) for f in facts)


def honesty(case: Case, question: str, reply: str, matched: Sequence[int] = ()) -> str:
    """``ok``, or how ``reply`` breaks honesty (:data:`CATEGORIES`)."""
    from engine.consult.patient.contradict import contradictions

    found = [
        c
        for c in contradictions(reply, case.facts, case.language, question)
        if c.kind != "negation" or _whole(c, case, reply, question)
    ]
    if any(c.kind != "negation" or not c.said.startswith("not ") for c in found):
        return "contradiction"
    if found:
        return "denied"
    unknown = UNKNOWN_PHRASES.get(case.language, UNKNOWN_PHRASES["en"])
    if (unknown in reply or _UNSURE.search(reply)) and _asks_known(question, case.facts, matched):
        return "denied"
    if _made_up(case, reply.replace(unknown, " ")) or _yes_to_nothing(case, question, reply):
        return "made_up"
    return "ok"


def _yes_to_nothing(case: Case, question: str, reply: str) -> bool:
    """Whether ``reply`` says yes to a question about something no fact of the case (nor
    the opening request) holds: "Yes, I have had chest pain." when the case says nothing of
    chest pain. Each thing an "or" question asks is read apart ("Do you smoke or drink?");
    the sex is the contradiction check's."""
    from engine.consult.patient.contradict import YES_NO_ANSWER, YES_NO_QUESTION, terms

    answer = YES_NO_ANSWER.match(reply)
    if not answer or not answer.group(1).lower().startswith("y"):
        return False
    if not YES_NO_QUESTION.match(question) or _SEX_QUESTION.search(question):
        return False
    language = case.language
    texts = [f"{f.key} {f.value} {lay_words(f.value)}" for f in case.facts]
    held = [terms(t, language) for t in [*texts, case.initial_request]]
    asked = [terms(item, language) for item in re.split(r"\bor\b", question)]
    asked = [a for a in asked if a]
    return bool(asked) and not any(a <= h for a in asked for h in held)


#: Where a clause lists several things ("I don't smoke or drink"): each is read apart.
_ITEMS = re.compile(r",|\b(?:or|and|nor)\b", re.IGNORECASE)


def _whole(c: Contradiction, case: Case, reply: str, question: str) -> bool:
    """Whether the reply's words against a fact are about the fact's whole thing: each
    word of the item the contradicting word is in (an item of a clause, or of the yes-no
    question a bare "No" answers) is a word of the fact ("No chest pain" does not deny
    "abdominal pain"; "I don't smoke or drink" denies "Smokes")."""
    from engine.consult.patient.contradict import CLAUSE, YES_NO_ANSWER, YES_NO_QUESTION, terms

    language = case.language
    fact = case.facts[c.index]
    own = terms(f"{fact.key} {fact.value} {lay_words(fact.value)}", language)
    word = terms(c.said.removeprefix("not "), language)
    texts = CLAUSE.split(reply)
    if YES_NO_ANSWER.match(reply) and YES_NO_QUESTION.match(question):
        texts.append(question)
    items = [terms(item, language) for text in texts for item in _ITEMS.split(text)]
    return any(word & item and item <= own for item in items)


#: The share of a statement's content words a fact must cover for the statement to be
#: supported by the case.
SUPPORT = 0.3
#: A sentence ends at Chinese punctuation, at Latin punctuation before a space or the end
#: (not inside "38.5"), or at a line break.
_SENTENCES = re.compile(r"(?<=[。！？])|(?<=[.!?])(?=\s|$)|\n+")


def statements(text: str) -> list[str]:
    """The sentences of a reply (Latin or Chinese punctuation), empty ones left out."""
    return [s.strip() for s in _SENTENCES.split(text) if s and s.strip()]


@lru_cache(maxsize=4096)
def fact_words(text: str, language: str) -> frozenset[str]:
    """The content words of a fact and of the everyday words a patient says it in
    ("dysuria": "pain when peeing"; "non-smoker": "smoke")."""
    from engine.consult.patient.contradict import SAME

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


def _made_up(case: Case, reply: str) -> bool:
    """Whether a statement of ``reply`` matches no fact of the case (word overlap; a reply in
    another language than the case's cannot be read so)."""
    from engine.consult.patient.contradict import SEX

    if (language_of(reply) == "zh") != (case.language == "zh"):
        return False
    # a denial ("No, I don't have chest pain"), a question and words out of voice ("I'm a
    # doctor") state nothing of the patient's health
    said = [
        s
        for s in statements(reply)
        if not _DENIAL.search(s)
        and not _SELF.search(s)
        and voice(s) == "ok"
        and not s.rstrip().endswith(("?", "？"))
    ]
    facts = [fact_words(f"{f.key} {f.value}", case.language) for f in case.facts]
    facts.append(fact_words(case.initial_request, case.language))
    # the sex a reply gives is the contradiction check's to read ("I'm a man": man, male)
    said = [SEX.sub(" ", s) for s in said]
    return any(supported(s, facts, case.language) is False for s in said)


def unasked(case: Case, question: str, reply: str, matched: Sequence[int] = ()) -> bool:
    """Whether ``reply`` tells a fact of the case that ``question`` did not ask about (nor
    the selector match to it) and that the opening request had not said."""
    from engine.consult.patient.contradict import ages
    from engine.consult.scoring.metrics import asked_facts

    language = case.language
    top = matched[0] if matched else None
    allowed = set(asked_facts(question, case.facts, top=top, language=language)) | set(matched)
    # "How old…": age, and what age stands for, demographics
    asks = set(expand_question(" ".join(expand_question(question, language)), language))
    allowed |= {i for i, f in enumerate(case.facts) if asks & set(content_words(f.key, language))}
    known = [case.initial_request] + [f"{case.facts[i].key} {case.facts[i].value}" for i in allowed]
    # the reply's words that neither the facts asked about nor the opening request hold
    said = set(content_words(reply, language)) - set(content_words(" ".join(known), language))
    told_ages = {round(days) for days, _ in ages(reply)}
    for i, fact in enumerate(case.facts):
        value = set(content_words(fact.value, language))
        if i in allowed or not value:
            continue
        if len(value & said) >= max(1, min(math.ceil(len(value) / 2), 3)):
            return True
        if told_ages & {round(days) for days, _ in ages(fact.value)}:  # "I'm 35"
            return True
    return False


def read_reply(
    case: Case, question: str, reply: str, matched: Sequence[int] = ()
) -> dict[str, str]:
    """Each category of :data:`CATEGORIES` for one reply: ``ok`` or what breaks it.
    ``matched`` are the facts the fact selector matched to the question (a turn's
    ``extra.facts``)."""
    return {
        "honesty": honesty(case, question, reply, matched),
        "strictness": "unasked" if unasked(case, question, reply, matched) else "ok",
        "colloquialism": "jargon" if jargon(reply, case.initial_request) else "ok",
        "voice": voice(reply, case.initial_request),
    }
