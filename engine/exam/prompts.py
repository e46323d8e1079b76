"""Exam prompts, written once and shared by the CLI, the GUI and the tests.

Prompt version 2 (:data:`PROMPT_VERSION`, stored on every run as ``prompt_version``) is the
ExplainCPE paper's as printed in its Appendix A (Tables 6 and 7): the instruction, then zero,
one, four or eight solved examples, then the question and its options, and nothing after
them. Chinese::

    该题为单选题,请你回答下列问题并给出解析。

    问题：既可以通过口腔给药，又可以通过鼻腔、皮肤或肺部给药的剂型是
    选项A：口服液
    …
    选项E：粉雾剂
    答案：D.喷雾剂
    解析：本题考查剂型的分类。……

    问题：……
    选项A：……
    …
    选项E：……

English uses "This question is a multiple-choice question, please answer the following
questions and give an explanation.", "Question: …", "Option A: Chlorpromazine." (each
option ends with a full stop, as printed), "Answer: …" and "Explanation: …".

The paper has one 0-shot prompt: its 0-shot rows with and without the instruction are
equal (Table 8), so at 0 shots the instruction is always there (:attr:`PromptSettings.
with_instruction`); from one shot on, ``instruction`` decides. Version 1 (runs stored
without ``prompt_version``) ended with an answer cue ``答案：``, wrote "Option A: text"
without the full stop, dropped the instruction at 0 shots when asked, cut examples that did
not fit, and chose examples by polarity, short ones first.

Completion models (base models, or ``template = "plain"``) read this text as it is (the
``logprob`` method adds the cue ``\n答案：`` after it, since it reads the letter's
probability where the answer starts; the paper scored generated answers). Chat models read
the same content as turns (:func:`build_messages`): each example is a user turn (the
question and options) and an assistant turn (its answer and explanation), the instruction
opens the first user turn, and the question asked is the last user turn. An instruction-
tuned model has only seen conversations in its template; given the raw exam text a small
one tends to write the next question instead of answering, and its answer turn shows it
the format to follow.

Examples come from a training pool (the train split when the store holds it) and are the
same for every question of a run (so the model can reuse the computed prefix). One shot is
a seeded random draw; four and eight are balanced over the seven kinds of question of the
second level of types (``type2``: 逻辑推理题, 药品知识题, 情景分析题, 常识题, 疾病知识题,
数学计算题, 其他), as the paper chose them "with varying question types": the kinds take turns, the
most frequent in the pool first, each kind's examples in a seeded order. ExplainCPE's
train split has no types, so there the kind is read from the wording (:func:`question_kind`;
it agrees with the labels of the test split on 126 of its 190 questions). Example length
plays no part in the choice: an example too long for a model's context is not swapped
for a short one; the question is skipped instead (:mod:`engine.exam.runner`). When the
pool is the data set being asked, a question never sees itself as an example: a spare
example takes its place.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from engine.exam.dataset import Question, letters_for

if TYPE_CHECKING:
    from engine.types import JSONDict

LANGS = ("zh", "en")
SHOT_COUNTS = (0, 1, 4, 8)
#: The version of the prompts built here, stored on each run (see the module).
PROMPT_VERSION = 2

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
#: The seven kinds of question of ExplainCPE's second level of types (``type2``).
KINDS = ("逻辑推理题", "药品知识题", "情景分析题", "常识题", "疾病知识题", "数学计算题", "其他")
# The wording of each kind, tried in this order; a question matching none is 逻辑推理题, the
# most common kind. 数学计算题 is also read from numeric options (see question_kind).
_KIND_WORDS = (
    ("情景分析题", re.compile(r"^(?:患者|患儿|某患者)|\d+岁|孕\d+周")),
    ("疾病知识题", re.compile(r"疾病|症状|临床表现|病因|发病|并发症|诊断|综合征|缺乏")),
    (
        "常识题",
        re.compile(
            r"剂型|药典|质量标准|检查项|贮藏|储存|稳定性|鉴别|通用名|商品名|化学名|有效期|标签"
            r"|说明书|给药途径|辅料"
        ),
    ),
    ("其他", re.compile(r"CYP|药师|处方|审核|生物等效")),
    (
        "药品知识题",
        re.compile(r"结构|作用机制|药理|副作用|不良反应|变态反应|规格|毒性|作用特点|适应证|禁忌"),
    ),
)
_NUMERIC_OPTION = re.compile(r"[0-9０-９][0-9０-９.]*\s*[A-Za-zμ%/0-9.小时分钟天次倍和]*")


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

    @property
    def with_instruction(self) -> bool:
        """Whether the prompt opens with the instruction: always at 0 shots (the paper's one
        0-shot prompt), else as ``instruction`` says."""
        return self.instruction or self.shots == 0

    def as_dict(self) -> JSONDict:
        return asdict(self)


def _option_text(text: str, lang: str) -> str:
    """An option as printed: English options end with a full stop (``Chlorpromazine.``)."""
    if lang == "en" and not text.rstrip().endswith((".", "?", "!")):
        return text + "."
    return text


def format_question(item: Question, lang: str = "zh") -> str:
    """``问题：…`` and one ``选项X：…`` line per option (``Option A: ….`` in English)."""
    labels = LABELS[lang]
    lines = [labels["question"] + item["question"]]
    for letter, text in zip(letters_for(item), item["options"], strict=True):
        lines.append(labels["option"].format(letter=letter) + _option_text(text, lang))
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


def question_kind(item: Question) -> str:
    """The kind of question (``type2``) when the item has one; else read from the wording:
    a case (患者，男，45岁…) is 情景分析题, a calculation (计算, or four numeric options to a
    question with numbers) 数学计算题, then words of diseases (疾病知识题), of dosage forms,
    standards and storage (常识题), of pharmacists' practice and metabolising enzymes (其他),
    of a drug's structure, action and adverse effects (药品知识题); anything else is
    逻辑推理题. On ExplainCPE's labelled test split the guess agrees with ``type2`` for 126 of
    190 questions (every 情景分析题 and 数学计算题; 逻辑推理题 and 药品知识题 are the ones it
    mixes up)."""
    if item.get("type2"):
        return str(item["type2"])
    question = item.get("question", "")
    numeric = sum(bool(_NUMERIC_OPTION.fullmatch(o.strip())) for o in item.get("options", []))
    if "计算" in question or (numeric >= 4 and re.search(r"\d", question)):
        return "数学计算题"
    for kind, words in _KIND_WORDS:
        if words.search(question):
            return kind
    return "逻辑推理题"


def select_shots(
    pool: Sequence[Question], k: int, seed: int = 0, spares: int = 0
) -> list[Question]:
    """``k`` (+ ``spares``) examples from ``pool``, reproducibly (the same pool and seed give
    the same examples in the same order).

    Examples with an explanation are used (all of them when none has one). One example is a
    seeded random draw. For more, the examples are grouped by :func:`question_kind` and each
    group is shuffled with ``seed``; the groups take turns, the largest first (ties by name),
    so four shots hold the four most frequent kinds and eight all seven and one more. The
    spares follow the ``k`` examples, in the same turns.
    """
    want = k + spares
    if want <= 0 or not pool:
        return []
    usable = [i for i in pool if i.get("explanation")] or list(pool)
    usable = sorted(usable, key=lambda i: str(i["id"]))
    rng = random.Random(seed)
    if k == 1:
        return rng.sample(usable, min(want, len(usable)))
    groups: dict[str, list[Question]] = {}
    for item in usable:
        groups.setdefault(question_kind(item), []).append(item)
    order = sorted(groups, key=lambda g: (-len(groups[g]), g))
    for name in order:
        rng.shuffle(groups[name])
    chosen: list[Question] = []
    for turn in range(max(map(len, groups.values()))):
        chosen.extend(groups[name][turn] for name in order if turn < len(groups[name]))
        if len(chosen) >= want:
            break
    return chosen[:want]


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
    answer_cue: bool = False,
) -> str:
    """The plain-text prompt (for completion models), as the paper prints it: instruction,
    solved examples, then the question and its options, with nothing after them; with
    ``answer_cue`` a last line ``答案：`` (``Answer:``) where the answer starts (for
    ``logprob``)."""
    parts = []
    if settings.with_instruction:
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
    answer; the instruction opens the first user turn (see the module)."""
    messages: list[dict[str, str]] = []
    first = True
    for shot in [*shots, item]:
        content = format_question(shot, settings.lang)
        if first and settings.with_instruction:
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
