"""Turn a multiple-choice exam question into a consultation case with a model (a draft).

As in the consultation evaluation framework, a clinical vignette is split into the patient's
information and the task: the last question of the stem ("Which of the following is the most
likely diagnosis?") with its options is the task T; everything before it is the information.
A chat model then writes the opening request P0 (the complaint in the patient's words) and
extracts key–value facts from the information.

The result is a *draft*: :func:`draft_case` returns a :class:`~engine.consult.cases.cases.Case`
whose ``meta.review`` lists what to check (facts dropped because their value is not in the
stem, sentences no fact covered and were added as they are, a fallback opening request). It
is only stored when the caller saves it (:func:`engine.consult.cases.cases.add_case`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from engine.consult.cases.cases import LETTERS, Case, CaseError, Fact, validate_case
from engine.consult.text import content_words, first_sentences, language_of
from engine.models.protocol import ChatModel, Message, chat_as_prompt

if TYPE_CHECKING:
    from engine.types import Item, JSONDict

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

#: Why a question whose prompt does not fit the converter's context is left out.
TOO_LONG = "too long for the converter's context"
#: What a chat template adds to a prompt, at most (its marks, a default system prompt).
_TEMPLATE_BYTES = 512

_TASK_START = re.compile(
    r"(which|what|how|why|who|where|when)\b[^.?!]*\?\s*$|(quel|quelle|lequel|laquelle|"
    r"quels|quelles)\b[^.?!]*\?\s*$",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_GENERIC_KEYS = {
    "age",
    "sex",
    "gender",
    "duration",
    "onset",
    "temperature",
    "pulse",
    "heart rate",
    "blood pressure",
    "respiratory rate",
    "weight",
    "height",
    "oxygen saturation",
}
_COMPLAINT = re.compile(
    r"\b(?:because of|complaining of|complains of|for evaluation of|with a history of|with)\s+"
    r"(.+?)(?:\.\s|\.$|$)",
    re.IGNORECASE,
)
_THIRD_PERSON = re.compile(
    r"year-old|\b(comes|came|presents|presented|is brought|was brought)\b|\bthe patient\b",
    re.IGNORECASE,
)


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (a full stop inside a number such as 39.4 does not end one)."""
    parts = re.split(r"(?<=[.?!])\s+(?=\S)|(?<=[。？！])", text.strip())
    return [p.strip() for p in parts if p.strip()]


_KEY_RULES = [
    ("Vital signs", r"blood pressure|pulse|temperature|respirations|mm ?hg|/min|°[cf]"),
    (
        "Laboratory results",
        r"serum|mg/dl|meq/l|mmol/l|hemoglobin|haemoglobin|leukocyte|"
        r"platelet|count|laboratory|urinalysis|g/dl",
    ),
    (
        "Imaging and tests",
        r"x-ray|radiograph|\bct\b|mri|ultrasound|ecg|electrocardiogram|"
        r"biopsy|echocardiograph",
    ),
    (
        "Physical examination",
        r"examination|exam shows|on palpation|auscultation|tender|"
        r"appears|is alert",
    ),
    ("Social history", r"smok|alcohol|drinks|cigarette|works as|lives with|sexually active"),
    ("Medications", r"\btakes\b|medication|is taking|treated with|\bdaily\b"),
    ("Past medical history", r"history of|has had|was diagnosed|underwent|surgery"),
]


def mcq_parts(item: Item) -> tuple[str, dict[str, str], str]:
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
    parts = sentences(stem)
    if not parts:
        return "", ""
    for i in range(len(parts) - 1, -1, -1):
        if _TASK_START.search(parts[i]) or parts[i].endswith(("?", "？")):
            return " ".join(parts[:i]).strip(), " ".join(parts[i:]).strip()
    return " ".join(parts[:-1]).strip(), parts[-1]


def grounded(value: str, source: str, language: str = "en", share: float = 0.6) -> bool:
    """Whether ``value`` comes from ``source``: most of its distinct content words occur in it
    and every number in it occurs there as written."""
    words = set(content_words(value, language))
    if not words:
        return False
    if set(_NUMBER.findall(value)) - set(_NUMBER.findall(source)):
        return False
    have = set(content_words(source, language))
    return len(words & have) / len(words) >= share


def fact_is_grounded(fact: Fact, source: str, language: str = "en") -> bool:
    """A fact worth keeping: its value is grounded, at most 40 words long, and a value of a
    single word (``2``) counts only under a usual key or a key found in the source."""
    if len(fact.value.split()) > 40 or not grounded(fact.value, source, language):
        return False
    if len(set(content_words(fact.value, language))) >= 2:
        return True
    key = fact.key.lower().strip()
    if key in _GENERIC_KEYS:
        return True
    return grounded(fact.key, source, language, share=1.0)


def parse_facts(text: str) -> list[Fact]:
    """``Key: value`` lines (bullets and numbering removed) as facts; a line listing several
    (``Age: 24, Sex: female``) gives one fact each."""
    facts = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip()
        line = re.sub(r"^(?:key|fact)\s*[:：]\s*", "", line, flags=re.IGNORECASE)
        for part in re.split(r"[,;]\s+(?=[A-Z][\w /-]{0,40}[:：])", line):
            m = re.match(r"^([^:：]{1,60})[:：]\s*(.+)$", part.strip())
            key = m.group(1).strip(" *") if m else ""
            if m and m.group(2).strip() and key.lower() not in ("key", "value"):
                facts.append(Fact(key, m.group(2).strip().rstrip(",;")))
    return facts


