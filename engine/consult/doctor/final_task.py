"""The final task T: answering it (a model, or a person's typed answer) and scoring it.

A multiple-choice task is answered with a letter: by a model either from the log-probabilities
of the option letters after the chat prompt (``logprobs``, the default: one forward pass, always
a valid letter) or by generating an answer and extracting the letter (``generate``). A
diagnosis task is answered in free text and scored twice: a normalised string match (the
accuracy) and the cosine similarity of MiniLM embeddings with the gold diagnosis.

The context the task is answered from is the dialogue (a consultation), every fact of M (the
upper bound), the opening request alone (the lower bound), the case written out at once
(``vignette``, CRAFT-MD's written vignette) or a summary of the consultation written by the
solver (``summary``, CRAFT-MD's summarised conversation).
"""

from __future__ import annotations

import dataclasses
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.consult.cases.cases import Case, Task
from engine.consult.doctor.doctors import history_messages
from engine.exam.extract import Extraction, find_answer
from engine.models.protocol import ChatModel
from engine.types import Turn

if TYPE_CHECKING:
    from engine.types import JSONDict

CONTEXTS = ("dialogue", "all", "opening", "vignette", "summary")
METHODS = ("logprobs", "generate")
#: How a multiple-choice task is answered: a letter, or the diagnosis in words (free).
FORMS = ("mcq", "free")

_INTRO = {
    "dialogue": "Here is your consultation with a patient so far.",
    "all": "Here is everything known about a patient.",
    "opening": "A patient comes to you and says the following.",
    "vignette": "Here is the case of a patient.",
    "summary": "Here is a summary of your consultation with a patient.",
}
SUMMARY_PROMPT = (
    "Here is a consultation between a doctor and a patient.\n\n{dialogue}\n\nWrite a summary "
    "of it for a colleague: the patient's complaint and every finding the patient reported, in "
    "a few sentences. Do not give a diagnosis."
)
SUMMARY_TOKENS = 192
#: The task of a multiple-choice case answered in words (its options are not shown).
FREE_QUESTION = "What is the most likely diagnosis? No options are given: name it in words."


def vignette(case: Case) -> tuple[str, str]:
    """The case written out at once, and where the text comes from: the vignette a case was
    converted from (``original``), else the opening request and each fact as a sentence
    (``written from the facts``)."""
    original = case.meta.get("information")
    if isinstance(original, str) and original.strip():
        return original.strip(), "original"
    lines = [f"The patient says: {case.initial_request}"]
    lines += [f"{f.key}: {f.value.rstrip('.')}." for f in case.facts]
    return " ".join(lines), "written from the facts"


def dialogue_text(turns: list[Turn], conclusions: bool = True) -> str:
    """A stored dialogue written out, a line per turn (``Doctor:`` / ``Patient:``)."""
    lines = []
    for m in history_messages(list(turns), conclusions=conclusions):
        who = "Doctor" if m["role"] == "assistant" else "Patient"
        lines.append(f"{who}: {m['content']}")
    return "\n".join(lines)


def extract_letter(
    text: str, options: dict[str, str], finish_reason: str | None = None
) -> Extraction:
    """The option letter ``text`` chooses, or none and why (the exam's answer extraction,
    :func:`engine.exam.extract.find_answer`)."""
    return find_answer(text, list(options.values()), "".join(options), finish_reason)


