"""A judge model rates an explanation on the five perspectives, as GPT-4 did in the
ExplainCPE paper's Table 4: one fixed prompt per language (Chinese for Chinese questions,
English otherwise; :data:`PROMPT_VERSION`), the reply held to a JSON object of five whole
numbers from 1 to 5 (a llama.cpp grammar for a local model, the server's ``response_format``
for a served one), read back by :func:`parse_ratings`. A reply that gives no five ratings is
stored as a failure with the reply itself, never turned into a made-up score.

>>> parse_ratings('{"well_formed": 5, "support": 4, "correctness": 4, "validity": 3, "novelty": 2}')
{'well_formed': 5, 'support': 4, 'correctness': 4, 'validity': 3, 'novelty': 2}
>>> lines = "Well-formed: 4\\nSupport: 4\\nCorrectness: 3\\nValidity: 3\\nNovelty: 2"
>>> parse_ratings(lines)["novelty"]
2
>>> parse_ratings("I cannot rate this.") is None
True
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from engine.models.protocol import ModelCrashed, ModelError
from engine.ratings.perspectives import HIGHEST, KEYS, LOWEST, NAMES, PERSPECTIVES
from engine.types import Explained

if TYPE_CHECKING:
    from engine.models.protocol import ChatModel, Message
    from engine.types import JSONDict

#: Raised whenever the prompts or how the reply is read change (the scorer's version).
PROMPT_VERSION = 3
MAX_TOKENS = 96

SCHEMA: JSONDict = {
    "type": "object",
    "properties": {k: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for k in KEYS},
    "required": list(KEYS),
    "additionalProperties": False,
}

_SYSTEM = {
    "en": (
        "You are an experienced examiner in pharmacy and medicine. You rate the explanation "
        "a candidate wrote for an answer to an exam question, from 1 (very poor) to 5 "
        "(excellent), on five perspectives:\n{questions}\n"
        "Judge the explanation itself; the reference answer and explanation are there to "
        "check facts. Reply with a JSON object only, with the keys {keys} and whole numbers "
        "from 1 to 5 as values."
    ),
    "zh": (
        "你是一名经验丰富的药学与医学考官。请对考生为一道考试题的答案所写的解释打分，"
        "从1（很差）到5（优秀），共五个方面：\n{questions}\n"
        "请评价解释本身；参考答案和参考解析仅用于核对事实。只回复一个JSON对象，"
        "键为 {keys}，值为1到5的整数。"
    ),
}
_LABELS = {
    "en": ("Question", "Options", "Reference answer", "Reference explanation",
           "Candidate's answer", "Candidate's explanation"),
    "zh": ("题目", "选项", "参考答案", "参考解析", "考生答案", "考生解释"),
}  # fmt: skip


def prompt_language(explained: Explained) -> str:
    """The prompt's language: Chinese for a Chinese question, English otherwise."""
    return "zh" if explained.language == "zh" else "en"


def judge_messages(explained: Explained) -> list[Message]:
    """The judge's conversation for one explanation (system rules, then the case)."""
    lang = prompt_language(explained)
    questions = "\n".join(
        f"{n}. {p.key}: {p.question_zh if lang == 'zh' else p.question}"
        for n, p in enumerate(PERSPECTIVES, 1)
    )
    system = _SYSTEM[lang].format(questions=questions, keys=", ".join(KEYS))
    q, opts, gold, gold_why, ans, why = _LABELS[lang]
    parts = [f"{q}: {explained.question}"]
    if explained.options:
        parts.append(f"{opts}:\n" + "\n".join(f"{k}. {v}" for k, v in explained.options))
    parts.append(f"{gold}: {explained.gold}")
    if explained.gold_explanation:
        parts.append(f"{gold_why}: {explained.gold_explanation}")
    parts += [f"{ans}: {explained.answer}", f"{why}:\n{explained.explanation.strip()}"]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


