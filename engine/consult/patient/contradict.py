"""Whether a patient's reply contradicts a fact of its case: pure functions, no model.

The grounded patient (:class:`engine.consult.patient.simulated.Patient`) checks each reply with
:func:`contradictions` before it is shown, and the patient audit counts the replies that
contradict a fact. Three kinds of contradiction are found:

* **sex**: the reply calls the patient a woman when the case is a man's (female, woman, girl,
  lady against male, man, boy, guy), the case's sex read from its demographic facts;
* **numbers**: an age ("I'm 53", "a 35-year-old", "9 months old") other than the case's; a
  duration ("for 2 weeks") no fact gives; a measurement with a unit (°C, mmHg, bpm,
  breaths/min, %, mg…) other than every one of that unit in the facts;
* **negations**: the reply denies what a fact states ("no fever" when the temperature is
  38.5 °C or a fact has fever) or states what a fact denies ("I have chest pain" when the
  patient denies chest pain); a bare "No." or "Yes." answers the question's own words.

Sex words and negations are read in English; numbers in any language. A word both stated and
denied in the facts ("pain" in "abdominal pain" and "denies chest pain") is never counted.

>>> from engine.consult.cases.cases import Fact
>>> facts = [Fact("Demographics", "35-year-old female"), Fact("History", "Fever for 3 days")]
>>> [c.kind for c in contradictions("I'm a 35-year-old male with no fever.", facts)]
['sex', 'negation']
>>> contradictions("I'm 35 and I've had a fever for three days.", facts)
[]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

from engine.consult.cases.cases import Fact
from engine.consult.text import content_words, lay_words


@dataclass(frozen=True)
class Contradiction:
    """One contradiction: its ``kind`` (sex, age, duration, measure, negation), what the
    reply said, and the fact it contradicts (its index in the facts, key and value)."""

    kind: str
    said: str
    index: int
    key: str
    value: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


# -- sex -------------------------------------------------------------------------------------

SEX_WORDS = {
    **dict.fromkeys(("female", "woman", "girl", "lady"), "female"),
    **dict.fromkeys(("male", "man", "boy", "gentleman"), "male"),
}
SEX = re.compile(r"\b(" + "|".join(SEX_WORDS) + r")\b", re.IGNORECASE)
#: What comes before a sex word that describes the patient ("I'm a 35-year-old male", "my
#: baby is a girl"), in the same sentence; "a man at work" describes someone else.
_SELF = re.compile(r"\bI(?:'m|’m| am| was)\b|\b(?:as|is|was) an?\b|\bold\b", re.IGNORECASE)
_DEMOGRAPHIC_KEY = re.compile(r"demograph|\bsex\b|gender|\bage\b|patient|identity", re.I)


def case_sex(facts: Sequence[Fact]) -> tuple[str, int] | None:
    """The patient's sex and the fact that gives it: a sex word in a demographic fact
    (Demographics, Sex, Age…) first, else in a fact with an age ("a 62-year-old man");
    None when the facts name none or both."""

    def found(indices: list[int]) -> tuple[str, int] | None:
        for i in indices:
            sexes = {SEX_WORDS[w.lower()] for w in SEX.findall(facts[i].value)}
            if len(sexes) == 1:
                return sexes.pop(), i
        return None

    order = range(len(facts))
    first = [i for i in order if _DEMOGRAPHIC_KEY.search(facts[i].key)]
    aged = [i for i in order if i not in first and ages(facts[i].value)]
    return found(first) or found(aged)


def _sex_contradictions(reply: str, facts: Sequence[Fact]) -> list[Contradiction]:
    known = case_sex(facts)
    if known is None:
        return []
    sex, index = known
    in_facts = {w.lower() for f in facts for w in SEX.findall(f.value)}
    said = []
    for m in SEX.finditer(reply):
        before = re.split(r"[.!?;]", reply[max(0, m.start() - 30) : m.start()])[-1]
        word = m.group(1).lower()
        if _SELF.search(before) and SEX_WORDS[word] != sex and word not in in_facts:
            said.append(word)
    fact = facts[index]
    return [Contradiction("sex", w, index, fact.key, fact.value) for w in dict.fromkeys(said)]


# -- numbers ---------------------------------------------------------------------------------

NUMBER_WORDS = {
    w: n
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
} | {"a": 1, "an": 1, "a couple of": 2, "couple of": 2, "few": 3, "several": 3}
_NUM = r"(\d+(?:\.\d+)?|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
DAYS = {"hour": 1 / 24, "day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
_UNIT = r"(hour|hr|day|week|wk|month|mo|year|yr)s?"
_AGE = re.compile(
    _NUM + r"[\s-]*" + _UNIT + r"[\s-]*old\b|\baged?\s+(\d+)\b|\b(\d+)\s+years? of age\b"
    r"|\bI(?:'m|’m| am)\s+(\d+)\b(?![.,]\d|\s*(?:%|°|/|kg|lbs?\b|pounds|cm|mg|minutes|times"
    r"|hours?|days?|weeks?|months?|years?|cigarettes|packs?|drinks))",
    re.IGNORECASE,
)
_DURATION = re.compile(r"\b" + _NUM + r"[\s-]*" + _UNIT + r"\b(?![\s-]*old)", re.IGNORECASE)
_UNIT_DAYS = {"hr": "hour", "wk": "week", "mo": "month", "yr": "year"}
#: Measurement units by kind: a number followed by one of these is a measurement.
MEASURES = {
    "temperature": r"°\s*[CF]\b|degrees?\b",
    "pressure": r"mm\s*Hg\b",
    "rate": r"bpm\b|beats?(?: per |/)min(?:ute)?\b|breaths?(?: per |/)min(?:ute)?\b|/min\b",
    "dose": r"mg\b|mcg\b|µg\b|ml\b|units?\b|IU\b",
}
_MEASURE = {
    kind: re.compile(r"(\d+(?:\.\d+)?(?:/\d+)?)\s*(?:" + unit + ")", re.IGNORECASE)
    for kind, unit in MEASURES.items()
}


def _number(word: str) -> float:
    word = word.lower().strip()
    return float(NUMBER_WORDS[word]) if word in NUMBER_WORDS else float(word)


def _days(number: str, unit: str) -> float:
    unit = unit.lower().rstrip("s")
    return _number(number) * DAYS[_UNIT_DAYS.get(unit, unit)]


def ages(text: str) -> list[tuple[float, str]]:
    """Each age ``text`` states, in days, with its words ("35-year-old", "I'm 53")."""
    out = []
    for m in _AGE.finditer(text):
        if m.group(1):
            out.append((_days(m.group(1), m.group(2)), m.group(0)))
        else:
            years = m.group(3) or m.group(4) or m.group(5)
            out.append((_number(years) * DAYS["year"], m.group(0)))
    return out


_FREQUENCY = re.compile(
    r"(?:times|once|twice|per|every|each|packs?|cigarettes|drinks?|glass(?:es)?|cups?|\d)\s*$",
    re.IGNORECASE,
)


def durations(text: str) -> list[tuple[float, str]]:
    """Each duration ``text`` states ("for 3 days", "a 1-month history"), in days; a
    frequency ("twice a day", "10 cigarettes a day") is not one."""
    return [
        (_days(m.group(1), m.group(2)), m.group(0))
        for m in _DURATION.finditer(text)
        if not _FREQUENCY.search(text[max(0, m.start() - 12) : m.start()])
    ]


def _close(a: float, b: float, share: float = 0.1) -> bool:
    return abs(a - b) <= max(share * max(a, b), 1e-6)


def measures(text: str) -> dict[str, list[str]]:
    """The numbers ``text`` gives with a unit, by kind of measurement (:data:`MEASURES`)."""
    return {kind: pattern.findall(text) for kind, pattern in _MEASURE.items()}


def _same_measure(a: str, b: str) -> bool:
    if "/" in a or "/" in b:
        return a.split("/") == b.split("/")
    return _close(float(a), float(b), 0.01)


def _number_contradictions(reply: str, facts: Sequence[Fact]) -> list[Contradiction]:
    out: list[Contradiction] = []
    aged = [(i, days) for i, f in enumerate(facts) for days, _ in ages(f.value)]
    for days, said in ages(reply):
        if aged and not any(_close(days, d, 0.05) for _, d in aged):
            i = aged[0][0]
            out.append(Contradiction("age", said, i, facts[i].key, facts[i].value))
    lasting = [(i, days) for i, f in enumerate(facts) for days, _ in durations(f.value)]
    for days, said in durations(reply):
        if lasting and not any(_close(days, d, 0.15) for _, d in lasting):
            i = lasting[0][0]
            out.append(Contradiction("duration", said, i, facts[i].key, facts[i].value))
    told = [measures(f.value) for f in facts]
    for kind, numbers in measures(reply).items():
        given = [(i, n) for i, m in enumerate(told) for n in m[kind]]
        for number in numbers:
            if given and not any(_same_measure(number, n) for _, n in given):
                i = given[0][0]
                out.append(Contradiction(kind, number, i, facts[i].key, facts[i].value))
    return out


# -- negations -------------------------------------------------------------------------------

#: Words that deny what follows them in their clause ("can't", "unable" are not among them:
#: "I can't climb stairs" states a symptom).
_CUE = re.compile(
    r"\b(?:no|not|never|without|none|neither|nor|denies|denied|deny|denying|negative(?: for)?"
    r"|free of|absence of|(?:do|does|did|have|has|had|is|are|was|were)n[’']t)\b",
    re.IGNORECASE,
)
_NON = re.compile(r"\bnon-?(\w+)", re.IGNORECASE)
CLAUSE = re.compile(r"[.;:!?\n]+|\b(?:but|however|although|though|except|yet|apart from)\b", re.I)
#: A comma followed by one of these starts a new clause, out of a denial's scope.
_SUBJECTS_AND_VERBS = (
    "i he she it they we patient has have had is was are were does do did drinks smokes works "
    "takes reports notes lives uses eats feels complains presents says enjoys exercises walks "
    "drives sleeps needs wears attends plays visits travels consumes follows denies endorses "
    "mentions admits states describes notices"
)
_STARTS = [
    *_SUBJECTS_AND_VERBS.split(),
    *(  # and each verb's own form: "…, and enjoy walks"
        w[:-3] + "y" if w.endswith("ies") else w[:-1]
        for w in _SUBJECTS_AND_VERBS.split()
        if w.endswith("s") and w not in ("has", "is", "was", "does")
    ),
]
_CLAUSE_START = re.compile(
    r"^\s*(?:and\s+)?(?:the\s+)?(?:" + "|".join(_STARTS) + r")\b", re.IGNORECASE
)
YES_NO_ANSWER = re.compile(r"^\s*(yes|yeah|yep|no|nope|nah)\s*(?:[,.!]+\s*|$)", re.IGNORECASE)
YES_NO_QUESTION = re.compile(
    r"^\s*(?:and\s+)?(?:do|does|did|have|has|had|are|is|was|were|any|can|could|would|will)\b",
    re.IGNORECASE,
)
#: A value that is a measurement, and a key of measurements, examinations or tests: their
#: words state no symptom.
_MEASURED = re.compile(r"^\s*[<>~]?\s*\d")
_MEASURED_KEY = re.compile(
    r"vital|exam|test|laborator|imaging|finding|result|blood|urin|scan|x-ray|ecg|ekg|\bct\b"
    r"|mri|ultrasound|biopsy|culture|panel|level|count",
    re.IGNORECASE,
)
#: Words that say nothing for or against a fact.
NEUTRAL = (
    "experiencing noticed get got go went felt ever recent recently time past patient reports "
    "notes problem issues significant current history sure something other also still medical "
    "condition child baby infant kid son daughter parents normal"
)
#: Words for the same thing, mapped to one stem.
SAME = {"smoker": "smoke", "drinker": "drink", "febril": "fever", "feverish": "fever"}
#: Doubt, not denial: a clause with it says nothing ("I'm not sure", "I don't remember").
_UNSURE = re.compile(
    r"\b(?:not|n[’']t)\s+(?:really\s+)?(?:sure|know|remember|recall|certain|aware)\b|\bno idea\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4)
def _neutral(language: str) -> frozenset[str]:
    return frozenset(content_words(NEUTRAL, language))


def terms(text: str, language: str) -> set[str]:
    words = (SAME.get(w, w) for w in content_words(text, language))
    neutral = _neutral(language)
    return {w for w in words if len(w) > 2 and not w[0].isdigit() and w not in neutral}


def polarity(text: str, language: str = "en") -> tuple[set[str], set[str]]:
    """The terms ``text`` states and those it denies (stems): a denial covers the rest of
    its clause and the list that follows it ("denies chest pain, palpitations or cough"),
    "non-" its own word ("non-smoker")."""
    stated: set[str] = set()
    denied: set[str] = set()
    for m in _NON.finditer(text):
        denied |= terms(m.group(1), language)
    for clause in CLAUSE.split(_NON.sub(" ", text)):
        _clause_polarity(clause, language, stated, denied)
    return stated, denied


def _clause_polarity(clause: str, language: str, stated: set[str], denied: set[str]) -> None:
    """Add one clause's stated and denied terms; a comma followed by a new subject or verb
    ("…, I drink wine", "…, has a cough") starts a clause of its own."""
    if _UNSURE.search(clause):
        return
    cue = _CUE.search(clause)
    if cue is None:
        stated |= terms(clause, language)
        return
    stated |= terms(clause[: cue.start()], language)
    first, *rest = clause[cue.end() :].split(",")
    denied |= terms(first, language)
    for i, part in enumerate(rest):
        if _CLAUSE_START.match(part):
            _clause_polarity(",".join(rest[i:]), language, stated, denied)
            return
        denied |= terms(part, language)


def _fact_polarity(facts: Sequence[Fact], language: str) -> list[tuple[set[str], set[str]]]:
    """Each fact's stated and denied terms; its key's words take its value's side ("Allergies:
    penicillin" states allergies, "Allergies: none" denies them), and a measured temperature
    states or denies a fever."""
    out = []
    for f in facts:
        value = f.value.strip().lower()
        if _MEASURED.match(value):  # "18 breaths/min" states no "breath"
            stated, denied = set[str](), set[str]()
        else:  # the words of a record and the everyday words a patient says it in
            stated, denied = polarity(f.value, language)
            if language == "en":
                lay = polarity(lay_words(f.value), language)
                stated, denied = stated | lay[0], denied | lay[1]
        if not _MEASURED_KEY.search(f.key):  # "Heart rate" states no heart trouble
            key = terms(f.key, language)
            (denied if _CUE.match(value) or value in ("none", "no", "negative") else stated).update(
                key
            )
        for number in measures(f.value)["temperature"]:
            celsius = float(number) if float(number) < 50 else (float(number) - 32) / 1.8
            if celsius >= 38.0:
                stated.add("fever")
            elif celsius < 37.5 and "fever" not in stated:
                denied.add("fever")
        out.append((stated, denied))
    return out


def _words_of(text: str, language: str) -> dict[str, str]:
    """The words of ``text`` by their stem (to say which word contradicted a fact)."""
    out: dict[str, str] = {}
    for word in re.findall(r"[\w'-]+", text):
        for stem in terms(word, language):
            out.setdefault(stem, word.lower())
    return out


def _reply_polarity(reply: str, question: str, language: str) -> tuple[set[str], set[str]]:
    """The reply's stated and denied terms; a reply that opens with yes or no also states or
    denies the words of a yes-no question ("Do you have a fever?" "No.")."""
    answer = YES_NO_ANSWER.match(reply)
    said = reply[answer.end() :] if answer else reply
    for pattern in _MEASURE.values():  # "16 breaths/min" is a measurement, not breathing
        said = pattern.sub(" ", said)
    stated, denied = polarity(said, language)
    if answer and YES_NO_QUESTION.match(question):
        asked = terms(question, language)
        (stated if answer.group(1).lower().startswith("y") else denied).update(asked)
    return stated, denied


def _negation_contradictions(
    reply: str, facts: Sequence[Fact], language: str, question: str
) -> list[Contradiction]:
    sides = _fact_polarity(facts, language)
    all_stated = set().union(*(s for s, _ in sides)) if sides else set()
    all_denied = set().union(*(d for _, d in sides)) if sides else set()
    stated, denied = _reply_polarity(reply, question, language)
    # "my heart rate is 72": the name of a measurement of the case states no symptom
    stated -= {t for f in facts if _MEASURED_KEY.search(f.key) for t in terms(f.key, language)}
    out: dict[int, Contradiction] = {}
    words = _words_of(f"{reply} {question}", language)
    for term in sorted(denied & (all_stated - all_denied)):
        i = next(i for i, (s, _) in enumerate(sides) if term in s)
        said = f"not {words.get(term, term)}"
        out.setdefault(i, Contradiction("negation", said, i, facts[i].key, facts[i].value))
    for term in sorted((stated - denied) & (all_denied - all_stated)):
        i = next(i for i, (_, d) in enumerate(sides) if term in d)
        said = words.get(term, term)
        out.setdefault(i, Contradiction("negation", said, i, facts[i].key, facts[i].value))
    return list(out.values())


# -- all of them -----------------------------------------------------------------------------


def contradictions(
    reply: str, facts: Sequence[Fact], language: str = "en", question: str = ""
) -> list[Contradiction]:
    """The contradictions between ``reply`` (to ``question``) and ``facts``: sex, numbers
    and negations (sex and negations in English only), none when the reply agrees with them
    or says what they do not cover."""
    if not reply.strip() or not facts:
        return []
    found = _number_contradictions(reply, facts)
    if language == "en":
        found += _sex_contradictions(reply, facts)
        found += _negation_contradictions(reply, facts, language, question)
    return found


def contradicted(
    reply: str, facts: Sequence[Fact], language: str = "en", question: str = ""
) -> set[int]:
    """The indices of the facts ``reply`` contradicts."""
    return {c.index for c in contradictions(reply, facts, language, question)}
