"""Splitting documents into retrieval passages.

A passage is a run of whole sentences from one paragraph (or several, when paragraphs are
short) of at least ``min_chars`` characters; a passage grows sentence by sentence and closes at
the first paragraph end past ``min_chars``, or before a sentence that would take it past
``max_chars``. A too-short tail joins the passage before it. Each passage is an exact slice of its
document: ``document[offset:offset + len(text)] == text``.

>>> text = "Première phrase assez longue pour compter. " * 3 + "\\n\\n" + "Autre paragraphe. " * 7
>>> [(p.offset, len(p.text)) for p in split_passages(text, "doc.txt")]
[(0, 128), (131, 125)]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

MIN_CHARS = 100
MAX_CHARS = 800

# A sentence ends at . ! ? … (optionally followed by closing quotes or brackets) then spaces,
# when the next sentence starts with a capital, a digit or an opening quote or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»)\]]*\s+(?=[«\"(\[A-ZÀ-ÖØ-Þ0-9])")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# ``dataset#id`` sources of passages made from a data set's questions (their ids are hashes).
_QUESTION_SOURCE = re.compile(r"^(?P<dataset>.+)#(?P<id>[^#]+)$")
_HASH = re.compile(r"^[0-9a-f]{16,}$")


def source_label(source: str, text: str, words: int = 8) -> str:
    """A short name for a passage's origin that a person can read.

    A passage made from a data set's question (source ``dataset#id``, the id a hash) is named
    by its data set and the first ``words`` words of its text; a short id is kept; a file
    source is its file name.

    >>> question = "Parmi les propositions suivantes, laquelle est exacte ?"
    >>> source_label("train#" + "ab" * 32, question)
    'train: « Parmi les propositions suivantes, laquelle est exacte ? »'
    >>> source_label("train#q12", "…"), source_label("notes/cours/foie.md", "…")
    ('train, question q12', 'foie.md')
    """
    m = _QUESTION_SOURCE.match(source)
    if m is not None:
        if not _HASH.match(m["id"]):
            return f"{m['dataset']}, question {m['id']}"
        head = text.split()
        short = " ".join(head[:words]) + (" …" if len(head) > words else "")
        return f"{m['dataset']}: « {short} »"
    return source.replace("\\", "/").rsplit("/", 1)[-1] or source


@dataclass(frozen=True)
class Passage:
    """A slice of a document: its text, the document it came from, and where it starts."""

    text: str
    source: str
    offset: int

    def as_dict(self) -> dict[str, object]:
        return {"text": self.text, "source": self.source, "offset": self.offset}


def _spans(text: str, pattern: re.Pattern[str], start: int, end: int) -> Iterator[tuple[int, int]]:
    """Non-blank stripped pieces of ``text[start:end]`` between matches of ``pattern``."""
    pos = start
    for m in pattern.finditer(text, start, end):
        yield from _strip(text, pos, m.start())
        pos = m.end()
    yield from _strip(text, pos, end)


def _strip(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def sentences(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, ends_paragraph)`` of each sentence of ``text``."""
    out = []
    for p_start, p_end in _spans(text, _PARAGRAPH, 0, len(text)):
        pieces = list(_spans(text, _SENTENCE_END, p_start, p_end))
        for i, (s, e) in enumerate(pieces):
            out.append((s, e, i == len(pieces) - 1))
    return out


def split_passages(
    text: str, source: str, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS
) -> list[Passage]:
    """Cut ``text`` into passages of at least ``min_chars`` characters on sentence or paragraph
    boundaries (see the module docstring). A document shorter than ``min_chars`` gives none."""
    if min_chars > max_chars:
        raise ValueError("min_chars must not exceed max_chars")
    spans: list[tuple[int, int]] = []
    start = end = None
    for s, e, para_end in sentences(text):
        if (
            start is not None
            and end is not None
            and e - start > max_chars
            and end - start >= min_chars
        ):
            spans.append((start, end))
            start = None
        if start is None:
            start = s
        end = e
        if para_end and end - start >= min_chars:
            spans.append((start, end))
            start = None
    if start is not None and end is not None:
        if end - start >= min_chars or not spans:
            spans.append((start, end))
        else:
            spans[-1] = (spans[-1][0], end)
    return [Passage(text[s:e], source, s) for s, e in spans if e - s >= min_chars]
