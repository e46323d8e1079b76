"""Exam prompts, written once and shared by the CLI, the GUI and the tests.

They follow the ExplainCPE paper (Appendix A): an optional instruction, then zero, one, four
or eight solved examples, then the question. Chinese::

    该题为单选题,请你回答下列问题并给出解析。

    问题：既可以通过口腔给药，又可以通过鼻腔、皮肤或肺部给药的剂型是
    选项A：口服液
    …
    选项E：粉雾剂
    答案：D.喷雾剂
    解析：本题考查剂型的分类。……

    问题：……
    选项E：……
    答案：

English uses "This question is a multiple-choice question, please answer the following
questions and give an explanation.", "Question: …", "Option A: …", "Answer: …" and
"Explanation: …".

Examples come from a training pool (the train split when the store holds it), are the same
for every question of a run (so the model can reuse the computed prefix), are drawn with a
seed, and for four and eight shots are balanced over the question types (``type1``, or the
polarity read from the wording when the pool has no types), preferring short examples.
When the pool is the data set being asked, a question never sees itself as an example: a
spare example takes its place.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from engine.exam.dataset import Question, letters_for, polarity

if TYPE_CHECKING:
    from engine.types import JSONDict

LANGS = ("zh", "en")
SHOT_COUNTS = (0, 1, 4, 8)

INSTRUCTION = {
    "zh": "该题为单选题,请你回答下列问题并给出解析。",
    "en": (
        "This question is a multiple-choice question, please answer the following questions "
        "and give an explanation."
    ),
}
LABELS = {
    "zh": {
        "question": "问题：",
        "option": "选项{letter}：",
        "answer": "答案：",
        "explanation": "解析：",
    },
    "en": {
        "question": "Question: ",
        "option": "Option {letter}: ",
        "answer": "Answer: ",
        "explanation": "Explanation: ",
    },
}
# Examples up to this length (question, options and explanation, in characters) are used
# first, so an eight-shot prompt fits a small model's context and the prefix stays cheap.
MAX_SHOT_CHARS = 200


@dataclass(frozen=True)
class PromptSettings:
    """How a question is put to a model."""

    shots: int = 0
    instruction: bool = True
    lang: str = "zh"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.shots not in SHOT_COUNTS:
            raise ValueError(f"shots must be one of {SHOT_COUNTS} (got {self.shots})")
        if self.lang not in LANGS:
            raise ValueError(f"lang must be one of {LANGS} (got {self.lang!r})")

    def as_dict(self) -> JSONDict:
        return asdict(self)


def format_question(item: Question, lang: str = "zh") -> str:
    """``问题：…`` and one ``选项X：…`` line per option."""
    labels = LABELS[lang]
    lines = [labels["question"] + item["question"]]
    for letter, text in zip(letters_for(item), item["options"], strict=True):
        lines.append(labels["option"].format(letter=letter) + text)
    return "\n".join(lines)


def format_answer(item: Question, lang: str = "zh") -> str:
    """A solved answer: ``答案：D.喷雾剂`` and ``解析：…`` (the gold explanation)."""
    labels = LABELS[lang]
    letter = item["answer"]
    text = item["options"][letters_for(item).index(letter)]
    answer = f"{labels['answer']}{letter}.{text}"
    if item.get("explanation"):
        answer += "\n" + labels["explanation"] + item["explanation"]
    return answer


def answer_prefix(lang: str = "zh") -> str:
    """What precedes the answer letter: ``答案：`` / ``Answer:`` (the letter follows it)."""
    return LABELS[lang]["answer"].rstrip() if lang == "en" else LABELS[lang]["answer"]


def stop_sequences(lang: str = "zh") -> list[str]:
    """Where a completion model should stop: at the start of a next question."""
    return ["\n" + LABELS[lang]["question"].strip(), "\n\n\n"]


def _shot_chars(item: Question) -> int:
    return len(item["question"]) + sum(map(len, item["options"])) + len(item.get("explanation", ""))


def select_shots(
    pool: Sequence[Question], k: int, seed: int = 0, spares: int = 0
) -> list[Question]:
    """``k`` (+ ``spares``) examples from ``pool``, reproducibly.

    Examples with an explanation are grouped by question type and shuffled with ``seed``
    within each group; the groups take turns, so four and eight shots hold the types in equal
    numbers where the pool allows. Within a group, examples of at most
    :data:`MAX_SHOT_CHARS` characters come first, so prompts stay short enough for small
    models. The spares follow the ``k`` examples.
    """
    want = k + spares
    if want <= 0 or not pool:
        return []
    usable = [i for i in pool if i.get("explanation")] or list(pool)
    usable = sorted(usable, key=lambda i: str(i["id"]))
    rng = random.Random(seed)
    short: dict[str, list[Question]] = {}
    long: dict[str, list[Question]] = {}
    for item in usable:
        kind = polarity(item)
        short.setdefault(kind, [])
        long.setdefault(kind, [])
        (short if _shot_chars(item) <= MAX_SHOT_CHARS else long)[kind].append(item)
    order = sorted(short, key=lambda g: (-len(short[g]) - len(long[g]), g))
    for group in (short, long):
        for name in order:
            rng.shuffle(group[name])
    # Each group's list is taken from its end: the short examples first.
    queues = {name: long[name] + short[name] for name in order}
    chosen: list[Question] = []
    while len(chosen) < want and any(queues.values()):
        for name in order:
            if queues[name] and len(chosen) < want:
                chosen.append(queues[name].pop())
    return chosen


class ShotPlan:
    """The examples of a run: fixed for every question, with spares for self-exclusion."""

    def __init__(
        self, pool: Sequence[Question], k: int, seed: int = 0, same_pool: bool = False
    ) -> None:
        self.k = k
        self.same_pool = same_pool
        picked = select_shots(pool, k, seed, spares=k if same_pool else 0)
        self.shots = picked[:k]
        self.spares = picked[k:]

    def for_item(self, item: Question) -> list[Question]:
        """The examples shown before ``item``; from the same pool, never ``item`` itself (a
        spare takes its place, so the other examples keep their positions)."""
        if not self.same_pool:
            return list(self.shots)
        key = str(item["id"])
        keys = [str(s["id"]) for s in self.shots]
        if key not in keys:
            return list(self.shots)
        shots = [s for s in self.shots if str(s["id"]) != key]
        spare = next((s for s in self.spares if str(s["id"]) != key), None)
        if spare is not None:
            shots.insert(keys.index(key), spare)
        return shots

    @property
    def ids(self) -> list[int | str]:
        return [s["id"] for s in self.shots]


def build_prompt(
    item: Question,
    shots: Sequence[Question],
    settings: PromptSettings,
    answer_cue: bool = True,
) -> str:
    """The plain-text prompt (for completion models): instruction, solved examples, then the
    question, ending with ``答案：`` when ``answer_cue`` is true."""
    parts = []
    if settings.instruction:
        parts.append(INSTRUCTION[settings.lang])
    for shot in shots:
        parts.append(
            format_question(shot, settings.lang) + "\n" + format_answer(shot, settings.lang)
        )
    question = format_question(item, settings.lang)
    if answer_cue:
        question += "\n" + answer_prefix(settings.lang)
    parts.append(question)
    return "\n\n".join(parts)


def build_messages(
    item: Question, shots: Sequence[Question], settings: PromptSettings
) -> list[dict[str, str]]:
    """The same prompt as chat turns: each example is a user question and an assistant
    answer; the instruction opens the first user turn."""
    messages: list[dict[str, str]] = []
    first = True
    for shot in [*shots, item]:
        content = format_question(shot, settings.lang)
        if first and settings.instruction:
            content = INSTRUCTION[settings.lang] + "\n\n" + content
        first = False
        messages.append({"role": "user", "content": content})
        if shot is not item:
            messages.append({"role": "assistant", "content": format_answer(shot, settings.lang)})
    return messages


def explanation_messages(item: Question, lang: str = "zh") -> list[dict[str, str]]:
    """Chat turns asking a model to explain a question (for a student's practice session)."""
    ask = {
        "zh": "请解释下面这道单选题的正确答案，并说明其他选项为什么不对。",
        "en": "Explain the correct answer to this multiple-choice question and why the other "
        "options are wrong.",
    }[lang]
    letter = item["answer"]
    gold = {"zh": f"正确答案：{letter}", "en": f"Correct answer: {letter}"}[lang]
    return [{"role": "user", "content": f"{ask}\n\n{format_question(item, lang)}\n{gold}"}]
