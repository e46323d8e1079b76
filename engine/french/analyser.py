"""The French analyser shared by BM25 indexing, BM25 queries and query-term highlighting.

A word is lower-cased, dropped if it is a French stop word, stemmed with the Snowball French
stemmer (PyStemmer) and finally stripped of accents, so ``Hépatiques``, ``hépatique`` and
``hepatique`` all become ``hepat``. Elisions split on the apostrophe (``l'acide`` gives ``l`` and
``acide``; ``l`` is a stop word). The Snowball stemmer is given the accented word, since its
rules read accents; folding comes after.

>>> analyse("Les particules alpha sont peu ionisantes")
['particul', 'alpha', 'peu', 'ionis']
>>> [text[s:e] for text in ["L'hépatite aiguë"] for _, s, e in analyse_spans(text)]
['hépatite', 'aiguë']
"""

from __future__ import annotations

import re
import unicodedata

import Stemmer
from bm25s.stopwords import STOPWORDS_FRENCH

# Snowball's French list, plus a few function words it leaves out.
STOP_WORDS: frozenset[str] = frozenset(STOPWORDS_FRENCH) | frozenset(
    [
        "a",
        "ça",
        "car",
        "ce",
        "cela",
        "celle",
        "celles",
        "celui",
        "ceux",
        "cet",
        "cette",
        "ci",
        "dont",
        "donc",
        "là",
        "ni",
        "or",
        "où",
        "quel",
        "quelle",
        "quelles",
        "quels",
        "sans",
        "selon",
        "sous",
        "tel",
        "telle",
        "tels",
        "telles",
        "vers",
    ]
)

_WORD = re.compile(r"\w+", re.UNICODE)
_stemmer = Stemmer.Stemmer("french")


def fold_accents(text: str) -> str:
    """``"hépatique aiguë"`` → ``"hepatique aigue"`` (combining marks dropped; œ → oe, æ → ae)."""
    text = text.replace("œ", "oe").replace("æ", "ae").replace("Œ", "OE").replace("Æ", "AE")
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_FOLDED_STOP_WORDS = frozenset(fold_accents(w) for w in STOP_WORDS)


def _term(word: str) -> str | None:
    lower = word.lower()
    if lower in STOP_WORDS or fold_accents(lower) in _FOLDED_STOP_WORDS:
        return None
    return fold_accents(_stemmer.stemWord(lower)) or None


class _TermCache(dict[str, str | None]):
    """word → index term, computed on first sight (bounded: cleared when it grows too big)."""

    limit = 1_000_000

    def __missing__(self, word: str) -> str | None:
        if len(self) >= self.limit:
            self.clear()
        term = self[word] = _term(word)
        return term


_cache = _TermCache()


def analyse_word(word: str) -> str | None:
    """The index term of one word, or None for a stop word (``word`` as found in the text)."""
    return _cache[word]


def analyse(text: str) -> list[str]:
    """The index terms of ``text`` in order (repeats kept: BM25 counts them)."""
    return [t for t in map(_cache.__getitem__, _WORD.findall(text)) if t is not None]


def analyse_many(texts: list[str]) -> list[list[str]]:
    """:func:`analyse` over many texts."""
    return [analyse(t) for t in texts]


def analyse_spans(text: str) -> list[tuple[str, int, int]]:
    """``(term, start, end)`` for each indexed word of ``text``; ``text[start:end]`` is the word."""
    out = []
    for match in _WORD.finditer(text):
        term = analyse_word(match.group())
        if term is not None:
            out.append((term, match.start(), match.end()))
    return out


def match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Character spans of the words of ``text`` that share an index term with ``query``.

    Matching is accent- and stem-aware: the query ``hépatique`` marks ``hépatiques`` and
    ``Hepatique`` in the text. Spans are sorted and do not overlap.

    >>> match_spans("Les hépatites virales", "hépatite B")
    [(4, 13)]
    """
    terms = set(analyse(query))
    return [(s, e) for term, s, e in analyse_spans(text) if term in terms]


def mark(text: str, spans: list[tuple[int, int]], before: str = "[", after: str = "]") -> str:
    """``text`` with each span wrapped in ``before`` … ``after`` (e.g. rich markup tags).

    >>> mark("Les hépatites virales", [(4, 13)], "**", "**")
    'Les **hépatites** virales'
    """
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], before, text[start:end], after]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)
