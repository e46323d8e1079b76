"""A student practising FrenchMedMCQA questions, optionally with retrieved passages.

:class:`FrenchSitting` is what the terminal (``medexam french take``) and the GUI draw: the
current question and its options, the passages retrieved for it with the query words located
(accent- and stem-aware character spans, ready to highlight), a multi-select answer, the
per-question Hamming score and exact match, and the overall scores. A person answers where a
model would, through the one run loop (:class:`engine.core.solvers.Sitting`): the question and
passages are the context a model's run is given (:func:`engine.french.context.reader_context`:
a question's own passage is never shown), the loop scores each answer by French QA's scorers
and stores it at once, and the run's summary is a model run's, so ``medexam rescore`` scores
it again; a sitting quit or killed goes on where it stopped (``medexam french take --resume``).

>>> session = FrenchSitting(store, "frenchmedmcqa-sample", index=index, limit=3)  # doctest: +SKIP
>>> view = session.question()                                                    # doctest: +SKIP
>>> view.passages[0].marked("[", "]")                                            # doctest: +SKIP
>>> feedback = session.answer(["a", "c"])                                        # doctest: +SKIP
>>> feedback.hamming, feedback.exact, session.summary()["hamming"]               # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.bank.blocks import block_items, stored_block
from engine.core.scoring import summarize
from engine.core.solvers import PERSON, Sitting, card_hook
from engine.french.analyser import mark, match_spans
from engine.french.book import OptionNotes, check_book, option_notes
from engine.french.context import ReaderContext, answer_fields, reader_context
from engine.french.dataset import ACTIVITY, LETTERS, options, retrieval_query
from engine.french.index import Index
from engine.french.reader import parse_letters
from engine.review.profiles import resolve, run_profile
from engine.store.store import Store, StoreError

if TYPE_CHECKING:
    from engine.types import JSONDict, Summary


@dataclass
class PassageView:
    """A retrieved passage and the character spans of the words it shares with the query."""

    passage_id: int
    source: str
    score: float
    text: str
    spans: list[tuple[int, int]]
    label: str = ""
    """The origin in words (:func:`engine.french.passages.source_label`)."""

    def marked(self, before: str = "[", after: str = "]") -> str:
        """The text with each matched word wrapped in ``before`` … ``after``."""
        return mark(self.text, self.spans, before, after)


@dataclass
class QuestionView:
    """One question as shown to the student (the gold answer is not in it)."""

    position: int
    total: int
    id: str
    question: str
    options: list[tuple[str, str]]
    passages: list[PassageView] = field(default_factory=list)
    answered: bool = False
    notes: list[OptionNotes] = field(default_factory=list)
    """Closed book, once answered: what in the passages bears on each option
    (:func:`engine.french.book.option_notes`)."""


@dataclass
class Feedback:
    """The verdict on one answer."""

    id: str
    chosen: list[str]
    gold: list[str]
    hamming: float
    exact: bool

    @property
    def missed(self) -> list[str]:
        """Exact options the student did not select."""
        return sorted(set(self.gold) - set(self.chosen))

    @property
    def wrong(self) -> list[str]:
        """Selected options that are not exact."""
        return sorted(set(self.chosen) - set(self.gold))


def _letters(answer: Iterable[str] | str) -> list[str]:
    if isinstance(answer, str):
        return parse_letters(answer)
    out = set()
    for x in answer:
        letter = str(x).strip().lower()
        if letter not in LETTERS:
            raise ValueError(f"not an option letter: {x!r}")
        out.add(letter)
    return sorted(out)


class FrenchSitting:
    """A stored practice session over ``dataset``: ``limit`` questions (of ``keys``, when
    given) drawn at random in a random order with ``seed`` (the same block again for the
    same seed, stored on the run), the first ``limit`` in data set order without one.

    With ``index``, each question comes with its ``k`` best passages for the query "question +
    options", as a model's run is given them. Answer with :meth:`answer` (letters, a list or
    text like "A + D"); questions may be answered in any order, each once. :meth:`finish`
    closes the run with the summary. ``profile`` names the person (default: the default
    profile; a new name is created); every answer also reviews the question's card
    (:mod:`engine.review`). ``book`` (:data:`engine.french.book.BOOKS`) says when the
    passages show: ``open`` with the question, ``closed`` only once it is answered (with
    :attr:`QuestionView.notes`; the answer stores no passage, as none was seen), ``none``
    never.
    """

    def __init__(
        self,
        store: Store,
        dataset: str,
        limit: int | None = None,
        index: Index | None = None,
        k: int = 1,
        run_id: int | None = None,
        profile: str | None = None,
        keys: Sequence[str] | None = None,
        seed: int | None = None,
        book: str = "open",
    ) -> None:
        self.store = store
        self.book = check_book(book)
        self.profile = resolve(store, profile, create=True)
        self.dataset = dataset
        self.index = index
        self.k = k
        if run_id is not None:  # the questions of the stored run, in the order asked
            self.items = stored_block(store.items(dataset), store.run(run_id)["settings"] or {})
            block: JSONDict = {}
        elif keys is None and seed is None:  # the first ones: no need to read them all
            self.items, block = block_items(store.items(dataset, limit), None, limit)
        else:
            self.items, block = block_items(store.items(dataset), keys, limit, seed)
        if not self.items:
            raise StoreError(f"data set {dataset!r} holds no question")
        self._feedback: dict[str, Feedback] = {}
        self._contexts: dict[tuple[str, str, int], ReaderContext] = {}
        self._shown: dict[str, ReaderContext] = {}
        settings: JSONDict = {}
        if run_id is None:
            settings = {
                "index": index.name if index else None,
                "k": k if index else 0,
                "book": book,
                **block,
                "profile": self.profile,
            }
        else:
            self.profile = _resumed(store, run_id, dataset)
        self.sitting = Sitting(
            store, ACTIVITY, dataset, settings, resume=run_id,
            on_answer=card_hook(ACTIVITY, dataset, self.profile, timed=False),
            extra={"total": len(self.items)}, seconds=False,
        )  # fmt: skip
        if run_id is not None:
            for a in store.answers(run_id):
                extra = a["extra"] or {}
                self._feedback[a["item_key"]] = Feedback(
                    a["item_key"],
                    extra.get("pred", []),
                    extra.get("gold", []),
                    float((a["scores"] or {}).get("hamming") or 0.0),
                    bool(a["correct"]),
                )
        self.run_id: int = self.sitting.run_id  # type: ignore[assignment]
        self.position = self._next_unanswered(0)
        self._summary = self._summarised()

    @classmethod
    def resume(
        cls, store: Store, run_id: int, index: Index | None = None, k: int = 1
    ) -> FrenchSitting:
        """Continue a stored session (its unanswered questions), its passages shown as
        before (``open``, ``closed`` or ``none``)."""
        run = store.run(run_id)
        book = str((run["settings"] or {}).get("book") or "open")
        return cls(store, run["dataset"], index=index, k=k, run_id=run_id, book=book)

    def __len__(self) -> int:
        return len(self.items)

    def _next_unanswered(self, start: int) -> int:
        for i in range(start, len(self.items)):
            if self.items[i]["id"] not in self._feedback:
                return i
        for i in range(0, start):
            if self.items[i]["id"] not in self._feedback:
                return i
        return len(self.items)

    @property
    def done(self) -> bool:
        """True once every question is answered."""
        return len(self._feedback) == len(self.items)

    @property
    def finished(self) -> bool:
        """True once the run has ended (every question answered, or :meth:`finish`)."""
        return self.sitting.summary is not None

    @property
    def left(self) -> int:
        """How many questions are not answered yet."""
        return len(self.items) - len(self._feedback)

    def set_retrieval(self, index: Index | None, k: int) -> None:
        """Retrieve with ``index`` (None: no passages) and ``k`` passages from now on; the
        passages already retrieved are forgotten, so asking for the current question again
        retrieves them anew. Answers already given keep the passages they were shown."""
        if k < 1:
            raise ValueError(f"k must be at least 1 (got {k})")
        self.index, self.k = index, k
        self._contexts.clear()

    def set_book(self, book: str) -> None:
        """Show the passages ``open``, ``closed`` or ``none`` from now on (answers already
        given keep the passages they were shown)."""
        self.book = check_book(book)

    def context(self, position: int) -> ReaderContext:
        """What question ``position`` is shown with: a model's context for it (the passages
        of the index, its own passage left out), remembered as what the answer saw."""
        item = self.items[position]
        key = (item["id"], self.index.name if self.index else "", self.k)
        if key not in self._contexts:
            self._contexts[key] = reader_context(self.index, self.dataset, item, self.k)
        self._shown[item["id"]] = self._contexts[key]
        return self._contexts[key]

    def passages(self, position: int) -> list[PassageView]:
        """The passages of question ``position`` (:meth:`context`) with the query words
        located (see :meth:`set_retrieval` to change the index or ``k`` between questions)."""
        query = retrieval_query(self.items[position])
        return [
            PassageView(
                h.passage_id, h.source, h.score, h.text, match_spans(h.text, query), h.label
            )
            for h in self.context(position).passages
        ]

    def question(self, position: int | None = None) -> QuestionView:
        """Question ``position`` (default: the next unanswered one)."""
        position = self.position if position is None else position
        if not 0 <= position < len(self.items):
            raise IndexError(f"no question at position {position}")
        item = self.items[position]
        answered = item["id"] in self._feedback
        shown = self.book == "open" or (self.book == "closed" and answered)
        passages = self.passages(position) if shown else []
        notes = []
        if self.book == "closed" and passages:
            notes = option_notes(passages, item["question"], options(item))
        return QuestionView(
            position,
            len(self.items),
            item["id"],
            item["question"],
            options(item),
            passages,
            answered,
            notes,
        )

    def answer(self, answer: Iterable[str] | str, position: int | None = None) -> Feedback:
        """Record the letters chosen for question ``position`` (default: the current one) and
        return the verdict of French QA's scorers. An empty answer is allowed and scored as
        such."""
        position = self.position if position is None else position
        if not 0 <= position < len(self.items):
            raise IndexError(f"no question at position {position}")
        item = self.items[position]
        if item["id"] in self._feedback:
            raise StoreError(f"question {item['id']!r} is already answered")
        chosen = _letters(answer)
        shown = self._shown.get(item["id"])  # none: answered closed book (or unseen)
        known = (
            shown is not None
            and self.index is not None
            and self.index.corpus_dataset == self.dataset
        )
        shown = shown or ReaderContext(item)
        fields = answer_fields(shown, self.dataset, chosen, known)
        stored = self.sitting.give({"response": fields["chosen"], **fields}, position)
        values = stored.get("scores") or {}
        fb = Feedback(
            item["id"],
            chosen,
            fields["extra"]["gold"],
            round(float(values.get("hamming") or 0.0), 4),
            bool(values.get("exact")),
        )
        self._feedback[item["id"]] = fb
        self.position = self._next_unanswered(position + 1)
        self._summary = self._summarised()
        return fb

    def feedback(self, position: int) -> Feedback | None:
        """The verdict already given on question ``position``, if answered."""
        return self._feedback.get(self.items[position]["id"])

    def _summarised(self) -> Summary:
        summary = summarize(self.store, self.run_id)
        return {**summary, "run_id": self.run_id, "total": len(self.items)}

    def summary(self) -> Summary:
        """A French run's summary of the answers so far (:func:`engine.core.scoring.summarize`:
        ``hamming``, ``emr``, ``by_n_answers``… in percent, ``answered``) and
        ``total``, the session's questions; as it was when the last answer was stored (so
        any thread may read it)."""
        return dict(self._summary)

    def finish(self) -> Summary:
        """Close the run (finished if all answered, else cancelled) and return the summary."""
        return self.sitting.stop()


def _resumed(store: Store, run_id: int, dataset: str) -> str:
    """The profile of person run ``run_id`` to resume (refused when it is not a French
    practice session on ``dataset``)."""
    run = store.run(run_id)
    if run["runner"] != PERSON or run["activity"] != ACTIVITY or run["dataset"] != dataset:
        raise StoreError(f"run {run_id} is not a practice session on {dataset!r}")
    return run_profile(run)