def normalize_diagnosis(text: str) -> str:
    """Lower-case, accents, parentheses, punctuation and articles removed."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = re.sub(r"\([^)]*\)", " ", text)
    text = re.sub(r"[^\w\s]", " ", text)
    words = [w for w in text.split() if w not in {"the", "a", "an"}]
    return " ".join(words)


def diagnosis_match(prediction: str, gold: str) -> bool:
    """Normalised match: equal, or the gold (or its abbreviation in parentheses) is contained
    in the prediction as whole words."""
    pred = normalize_diagnosis(prediction)
    if not pred:
        return False
    golds = {normalize_diagnosis(gold)}
    golds |= {normalize_diagnosis(a) for a in re.findall(r"\(([^)]*)\)", gold)}
    golds.discard("")
    padded = f" {pred} "
    return any(pred == g or f" {g} " in padded for g in golds)


def clean_diagnosis(text: str) -> str:
    """The diagnosis named in a generated answer (first line, lead-in phrases dropped)."""
    line = next((x.strip() for x in text.strip().splitlines() if x.strip()), "")
    line = re.sub(
        r"^(final )?(answer|diagnosis|the (most likely |final )?diagnosis( is)?|"
        r"the patient (most likely )?has|most likely|you (most likely |probably )?have)\s*[:,-]?\s*",
        "",
        line,
        flags=re.IGNORECASE,
    )
    return line.strip(" .*")


@dataclass
class TaskResult:
    """A scored answer to the final task."""

    response: str
    chosen: str | None
    gold: str
    correct: bool
    similarity: float | None = None
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extra: JSONDict = field(default_factory=dict)


def task_result(task: Task, response: str, finish_reason: str | None = None) -> TaskResult:
    """What a typed or generated answer to the task says: a letter for MCQ (none, with the
    reason stored as ``extra["no_answer"]``, when the reply gives none), a diagnosis
    otherwise, and whether it is right. The run's scorers then score the stored answer
    (:func:`engine.core.scoring.score_answer`)."""
    if task.kind == "mcq":
        found = extract_letter(response, task.options, finish_reason)
        chosen = found.letter
        result = TaskResult(response, chosen, task.answer, chosen == task.answer)
        if found.reason:
            result.extra["no_answer"] = found.reason
        return result
    from engine.consult.scoring.similarity import similarity

    chosen = clean_diagnosis(response)
    return TaskResult(
        response,
        chosen,
        task.diagnosis,
        diagnosis_match(chosen, task.diagnosis),
        similarity=round(similarity(chosen, task.diagnosis), 4),
    )


def task_text(task: Task) -> str:
    """The task as shown to a doctor (question and lettered options)."""
    if task.kind == "mcq":
        options = "\n".join(f"{k}. {v}" for k, v in task.options.items())
        return f"{task.question}\n{options}"
    return task.question or "What is the most likely diagnosis?"


def instruction(task: Task) -> str:
    if task.kind == "mcq":
        return "Answer with the letter of the correct option."
    return "Reply with the name of the most likely diagnosis only."


@dataclass(eq=False)
class Solver:
    """Answers a case's task with a chat model, from a dialogue, all facts or P0 alone."""

    model: ChatModel
    method: str = "logprobs"
    max_tokens: int = 48
    seed: int = 0
    form: str = "mcq"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown answering method {self.method!r}")
        if self.form not in FORMS:
            raise ValueError(f"unknown answer form {self.form!r}")

    def messages(
        self,
        case: Case,
        turns: list[Turn] | None = None,
        context: str = "dialogue",
        conclusions: bool = True,
        summary: str | None = None,
    ) -> list[dict[str, str]]:
        """The chat that asks the task, after the chosen context (a dialogue keeps the
        doctor's closing words unless ``conclusions`` is false; ``summary`` is the text of
        the ``summary`` context)."""
        if context not in CONTEXTS:
            raise ValueError(f"unknown context {context!r}")
        if context == "all":
            body = "\n".join(f"- {f.key}: {f.value}" for f in case.facts)
            body = f"Patient says: {case.initial_request}\n{body}"
        elif context == "opening":
            body = f"Patient: {case.initial_request}"
        elif context == "vignette":
            body = vignette(case)[0]
        elif context == "summary":
            body = summary or f"Patient: {case.initial_request}"
        else:
            body = dialogue_text(list(turns or []), conclusions)
            body = body or f"Patient: {case.initial_request}"
        prompt = (
            f"{_INTRO[context]}\n\n{body}\n\n{task_text(case.task)}\n\n{instruction(case.task)}"
        )
        system = "You are an experienced doctor."
        return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]

    def answer(
        self,
        case: Case,
        turns: list[Turn] | None = None,
        context: str = "dialogue",
        conclusions: bool = True,
    ) -> TaskResult:
        """Answer and score the task of ``case`` (``conclusions``: see :meth:`messages`); in
        the ``summary`` context the solver first writes the consultation's summary
        (:meth:`summarise`) and answers from it alone (the summary is in ``extra``). In the
        ``free`` form a multiple-choice task is answered with the diagnosis in words, scored
        against the right option's text, and then, separately, with a letter (``letter``
        and ``letter_correct`` in ``extra``)."""
        summary = self.summarise(list(turns or []), conclusions) if context == "summary" else None
        if self.form == "free" and case.task.kind == "mcq":
            right = case.task.options.get(case.task.answer, case.task.answer)
            words = Task(question=FREE_QUESTION, diagnosis=right)
            result = self._solve(dataclasses.replace(case, task=words), turns, context,
                                 conclusions, summary)  # fmt: skip
            letter = self._solve(case, turns, context, conclusions, summary)
            result.extra |= {"answer_form": "free", "letter": letter.chosen,
                             "letter_correct": letter.correct}  # fmt: skip
            result.latency_s = round(result.latency_s + letter.latency_s, 3)
        else:
            result = self._solve(case, turns, context, conclusions, summary)
        if summary is not None:
            result.extra["summary"] = summary
        return result

    def _solve(
        self,
        case: Case,
        turns: list[Turn] | None,
        context: str,
        conclusions: bool,
        summary: str | None,
    ) -> TaskResult:
        """One answer to the task of ``case`` after ``context``, scored."""
        messages = self.messages(case, turns, context, conclusions, summary)
        started = time.perf_counter()
        if case.task.kind == "mcq" and self.method == "logprobs":
            letters = list(case.task.options)
            chat = self.model.has_chat_template  # else plain text (a base or served model)
            prompt = (
                self.model.chat_prompt(messages, add_generation_prompt=True)
                if chat
                else "\n\n".join(m["content"] for m in messages) + "\n\nAnswer:"
            )
            space = "" if chat else " "
            raw = self.model.logprobs(prompt, [space + k for k in letters], chat_formatted=chat)
            scores = {k: raw[space + k] for k in letters}
            chosen = max(letters, key=lambda k: scores.get(k, float("-inf")))
            result = TaskResult(chosen, chosen, case.task.answer, chosen == case.task.answer)
            result.extra["logprobs"] = {k: round(float(v), 4) for k, v in scores.items()}
            result.prompt_tokens = self.model.count_tokens(prompt)
        else:
            diagnosis = case.task.kind == "diagnosis"
            g = self.model.chat(
                messages,
                max_tokens=min(self.max_tokens, 24) if diagnosis else self.max_tokens,
                temperature=0.0,
                seed=self.seed,
            )
            result = task_result(case.task, g.text, g.finish_reason)
            result.extra["finish_reason"] = g.finish_reason
            result.prompt_tokens = g.prompt_tokens or 0
            result.completion_tokens = g.completion_tokens or 0
        result.latency_s = round(time.perf_counter() - started, 3)
        result.extra["context"] = context
        if context == "vignette":
            result.extra["vignette"] = vignette(case)[1]
        return result

    def summarise(self, turns: list[Turn], conclusions: bool = True) -> str:
        """The consultation summed up for a colleague (complaint and findings, no diagnosis),
        written by the solver's model."""
        text = dialogue_text(turns, conclusions)
        if not text:
            return ""
        prompt = SUMMARY_PROMPT.format(dialogue=text)
        g = self.model.chat(
            [{"role": "user", "content": prompt}],
            max_tokens=SUMMARY_TOKENS,
            temperature=0.0,
            seed=self.seed,
        )
        return g.text.strip()
