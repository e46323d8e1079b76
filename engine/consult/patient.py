"""The simulated patient: honest, strict ("lazy") and colloquial, grounded by construction.

For every question the :class:`~engine.consult.facts.FactSelector` picks the facts it asks
about, and only those reach the patient model, with a system prompt asking for a short answer
in everyday words in the case's language. So the patient

* is honest: it cannot tell what it was not given, and a guard replaces a reply that states
  none of the given facts, carries a number found in none of them (a made-up measurement) or
  is mostly words found nowhere in them by the best-matching fact's value, read out plainly;
* is strict: it sees only what the question asks about, never the rest of M;
* is colloquial: the prompt asks for plain words, first person, one or two sentences.

When no fact matches, the patient says it does not know with a fixed phrase in the case's
language (:data:`engine.consult.text.UNKNOWN_PHRASES`), without calling the model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from engine.consult.cases import Case, Fact
from engine.consult.facts import FactSelector, Match
from engine.consult.metrics import revealed
from engine.consult.text import (
    LANGUAGE_NAMES,
    UNKNOWN_PHRASES,
    content_words,
    first_sentences,
    lay_words,
)

SYSTEM_PROMPT = """You are a patient talking with your doctor. You are not a doctor.
You came in saying: "{opening}"
What you know that answers the doctor's question:
{facts}
Rules: answer only the doctor's question, as the patient, in the first person ("I", "my").
Use plain everyday words, not medical terms. Say only what is in the list above; never add
symptoms, numbers or details. Reply in {language} with one or two short sentences."""

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


@dataclass
class PatientReply:
    """One answer of the patient and how it was produced."""

    text: str
    facts: list[Match] = field(default_factory=list)
    source: str = "model"  # model | unknown (no fact matched) | guard (facts read out)
    raw: str = ""
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def fact_indices(self) -> list[int]:
        return [m.index for m in self.facts]


class Patient:
    """Answers a doctor's questions about one case.

    ``model`` is a :class:`engine.runtime.LocalModel` (chat). ``match`` is the fact-matching
    method (``bm25``, ``embedding`` or ``hybrid``; default hybrid in English, bm25 otherwise).
    """

    def __init__(
        self,
        case: Case,
        model: Any,
        match: str | None = None,
        max_facts: int = 3,
        max_tokens: int = 60,
        seed: int = 0,
    ) -> None:
        self.case = case
        self.model = model
        self.selector = FactSelector(case.facts, case.language, method=match, k=max_facts)
        self.max_tokens = max_tokens
        self.seed = seed

    def facts_for(self, question: str) -> list[Match]:
        """The facts ``question`` asks about (what the patient will be given)."""
        return self.selector.select(question)

    def messages(self, question: str, facts: list[Match]) -> list[dict[str, str]]:
        """The chat sent to the patient model for ``question`` given ``facts``."""
        listed = "\n".join(f"- {m.key}: {m.value}" for m in facts)
        system = SYSTEM_PROMPT.format(
            opening=self.case.initial_request,
            facts=listed,
            language=LANGUAGE_NAMES.get(self.case.language, "English"),
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": question}]

    def unknown(self) -> str:
        return UNKNOWN_PHRASES.get(self.case.language, UNKNOWN_PHRASES["en"])

    def read_out(self, facts: list[Match]) -> str:
        """The best-matching fact's value said plainly (when the model's reply fails the
        guard): only what the question most asked for."""
        values = [m.value.strip().rstrip(".") for m in facts[:1]]
        if self.case.language == "zh":
            return "".join(f"{v}。" for v in values)
        if self.case.language == "en":
            values = [lay_words(v) for v in values]
        return " ".join(f"{v[:1].upper()}{v[1:]}." for v in values)

    def check(self, text: str, question: str, facts: list[Match]) -> str | None:
        """The reply to keep (at most three sentences), or None when it fails the guard.

        A reply passes when it states at least one given fact, carries no number absent from
        the facts, the question and the opening request, and at most half of its content
        words come from none of those.
        """
        text = first_sentences(text.strip().strip('"').strip(), 3)
        if re.search(r"[.!?。！？]", text) and not re.search(r"[.!?。！？)\"]$", text):
            text = re.sub(r"(?<=[.!?。！？])[^.!?。！？]*$", "", text).strip()  # cut off mid-way
        if not text:
            return None
        language = self.case.language
        support = " ".join(
            [question, self.case.initial_request] + [f"{m.key} {m.value}" for m in facts]
        )
        if set(_NUMBER.findall(text)) - set(_NUMBER.findall(support)):
            return None
        if not any(revealed(text, Fact(m.key, m.value), language) for m in facts):
            return None
        words = content_words(text, language)
        known = set(content_words(support, language)) | set(content_words(lay_words(support)))
        if words and sum(w not in known for w in words) / len(words) > 0.5:
            return None
        return text

    def _finish(
        self, question: str, facts: list[Match], raw: str, generation: Any, started: float
    ) -> PatientReply:
        kept = self.check(raw, question, facts)
        return PatientReply(
            text=kept if kept is not None else self.read_out(facts),
            facts=facts,
            source="model" if kept is not None else "guard",
            raw=raw,
            latency_s=round(time.perf_counter() - started, 3),
            prompt_tokens=getattr(generation, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(generation, "completion_tokens", 0) or 0,
        )

    def reply(self, question: str) -> PatientReply:
        """Answer ``question``."""
        started = time.perf_counter()
        facts = self.facts_for(question)
        if not facts:
            return PatientReply(self.unknown(), [], "unknown", latency_s=0.0)
        g = self.model.chat(
            self.messages(question, facts),
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=self.seed,
        )
        return self._finish(question, facts, g.text, g, started)

    def stream(self, question: str) -> PatientStream:
        """Answer ``question`` piece by piece (see :class:`PatientStream`)."""
        return PatientStream(self, question)


class PatientStream:
    """Iterate for the reply's text pieces; ``result`` is the :class:`PatientReply` afterwards.

    The final text can differ from the pieces when the honesty guard replaced the reply
    (``result.source == "guard"``). ``cancel()`` stops the generation.
    """

    def __init__(self, patient: Patient, question: str) -> None:
        self.patient = patient
        self.question = question
        self.result: PatientReply | None = None
        self._stream: Any = None
        self._cancelled = False

    def __iter__(self) -> Iterator[str]:
        started = time.perf_counter()
        p = self.patient
        facts = p.facts_for(self.question)
        if not facts:
            self.result = PatientReply(p.unknown(), [], "unknown")
            yield self.result.text
            return
        self._stream = p.model.stream_chat(
            p.messages(self.question, facts),
            max_tokens=p.max_tokens,
            temperature=0.0,
            seed=p.seed,
        )
        pieces = []
        for piece in self._stream:
            if self._cancelled:
                break
            pieces.append(piece)
            yield piece
        generation = getattr(self._stream, "result", None)
        raw = generation.text if generation is not None else "".join(pieces)
        self.result = p._finish(self.question, facts, raw, generation, started)

    def cancel(self) -> None:
        self._cancelled = True
        if self._stream is not None and hasattr(self._stream, "cancel"):
            self._stream.cancel()
