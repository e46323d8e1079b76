"""Doctors that drive a consultation: a chat model, and the oracle baselines.

A doctor is asked for its next move given the dialogue so far; a :class:`DoctorMove` holds
either a question or the reason it stopped. A person doctor needs no class: the CLI or GUI
calls :meth:`engine.consult.doctor.dialogue.Consultation.ask` with what the person typed.

:class:`ModelDoctor` uses one of the two prompt styles of the paper: ``long`` (a detailed
instruction: ask as many questions as possible, up to 10, one at a time, then conclude) or
``short`` (one line). Its whole output is the turn (put to the patient and scored); a reply
cut by the length cap (``max_tokens``, 128 by default) loses only its unfinished last
sentence. It stops when a turn holds no question (:func:`conclusion_reason`; a preamble or a
tentative remark before a question does not stop it) or reaches the run's ``max_turns``
safety cap. A question it already asked, word for word, is a turn like any other, as in the
paper (its repetition measure, Table 3, sees it; ``extra["repeat"]`` marks it); with
``stop_on_repeat`` (a setting for small models that loop on one question) it ends the
consultation instead, with the reason ``repeat``.

:class:`OracleDoctor` asks ``Can you tell me about {key}?`` for the case's keys in direct,
reverse or seeded random order: a doctor that knows exactly what there is to ask.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.consult.cases.cases import Case
from engine.consult.text import LANGUAGE_NAMES
from engine.models.protocol import ChatModel
from engine.types import Turn

if TYPE_CHECKING:
    from engine.types import JSONDict

STYLES = ("long", "short")
ORDERS = ("direct", "random", "reverse")

#: The number of questions the long prompt allows (the paper's "up to 10"); the run's
#: ``max_turns`` is a separate safety cap.
PROMPT_QUESTIONS = 10

LONG_PROMPT = """You are an experienced doctor in a consultation with a patient. The patient \
has told you why they came, but what you know about them is not enough to help them yet. \
Ask the patient as many questions as possible, up to {questions}, to collect the medical \
information you need: their symptoms and how they started, other complaints, past \
illnesses, medicines, allergies, habits, family history, and examination and test results. \
Ask one question at a time and wait for the answer; do not repeat a question. When you have \
no more questions, say so and give your conclusion without asking anything. Speak \
{language}."""

SHORT_PROMPT = """You are a doctor. Ask the patient questions, one at a time, to learn \
about their condition; when you have no more questions, give your conclusion. Speak \
{language}."""

ORACLE_TEMPLATES = {
    "en": "Can you tell me about {key}?",
    "fr": "Pouvez-vous me parler de {key} ?",
    "zh": "能告诉我{key}的情况吗？",
}

_CONCLUSION = re.compile(
    r"\b(i have enough information|i've got enough information|that is enough information|"
    r"enough information to|(most|more) likely (diagnosis|cause|answer)|"
    r"(the|my|final|a) diagnosis (is|would be|of)|the answer is|final answer|in conclusion|"
    r"to conclude|my conclusion|i (think|believe|suspect) (that )?(you|it|this) (have|has|is)|"
    r"you (most likely|probably|likely|may|might) (have|be suffering)|"
    r"(it|this) (sounds|seems|looks) like (you|it|this|a|an)|"
    r"i (would|will) (recommend|prescribe|suggest)|no more questions|what you have is|"
    r"j'ai (assez|suffisamment) d'informations|le diagnostic (est|serait))|"
    r"信息足够|诊断(是|为)|我认为(你|您)(患有|得了)|没有(其他|别的|更多)?问题了",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^\s*(can|could|would|will|do|does|did|have|has|are|is|were|was|how|what|when|where|"
    r"which|who|why|tell me|describe|please (tell|describe|let|explain|share|give|list|say)|"
    r"let me know|i(?:'d| would) like to (know|ask)|any|pouvez|pourriez|avez|êtes|est-ce|"
    r"quand|comment|quel|quelle|quels|quelles|décrivez|dites|parlez)\b",
    re.IGNORECASE,
)
_NOT_REQUEST = re.compile(r"^\s*(what (you|i|we)|when you (are|feel|get)|how (sad|sorry))\b", re.I)
_ZH_QUESTION = re.compile(
    r"(吗|呢|么)\s*[。.!！]?$|^(请问|请(您|你)?(告诉|描述|说说|讲讲|谈谈)|能(否|不能)|是否)|"
    r"(有没有|是不是|多久|多长时间|什么时候|哪里|哪儿|怎么样|怎样|几次|多少|什么)"
)
_SENTENCE = re.compile(r"[^.!?？。！]*[.!?？。！]?")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def is_question(sentence: str) -> bool:
    """Whether one sentence asks the patient something: it ends with a question mark, opens
    with a question or request ("Tell me…", "Pouvez-vous…"), or is a Chinese question
    (吗/呢 at the end, 请问, 有没有, 多久…)."""
    sentence = sentence.strip()
    if sentence.endswith(("?", "？")):
        return True
    if _ZH_QUESTION.search(sentence) and not sentence.isascii():
        return not _CONCLUSION.search(sentence)
    return bool(_REQUEST.match(sentence)) and not _NOT_REQUEST.match(sentence)


def first_question(text: str) -> str | None:
    """The first question (or request for information) in ``text``, or None."""
    return next((s for s in split_sentences(text) if is_question(s)), None)


def conclusion_reason(text: str) -> str | None:
    """Why a doctor turn ends the consultation; None when it holds a question.

    The rule: a turn that asks the patient anything goes on, whatever precedes the question
    (a preamble, a tentative remark, a partial conclusion); a turn that asks nothing ends it:
    ``empty`` (nothing said), ``conclusion`` (it states an answer, a diagnosis or that it has
    enough information) or ``no_question`` (anything else).
    """
    if not text.strip():
        return "empty"
    if first_question(text) is not None:
        return None
    return "conclusion" if _CONCLUSION.search(text) else "no_question"


def complete_sentences(text: str) -> str:
    """``text`` without an unfinished last sentence (a reply cut by the length cap); the
    text itself when it has no finished sentence."""
    text = text.strip()
    if not text or re.search(r"[.!?？。！)\"]$", text):
        return text
    cut = re.sub(r"(?<=[.!?？。！])[^.!?？。！]*$", "", text).strip()
    return cut or text


def _normal(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


@dataclass
class DoctorMove:
    """The doctor's next move: a ``question``, or ``stop`` with a ``reason``."""

    question: str | None
    reason: str | None = None
    raw: str = ""
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extra: JSONDict = field(default_factory=dict)

    @property
    def stop(self) -> bool:
        return self.question is None


