"""The passages of French QA: the corpus/retriever/k controls both French tabs use, the
index a retriever needs (built by the engine on first use), and the passages shown with
the words they share with the question highlighted."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QGridLayout, QSizePolicy, QSpinBox, QWidget

from engine.text.columns import fmt_number
from gui.models import set_setting, setting
from gui.widgets.common import AppContext, combo, esc, whole_text

if TYPE_CHECKING:
    from engine.core.progress import Progress
    from engine.french.book import OptionNotes
    from engine.french.index import Index
    from engine.french.person import Feedback, PassageView
    from gui.workers import Job

RETRIEVERS: list[tuple[str, str]] = [
    ("bm25", "BM25 (words)"),
    ("dense", "Dense (MiniLM embeddings)"),
    ("hybrid", "Hybrid (both, fused)"),
    ("", "No passages"),
]
HIGHLIGHT = "<span style='background:#fde68a; color:#111827'>"


def _highlighted(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for start, end in spans:
        pieces += [esc(text[last:start]), HIGHLIGHT, esc(text[start:end]), "</span>"]
        last = end
    pieces.append(esc(text[last:]))
    return "".join(pieces)


def passages_html(passages: list[PassageView], notes: list[OptionNotes] | None = None) -> str:
    """Retrieved passages with the words they share with the query highlighted; after
    ``notes`` (closed book), first the sentences bearing on each option."""
    if not passages:
        return "<p style='color:#6b7280'>No passage for this question.</p>"
    out = [notes_html(notes)] if notes else []
    for i, p in enumerate(passages, 1):
        out.append(
            f"<p style='margin:0 0 2px 0; color:#6b7280'><small><b>Passage {i}</b> · "
            f"{esc(p.label or p.source)} · score {p.score:.3g}</small></p>"
            f"<p style='margin:0 0 14px 0; line-height:140%'>{_highlighted(p.text, p.spans)}</p>"
        )
    return "".join(out)


def notes_html(notes: list[OptionNotes]) -> str:
    """Each option and the passage sentences bearing on it, its words highlighted."""
    out = ["<p style='margin:0 0 6px 0'><b>What the passages say of each option</b></p>"]
    for o in notes:
        said = "".join(
            f"<br>&nbsp;&nbsp;<small style='color:#6b7280'>Passage {n.passage}:</small> "
            f"{_highlighted(n.text, n.spans)}"
            for n in o.notes
        )
        said = said or "<br>&nbsp;&nbsp;<i style='color:#6b7280'>Nothing in the passages.</i>"
        out.append(
            f"<p style='margin:0 0 8px 0; line-height:135%'><b>{o.letter.upper()}.</b> "
            f"{esc(o.option)}{said}</p>"
        )
    return "".join(out) + "<hr>"


def load_retriever(
    job: Job, corpus: str, retriever: str, cancel: Callable[[], bool] | None = None
) -> Index | None:
    """The index of ``corpus`` for ``retriever`` (built on first use, reused after), its
    build reported to ``job.progress``; it stops with
    :class:`~engine.core.progress.Cancelled` when the job is stopped or ``cancel()`` is true."""
    if not retriever or not corpus:
        return None
    from engine.french.index import build_index

    def cancelled() -> bool:
        return job.cancelled or (cancel is not None and cancel())

    return build_index(job.store, corpus, retriever, progress=job.progress, cancel=cancelled)


def build_message(retriever: str, p: Progress) -> str:
    """What an index build is doing, in a few words for a progress row: "Dense index:
    embedding passages"."""
    name = dict(RETRIEVERS).get(retriever, retriever).split(" (")[0]
    return f"{name} index: {p.message}"


