"""The FrenchMedMCQA reader as the paper built it (its §3.2 and §4): a fine-tuned encoder that
classifies a question into one of the answer combinations of the training set.

The input is ``[CLS] question [SEP] (A) a [SEP] (B) b … (E) e [SEP] context [SEP]`` with the
encoder's own special tokens (:mod:`engine.french.train.reader_data`); the context is the best
passage the French activity's retrieval gives for the question (BM25 or dense over a stored
corpus, the question's own passage never among them: :func:`engine.french.context.reader_passages`),
or none. On it, transformers' ``AutoModelForSequenceClassification`` on the encoder's folder
puts one of two heads (:mod:`engine.french.train.reader_heads`): a yes/no per option, its threshold
picked on the dev set (the default), or, as the paper made the multi-label problem
multi-class, a class per combination of right letters present in the training set (31 in
FrenchMedMCQA's). The best epoch on the dev set (``dev``, or ``dev_fraction`` of the
training set held out) by ``pick_on`` is kept; ``freeze`` keeps the embeddings and the lowest
layers as they are (cheaper steps on a CPU).

This module only declares the kind and its settings (nothing heavy is imported); the work is
in :mod:`engine.french.train.reader_task`. A trained reader answers French runs:
``medexam french run --reader NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.fields import setting
from engine.registry import CLASS, FUNCTION, Lazy, register
from engine.train.kinds import TrainingKind
from engine.train.settings import TrainSettings

if TYPE_CHECKING:
    from engine.types import JSONDict

#: Where the context comes from: none, or the French activity's BM25 or dense retrieval.
RETRIEVERS = ("none", "bm25", "dense")
#: ``--encoder minilm``: the embedded all-MiniLM-L6-v2 folder.
DEFAULT_ENCODER = "minilm"
#: What a French reader or writer is judged by (its dev set's and its runs' measures), with
#: their short names.
MEASURES = {"hamming": "Hamming", "emr": "EMR"}
#: What a reader makes, and what a run of it is (the app's lines).
READER_NOTE = (
    "An encoder fine-tuned to pick the right options of a FrenchMedMCQA question, with or "
    "without a retrieved passage; it answers French runs."
)
EVALUATION_NOTE = "A French run of what it made"


def evaluation(row: JSONDict) -> JSONDict:
    """A French run's settings with the reader training ``row`` made."""
    return {"reader": row["name"]}


@dataclass
class ReaderInputs(TrainSettings):
    """What every French reader reads and is picked on: its context and its dev set (the
    encoder reader's and the seq2seq reader's settings add their own)."""

    retriever: str = setting(
        "none", help="Context: none, or the best BM25 or dense passage.", choices=RETRIEVERS
    )
    corpus: str | None = setting(None, help="Stored corpus the context is retrieved from.")
    dev: str | None = setting(None, help="Data set that picks the best epoch.")
    dev_fraction: float = setting(
        0.0,
        help="Without --dev: share of the training questions held out to pick the best epoch "
        "(0: keep the last epoch).",
        min=0.0,
        max=0.5,
    )
    max_length: int = setting(256, help="Tokens per input (the context is cut first).", min=16)


@dataclass
class ReaderSettings(ReaderInputs):
    """A French reader's settings: the training ones, its encoder, its context and its dev
    set."""

    encoder: str = setting(
        DEFAULT_ENCODER,
        help="minilm (the embedded all-MiniLM-L6-v2) or a Hugging Face encoder folder.",
    )
    head: str = setting(
        "options",
        help="options: a yes/no per option (its threshold picked on the dev set); "
        "combinations: one class per combination of right letters in the training set.",
        choices=("options", "combinations"),
    )
    pick_on: str = setting(
        "emr",
        help="The dev measure that picks the best epoch and the options head's threshold "
        "(Hamming rewards choosing many options: all five score 38.5 on FrenchMedMCQA's test).",
        choices=tuple(MEASURES),
    )
    freeze: int = setting(
        0,
        help="Encoder layers kept as they are, from the bottom, with the embeddings (0: train "
        "all; more than the encoder has: only the head learns).",
        min=0,
        max=1000,
    )


KIND = register(
    "training",
    TrainingKind(
        "french-reader",
        "FrenchMedMCQA reader",
        "french",
        "reader",
        Lazy("engine.french.train.reader", "ReaderSettings", CLASS),
        Lazy("engine.french.train.reader_task", "prepare", FUNCTION),
        answerer=Lazy("engine.french.train.reader_task", "TrainedReader", CLASS),
        evaluation=Lazy("engine.french.train.reader", "evaluation", FUNCTION),
        measures=MEASURES,
        default_name="reader",
        order=10,
        note=READER_NOTE,
        evaluation_note=EVALUATION_NOTE,
    ),
)