def history_messages(turns: list[Turn], conclusions: bool = False) -> list[dict[str, str]]:
    """The dialogue as chat messages from the doctor's side (patient = user); the doctor's
    closing words (``conclusion`` turns) only with ``conclusions``."""
    messages = []
    for t in turns:
        kind = (t.get("extra") or {}).get("kind")
        if kind == "conclusion" and not conclusions:
            continue
        role = "assistant" if t["role"] == "doctor" else "user"
        messages.append({"role": role, "content": t["text"]})
    return messages


@dataclass(eq=False)
class ModelDoctor:
    """A chat model acting as the doctor."""

    model: ChatModel | None
    style: str = "long"
    max_turns: int = 10
    max_tokens: int = 128
    seed: int = 0
    temperature: float = 0.0
    stop_on_repeat: bool = False

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"unknown prompt style {self.style!r} (long or short)")

    def system_prompt(self, case: Case) -> str:
        template = LONG_PROMPT if self.style == "long" else SHORT_PROMPT
        language = LANGUAGE_NAMES.get(case.language, "English")
        return template.format(questions=PROMPT_QUESTIONS, language=language)

    def messages(self, case: Case, turns: list[Turn]) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system_prompt(case)}] + history_messages(turns)

    def next(self, case: Case, turns: list[Turn]) -> DoctorMove:
        """The next question for the dialogue ``turns`` (opening included), or a stop."""
        asked = [t["text"] for t in turns if t["role"] == "doctor"]
        if len(asked) >= self.max_turns:
            return DoctorMove(None, "max_turns")
        if self.model is None:
            raise ValueError("a doctor made without a model only writes its prompt")
        started = time.perf_counter()
        g = self.model.chat(
            self.messages(case, turns),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
        )
        latency = round(time.perf_counter() - started, 3)
        text = g.text.strip()
        if getattr(g, "finish_reason", None) in ("length", "truncated"):
            text = complete_sentences(text)
        reason = conclusion_reason(text)
        question = None if reason else text
        extra: JSONDict = {}
        if question is not None and _normal(question) in {_normal(a) for a in asked}:
            if self.stop_on_repeat:
                question, reason = None, "repeat"
            else:
                extra["repeat"] = True
        return DoctorMove(
            question,
            reason,
            raw=g.text.strip(),
            latency_s=latency,
            prompt_tokens=g.prompt_tokens or 0,
            completion_tokens=g.completion_tokens or 0,
            extra=extra,
        )


def oracle_key(key: str) -> str:
    """A key as the oracle says it: ``Vital signs - Blood pressure`` → ``vital signs - blood
    pressure`` (acronyms kept)."""
    words = []
    for word in key.split(" "):
        words.append(word if len(word) > 1 and word.isupper() else word.lower())
    return " ".join(words)


class OracleDoctor:
    """Asks about every key of the case, in ``direct``, ``reverse`` or ``random`` order,
    however many keys there are (a run's ``max_turns`` does not cut it short, so every order
    sees the same facts)."""

    def __init__(self, order: str = "direct", seed: int = 0) -> None:
        if order not in ORDERS:
            raise ValueError(f"unknown oracle order {order!r}")
        self.order = order
        self.seed = seed

    def keys(self, case: Case) -> list[str]:
        """The distinct keys of ``case`` in the order this doctor asks about them."""
        keys = list(dict.fromkeys(case.keys))
        if self.order == "reverse":
            keys.reverse()
        elif self.order == "random":
            random.Random(f"{self.seed}:{case.id}").shuffle(keys)
        return keys

    def questions(self, case: Case) -> list[str]:
        """Every question this doctor will ask for ``case``, one per distinct key."""
        template = ORACLE_TEMPLATES.get(case.language, ORACLE_TEMPLATES["en"])
        return [template.format(key=oracle_key(k)) for k in self.keys(case)]

    def next(self, case: Case, turns: list[Turn]) -> DoctorMove:
        asked = sum(1 for t in turns if t["role"] == "doctor")
        planned = self.questions(case)
        if asked >= len(planned):
            return DoctorMove(None, "all_asked")
        return DoctorMove(planned[asked])
