"""Turn a multiple-choice exam question into a consultation case with a model (a draft).

As in the consultation evaluation framework, a clinical vignette is split into the patient's
information and the task: the last question of the stem ("Which of the following is the most
likely diagnosis?") with its options is the task T; everything before it is the information.
A chat model then writes the opening request P0 (the complaint in the patient's words) and
extracts key–value facts from the information.

The result is a *draft*: :func:`draft_case` returns a :class:`~engine.consult.cases.Case`
whose ``meta.review`` lists what to check (facts dropped because their value is not in the
stem, sentences no fact covered and were added as they are, a fallback opening request). It
is only stored when the caller saves it (:func:`engine.consult.cases.add_case`).
"""

from __future__ import annotations

import re
from typing import Any

from engine.consult.cases import LETTERS, Case, CaseError, Fact, validate_case
from engine.consult.text import content_words, first_sentences, language_of

P0_PROMPT = """Here is the start of a patient's case:
"{first}"
Write what this patient says to the doctor when they walk in: the main complaint only, \
first person, plain everyday words, one or two sentences, ending with a request for help. \
Do not mention test results. Reply with the patient's words only."""

FACTS_PROMPT = """Extract the facts from this patient case as a list, one per line, in the \
form "Key: value". Use short keys such as Age, Sex, Chief complaint, Duration, Associated \
symptoms, Past medical history, Medications, Social history, Vital signs - Temperature, \
Vital signs - Blood pressure, Physical examination, Laboratory results. Copy the values from \
the text; do not add anything.

Case: {information}"""

_TASK_START = re.compile(
    r"(which|what|how|why|who|where|when)\b[^.?!]*\?\s*$|(quel|quelle|lequel|laquelle|"
    r"quels|quelles)\b[^.?!]*\?\s*$",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"[^.?!。？！]+(?:[.?!。？！]+|$)")

_KEY_RULES = [
    ("Vital signs", r"blood pressure|pulse|temperature|respirations|mm ?hg|/min|°[cf]"),
    ("Laboratory results", r"serum|mg/dl|meq/l|mmol/l|hemoglobin|haemoglobin|leukocyte|"
                           r"platelet|count|laboratory|urinalysis|g/dl"),
    ("Imaging and tests", r"x-ray|radiograph|\bct\b|mri|ultrasound|ecg|electrocardiogram|"
                          r"biopsy|echocardiograph"),
    ("Physical examination", r"examination|exam shows|on palpation|auscultation|tender|"
                             r"appears|is alert"),
    ("Social history", r"smok|alcohol|drinks|cigarette|works as|lives with|sexually active"),
    ("Medications", r"\btakes\b|medication|is taking|treated with|\bdaily\b"),
    ("Past medical history", r"history of|has had|was diagnosed|underwent|surgery"),
]  # fmt: skip


def mcq_parts(item: dict[str, Any]) -> tuple[str, dict[str, str], str]:
    """Question text, lettered options and answer letter of an exam item (list or dict
    options; ``answer`` a letter or list of one)."""
    question = str(item.get("question") or "").strip()
    raw = item.get("options") or item.get("answers") or {}
    if isinstance(raw, list):
        options = {LETTERS[i]: str(v) for i, v in enumerate(raw)}
    else:
        options = {str(k).upper(): str(v) for k, v in dict(raw).items()}
    answer = item.get("answer", item.get("correct_answers", ""))
    if isinstance(answer, list):
        answer = answer[0] if len(answer) == 1 else ""
    return question, options, str(answer).strip().upper()


def split_stem(stem: str) -> tuple[str, str]:
    """(information, task question): the last question sentence is the task."""
    sentences = [s.strip() for s in _SENTENCES.findall(stem.strip()) if s.strip()]
    if not sentences:
        return "", ""
    for i in range(len(sentences) - 1, -1, -1):
        if _TASK_START.search(sentences[i]) or sentences[i].endswith(("?", "？")):
            return " ".join(sentences[:i]).strip(), " ".join(sentences[i:]).strip()
    return " ".join(sentences[:-1]).strip(), sentences[-1]


