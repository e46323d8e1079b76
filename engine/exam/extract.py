"""Find the answer letter in a model's free-text reply (Chinese, English or French).

Rules are tried from the most explicit to the least, and the first rule that finds a single
letter wins:

1. a declared answer: ``答案：B``, ``正确答案是选项D``, ``本题选C``, ``选D``, ``我认为…是选项C``,
   ``the correct answer is C``, ``Answer: (b)``, ``la bonne réponse est B``, ``Réponse : E``;
2. a concluding statement: ``选项D是正确答案``, ``综上所述，选项D错误，为本题答案``,
   ``Option A is correct``, ``C is the correct answer``, ``la proposition B est correcte``;
3. a reply that opens with a letter: ``B``, ``B. 吸入制剂``, ``(C)``, ``选项E：…``, ``Option A: …``;
4. the text of exactly one option, without its letter.

A reply can also give no answer, and :class:`Extraction` says why (``reason``, one of
:data:`engine.core.no_answer.REASONS`): it lists several options, as small models copy the option
list back (``选项A：口服液\\n选项B：吸入制剂…``: ``echo``); it names several letters and no
single choice (``A、C``: ``several``); the letter it names is past the question's options
(``答案：F`` of five: ``out_of_range``); it was cut off by the token limit before it stated
an answer (``cut_off``); its declared answer names no option (``答案是没有错误的选项``,
``none of the above``: ``none_of_them``); it is empty, or names no option at all
(``no_letter``). A declared or concluding answer counts even after an echoed list. Within each
rule the first occurrence counts, as a reader takes the first answer a reply states.

>>> extract_answer("答案：B.吸入制剂\\n解析：……")
'B'
>>> extract_answer("After weighing the options, the correct answer is C.")
'C'
>>> extract_answer("La bonne réponse est (b).")
'B'
>>> extract_answer("喷雾剂", options=["口服液", "吸入制剂", "贴剂", "喷雾剂", "粉雾剂"])
'D'
>>> find_answer("选项A:口服液\\n选项B:吸入制剂\\n选项C:贴剂").reason
'echo'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from engine.core.no_answer import cut_off, listed_letters
from engine.exam.dataset import LETTERS as ALL_LETTERS
from engine.exam.dataset import MAX_OPTIONS

#: The letters read unless a question has more options: ExplainCPE's five.
LETTERS = ALL_LETTERS[:MAX_OPTIONS]


@dataclass(frozen=True)
class Extraction:
    """A letter found in a reply: which rule found it and where it starts; without one,
    ``reason`` says why the reply gives no answer (:data:`engine.core.no_answer.REASONS`)."""

    letter: str | None
    rule: str
    start: int = -1
    reason: str | None = None


def _normalise(text: str) -> str:
    # Full-width letters and punctuation (Ａ, ：, （) become their ASCII forms.
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u3000", " ")


# A letter standing alone: not inside a word like "Vitamin A1" or "CYP3A4", optionally
# bracketed. Upper case anywhere; lower case only when bracketed or followed by punctuation
# or the end (so the English article "a" is never read as an answer).
_L = (
    r"(?-i:[(\[]\s*(?P<b>[A-Ea-e])\s*[)\]]"
    r"|(?<![A-Za-z0-9])(?P<u>[A-E])(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9'’])(?P<l>[a-e])(?=\s*(?:[.)、,:;。，：；]|$)))"
)
# Several letters in a row ("A、B和C", "A and D") mean the reply chose more than one.
_MULTI = re.compile(
    r"\s*(?:[、,，/&]|和|及|与|或|and|or|et|ou)\s*(?:选项|option\s*|l'option\s*)?[A-Ea-e](?![A-Za-z0-9])",
    re.IGNORECASE,
)

_ZH_DECLARED = [
    # 答案：B / 正确答案是选项D / 本题答案为：C / 最佳答案应该是 E / 答案选A
    r"答案\s*(?:应该|应当|应|就|可能|即)?\s*(?:是|为|选择?|:|：)?\s*[:：]?\s*(?:选项|选)?\s*" + _L,
    # 正确选项：D / 错误选项为E / 正确的选项是B
    r"(?:正确|错误|最佳|最合适|最恰当)的?选项\s*(?:应该|应当|应)?\s*(?:是|为|:|：)\s*[:：]?\s*"
    + _L,
    # 故选D / 本题选C / 宜选B / 应选择A / 选择答案A
    r"(?:故|因此|所以|本题|该题|宜|应|应该|应当|则|即|只能|可以|我)\s*(?:选择?|选用)\s*(?:答案|选项)?\s*"
    + _L,
    # 选D (opening the reply or a clause)
    r"(?:^|(?<=[\s，,。：:；;！!]))选(?:择|用)?\s*" + _L,
    # 我认为宜选用的治疗药物是选项C / 我觉得应该选B: an opinion, and in the same clause,
    # with no negation in between, the letter it settles on
    r"(?:我认为|我觉得|个人认为|我的(?:答案|选择))[^。！？!?；;\n不非]{0,40}?"
    r"(?:是|为|选择?)\s*(?:选项|答案)?\s*" + _L,
]
_EN_DECLARED = [
    r"\b(?:the\s+)?(?:correct|right|best|final)?\s*(?:answer|option|choice)\s*(?:would\s+be|is|:|=|-)\s*[:=]?\s*(?:option\s*|choice\s*|answer\s*)?"
    + _L,
    r"\banswer\s*(?:is\s*)?:?\s*" + _L,
    # "The answer to the question (…) is: Option C"
    r"\banswer\s+to\s+(?:the|this|your)\s+question\b[^\n]{0,200}?\bis\s*[:=]?\s*(?:option\s*)?"
    + _L,
    r"\b(?:I\s+(?:would\s+)?(?:choose|pick|select)|choose|select)\s+(?:option\s*)?" + _L,
]
_FR_DECLARED = [
    r"\b(?:la\s+)?(?:bonne|meilleure)?\s*r[ée]ponse\s*(?:correcte|juste|exacte)?\s*(?:est|serait|:|=)\s*(?:donc\s*)?(?:l'option\s*|la\s+proposition\s*|la\s+)?"
    + _L,
    r"\b(?:je\s+choisis|on\s+choisit|choisir)\s+(?:l'option\s*|la\s+proposition\s*)?" + _L,
]
_DECLARED = [re.compile(p, re.IGNORECASE) for p in _EN_DECLARED + _FR_DECLARED] + [
    re.compile(p) for p in _ZH_DECLARED
]
# A declared answer that names no option.
_NONE = re.compile(
    r"答案(?:是|为)?(?:没有|无)|没有(?:正确|错误)(?:的)?(?:答案|选项)|none of the (?:above|options)"
    r"|aucune (?:des )?(?:réponses?|propositions?)",
    re.IGNORECASE,
)
# A reply that opens with its letter: "B", "B.", "(C)", "选项E：", "Option A -"; not the
# English article ("A patient comes to…").
_LEADING = re.compile(
    r"^\s*(?:选项|答案|option|answer|réponse|r[ée]ponse)?\s*[:：]?\s*"
    + _L
    + r"(?!(?<=A)\s+(?!(?:and|or|et|ou)\b)(?-i:[a-z]))",
    re.IGNORECASE,
)
# Concluding statements naming one letter as the answer.
_CONCLUDING = [
    re.compile(
        r"(?:选项|选)?\s*"
        + _L
        + r"\s*(?:项|选项)?\s*(?:(?:错误|不正确|正确)[，,]\s*)?(?:应该|应当|应)?\s*(?:是|为)\s*(?:本题|该题|此题)?(?:的)?(?:正确|最佳|最合适)?(?:的)?(?:答案|选项)(?!都|均)"
    ),
    re.compile(
        r"(?:故|因此|所以|综上所述?|综上)[，,]?\s*(?:本题)?(?:的)?(?:答案|选项)?\s*(?:是|为)?\s*选项\s*"
        + _L
        + r"(?=\s*(?:[。.!！;；\n]|$))"
    ),
    re.compile(r"\boption\s*" + _L + r"\s*is\s*(?:the\s+)?(?:correct|right|best)", re.IGNORECASE),
    re.compile(
        r"(?:l'option|la\s+proposition|r[ée]ponse)\s*"
        + _L
        + r"\s*est\s+(?:la\s+)?(?:bonne|correcte|juste|exacte)",
        re.IGNORECASE,
    ),
    re.compile(
        _L + r"\s*(?:is|est)\s+(?:the\s+|la\s+)?(?:correct|right|bonne)\s+(?:answer|r[ée]ponse)",
        re.IGNORECASE,
    ),
]


# A cut reply ending in an option's marker whose letter the cut took ("…\n选项", or "…\n选�"
# when the cut fell inside a character).
_CUT_MARKER = re.compile(r"\n[ \t]*(?:选[项\ufffd]?|option)\s*\Z", re.IGNORECASE)


def _letter(m: re.Match[str]) -> str:
    return (m.group("b") or m.group("u") or m.group("l")).upper()


@lru_cache(maxsize=256)
def _widened(pattern: re.Pattern[str], last: str) -> re.Pattern[str]:
    """``pattern`` reading the letters up to ``last`` (``"G"`` for seven options) instead of
    A–E. Past H a capital I opening a clause ("I think", "I'm") is the pronoun, not option I.

    >>> _widened(_LEADING, "G").match("G. Cushing syndrome").group("u")
    'G'
    """
    if last <= "E":
        return pattern
    up = ALL_LETTERS[: ALL_LETTERS.index(last) + 1]
    low = up.lower()
    capital = f"[{up.replace('I', '')}]" + ("|I(?![\\s'’]*[a-z])" if "I" in up else "")
    text = (
        pattern.pattern.replace("[A-Ea-e]", f"[{up}{low}]")
        .replace("(?P<u>[A-E])", f"(?P<u>{capital})")
        .replace("(?P<l>[a-e])", f"(?P<l>[{low}])")
        .replace("[A-E](?![A-Za-z0-9])", f"[{up}](?![A-Za-z0-9])")
    )
    return re.compile(text, pattern.flags)


def _first(
    pattern: re.Pattern[str], text: str, last: str = "E"
) -> tuple[re.Match[str], bool] | None:
    """First match of ``pattern`` and whether it names several letters ("A、B和C")."""
    m = _widened(pattern, last).search(text)
    return None if m is None else (m, bool(_widened(_MULTI, last).match(text, m.end())))


def _single(pattern: re.Pattern[str], text: str, last: str = "E") -> re.Match[str] | None:
    """First match of ``pattern`` naming exactly one letter."""
    for m in _widened(pattern, last).finditer(text):
        if not _widened(_MULTI, last).match(text, m.end()):
            return m
    return None


def _option_key(text: str) -> str:
    return re.sub(r"[\s。.，,、；;：:！!？?（）()“”\"'‘’]+", "", text).lower()


def _by_option_text(text: str, options: Sequence[str], letters: str) -> Extraction | None:
    flat = _option_key(text)
    if not flat:
        return None
    keys = [_option_key(o) for o in options]
    exact = [i for i, k in enumerate(keys) if k and k == flat]
    if len(exact) == 1:
        return Extraction(letters[exact[0]], "option-text", 0)
    found = [i for i, k in enumerate(keys) if k and k in flat]
    # An option contained in another that also matched ("阿司匹林" in "阿司匹林肠溶片")
    # is no evidence of its own.
    found = [i for i in found if not any(j != i and keys[i] in keys[j] for j in found)]
    if len(found) == 1:
        return Extraction(letters[found[0]], "option-text", flat.find(keys[found[0]]))
    return None


def find_answer(
    text: str,
    options: Sequence[str] | None = None,
    letters: str = LETTERS,
    finish_reason: str | None = None,
) -> Extraction:
    """Find the answer a reply gives; ``Extraction.letter`` is None when it gives none, and
    ``Extraction.reason`` then says why (see the module).

    ``options`` (the option texts, in letter order) let a reply that quotes one option
    without its letter count as choosing it; ``finish_reason`` (the model's: ``"length"``
    when the token limit cut the reply) makes a cut reply without a stated answer
    ``cut_off``.
    """
    norm = _normalise(text or "")
    if not norm.strip():
        return Extraction(None, "none", reason="empty")
    allowed = set(letters.upper())
    last = max(allowed, default="E")  # options past E widen the rules' letters
    # Letters a little past the options are read too, to tell a reply naming one of them
    # (out of range) from a reply naming none.
    scan = ALL_LETTERS[min(len(ALL_LETTERS) - 1, ALL_LETTERS.index(last) + 3)]
    found = _stated(norm, allowed, scan)
    if found is not None:
        return _contradicted(found, norm, allowed, scan)
    listed = listed_letters(_answer_parts(norm))  # options discussed in explanations: no list
    everywhere = listed_letters(norm)  # …unless the list goes past the options (F, G, H…)
    if (
        len(listed) > 1
        or (listed and cut_off(finish_reason) and _CUT_MARKER.search(norm))
        or (len(everywhere) > 1 and not set(everywhere) <= allowed)
    ):
        return Extraction(None, "listing", 0, "echo")
    m = _widened(_LEADING, scan).match(norm)
    if m:
        if _widened(_MULTI, scan).match(norm, m.end()):
            return Extraction(None, "leading", m.start(), "several")
        return _checked(_letter(m), "leading", m.start(), allowed)
    named = listed_letters(split_answer_explanation(norm)[0] or norm, named=True)
    if named:  # one option named as the list names it ("A: 避孕药代谢加快 …")
        return _checked(named[0], "leading", 0, allowed)
    if options:
        found = _by_option_text(norm, [_normalise(o) for o in options], letters.upper())
        if found is not None:
            return found
    return Extraction(None, "none", reason="cut_off" if cut_off(finish_reason) else "no_letter")


def _answer_parts(norm: str) -> str:
    """What a reply says before its explanation (``解析：``…), and the line before each further
    explanation: ``选项A：…\\n说明：…\\n选项B：…\\n说明：…`` answers with A and with B."""
    starts = list(_EXPLANATION_START.finditer(norm))
    if not starts:
        return norm
    lines = [norm[: m.start()].rstrip().rsplit("\n", 1)[-1] for m in starts[1:]]
    return "\n".join([norm[: starts[0].start()], *lines])


def _contradicted(found: Extraction, norm: str, allowed: set[str], scan: str) -> Extraction:
    """``found``, or none (``several``) when the reply also states another letter: it opens
    with one and declares another (``A. Angina\\n\\nThe correct answer is D``), or declares
    two. Options discussed one by one (``选项A：正确…选项D：错误…``) are no statement."""
    if found.letter is None:
        return found
    stated = set()
    m = _widened(_LEADING, scan).match(norm)  # the letter it opens with, unless it opens a list
    if m and not _widened(_MULTI, scan).match(norm, m.end()) and len(listed_letters(norm)) < 2:
        stated.add(_letter(m))
    for pattern in _DECLARED:
        for m in _widened(pattern, scan).finditer(norm):
            if not _widened(_MULTI, scan).match(norm, m.end()):
                stated.add(_letter(m))
    if stated & allowed - {found.letter}:
        return Extraction(None, found.rule, found.start, "several")
    return found


def _checked(letter: str, rule: str, start: int, allowed: set[str]) -> Extraction:
    """``letter`` found by ``rule``: the answer, or none when the question has no such
    option."""
    if letter in allowed:
        return Extraction(letter, rule, start)
    return Extraction(None, rule, start, "out_of_range")


def _stated(norm: str, allowed: set[str], scan: str) -> Extraction | None:
    """The answer a reply states (rules 1 and 2 of the module), or None when it states none."""
    best: Extraction | None = None
    for pattern in _DECLARED:
        found = _first(pattern, norm, scan)
        if found is None or (best is not None and found[0].start() >= best.start):
            continue
        m, several = found
        if several:
            best = Extraction(None, "declared", m.start(), "several")
        else:
            best = _checked(_letter(m), "declared", m.start(), allowed)
    none = _NONE.search(norm)
    if none and (best is None or none.start() < best.start):
        return Extraction(None, "declared", none.start(), "none_of_them")
    if best is not None:
        return best
    for pattern in _CONCLUDING:
        hit = _single(pattern, norm, scan)
        if hit:
            return _checked(_letter(hit), "concluding", hit.start(), allowed)
    return None


def extract_answer(
    text: str, options: Sequence[str] | None = None, letters: str = LETTERS
) -> str | None:
    """The letter (upper case) a reply chooses, or None; see :func:`find_answer`."""
    return find_answer(text, options, letters).letter


_EXPLANATION_START = re.compile(
    r"(?:解析|解释|分析|说明|explanation|explication|rationale)\s*[:：]", re.I
)


def split_answer_explanation(text: str) -> tuple[str, str]:
    """Split a reply into its answer part and its explanation (after ``解析：`` or similar).

    Without such a heading the whole reply is the explanation and the answer part is empty.
    """
    m = _EXPLANATION_START.search(text or "")
    if m is None:
        return "", text or ""
    return text[: m.start()], text[m.end() :]


_ARGUED = [
    re.compile(
        r"(?:故|因此|所以|综上所述?|综上|因而|即)[，,]?\s*(?:本题|该题|此题)?(?:的)?"
        r"(?:(?:正确|最佳)?(?:答案|选项)\s*(?:应该|应当|应)?\s*(?:是|为|选择?)|应?选择?)"
        r"\s*[:：]?\s*(?:选项)?\s*" + _L
    ),
    re.compile(
        r"(?:therefore|thus|hence|so)[, ]+(?:the\s+)?(?:correct\s+)?(?:answer|option)\s*(?:is)?\s*(?:option\s*)?"
        + _L,
        re.I,
    ),
    re.compile(r"(?:donc|ainsi)[, ]+(?:la\s+)?(?:bonne\s+)?r[ée]ponse\s*(?:est)?\s*" + _L, re.I),
]


def argued_letter(explanation: str) -> str | None:
    """The letter an explanation argues for: its last concluding "故本题选D" / "therefore B",
    else an answer it states outright; None when it never commits to one (merely discussing
    options, or quoting their texts, is no commitment)."""
    norm = _normalise(explanation or "")
    last: re.Match[str] | None = None
    for pattern in _ARGUED:
        for m in pattern.finditer(norm):
            if _MULTI.match(norm, m.end()):
                continue
            if last is None or m.start() > last.start():
                last = m
    if last is not None:
        return _letter(last)
    for pattern in [*_DECLARED, *_CONCLUDING]:
        hit = _single(pattern, norm)
        if hit is not None:
            return _letter(hit)
    return None
