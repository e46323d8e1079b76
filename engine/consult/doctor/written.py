"""Golden dialogues written by a model, as the consultation paper wrote its own (§4.2): a
writer model (any chat model; a served one comes closest to the paper's ChatGPT) writes the
doctor's question for each key of the case and the doctor's closing analysis.

Every question is checked before it is asked (:func:`written_question`): one question
ending with a question mark, that names the key's subject (its words, or the record words a
lay question stands for) and gives none of the value away (none of its numbers, not half of
its own words). A question that fails is replaced by the oracle's template question
(``Can you tell me about {key}?``), and the turn records why (``fallback``). The closing
(:func:`written_analysis`) is a short analysis that cites facts the patient told, asks
nothing, names no number the patient did not say and no other option of the task; the
diagnosis after it is always the case's own, in the template's words
(:func:`engine.consult.report.tables.closing_words`). A closing that fails is the template's.

Each doctor turn's ``extra`` says who wrote it (``writer``: ``written`` or ``template``).

>>> doctor = WrittenDoctor(OracleDoctor("direct"), writer_model)  # doctest: +SKIP
>>> doctor.next(case, turns).question                               # doctest: +SKIP
'How old are you?'
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.consult.cases.draft import sentences
from engine.consult.doctor.doctors import (
    DoctorMove,
    OracleDoctor,
    complete_sentences,
    is_question,
    oracle_key,
)
from engine.consult.report.tables import closing_words
from engine.consult.text import LANGUAGE_NAMES, content_words, expand_question

if TYPE_CHECKING:
    from engine.consult.cases.cases import Case
    from engine.models.protocol import ChatModel
    from engine.types import JSONDict, Turn

QUESTION_PROMPT = """You are a doctor in a consultation. The patient said: "{opening}"
Write the one question you ask the patient now to learn about their {key}. Ask it in \
plain words, in {language}, and do not suggest an answer. For example, to learn about \
their medications you might ask: "Which medicines do you take?"
Reply with the question only."""

CLOSING_PROMPT = """You are a doctor ending a consultation. The patient told you:
{told}
The diagnosis is {diagnosis}.
Write two or three sentences to the patient that explain which of the things they told you \
point to this diagnosis. Speak {language}. Do not name the diagnosis and do not ask \
anything. Reply with the explanation only."""

WRITTEN, TEMPLATE = "written", "template"
QUESTION_TOKENS = 48
CLOSING_TOKENS = 160
MAX_QUESTION_WORDS = 40
MAX_ANALYSIS_WORDS = 120

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:doctor|dr|question|q|answer|response|analysis)\s*"
                    r"(?:\*\*)?\s*[:：]\s*", re.IGNORECASE)  # fmt: skip
_ABOUT_PATIENT = re.compile(r"\b(?:the|this) patient\b|\ble patient|\bla patiente|患者", re.I)
_QUOTES = "\"'“”‘’«» `*"


def _clean(text: str) -> str:
    """A model's reply without a label (``Doctor:``), quotes or an unfinished sentence."""
    text = text.strip()
    text = _LABEL.sub("", text).strip().strip(_QUOTES).strip()
    return complete_sentences(text)


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def _mentions(key_words: set[str], words: set[str]) -> bool:
    """Whether a word of ``words`` is one of the key's (stems, or the same first five letters)."""
    return any(w == k or (len(w) >= 5 and len(k) >= 5 and w[:5] == k[:5])
               for w in words for k in key_words)  # fmt: skip


def written_question(
    text: str, key: str, value: str, language: str = "en"
) -> tuple[str | None, str]:
    """The model's question for ``key`` when it passes the check, else None; with the reason
    it failed (empty when it passed)."""
    question = _clean(text.strip().splitlines()[0] if text.strip() else "")
    if not question:
        return None, "empty"
    parts = sentences(question)
    if len(parts) != 1 or not question.endswith(("?", "？")):
        return None, "not one question ending with a question mark"
    if len(question.split()) > MAX_QUESTION_WORDS:
        return None, "too long"
    key_words = set(content_words(key, language))
    value_words = set(content_words(value, language)) - key_words
    given = value_words & set(content_words(question, language))
    if _numbers(value) & _numbers(question) or (given and 2 * len(given) >= len(value_words)):
        return None, "gives the value away"
    if key_words and not _mentions(key_words, set(expand_question(question, language))):
        return None, "does not name the key's subject"
    return question, ""


def told_text(turns: list[Turn]) -> list[str]:
    """What the patient said in answer to the doctor's questions."""
    return [t["text"] for t in turns if t["role"] == "patient" and t["turn"] > 0]


def _diagnosis(case: Case) -> str:
    task = case.task
    return task.options.get(task.answer, "") if task.kind == "mcq" else task.diagnosis


