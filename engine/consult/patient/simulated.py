"""The simulated patient, in two modes (:data:`MODES`).

``paper`` (:class:`PaperPatient`, the default for model evaluation) is the design of the
multi-turn consultation evaluation paper: the patient model gets *all* of the medical
information M, the opening request P0 and the dialogue so far, with persona instructions
for honesty, strictness (answer only what is asked, "lazily") and colloquial speech in the
case's language; what it reveals is then measured (leakage), not prevented.

``grounded`` (:class:`Patient`, for tiny models and for students) is honest and strict by
construction. For every question the :class:`~engine.consult.patient.facts.FactSelector` picks the
facts it asks about, and only those reach the patient model, with a system prompt asking for a short
answer in everyday words in the case's language. So the patient

* is honest: it cannot tell what it was not given, and a guard replaces a reply that states
  none of the given facts, carries a number found in none of them (a made-up measurement) or
  is mostly words found nowhere in them by the best-matching fact's value, read out plainly;
* is strict: it sees only what the question asks about, never the rest of M;
* is colloquial: the prompt asks for plain words, first person, one or two sentences;
* contradicts no fact: each reply is checked against all the case's facts before it is shown
  (:mod:`engine.consult.patient.contradict`: sex, age, durations, measurements, negations); one that
  contradicts a fact is asked again once (the next seed, sampled), then replaced by the fact's
  own words in the patient's voice (:func:`engine.consult.patient.voice.in_first_person`);
* answers every part of a question that asks several things ("How old are you and when did
  it start?", :func:`engine.consult.patient.facts.question_parts`): each part gets its facts and its
  checked answer, and the reply says them in turn.

When no fact matches, the patient says it does not know with a fixed phrase in the case's
language (:data:`engine.consult.text.UNKNOWN_PHRASES`), without calling the model.

In both modes the reply's ``facts`` are the facts the question asks about (the selector's
matches): in ``grounded`` mode all the patient was given, in ``paper`` mode what leakage is
measured against (the patient was given everything).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.consult.cases.cases import Case, Fact
from engine.consult.patient.contradict import contradictions, durations
from engine.consult.patient.facts import FactSelector, Match, question_parts
from engine.consult.patient.voice import in_first_person
from engine.consult.scoring.audit import off_voice
from engine.consult.scoring.metrics import revealed
from engine.consult.text import (
    LANGUAGE_NAMES,
    UNKNOWN_PHRASES,
    content_words,
    first_sentences,
    lay_words,
)
from engine.models.protocol import ChatModel

if TYPE_CHECKING:
    from engine.models.protocol import Generation, TextStream

#: A model call: the chat, the seed and the temperature give the text and its generation.
Generate = Callable[[list[dict[str, str]], int, float], tuple[str, "Generation | None"]]
#: The temperature of the second try of a reply that contradicted a fact (at least).
RETRY_TEMPERATURE = 0.7
#: How a reply was made, the least sure last: said as the model said it, unknown (no fact),
#: said at the second try, the facts read out.
SOURCES = ("unknown", "model", "retry", "guard")

SYSTEM_PROMPT = """You are a patient talking with your doctor. You are not a doctor.
You came in saying: "{opening}"
What you know that answers the doctor's question:
{facts}
Rules: answer only the doctor's question, as the patient, in the first person ("I", "my").
Use plain everyday words, not medical terms. Say only what is in the list above; never add
symptoms, numbers or details. Reply in {language} with one or two short sentences."""

MODES = ("paper", "grounded")

PAPER_PROMPTS = {
    "en": """You are a patient (or the parent of a child patient) seeing a doctor. \
