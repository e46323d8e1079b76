"""When a person practising French QA sees the passages: open book (with the question),
closed book (only once the question is answered) or none; and, for closed book, what in the
passages bears on each option.

An option's notes are the passage sentences that share the most index terms
(:func:`engine.french.analyser.analyse`: accent- and stem-aware) with the option's own
words: the words it shares with the question are left out, since every option would match
them, unless nothing else is left.

>>> from types import SimpleNamespace as P
>>> passages = [P(text="Le foie est atteint. La N-acétylcystéine est l'antidote.")]
>>> options = [("a", "La N-acétylcystéine"), ("b", "Le rein")]
>>> notes = option_notes(passages, "Quel antidote ?", options)
>>> [(n.letter, [(x.passage, x.text) for x in n.notes]) for n in notes]
[('a', [(1, "La N-acétylcystéine est l'antidote.")]), ('b', [])]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from engine.errors import UserError
from engine.french.analyser import analyse, analyse_spans
from engine.french.passages import sentences

BOOKS = ("open", "closed", "none")
"""The passage modes of a person's practice; ``open`` is the default."""
BOOK_NAMES = {"open": "Open book", "closed": "Closed book", "none": "No passages"}
BOOK_TIPS = {
    "open": "The passages show with the question",
    "closed": "The passages show once you answer, with what in them bears on each option",
    "none": "No passage: the question alone",
}


class BookError(UserError, ValueError):
    """A passage mode that is not one of :data:`BOOKS`."""


def check_book(book: str) -> str:
    """``book`` if it is a passage mode, else one line naming the modes."""
    if book not in BOOKS:
        raise BookError(f"unknown passage mode {book!r}: choose {', '.join(BOOKS)}")
    return book


class HasText(Protocol):
    text: str


@dataclass(frozen=True)
class Note:
    """One passage sentence bearing on an option: the passage's number (from 1), the
    sentence, and the spans in it of the option's words."""

    passage: int
    text: str
    spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class OptionNotes:
    """What the passages say of one option (no note: nothing in them bears on it)."""

    letter: str
    option: str
    notes: list[Note] = field(default_factory=list)


def option_notes(
    passages: Sequence[HasText],
    question: str,
    options: Sequence[tuple[str, str]],
    per_option: int = 2,
) -> list[OptionNotes]:
    """For each ``(letter, text)`` option, the (at most ``per_option``) passage sentences
    sharing the most of its words, best first (the earlier passage on a tie)."""
    found = [
        (number, p.text[start:end])
        for number, p in enumerate(passages, 1)
        for start, end, _ in sentences(p.text)
    ]
    terms = [set(analyse(text)) for _, text in found]
    asked = set(analyse(question))
    out = []
    for letter, option in options:
        words = set(analyse(option))
        own = (words - asked) or words
        ranked = sorted(
            ((len(own & t), i) for i, t in enumerate(terms) if own & t),
            key=lambda x: (-x[0], x[1]),
        )
        notes = []
        for _, i in ranked[:per_option]:
            number, text = found[i]
            spans = [(s, e) for term, s, e in analyse_spans(text) if term in own]
            notes.append(Note(number, text, spans))
        out.append(OptionNotes(letter, option, notes))
    return out
