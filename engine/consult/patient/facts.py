"""Pick the facts a doctor's question asks about, so the patient is only ever given those.

Each fact is a small document: its key's content words (counted twice, keys name what a
question asks about) and its value's. A question's content words, plus the record words its
everyday words stand for (:data:`engine.consult.text.QUERY_EXPANSIONS`: "fever" also looks for
"temperature"), are scored against them with BM25 (bm25s, Lucene variant); in English cases the
question is also compared with each ``key: value`` by MiniLM embeddings, which bridges words BM25
cannot ("fever" ↔ "Temperature"). A fact is selected when

* its BM25 score is above ``min_bm25`` (by default: it shares a content word with the
  question) and at least ``relative`` × the best BM25 score, or
* (``hybrid``/``embedding``) its cosine is at least ``min_cosine`` (``strong_cosine`` when
  BM25 already selected something) and within ``cosine_margin`` of the best cosine;

at most ``k`` facts are kept, best first. Nothing selected means the question asks about
something the patient does not know.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engine.consult.cases.cases import Fact
from engine.consult.patient.contradict import SAME
from engine.consult.text import content_words, expand_question

if TYPE_CHECKING:
    import bm25s

METHODS = ("bm25", "embedding", "hybrid")
#: Where a question asks a second thing: a second sentence, or "and"/"or"/";" before a new
#: question ("How old are you and when did it start?"; not "fever and chills").
_ASKS = (
    r"how|what|when|where|which|who|why|do|does|did|have|has|had|are|is|was|were|can|could"
    r"|any|tell"
)
_PART = re.compile(
    r"(?<=[?？])\s*|\s*;\s*|,?\s+(?:and|or|also)\s+(?=(?:" + _ASKS + r")\b)", re.IGNORECASE
)


def _same(words: list[str]) -> list[str]:
    """``words`` and the word each names the same thing as ("smoker" is also "smoke":
    "Do you smoke?" finds "Non-smoker")."""
    return words + [SAME[w] for w in words if w in SAME]


def question_parts(question: str, language: str = "en") -> list[str]:
    """The things ``question`` asks, one string each (the question itself when it asks one);
    English splits at "and", "or", ";" and "?", other languages at question marks.

    >>> question_parts("How old are you and when did the double vision start?")
    ['How old are you?', 'When did the double vision start?']
    >>> question_parts("Do you have fever and chills?")
    ['Do you have fever and chills?']
    """
    text = question.strip()
    parts = re.split(r"(?<=[?？])\s*", text) if language != "en" else _PART.split(text)
    parts = [p.strip(" ,") for p in parts if p and p.strip(" ,")]
    if len(parts) < 2:
        return [text] if text else []
    mark = "？" if language == "zh" else "?"
    parts = [p[:1].upper() + p[1:] for p in parts]
    return [p if p[-1] in "?？.!" else p + mark for p in parts]


@dataclass(frozen=True)
class Match:
    """A selected fact: its position in the case, the fact, and why it was selected."""

    index: int
    key: str
    value: str
    score: float
    bm25: float
    cosine: float | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(eq=False)
class FactSelector:
    """Selects the facts of one case that a question asks about.

    >>> facts = [Fact("Allergies", "penicillin"), Fact("Smoking", "never smoked")]
    >>> [m.key for m in FactSelector(facts, method="bm25").select("Any allergies?")]
    ['Allergies']
    """

    facts: list[Fact]
    language: str = "en"
    method: str | None = None  # None: hybrid in English, bm25 otherwise
    k: int = 3
    min_bm25: float = 0.0
    relative: float = 0.7
    min_cosine: float = 0.35
    cosine_margin: float = 0.08
    strong_cosine: float = 0.5
    _docs: list[list[str]] = field(init=False, repr=False)
    _bm25: bm25s.BM25 | None = field(default=None, init=False, repr=False)
    _vectors: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.method is None:
            self.method = "hybrid" if self.language == "en" else "bm25"
        if self.method not in METHODS:
            raise ValueError(f"unknown fact matching method {self.method!r}")
        language = self.language
        self._docs = [_same(content_words(f.key, language) * 2 + content_words(f.value, language))
                      for f in self.facts]  # fmt: skip
        if self.method != "embedding":
            import bm25s

            self._bm25 = bm25s.BM25(method="lucene")
            self._bm25.index([d or ["_"] for d in self._docs], show_progress=False)

    def bm25_scores(self, question: str) -> np.ndarray:
        """BM25 score of every fact for ``question`` (zeros when no word matches)."""
        if self._bm25 is None or not self.facts:
            return np.zeros(len(self.facts), dtype=np.float32)
        words = [w for w in expand_question(question, self.language) if w]
        if not words:
            return np.zeros(len(self.facts), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(words), dtype=np.float32)

    def cosines(self, question: str) -> np.ndarray | None:
        """Cosine of ``question`` with every ``key: value`` (None for bm25-only matching)."""
        if self.method == "bm25" or not self.facts:
            return None
        from engine.consult.scoring.similarity import embed

        if self._vectors is None:
            self._vectors = embed([f.text() for f in self.facts])
        return self._vectors @ embed([question])[0]

    def select(self, question: str) -> list[Match]:
        """The facts ``question`` asks about, best first (possibly none)."""
        bm25 = self.bm25_scores(question)
        cos = self.cosines(question)
        chosen: set[int] = set()
        top_b = float(bm25.max()) if len(bm25) else 0.0
        if top_b > self.min_bm25:
            floor = self.relative * top_b
            chosen |= {i for i, s in enumerate(bm25) if s > self.min_bm25 and s >= floor}
        if cos is not None and len(cos):
            top_c = float(cos.max())
            # with words in common, only a close meaning adds a fact the words missed
            least = self.min_cosine if not chosen else max(self.min_cosine, self.strong_cosine)
            if top_c >= least:
                floor_c = max(least, top_c - self.cosine_margin)
                chosen |= {i for i, c in enumerate(cos) if c >= floor_c}

        def combined(i: int) -> float:
            b = float(bm25[i]) / top_b if top_b > 0 else 0.0
            return b + (float(cos[i]) if cos is not None else 0.0)

        ranked = sorted(chosen, key=lambda i: (-combined(i), i))[: self.k]
        return [
            Match(
                index=i,
                key=self.facts[i].key,
                value=self.facts[i].value,
                score=round(combined(i), 4),
                bm25=round(float(bm25[i]), 4),
                cosine=None if cos is None else round(float(cos[i]), 4),
            )
            for i in ranked
        ]