# One perspective a line, as a judge writes them without JSON: "Well-formed: 4",
# "**Support** - 4", "3. Validity = 2/5". The value is a whole number standing alone (no
# sign, no decimals, no other scale than "/5" or "out of 5" anywhere on its line, no range
# or choice such as "4 to 5", "4 or 5", "4 - 5"); a dash separates only when a space follows.
# A line with any other number after its value ("Novelty: 2 (3/5 would be generous)") makes
# the reply not parsed.
_LINE = re.compile(
    r"^[ \t]*(?:[-*•]|\d{1,2}[.)])?[ \t]*\**[ \t]*"
    r"(?P<name>well[ _-]?formed|support|correctness|validity|novelty)[ \t]*\**[ \t]*"
    r"(?:[:：=]|-(?=[ \t]))[ \t]*\**[ \t]*(?P<value>[0-9]+)"
    r"(?![ \t]*(?:to|or|and|[-–—~±])[ \t]*[0-9])"
    r"(?![^\n]*?(?:/|out[ \t]+of)[ \t]*(?!5(?![0-9.]))[0-9])"
    r"(?:[ \t]*(?:/|out[ \t]+of)[ \t]*5(?![0-9.]))?\**"
    r"(?=[ \t]*$|[ \t](?![ \t]*(?:/|out[ \t]+of|of)[ \t]*[0-9])|[.,;。，；)）](?![0-9]))",
    re.IGNORECASE | re.MULTILINE,
)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """An object's keys, or none at all when a key repeats (which value would count?)."""
    found = dict(pairs)
    return found if len(found) == len(pairs) else {}


def json_object(text: str) -> JSONDict | None:
    """The JSON object a judge's reply holds (from its first ``{`` to its last ``}``), or
    None when there is none. An object in which a key repeats reads as an empty one."""
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        return None
    try:
        found = json.loads(text[start : end + 1], object_pairs_hook=_unique_keys)
    except (json.JSONDecodeError, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def _rating(value: object) -> int | None:
    """``value`` when it is a whole number from 1 to 5 (not a bool, a float or text)."""
    return value if type(value) is int and LOWEST <= value <= HIGHEST else None


def parse_ratings(text: str) -> dict[str, int] | None:
    """The five ratings in a judge's reply, read from the schema's fields only: a JSON
    object's five keys when the reply holds one (then nothing else counts), else one
    ``name: n`` line per perspective. None, not parsed, unless all five are whole numbers
    from 1 to 5, given once each, and no line holds another number after its rating."""
    found = json_object(text)
    if found is not None:
        values = {k: _rating(found.get(k)) for k in KEYS}
        complete = all(v is not None for v in values.values())
        return values if complete else None  # type: ignore[return-value]
    named: dict[str, int | None] = {}
    for m in _LINE.finditer(text):
        if re.search(r"\d", text[m.end() :].split("\n", 1)[0]):
            return None  # another number on its line: which one is the rating?
        key = re.sub(r"[ _-]", "", m["name"].lower()).replace("wellformed", "well_formed")
        value = _rating(int(m["value"]))
        if named.get(key, value) != value:
            return None  # one perspective given two ratings
        named[key] = value
    values = {k: named.get(k) for k in KEYS}
    complete = all(v is not None for v in values.values())
    return values if complete else None  # type: ignore[return-value]


def judge(
    model: ChatModel, explained: Explained, constrained: bool = True
) -> tuple[dict[str, int] | None, str]:
    """Ask ``model`` to rate one explanation: ``(ratings or None, the reply)``, the reply
    held to :data:`SCHEMA` with ``constrained`` (see :func:`ask`)."""
    reply, error = ask(model, judge_messages(explained), SCHEMA if constrained else None)
    if error:
        return None, error
    return parse_ratings(reply), reply


def ask(
    model: ChatModel,
    messages: list[Message],
    schema: JSONDict | None,
    max_tokens: int = MAX_TOKENS,
) -> tuple[str, str]:
    """A judge's reply, greedy: ``(reply, "")``, or ``("", why)`` when the request failed.
    With a ``schema`` the reply is held to it (a grammar for a local model, the server's
    ``response_format`` for a served one); a server that refuses the format is asked again
    without it. A crash of the model is raised."""
    options: JSONDict = {"max_tokens": max_tokens, "temperature": 0.0}
    tries: list[JSONDict] = [{"json_schema": schema}, {}] if schema is not None else [{}]
    for n, held in enumerate(tries, 1):
        try:
            return model.chat(messages, **options, **held).text, ""
        except ModelCrashed:
            raise
        except ModelError as exc:  # the server may not take the format: once more without
            if n == len(tries):
                return "", f"the judge could not answer: {exc}"
    raise AssertionError("unreachable")  # pragma: no cover


def describe_names() -> str:
    """The perspectives in words, for help texts."""
    return ", ".join(NAMES[k] for k in KEYS)