Below is your own medical record: everything you know about your health.
You came in saying: "{opening}"
Your medical record:
{facts}
Play the patient in this conversation:
- Be honest: say only what is true according to your record. If the doctor asks about \
something that is not in it, say you don't know or haven't noticed it. Never make up \
symptoms, numbers or results.
- Be strict: answer only exactly what the doctor asks, lazily and briefly. Do not volunteer \
anything else from your record.
- Speak colloquially like an ordinary person, in the first person, without medical terms, \
in one to three short sentences.
Reply in English.""",
    "fr": """Vous êtes un patient (ou le parent d'un enfant malade) en consultation. Voici \
votre dossier médical : tout ce que vous savez de votre santé.
Vous êtes venu en disant : « {opening} »
Votre dossier :
{facts}
Jouez le patient :
- Soyez honnête : ne dites que ce qui est vrai d'après votre dossier. Si le médecin vous \
interroge sur quelque chose qui n'y est pas, dites que vous ne savez pas. N'inventez jamais \
de symptômes, de chiffres ni de résultats.
- Soyez strict : répondez uniquement à ce que le médecin demande, brièvement. Ne donnez \
rien d'autre de votre dossier.
- Parlez simplement, comme tout le monde, à la première personne, sans termes médicaux, en \
une à trois phrases courtes.
Répondez en français.""",
    "zh": """你是一位来看医生的病人（或患儿的家长）。下面是你自己的病历，也就是你所知道的全部健康情况。
你一进来说的是：“{opening}”
你的病历：
{facts}
请扮演病人：
- 诚实：只说病历里真实的内容。医生问到病历里没有的，就说不知道或没注意到。绝不编造症状、数字或检查结果。
- 严格：只回答医生问的问题，简短、被动地回答，不要主动说出病历里的其他内容。
- 口语化：像普通人一样用第一人称说话，不用医学术语，一到三句短句。
请用中文回答。""",
}

_WHEN = re.compile(r"\b(?:when|how long|since when|start|started|begin|began|onset)\b", re.I)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_END = re.compile(r"[.!?。！？)\"]$")
_UNFINISHED = re.compile(r"(?<=[.!?。！？])[^.!?。！？]*$")


def whole_sentences(text: str, most: int = 3) -> str:
    """The first ``most`` sentences of a reply, quotes stripped; a last sentence cut off
    mid-way (no closing mark while an earlier one has one) is dropped."""
    text = first_sentences(text.strip().strip('"').strip(), most)
    if re.search(r"[.!?。！？]", text) and not _END.search(text):
        text = _UNFINISHED.sub("", text).strip()
    return text


@dataclass
class PatientReply:
    """One answer of the patient and how it was produced."""

    text: str
    facts: list[Match] = field(default_factory=list)
    source: str = "model"  # model | unknown (no fact) | retry (second try) | guard (read out)
    raw: str = ""
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The contradictions found in replies that were not shown (as dicts).
    caught: list[dict[str, object]] = field(default_factory=list)
    #: The parts of a question that asked several things: question, facts, source, text.
    parts: list[dict[str, object]] = field(default_factory=list)

    @property
    def fact_indices(self) -> list[int]:
        return [m.index for m in self.facts]


class Patient:
    """The ``grounded`` patient: answers a doctor's questions about one case from the facts
    each question asks about.

    ``model`` is a :class:`~engine.models.protocol.ChatModel`. ``match`` is the fact-matching
    method (``bm25``, ``embedding`` or ``hybrid``; default hybrid in English, bm25 otherwise).
    ``check_facts`` false leaves out the contradiction check and the split of a question into
    its parts (the patient as it was before them, for measuring what they change).
    """

    mode = "grounded"
    #: The reply's length bound when none is given.
    default_max_tokens = 60

    def __init__(
        self,
        case: Case,
        model: ChatModel | None,
        match: str | None = None,
        max_facts: int = 3,
        max_tokens: int | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        check_facts: bool = True,
    ) -> None:
        self.case = case
        self.check_facts = check_facts
        self.model = model
        self.temperature = temperature
        self.selector = FactSelector(case.facts, case.language, method=match, k=max_facts)
        self.max_tokens = self.default_max_tokens if max_tokens is None else max_tokens
        self.seed = seed
        self.history: list[tuple[str, str]] = []  # (question, reply): the paper mode's context

    def chat_model(self) -> ChatModel:
        """The model the patient replies with (one made without a model has none)."""
        if self.model is None:
            raise ValueError("this patient has no model to reply with")
        return self.model

    def facts_for(self, question: str) -> list[Match]:
        """The facts ``question`` asks about (what the patient will be given); a question
        about when or how long gets, first, the best fact on its words that gives a duration
        when none of the others does ("When did the double vision start?": the history's
        "1-month history of double vision", not only "Double vision")."""
        found = self.selector.select(question)
        if not self.check_facts or not _WHEN.search(question):
            return found
        if any(durations(m.value) for m in found):
            return found
        scores = self.selector.bm25_scores(question)
        timed = [i for i, f in enumerate(self.case.facts) if scores[i] > 0 and durations(f.value)]
        if not timed:
            return found
        i = max(timed, key=lambda i: float(scores[i]))
        fact = self.case.facts[i]
        best = Match(i, fact.key, fact.value, round(float(scores[i]), 4), float(scores[i]), None)
        return [best, *(m for m in found if m.index != i)][: self.selector.k]

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
        guard): only what the question most asked for, in the patient's voice."""
        language = self.case.language
        opening = self.case.initial_request
        values = [in_first_person(Fact(m.key, m.value), opening, language) for m in facts[:1]]
        values = [v.strip().rstrip(".") for v in values]
        if language == "zh":
            return "".join(f"{v}。" for v in values)
        if language == "en":
            values = [lay_words(v) for v in values]
        return " ".join(f"{v[:1].upper()}{v[1:]}." for v in values)

    def check(self, text: str, question: str, facts: list[Match]) -> str | None:
        """The reply to keep (at most three sentences), or None when it fails the guard.

        A reply passes when it is in a patient's voice (not an assistant's or the doctor's:
        :func:`engine.consult.scoring.audit.off_voice`), states at least one given fact, carries no
        number absent from the facts, the question and the opening request, and at most half
        of its content words come from none of those.
        """
        text = whole_sentences(text)
        if not text or off_voice(text):  # not a patient's words: an assistant's, a doctor's
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
        self,
        question: str,
        facts: list[Match],
        raw: str,
        generation: Generation | None,
        started: float,
    ) -> PatientReply:
        text, source = self.keep(raw, question, facts)
        return PatientReply(
            text=text,
            facts=facts,
            source=source,
            raw=raw,
            latency_s=round(time.perf_counter() - started, 3),
            prompt_tokens=getattr(generation, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(generation, "completion_tokens", 0) or 0,
        )

    def keep(self, raw: str, question: str, facts: list[Match]) -> tuple[str, str]:
        """The text to say for the model's ``raw`` reply and its source: the reply when it
        passes the guard (:meth:`check`), else the facts read out."""
        kept = self.check(raw, question, facts)
        return (self.read_out(facts), "guard") if kept is None else (kept, "model")

    def prepare(self, question: str) -> tuple[list[Match], list[dict[str, str]] | None]:
        """The facts ``question`` asks about and the chat for the model (None: no model
        call, the patient does not know)."""
        facts = self.facts_for(question)
        return facts, (self.messages(question, facts) if facts else None)

    def reply(self, question: str) -> PatientReply:
        """Answer ``question``."""
        if not self.check_facts:
            started = time.perf_counter()
            facts, messages = self.prepare(question)
            if messages is None:
                return PatientReply(self.unknown(), facts, "unknown", latency_s=0.0)
            g = self.chat_model().chat(
                messages, max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed
            )
            return self._finish(question, facts, g.text, g, started)
        return self.answer(question, self._chat)

    def _chat(
        self, messages: list[dict[str, str]], seed: int, temperature: float
    ) -> tuple[str, Generation | None]:
        g = self.chat_model().chat(
            messages, max_tokens=self.max_tokens, temperature=temperature, seed=seed
        )
        return g.text, g

    def contradictions(self, text: str, question: str) -> list[dict[str, object]]:
        """What ``text`` (a reply to ``question``) contradicts among all the case's facts."""
        found = contradictions(text, self.case.facts, self.case.language, question)
        return [c.to_dict() for c in found]

    def answer(self, question: str, generate: Generate) -> PatientReply:
        """Answer ``question`` part by part, each part's reply checked against the case's
        facts; ``generate`` calls the model."""
        started = time.perf_counter()
        parts = question_parts(question, self.case.language) or [question]
        replies = [self._answer_part(part, generate) for part in parts]
        if len(replies) == 1:
            reply = replies[0]
        else:
            joiner = "" if self.case.language == "zh" else " "
            facts = list({m.index: m for r in replies for m in r.facts}.values())
            reply = PatientReply(
                joiner.join(r.text for r in replies),
                facts,
                max((r.source for r in replies), key=SOURCES.index),
                raw=joiner.join(r.raw for r in replies if r.raw),
                prompt_tokens=sum(r.prompt_tokens for r in replies),
                completion_tokens=sum(r.completion_tokens for r in replies),
                caught=[c for r in replies for c in r.caught],
                parts=[
                    {"question": p, "facts": r.fact_indices, "source": r.source, "text": r.text}
                    for p, r in zip(parts, replies, strict=True)
                ],
            )
        reply.latency_s = round(time.perf_counter() - started, 3)
        return reply

    def _answer_part(self, question: str, generate: Generate) -> PatientReply:
        """One question's reply: the model's when it passes the guard and contradicts no
        fact, else the model's second try (the next seed, sampled) when that one does, else
        the best fact read out."""
        facts, messages = self.prepare(question)
        if messages is None:
            return PatientReply(self.unknown(), facts, "unknown")
        caught: list[dict[str, object]] = []
        tries = ((self.seed, self.temperature, "model"),
                 (self.seed + 1, max(self.temperature, RETRY_TEMPERATURE), "retry"))  # fmt: skip
        raws, prompt_tokens, completion_tokens = [], 0, 0
        for seed, temperature, source in tries:
            raw, g = generate(messages, seed, temperature)
            raws.append(raw)
            prompt_tokens += getattr(g, "prompt_tokens", 0) or 0
            completion_tokens += getattr(g, "completion_tokens", 0) or 0
            text = self.check(raw, question, facts)
            if text is None:  # off the facts: read them out
                break
            found = self.contradictions(text, question)
            if not found:
                return PatientReply(text, facts, source, raw, 0.0, prompt_tokens,
                                    completion_tokens, caught)  # fmt: skip
            caught += found
        return PatientReply(self.read_out(facts), facts, "guard", raws[-1], 0.0, prompt_tokens,
                            completion_tokens, caught)  # fmt: skip

    def stream(self, question: str) -> PatientStream:
        """Answer ``question`` piece by piece (see :class:`PatientStream`)."""
        return PatientStream(self, question)


class PaperPatient(Patient):
    """The paper's patient: the model gets all of M, P0 and the dialogue so far, with the
    persona instructions of :data:`PAPER_PROMPTS`; nothing is filtered or replaced (a reply
    cut off mid-sentence loses its unfinished sentence). The facts the question asks about
    (the selector's matches) are recorded for the leakage measure only."""

    mode = "paper"
    default_max_tokens = 64

    def __init__(self, case: Case, model: ChatModel | None, **options: object) -> None:
        super().__init__(case, model, **{**options, "check_facts": False})  # type: ignore[arg-type]

    def system_prompt(self) -> str:
        template = PAPER_PROMPTS.get(self.case.language, PAPER_PROMPTS["en"])
        listed = "\n".join(f"- {f.key}: {f.value}" for f in self.case.facts)
        return template.format(opening=self.case.initial_request, facts=listed)

    def messages(self, question: str, facts: list[Match] | None = None) -> list[dict[str, str]]:
        """The chat sent to the patient model: persona and M, the dialogue so far (the
        doctor as user, the patient as assistant, P0 first), then ``question``."""
        out = [
            {"role": "system", "content": self.system_prompt()},
            {"role": "assistant", "content": self.case.initial_request},
        ]
        for asked, said in self.history:
            out += [{"role": "user", "content": asked}, {"role": "assistant", "content": said}]
        return out + [{"role": "user", "content": question}]

    def prepare(self, question: str) -> tuple[list[Match], list[dict[str, str]] | None]:
        return self.facts_for(question), self.messages(question)

    def keep(self, raw: str, question: str, facts: list[Match]) -> tuple[str, str]:
        """The reply as said (whole sentences; the unknown phrase when nothing is left),
        remembered as the dialogue's next turn."""
        text = whole_sentences(raw)
        source = "model" if text else "unknown"
        text = text or self.unknown()
        self.history.append((question, text))
        return text, source


def make_patient(
    case: Case,
    model: ChatModel | None,
    mode: str = "paper",
    match: str | None = None,
    seed: int = 0,
    temperature: float = 0.0,
) -> Patient:
    """The patient of ``mode`` (:data:`MODES`) for ``case``, sampling its replies at
    ``temperature`` with ``seed`` (0: greedy)."""
    if mode == "paper":
        return PaperPatient(case, model, match=match, seed=seed, temperature=temperature)
    if mode == "grounded":
        return Patient(case, model, match=match, seed=seed, temperature=temperature)
    raise ValueError(f"unknown patient mode {mode!r} (paper or grounded)")


class PatientStream:
    """Iterate for the reply's text pieces; ``result`` is the :class:`PatientReply` afterwards.

    A grounded patient that checks its replies gives one piece, the reply it checked (a
    reply is shown only once it is known to contradict no fact); the paper's patient gives
    the model's pieces as they come, and its final text can differ from them when a cut-off
    sentence was dropped. ``cancel()`` stops the generation.
    """

    def __init__(self, patient: Patient, question: str) -> None:
        self.patient = patient
        self.question = question
        self.result: PatientReply | None = None
        self._stream: TextStream | None = None
        self._cancelled = False

    def __iter__(self) -> Iterator[str]:
        p = self.patient
        if p.check_facts:
            self.result = p.answer(self.question, self._generate)
            yield self.result.text
            return
        started = time.perf_counter()
        facts, messages = p.prepare(self.question)
        if messages is None:
            self.result = PatientReply(p.unknown(), facts, "unknown")
            yield self.result.text
            return
        self._stream = p.chat_model().stream_chat(
            messages,
            max_tokens=p.max_tokens,
            temperature=p.temperature,
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

    def _generate(
        self, messages: list[dict[str, str]], seed: int, temperature: float
    ) -> tuple[str, Generation | None]:
        """The model's reply, read as it streams so that :meth:`cancel` can stop it (nothing
        more is generated after a cancel)."""
        if self._cancelled:
            return "", None
        p = self.patient
        self._stream = p.chat_model().stream_chat(
            messages, max_tokens=p.max_tokens, temperature=temperature, seed=seed
        )
        pieces = []
        for piece in self._stream:
            if self._cancelled:
                break
            pieces.append(piece)
        generation = getattr(self._stream, "result", None)
        return (generation.text if generation is not None else "".join(pieces)), generation

    def cancel(self) -> None:
        self._cancelled = True
        if self._stream is not None and hasattr(self._stream, "cancel"):
            self._stream.cancel()
