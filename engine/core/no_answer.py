"""Replies that give no answer, and why: what every activity's extractor says of a reply in
which it finds no answer, and the shares of them a run's summary shows.

A reply counts as no answer, with its reason, when it:

* ``echo``: lists several options, each opening its own line or marked ``选项X：`` (small
  models copy the option list back: ``选项A：口服液\\n选项B：吸入制剂…``), and states no choice;
* ``several``: names several letters and no single choice (``A、C``, ``A and C``) where one
  answer is asked;
* ``out_of_range``: names a letter the question has no option for (``F`` of five);
* ``cut_off``: was cut off by the token limit (``finish_reason`` ``length``) before it
  stated an answer;
* ``none_of_them``: declares that no option is right;
* ``empty`` / ``no_letter``: is empty, or names no option at all.

>>> listed_letters("选项A:口服液\\n选项B:吸入制剂\\n选项C:贴剂")
['A', 'B', 'C']
>>> listed_letters("B. 吸入制剂\\n解析：吸入制剂经肺部给药。")
['B']
>>> no_answer_shares([{"extra": {"no_answer": "echo"}}, {"extra": {}}], 2)
{'echo': 50.0}
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

#: Each reason a reply gives no answer, as a report names it.
REASONS = {
    "echo": "lists the options without choosing one",
    "several": "names several options, no single choice",
    "out_of_range": "names a letter past the options",
    "cut_off": "cut off by the token limit before an answer",
    "none_of_them": "says no option is right",
    "empty": "empty reply",
    "no_letter": "names no option",
}

#: How a run's summary labels its no-answer shares, cut-off share and chance level.
SUMMARY_LABELS = {
    "no_answer": "No answer (%)",
    **{f"no_answer.{k}": f"No answer: {v} (%)" for k, v in REASONS.items()},
    "cut_off": "Cut off by the token limit (%)",
    "chance": "Chance (uniform guessing)",
    "chance.accuracy": "Chance: accuracy (%)",
    "chance.hamming": "Chance: Hamming score (%)",
    "chance.emr": "Chance: exact match ratio (%)",
}

#: The finish reasons of a reply cut off by a length limit: the model's token limit, or a
#: served reply cut at medexam's size limit.
CUT = frozenset({"length", "truncated"})

# An option's marker: opening a line ("选项A：", "A.", "(b)", "Option C -", "**D)**"), or
# "选项X：" anywhere.
_LINE_MARKER = re.compile(
    r"^[ \t>*#\-]*(?:选项|option\s*|proposition\s*)?[(\[]?\s*(?P<x>[A-Ja-j])\s*[)\]]?"
    r"\s*\**\s*(?:[:：.、)）]|-\s)",
    re.IGNORECASE | re.MULTILINE,
)
# The same, followed on its line by the option's text.
_LINE_NAMED = re.compile(_LINE_MARKER.pattern + r"[ \t]*(?=\S)", _LINE_MARKER.flags)
_INLINE_MARKER = re.compile(r"选项\s*(?P<x>[A-J])\s*[:：]")
# "选项D" or "Option D" alone on its line (its text on the next, or cut off).
_BARE_MARKER = re.compile(
    r"^[ \t>*#\-]*(?:选项|option)\s*(?P<x>[A-J])[ \t]*$", re.IGNORECASE | re.MULTILINE
)


def cut_off(finish_reason: object) -> bool:
    """Whether a reply of this ``finish_reason`` was cut off by a length limit."""
    return finish_reason in CUT


def listed_letters(text: str, named: bool = False) -> list[str]:
    """The option letters a reply lists as options (upper case, in order of first
    appearance): those opening a line as an option's marker (or alone on it, ``选项D``), and
    ``选项X：`` anywhere; with ``named``, only markers with text after them on their line."""
    if named:
        return list(dict.fromkeys(m["x"].upper() for m in _LINE_NAMED.finditer(text)))
    found = [(m.start(), m["x"].upper()) for m in _LINE_MARKER.finditer(text)]
    found += [(m.start(), m["x"]) for m in _INLINE_MARKER.finditer(text)]
    found += [(m.start(), m["x"].upper()) for m in _BARE_MARKER.finditer(text)]
    return list(dict.fromkeys(letter for _, letter in sorted(found)))


def reason_of(answer: Mapping[str, object]) -> str | None:
    """Why a stored answer gives no answer (None: it gives one, or its reply failed)."""
    extra = answer.get("extra")
    if not isinstance(extra, dict) or extra.get("error"):
        return None
    reason = extra.get("no_answer")
    return reason if isinstance(reason, str) else None


def no_answer_shares(answers: Iterable[Mapping[str, object]], n: int) -> dict[str, float]:
    """The share (percent of ``n`` replies, one decimal) of the stored ``answers`` giving no
    answer, by reason (:data:`REASONS` order); only the reasons met."""
    counts = Counter(r for a in answers if (r := reason_of(a)) is not None)
    return {r: round(100 * counts[r] / n, 1) for r in REASONS if counts[r] and n}


def shares_text(shares: Mapping[str, float]) -> str:
    """A run's no-answer shares in words: ``"lists the options without choosing one 80.0%,
    cut off by the token limit before an answer 3.3%"``."""
    return ", ".join(f"{REASONS.get(k, k)} {v:.1f}%" for k, v in shares.items())


def cut_off_share(answers: Iterable[Mapping[str, object]], n: int) -> float | None:
    """The share (percent of ``n`` replies) cut off by the token limit, answered or not;
    None when no answer records its finish reason (a person's, a published run's)."""
    reasons = [
        extra.get("finish_reason")
        for a in answers
        if isinstance(extra := a.get("extra"), dict) and "finish_reason" in extra
    ]
    if not reasons or not n:
        return None
    return round(100 * sum(cut_off(r) for r in reasons) / n, 1)
