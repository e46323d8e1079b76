"""Doctors that drive a consultation: a chat model, and the oracle baselines.

A doctor is asked for its next move given the dialogue so far; a :class:`DoctorMove` holds
either a question or the reason it stopped. A person doctor needs no class: the CLI or GUI
calls :meth:`engine.consult.session.Consultation.ask` with what the person typed.

:class:`ModelDoctor` uses one of the two prompt styles of the paper: ``long`` (a detailed
instruction: ask up to N questions, one at a time, conclude when enough is known) or ``short``
(one line). Its output is cut to its first question; it stops when it concludes instead of
asking (:func:`conclusion_reason`), repeats itself, or reaches the turn limit.

:class:`OracleDoctor` asks ``Can you tell me about {key}?`` for the case's keys in direct,
reverse or seeded random order: a doctor that knows exactly what there is to ask.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

from engine.consult.cases import Case
from engine.consult.text import LANGUAGE_NAMES

STYLES = ("long", "short")
ORDERS = ("direct", "random", "reverse")

LONG_PROMPT = """You are an experienced doctor seeing a patient in a consultation. The patient \
has told you why they came, but you do not yet know enough about them to help. Find out what \
you need by asking the patient questions: ask one short question at a time, then wait for the \
answer. You can ask up to {max_turns} questions. Ask about what matters for this complaint \
(history of the symptoms, other symptoms, past illnesses, medicines, habits, examination and \
test results) and do not repeat a question. When you have enough information, ask nothing \
more and say "I have enough information." Speak {language}."""

SHORT_PROMPT = """You are a doctor. Ask the patient one question at a time to learn what you \
need; when you know enough, say "I have enough information." Speak {language}."""

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
    r"(it|this) (sounds|seems|looks) like (you|it|this|a|an)|based on (your|the|what)|"
    r"i (would|will) (recommend|prescribe|suggest)|"
    r"j'ai (assez|suffisamment) d'informations|le diagnostic (est|serait)|"
    r"信息足够|诊断(是|为)|我认为(你|您)(患有|得了))",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^\s*(can|could|would|will|do|does|did|have|has|are|is|were|was|how|what|when|where|"
    r"which|who|why|tell|describe|please|let me know|any|pouvez|avez|êtes|est-ce|quand|"
    r"comment|quel|quelle|décrivez|dites)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?？。！]*[.!?？。！]?")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def first_question(text: str) -> str | None:
    """The first question (or request for information) in ``text``, or None."""
    for sentence in split_sentences(text):
        if sentence.endswith(("?", "？")) or _REQUEST.match(sentence):
            return sentence
    return None


def conclusion_reason(text: str) -> str | None:
    """Why ``text`` ends the questioning (None when it is a question to put to the patient).

    ``empty``: nothing said; ``conclusion``: it states an answer, a diagnosis or that it has
    enough information before asking anything; ``no_question``: it asks nothing.
    """
    if not text.strip():
        return "empty"
    question = first_question(text)
    before = text if question is None else text[: text.find(question)]
    if _CONCLUSION.search(before):
        return "conclusion"
    if question is None:
        return "no_question"
    return None


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
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def stop(self) -> bool:
        return self.question is None


def history_messages(turns: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The dialogue as chat messages from the doctor's side (patient = user)."""
    messages = []
    for t in turns:
        kind = (t.get("extra") or {}).get("kind")
        if kind == "conclusion":
            continue
        role = "assistant" if t["role"] == "doctor" else "user"
        messages.append({"role": role, "content": t["text"]})
    return messages


class ModelDoctor:
    """A chat model acting as the doctor."""

    def __init__(
        self,
        model: Any,
        style: str = "long",
        max_turns: int = 10,
        max_tokens: int = 48,
        seed: int = 0,
    ) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown prompt style {style!r} (long or short)")
        self.model = model
        self.style = style
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.seed = seed

    def system_prompt(self, case: Case) -> str:
        template = LONG_PROMPT if self.style == "long" else SHORT_PROMPT
        language = LANGUAGE_NAMES.get(case.language, "English")
        return template.format(max_turns=self.max_turns, language=language)

    def messages(self, case: Case, turns: list[dict[str, Any]]) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system_prompt(case)}] + history_messages(turns)

    def next(self, case: Case, turns: list[dict[str, Any]]) -> DoctorMove:
        """The next question for the dialogue ``turns`` (opening included), or a stop."""
        asked = [t["text"] for t in turns if t["role"] == "doctor"]
        if len(asked) >= self.max_turns:
            return DoctorMove(None, "max_turns")
        started = time.perf_counter()
        g = self.model.chat(
            self.messages(case, turns),
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=self.seed,
        )
        latency = round(time.perf_counter() - started, 3)
        text = g.text.strip()
        reason = conclusion_reason(text)
        question = None if reason else first_question(text)
        if question is not None and _normal(question) in {_normal(a) for a in asked}:
            question, reason = None, "repeat"
        return DoctorMove(
            question,
            reason,
            raw=text,
            latency_s=latency,
            prompt_tokens=g.prompt_tokens or 0,
            completion_tokens=g.completion_tokens or 0,
        )


def oracle_key(key: str) -> str:
    """A key as the oracle says it: ``Vital signs - Blood pressure`` → ``vital signs - blood
    pressure`` (acronyms kept)."""
    words = []
    for word in key.split(" "):
        words.append(word if len(word) > 1 and word.isupper() else word.lower())
    return " ".join(words)


class OracleDoctor:
    """Asks about every key of the case, in ``direct``, ``reverse`` or ``random`` order."""

    def __init__(self, order: str = "direct", max_turns: int = 10, seed: int = 0) -> None:
        if order not in ORDERS:
            raise ValueError(f"unknown oracle order {order!r}")
        self.order = order
        self.max_turns = max_turns
        self.seed = seed

    def questions(self, case: Case) -> list[str]:
        """Every question this doctor will ask for ``case`` (before the turn limit)."""
        keys = list(dict.fromkeys(case.keys))
        if self.order == "reverse":
            keys.reverse()
        elif self.order == "random":
            random.Random(f"{self.seed}:{case.id}").shuffle(keys)
        template = ORACLE_TEMPLATES.get(case.language, ORACLE_TEMPLATES["en"])
        return [template.format(key=oracle_key(k)) for k in keys][: self.max_turns]

    def next(self, case: Case, turns: list[dict[str, Any]]) -> DoctorMove:
        asked = sum(1 for t in turns if t["role"] == "doctor")
        planned = self.questions(case)
        if asked >= len(planned):
            return DoctorMove(None, "max_turns" if asked >= self.max_turns else "all_asked")
        return DoctorMove(planned[asked])