def written_analysis(text: str, case: Case, told: list[str]) -> tuple[str | None, str]:
    """The model's closing analysis when it passes the check, else None; with the reason it
    failed. It must speak to the patient, ask nothing, say no sentence twice, cite a fact the
    patient told (two of its content words, or all of a shorter one), and name no number the
    patient did not say and no other option."""
    analysis = " ".join(_clean(text).split())
    language = case.language
    if not analysis:
        return None, "empty"
    if len(analysis.split()) > MAX_ANALYSIS_WORDS:
        return None, "too long"
    parts = sentences(analysis)
    if any(is_question(s) for s in parts):
        return None, "asks a question"
    if len({" ".join(content_words(p, language)) for p in parts}) < len(parts):
        return None, "repeats itself"
    if _ABOUT_PATIENT.search(analysis):
        return None, "speaks of the patient instead of to them"
    said = " ".join(told)
    if _numbers(analysis) - _numbers(said):
        return None, "names a number the patient did not tell"
    words = set(content_words(analysis, language))
    right = _diagnosis(case)
    for letter, option in case.task.options.items():
        option_words = set(content_words(option, language)) - set(content_words(right, language))
        if letter != case.task.answer and option_words and option_words <= words:
            return None, "names another diagnosis"
    cited = [
        reply
        for reply in told
        if (have := set(content_words(reply, language)) & words)
        and len(have) >= min(2, len(set(content_words(reply, language))))
    ]
    if not cited:
        return None, "cites no fact the patient told"
    return analysis, ""


@dataclass(eq=False)
class WrittenDoctor:
    """The oracle's consultation (every key, in the oracle's order) with each question and
    the closing written by ``writer`` and checked; the template where a check fails."""

    oracle: OracleDoctor
    writer: ChatModel
    seed: int = 0
    temperature: float = 0.0

    def _write(self, prompt: str, max_tokens: int) -> tuple[str, JSONDict]:
        started = time.perf_counter()
        g = self.writer.chat([{"role": "user", "content": prompt}], max_tokens=max_tokens,
                             temperature=self.temperature, seed=self.seed)  # fmt: skip
        cost = {"latency_s": round(time.perf_counter() - started, 3),
                "prompt_tokens": g.prompt_tokens or 0, "completion_tokens": g.completion_tokens or 0}  # fmt: skip
        return g.text.strip(), cost

    def next(self, case: Case, turns: list[Turn]) -> DoctorMove:
        """The next key's question, or the closing once every key was asked."""
        keys = self.oracle.keys(case)
        asked = sum(1 for t in turns if t["role"] == "doctor")
        if asked >= len(keys):
            return self.closing(case, turns)
        key = keys[asked]
        value = " ".join(f.value for f in case.facts if f.key == key)
        language = LANGUAGE_NAMES.get(case.language, "English")
        prompt = QUESTION_PROMPT.format(opening=case.initial_request, key=oracle_key(key),
                                        language=language)  # fmt: skip
        raw, cost = self._write(prompt, QUESTION_TOKENS)
        question, reason = written_question(raw, key, value, case.language)
        extra: JSONDict = {"writer": WRITTEN}
        if question is None:
            question = self.oracle.questions(case)[asked]
            extra = {"writer": TEMPLATE, "fallback": reason}
        return DoctorMove(question, raw=raw, latency_s=cost["latency_s"],
                          prompt_tokens=cost["prompt_tokens"],
                          completion_tokens=cost["completion_tokens"], extra=extra)  # fmt: skip

    def closing(self, case: Case, turns: list[Turn]) -> DoctorMove:
        """The closing words: the written analysis and the case's diagnosis, or the template's."""
        template = closing_words(case, None)
        told = told_text(turns)
        replies = {t["turn"]: t["text"] for t in turns if t["role"] == "patient"}
        lines = [f"- {t['text']} {replies.get(t['turn'], '')}".rstrip()
                 for t in turns if t["role"] == "doctor"]  # fmt: skip
        prompt = CLOSING_PROMPT.format(told="\n".join(lines), diagnosis=_diagnosis(case),
                                       language=LANGUAGE_NAMES.get(case.language, "English"))  # fmt: skip
        raw, cost = self._write(prompt, CLOSING_TOKENS)
        analysis, reason = written_analysis(raw, case, told)
        extra: JSONDict = {"writer": WRITTEN, "analysis": analysis, "raw": raw, **cost}
        text = f"{analysis} {template}" if analysis else template
        if analysis is None:
            extra = {"writer": TEMPLATE, "fallback": reason, "raw": raw, **cost}
        return DoctorMove(None, "all_asked", raw=text, extra=extra)