def grounded(value: str, source: str, language: str = "en", share: float = 0.6) -> bool:
    """Whether most of ``value``'s content words occur in ``source``."""
    words = content_words(value, language)
    if not words:
        return False
    have = set(content_words(source, language))
    return sum(w in have for w in words) / len(words) >= share


def parse_facts(text: str) -> list[Fact]:
    """``Key: value`` lines (bullets and numbering removed) as facts."""
    facts = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip()
        m = re.match(r"^([^:：]{1,60})[:：]\s*(.+)$", line)
        if m and m.group(2).strip():
            facts.append(Fact(m.group(1).strip(" *"), m.group(2).strip()))
    return facts


def sentence_key(sentence: str, first: bool = False) -> str:
    """A key for a sentence of the stem no extracted fact covers."""
    if first:
        return "Presentation"
    lowered = sentence.lower()
    for key, pattern in _KEY_RULES:
        if re.search(pattern, lowered):
            return key
    return "History of present illness"


def _unique(facts: list[Fact]) -> list[Fact]:
    seen: dict[str, int] = {}
    out = []
    for fact in facts:
        base = fact.key
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base} ({seen[base]})"
        out.append(Fact(key, fact.value))
    return out


def draft_case(
    item: dict[str, Any],
    model: Any,
    dataset: str = "",
    language: str | None = None,
    model_name: str = "",
    max_tokens: int = 320,
) -> Case:
    """A draft case from an exam item (``question``, ``options``, ``answer``).

    Raises :class:`CaseError` when the item has no information before its question.
    """
    stem, options, answer = mcq_parts(item)
    language = language or language_of(stem)
    information, question = split_stem(stem)
    if not information:
        raise CaseError("the question has no patient information to turn into a case")
    review: list[str] = []

    first = first_sentences(information, 1)
    g = model.chat([{"role": "user", "content": P0_PROMPT.format(first=first)}],
                   max_tokens=96, temperature=0.0)  # fmt: skip
    opening = first_sentences(g.text.strip().strip('"'), 2)
    made_up = set(re.findall(r"\d+", opening)) - set(re.findall(r"\d+", information))
    if not opening or len(opening.split()) > 60 or made_up:
        opening = "Hello doctor, I'm not feeling well. Can you help me?"
        review.append("opening request: the model's draft was unusable; a generic one is used")

    g = model.chat([{"role": "user", "content": FACTS_PROMPT.format(information=information)}],
                   max_tokens=max_tokens, temperature=0.0)  # fmt: skip
    facts = []
    for fact in parse_facts(g.text):
        if grounded(fact.value, information, language):
            facts.append(fact)
        else:
            review.append(f"dropped fact not found in the question: {fact.key}: {fact.value}")
    covered = set()
    for fact in facts:
        covered |= set(content_words(fact.value, language))
    sentences = [s.strip() for s in _SENTENCES.findall(information) if s.strip()]
    for n, sentence in enumerate(sentences):
        words = content_words(sentence, language)
        if words and sum(w in covered for w in words) / len(words) < 0.5:
            facts.append(Fact(sentence_key(sentence, first=n == 0), sentence))
            covered |= set(words)
            review.append(f"added a sentence no fact covered: {sentence[:60]}")
    facts = _unique(facts)
    record = {
        "id": f"{dataset or 'exam'}-{item.get('id')}",
        "language": language,
        "facts": [{"key": f.key, "value": f.value} for f in facts],
        "initial_request": opening,
        "task": {"question": question, "options": options, "answer": answer},
        "source": f"converted from {dataset or 'an exam'} item {item.get('id')}",
        "meta": {"draft": True, "review": review, "model": model_name,
                 "converted_from": {"dataset": dataset, "item": item.get("id")},
                 "information": information},  # fmt: skip
    }
    case = validate_case(record)
    if not case.task.options or case.task.answer not in case.task.options:
        raise CaseError("the item has no valid options and answer")
    return case

