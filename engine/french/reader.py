"""The reader: a local model answers a FrenchMedMCQA question, given retrieved passages or none.

Two methods:

* ``generate``: the model writes its answer ("A + D") and :func:`parse_letters` reads the
  letters out of free French text; when it finds none (small models often copy an option
  instead of naming it), :func:`match_option_texts` picks the options whose text is quoted.
* ``logprob``: each option is judged on its own. For option X the model sees the passages, the
  question and "Proposition X : …  Cette proposition est-elle exacte ?", and we read the
  probabilities of its next word being *oui* or *non* (both capitalisations summed),
  normalised to ``P(oui) / (P(oui) + P(non))``. Options at or above ``threshold`` (default 0.5)
  are selected; when none is, the single most probable one is, since every question has at
  least one exact option.

  Why per-option yes/no rather than one distribution over the letters A–E: questions have 1 to
  5 exact options, so a distribution over single letters says which option is *most* likely but
  not *how many* are exact, and would need a second, arbitrary cut-off on a distribution that
  must sum to one. Asking about each option independently matches the task (each proposition is
  true or false on its own), yields a calibrated-looking probability per option that a fixed
  threshold can cut, and needs no generation, so tiny models that ramble or never write a
  letter still give an answer. Normalising over oui/non removes the probability mass the model
  puts on other words. The shared prefix (passages and question) comes first in every option
  prompt, so the model's prompt cache serves all five options.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.core.no_answer import cut_off, listed_letters
from engine.french import prompts
from engine.french.dataset import LETTERS
from engine.models.protocol import ChatModel

if TYPE_CHECKING:
    from collections.abc import Iterable

    from engine.french.items import FrenchQuestion
    from engine.types import JSONDict

METHODS = ("generate", "logprob")
THRESHOLD = 0.5
MAX_TOKENS = 24

_SEPARATOR = r"(?:\s*(?:[+,;/&|]|-(?!\w)|\bet\b|\band\b|\bou\b)\s*|\s+)"
_LETTER = r"[\(\[]?([A-Ea-e])(?![\w'’])[\)\]\.]?"
_LEADING = re.compile(rf"\s*(?:{_SEPARATOR})?{_LETTER}", re.IGNORECASE)
_COMPACT = re.compile(r"[\sa-eA-E+,;/&|.()\[\]:-]+")
_MARKER = re.compile(
    r"r[ée]ponses?(?:\s*\(s\))?(?:\s+(?:exactes?|correctes?|justes?|bonnes?|vraies?)(?:\s*\(s\))?)?"
    r"\s*(?:est|sont|:|=)\s*(?:la|les|celle|celles)?\s*(?:propositions?|options?|lettres?)?\s*:?",
    re.IGNORECASE,
)
_UPPER = re.compile(r"(?<![\w'’])([A-E])(?![\w'’])")


def _leading_letters(text: str) -> list[str]:
    letters: list[str] = []
    pos = 0
    while True:
        m = _LEADING.match(text, pos)
        if m is None:
            return letters
        letters.append(m.group(1).lower())
        pos = m.end()


def parse_letters(text: str) -> list[str]:
    """The answer letters in a free-text French answer, sorted, lower case.

    >>> [parse_letters(t) for t in ["A + D", "ad", "A,D", "Réponses : B et C", "", "(a) (e)"]]
    [['a', 'd'], ['a', 'd'], ['a', 'd'], ['b', 'c'], [], ['a', 'e']]
    >>> parse_letters("La bonne réponse est la proposition C, car l'acide...")
    ['c']
    >>> parse_letters("Les réponses exactes sont A, C et E.")
    ['a', 'c', 'e']

    Tried in turn: the whole text is only letters and separators (``ad``, ``A, D``, ``a et d``);
    the letters right after "réponse(s) … :/est/sont"; the letters the text starts with; the
    standalone capitals A–E of the first line that has any. Nothing found gives ``[]``.
    """
    text = text.replace("*", " ").replace("\u00a0", " ").strip()
    if not text:
        return []
    return _stated(text) or sorted(set(_leading_letters(text))) or _first_line_capitals(text)


def _stated(text: str) -> list[str]:
    """The letters a reply states: it is only letters and separators, or they follow
    "réponse(s) … :/est/sont"."""
    without_words = re.sub(r"\b(?:et|and|ou)\b", " ", text, flags=re.IGNORECASE)
    if _COMPACT.fullmatch(without_words):
        return sorted(set(re.findall(r"[a-e]", without_words.lower())))
    for m in _MARKER.finditer(text):
        letters = _leading_letters(text[m.end() :].split("\n", 1)[0].lstrip(" \"«“'"))
        if letters:
            return sorted(set(letters))
    return []


def _first_line_capitals(text: str) -> list[str]:
    """The standalone capitals A–E of the first line that has any."""
    for line in text.splitlines():
        found = _UPPER.findall(line)
        if found:
            return sorted({c.lower() for c in found})
    return []


@dataclass(frozen=True)
class Reading:
    """What a generated reply answers: its ``letters`` (sorted, lower case), how they were
    read (``letters``, ``option_text`` or ``nothing``) and, without any, why
    (``reason``, one of :data:`engine.core.no_answer.REASONS`)."""

    letters: list[str]
    how: str
    reason: str | None = None


# A reply opening with a letter past the five options ("F", "G.").
_BEYOND = re.compile(r"^\s*[\(\[]?[F-H](?![\w'’])")


# A line opening with a number: "1. …", "2) …".
_NUMBERED = re.compile(r"^[ \t]*(\d)[.)][ \t]", re.MULTILINE)


def _copied_list(letters: list[str], text: str) -> bool:
    """Whether the options a reply lists, one per line (``letters``, in their order), copy
    the question's list: two or more in a row (``C. …\\nD. …``: the list copied on from where
    the prompt left it) or any past E, or, with no letter, lines numbered 1, 2… (the list
    copied with numbers). Others (``A. …\\nD. …``) are the options it chose."""
    listed = [ord(c) for c in letters] or [ord("A") + int(n) - 1 for n in _NUMBERED.findall(text)]
    if len(listed) < 2 or min(listed) < ord("A"):
        return False
    in_a_row = all(b == a + 1 for a, b in zip(listed, listed[1:], strict=False))
    return in_a_row or max(listed) > ord("E")


def read_answer(text: str, item: FrenchQuestion, finish_reason: str | None = None) -> Reading:
    """The options a generated reply chooses (:class:`Reading`), by the rules every
    extractor follows (:mod:`engine.core.no_answer`): letters it states (only letters, or after
    "réponse(s) :"); none when it copies the option list (``echo``) or names a letter past E
    (``out_of_range``); the options it lists, or the letters it opens with; the capitals of
    its first line that has any (not in a reply the token limit cut); the options whose whole
    text it quotes (:func:`match_option_texts`); else none (``cut_off`` when the token limit
    cut it).

    >>> item = {"answers": {"a": "Le foie", "b": "Le rein", "c": "x", "d": "y", "e": "z"}}
    >>> read_answer("A + D", item), read_answer("C. x\\nD. y\\nE. z", item).reason
    (Reading(letters=['a', 'd'], how='letters', reason=None), 'echo')
    """
    text = text.replace("*", " ").replace("\u00a0", " ").strip()
    if not text:
        return Reading([], "nothing", "empty")
    letters = _stated(text)
    if letters:
        return Reading(letters, "letters")
    listed = listed_letters(text)
    if _copied_list(listed, text):
        return Reading([], "nothing", "echo")
    if _BEYOND.match(text):
        return Reading([], "nothing", "out_of_range")
    letters = sorted({c.lower() for c in listed} if len(listed) > 1 else _leading_letters(text))
    if letters:
        return Reading(letters, "letters")
    cut = cut_off(finish_reason)
    letters = [] if cut else _first_line_capitals(text)  # capitals of a cut sentence: no answer
    if letters:
        return Reading(letters, "letters")
    letters = match_option_texts(text, item)
    if letters:
        return Reading(letters, "option_text")
    return Reading([], "nothing", "cut_off" if cut else "no_letter")


def _normalise(text: str) -> str:
    from engine.french.analyser import fold_accents

    return " ".join(re.findall(r"\w+", fold_accents(text.lower())))


def match_option_texts(response: str, item: FrenchQuestion) -> list[str]:
    """Letters of the options whose whole text the response quotes (case, accents and
    punctuation ignored): the fallback when a model answers with option texts, not letters.

    >>> item = {"answers": {"a": "Le foie", "b": "Le rein", "c": "x", "d": "y", "e": "z"}}
    >>> match_option_texts("C'est le rein, évidemment.", item)
    ['b']
    """
    said = f" {_normalise(response)} "
    found = []
    for letter in LETTERS:
        option = _normalise(item["answers"][letter])
        if len(option) >= 3 and f" {option} " in said:
            found.append(letter)
    return found


def format_letters(letters: Iterable[str]) -> str:
    """``["a", "d"]`` → ``"A + D"``."""
    return " + ".join(c.upper() for c in sorted(letters))


def select_options(probabilities: dict[str, float], threshold: float = THRESHOLD) -> list[str]:
    """Letters whose probability reaches ``threshold``; the best one when none does.

    >>> select_options({"a": 0.7, "b": 0.2, "c": 0.5, "d": 0.1, "e": 0.4})
    ['a', 'c']
    >>> select_options({"a": 0.3, "b": 0.2, "c": 0.1, "d": 0.1, "e": 0.4})
    ['e']
    """
    chosen = [c for c in LETTERS if probabilities.get(c, 0.0) >= threshold]
    if not chosen:
        chosen = [max(LETTERS, key=lambda c: (probabilities.get(c, 0.0), -ord(c)))]
    return chosen


@dataclass
class ReaderAnswer:
    """What the reader said about one question."""

    letters: list[str]
    response: str
    probabilities: dict[str, float] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float = 0.0
    extra: JSONDict = field(default_factory=dict)


def _yes_probability(
    logprobs: dict[str, float], yes: tuple[str, ...], no: tuple[str, ...]
) -> float:
    p_yes = sum(math.exp(logprobs[c]) for c in yes if logprobs.get(c) is not None)
    p_no = sum(math.exp(logprobs[c]) for c in no if logprobs.get(c) is not None)
    return p_yes / (p_yes + p_no) if p_yes + p_no > 0 else 0.5


@dataclass(eq=False)
class Reader:
    """Answers questions with a loaded model (a :class:`~engine.models.protocol.ChatModel`).

    ``method`` is ``"generate"`` or ``"logprob"`` (see the module docstring); ``threshold`` is
    the logprob cut-off; ``max_tokens`` bounds a generated answer, sampled at ``temperature``
    with ``seed``.
    """

    model: ChatModel
    method: str = "generate"
    threshold: float = THRESHOLD
    max_tokens: int = MAX_TOKENS
    temperature: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}")

    def answer(self, item: FrenchQuestion, passages: list[str] | None = None) -> ReaderAnswer:
        """Answer ``item`` given the texts of the retrieved ``passages`` (None or [] for none)."""
        passages = list(passages or [])
        if self.method == "generate":
            return self._generate(item, passages)
        return self._logprob(item, passages)

    def _generate(self, item: FrenchQuestion, passages: list[str]) -> ReaderAnswer:
        model = self.model
        if model.has_chat_template:
            g = model.chat(
                prompts.answer_messages(item, passages),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed,
            )
        else:
            g = model.complete(
                prompts.answer_completion(item, passages),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed,
                stop=["\n\n", "Question :"],
            )
        found = read_answer(g.text, item, g.finish_reason)
        extra: JSONDict = {"parsed_from": found.how, "finish_reason": g.finish_reason}
        if found.reason:
            extra["no_answer"] = found.reason
        return ReaderAnswer(
            found.letters,
            g.text,
            None,
            g.prompt_tokens,
            g.completion_tokens,
            g.seconds,
            extra,
        )

    def _logprob(self, item: FrenchQuestion, passages: list[str]) -> ReaderAnswer:
        model = self.model
        started = time.perf_counter()
        chat = model.has_chat_template
        yes, no = (("Oui", "oui"), ("Non", "non")) if chat else ((" oui", " Oui"), (" non", " Non"))
        probabilities: dict[str, float] = {}
        prompt_tokens = 0
        for letter in LETTERS:
            if chat:
                prompt = model.chat_prompt(prompts.option_messages(item, passages, letter))
            else:
                prompt = prompts.option_completion(item, passages, letter)
            logprobs = model.logprobs(prompt, [*yes, *no], chat_formatted=chat)
            probabilities[letter] = round(_yes_probability(logprobs, yes, no), 4)
            if letter == "a":
                prompt_tokens = model.count_tokens(prompt)
        letters = select_options(probabilities, self.threshold)
        response = " ".join(f"{c.upper()}:{probabilities[c]:.2f}" for c in LETTERS)
        return ReaderAnswer(
            letters,
            f"{format_letters(letters)} ({response})",
            probabilities,
            prompt_tokens,
            0,
            time.perf_counter() - started,
        )
