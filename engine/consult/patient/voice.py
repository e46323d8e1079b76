"""A fact of a case said in the patient's own voice: what the grounded patient says when its
model's reply cannot be kept (:meth:`engine.consult.patient.simulated.Patient.read_out`).

Records speak of the patient in the third person ("The patient denies chest pain", "Works as
a designer", "35-year-old female"); the patient says the same words in the first person ("I
haven't had chest pain", "I work as a designer", "I'm a 35-year-old female"), or a parent
speaks of their child ("My child is a 9-month-old infant") when the opening request says "my
child", "my son"… English only; other languages keep the fact's words.

>>> from engine.consult.cases.cases import Fact
>>> in_first_person(Fact("Demographics", "35-year-old female"), "I see double.")
"I'm a 35-year-old female."
>>> in_first_person(Fact("Review of systems", "Patient denies chest pain."), "")
"I haven't had chest pain."
>>> in_first_person(Fact("Vital signs - Heart rate", "72 bpm"), "")
'My heart rate is 72 bpm.'
"""

from __future__ import annotations

import re

from engine.consult.cases.cases import Fact
from engine.consult.patient.contradict import ages

_PARENT = re.compile(r"\bmy (?:child|son|daughter|baby|kid|infant|newborn|boy|girl)\b", re.I)
#: Verbs a record puts after "the patient", "she" or "he", and the patient's own form.
VERBS = {
    "is": "am", "was": "was", "has": "have", "does": "do", "reports": "have had",
    "denies": "haven't had", "notes": "notice", "notices": "notice", "describes": "describe",
    "complains": "complain", "states": "say", "says": "say", "admits": "admit",
    "endorses": "have had", "mentions": "mention",
}  # fmt: skip
#: More verbs of a record's, said by the patient without their "s".
PLAIN_VERBS = frozenset(
    [
        "drinks",
        "smokes",
        "works",
        "lives",
        "takes",
        "uses",
        "eats",
        "exercises",
        "enjoys",
        "drives",
        "walks",
        "sleeps",
        "feels",
        "needs",
        "wears",
        "attends",
        "plays",
        "visits",
        "travels",
        "consumes",
        "follows",
    ]
)
_THIRD = re.compile(r"\b(?:the patient|patient|she|he)\b(?!')", re.IGNORECASE)
_POSSESSIVE = re.compile(r"\b(?:the patient's|patient's|her|his)\b", re.IGNORECASE)
_SELF = re.compile(r"\b(?:herself|himself)\b", re.IGNORECASE)
_VERB_AFTER_I = re.compile(r"\bI ((?:also|still|never|often|occasionally|now) )?(\w+)")
_WORD = re.compile(r"^(\w+)\b(?=\s)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _article(value: str) -> str:
    return "an" if re.match(r"(?:8|11|18|8\d)\b|8\d?-|11-|18-", value) else "a"


def _verb(word: str) -> str | None:
    """The patient's form of a record's verb (None when ``word`` is not one)."""
    low = word.lower()
    if low in VERBS:
        return VERBS[low]
    if low in PLAIN_VERBS:
        return low[:-2] if low.endswith(("shes", "ches")) else low[:-1]
    return None


def _first_person(sentence: str) -> str:
    """One sentence of a record about the patient said by the patient."""
    smoker = re.match(r"non-?smoker\b(?:,|;|\s+and\b)?\s*", sentence, flags=re.I)
    if smoker:  # "Non-smoker, drinks wine": "I don't smoke. I drink wine."
        rest = sentence[smoker.end() :]
        return "I don't smoke." + (f" {_first_person(rest[:1].upper() + rest[1:])}" if rest else "")
    s = re.sub(r"^no\b", "I have no", sentence, flags=re.I)
    s = _POSSESSIVE.sub("my", s)
    s = _SELF.sub("myself", s)
    s = re.sub(r"\bhim\b", "me", s, flags=re.I)
    s = _THIRD.sub("I", s)
    s = _VERB_AFTER_I.sub(lambda m: f"I {m.group(1) or ''}{_verb(m.group(2)) or m.group(2)}", s)
    s = re.sub(
        r"\b(and|but|or) (\w+)\b", lambda m: f"{m.group(1)} {_verb(m.group(2)) or m.group(2)}", s
    )
    s = re.sub(r",\s+(\w+)\b", lambda m: f", I {v}" if (v := _verb(m.group(1))) else m.group(0), s)
    s = re.sub(r"\b(haven't had|history of) (?:experiencing|having) ", r"\1 ", s)
    first = _WORD.match(s)
    if first and (verb := _verb(first.group(1))):
        s = f"I {verb}{s[first.end() :]}"
    return s


def _of_child(sentence: str) -> str:
    """One sentence of a record about a child said by the parent."""
    s = re.sub(r"\b(?:the patient|patient)'s\b", "my child's", sentence, flags=re.I)
    return re.sub(r"\b(?:the patient|patient)\b", "my child", s, flags=re.I)


def in_first_person(fact: Fact, opening: str, language: str = "en") -> str:
    """``fact``'s value as the patient (or the parent of a child patient) says it."""
    value = fact.value.strip().rstrip(".").strip()
    if language != "en" or not value:
        return value
    parent = bool(_PARENT.search(opening))
    topic = fact.key.split(" - ")[-1].strip().lower()
    whose, who = ("My child's", "My child is") if parent else ("My", "I'm")
    if ages(value) and re.match(r"\d", value):
        if re.match(r"\d+\s+(?:years?|months?|weeks?|days?)\s+old\b", value):
            said = f"{who} {value}"
        else:
            said = f"{who} {_article(value)} {value}"
    elif re.match(r"[\d.]+\s*\S", value):  # a measurement: "72 bpm", "36.6°C (97.9°F)"
        said = f"{whose} {topic} is {value}"
    else:
        change = _of_child if parent else _first_person
        said = " ".join(change(s) for s in _SENTENCE.split(value) if s)
    said = said.strip()
    if not said:
        return value
    return f"{said[0].upper()}{said[1:]}{'' if said[-1] in '.!?' else '.'}"