class RetrievalControls(QWidget):
    """Corpus, retriever and number of passages, remembered between sessions."""

    def __init__(self, ctx: AppContext, key: str, stacked: bool = False) -> None:
        """``stacked``: the corpus above the retriever and k (for a narrow column)."""
        super().__init__()
        self.ctx, self.key = ctx, key
        lay = QGridLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.corpus = whole_text(QComboBox(), QSizePolicy.Policy.MinimumExpanding)
        self.retriever = combo(RETRIEVERS, setting(f"{key}/retriever", "bm25"))
        self.k = QSpinBox()
        self.k.setRange(1, 10)
        self.k.setPrefix("k = ")
        self.k.setToolTip("How many passages to retrieve")
        self.k.setFixedWidth(86)
        if stacked:
            lay.addWidget(self.corpus, 0, 0, 1, 2)
            lay.addWidget(self.retriever, 1, 0)
            lay.addWidget(self.k, 1, 1)
        else:
            lay.addWidget(self.corpus, 0, 0)
            lay.addWidget(self.retriever, 0, 1)
            lay.addWidget(self.k, 0, 2)
        lay.setColumnStretch(0, 1)
        self.k.setValue(setting(f"{key}/k", 3, int))
        self.retriever.currentIndexChanged.connect(self._changed)
        self.k.valueChanged.connect(self._changed)
        ctx.data_changed.append(self.reload)
        self.reload()
        self._changed()

    def reload(self) -> None:
        current = self.corpus.currentData() or setting(f"{self.key}/corpus", "french-sample")
        self.corpus.blockSignals(True)
        self.corpus.clear()
        for c in self.ctx.store.corpora():
            self.corpus.addItem(f"{c['name']} ({c['n_passages']})", c["name"])
            self.corpus.setItemData(
                self.corpus.count() - 1, f"{c['n_passages']} passages", Qt.ItemDataRole.ToolTipRole
            )
        i = self.corpus.findData(current)
        if i >= 0:
            self.corpus.setCurrentIndex(i)
        self.corpus.blockSignals(False)

    def _changed(self) -> None:
        on = bool(self.retriever.currentData())
        self.corpus.setEnabled(on)
        self.k.setEnabled(on)
        set_setting(f"{self.key}/retriever", self.retriever.currentData())
        set_setting(f"{self.key}/k", self.k.value())
        if self.corpus.currentData():
            set_setting(f"{self.key}/corpus", self.corpus.currentData())

    def set_values(self, values: tuple[str, str, int]) -> None:
        """Choose ``(corpus, retriever, k)`` again (remembered), without signals."""
        corpus, retriever, k = values
        for widget in (self.corpus, self.retriever, self.k):
            widget.blockSignals(True)
        i = self.corpus.findData(corpus)
        if i >= 0:
            self.corpus.setCurrentIndex(i)
        self.retriever.setCurrentIndex(max(self.retriever.findData(retriever), 0))
        self.k.setValue(k)
        for widget in (self.corpus, self.retriever, self.k):
            widget.blockSignals(False)
        self._changed()

    @property
    def values(self) -> tuple[str, str, int]:
        return self.corpus.currentData() or "", self.retriever.currentData(), self.k.value()


def verdict_html(fb: Feedback) -> str:
    """An answer's verdict: exactly or partly right or wrong, its Hamming score, the options
    missed and wrongly ticked, the right ones."""
    colour = "#15803d" if fb.exact else "#b45309" if fb.hamming > 0 else "#b91c1c"
    words = "Exactly right" if fb.exact else "Partly right" if fb.hamming > 0 else "Wrong"
    detail = []
    if fb.missed:
        detail.append("missed " + ", ".join(x.upper() for x in fb.missed))
    if fb.wrong:
        detail.append("wrongly ticked " + ", ".join(x.upper() for x in fb.wrong))
    gold = " + ".join(x.upper() for x in fb.gold)
    return (
        f"<p style='color:{colour}; font-size:12pt'><b>{words}</b> — Hamming score "
        f"{fmt_number(100 * fb.hamming, unit='%')}%, exact match {'yes' if fb.exact else 'no'}</p>"
        f"<p>Right options: <b>{esc(gold)}</b>"
        + (f" · {esc('; '.join(detail))}" if detail else "")
        + "</p>"
    )