def fallback_opening(information: str) -> str:
    """An opening request from the stem's first sentence (``…because of X`` → ``I've come in
    because of X``)."""
    first = first_sentences(information, 1)
    m = _COMPLAINT.search(first)
    if m:
        complaint = m.group(1).strip().rstrip(".")
        complaint = re.sub(r"\b(her|his)\b", "my", complaint)
        return f"Hello doctor, I've come in because of {complaint}. Can you help me?"
    return "Hello doctor, I'm not feeling well. Can you help me?"


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


def too_long(model: ChatModel, messages: list[Message], max_tokens: int) -> str | None:
    """Why the converter's context cannot hold ``messages`` and an answer of ``max_tokens``
    (None when it can, or when its context is not known). A prompt of fewer bytes than the
    context has tokens fits whatever the tokenizer (a token is at least a byte) and is not
    counted; a longer one is, by the converter's own tokenizer."""
    n_ctx = (getattr(model, "info", None) or {}).get("n_ctx")
    if not n_ctx:
        return None
    size = sum(len(m["content"].encode("utf-8")) for m in messages)
    if size + _TEMPLATE_BYTES + max_tokens <= n_ctx:
        return None
    n = model.count_tokens(chat_as_prompt(model, messages, {})[0])
    if n + max_tokens <= n_ctx:
        return None
    return (
        f"{TOO_LONG}: its prompt takes {n:,} tokens and the answer up to {max_tokens}, more "
        f"than the {n_ctx:,} of {model.name}'s context"
    )


def _reply(model: ChatModel, prompt: str, max_tokens: int) -> str:
    """The converter's answer to ``prompt``; a prompt its context cannot hold is a
    :class:`CaseError` saying so (:func:`too_long`): the question is left out, never cut."""
    messages = [{"role": "user", "content": prompt}]
    reason = too_long(model, messages, max_tokens)
    if reason is not None:
        raise CaseError(reason)
    return model.chat(messages, max_tokens=max_tokens, temperature=0.0).text.strip()


def draft_case(
    item: Item,
    model: ChatModel,
    dataset: str = "",
    language: str | None = None,
    model_name: str = "",
    max_tokens: int = 200,
) -> Case:
    """A draft case from an exam item (``question``, ``options``, ``answer``).

    Raises :class:`CaseError` when the item has no information before its question, or
    when a prompt made of it does not fit the converter's context (:data:`TOO_LONG`).
    """
    stem, options, answer = mcq_parts(item)
    language = language or language_of(stem)
    information, question = split_stem(stem)
    if not information:
        raise CaseError("the question has no patient information to turn into a case")
    review: list[str] = []

    first = first_sentences(information, 1)
    opening = first_sentences(_reply(model, P0_PROMPT.format(first=first), 64).strip('"'), 2)
    made_up = set(_NUMBER.findall(opening)) - set(_NUMBER.findall(information))
    first_person = re.search(r"\b(i|i'm|i've|my|me)\b", opening, re.IGNORECASE)
    if (
        not opening
        or len(opening.split()) > 60
        or made_up
        or not first_person
        or _THIRD_PERSON.search(opening)
    ):
        opening = fallback_opening(information)
        review.append("opening request: the model's draft was unusable; made from the stem")

    said = _reply(model, FACTS_PROMPT.format(information=information), max_tokens)
    facts: list[Fact] = []
    seen: set[tuple[str, str]] = set()
    for fact in parse_facts(said):
        if (fact.key, fact.value) in seen:
            continue
        seen.add((fact.key, fact.value))
        if fact_is_grounded(fact, information, language):
            facts.append(fact)
        else:
            review.append(f"dropped fact not found in the question: {fact.key}: {fact.value}")
    covered = set()
    for fact in facts:
        covered |= set(content_words(fact.value, language))
    for n, sentence in enumerate(sentences(information)):
        words = content_words(sentence, language)
        if words and sum(w in covered for w in words) / len(words) < 0.8:
            facts.append(Fact(sentence_key(sentence, first=n == 0), sentence))
            covered |= set(words)
            review.append(f"added a sentence the facts did not cover: {sentence[:60]}")
    facts = _unique(facts)
    record: JSONDict = {
        "id": f"{dataset or 'exam'}-{item.get('id')}",
        "language": language,
        "facts": [{"key": f.key, "value": f.value} for f in facts],
        "initial_request": opening,
        "task": {"question": question, "options": options, "answer": answer},
        "source": f"converted from {dataset or 'an exam'} item {item.get('id')}",
        "meta": {
            "draft": True,
            "review": list(dict.fromkeys(review)),
            "model": model_name,
            "converted_from": {"dataset": dataset, "item": item.get("id")},
            "information": information,
        },
    }
    case = validate_case(record)
    if not case.task.options or case.task.answer not in case.task.options:
        raise CaseError("the item has no valid options and answer")
    return case
