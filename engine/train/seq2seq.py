"""The FrenchMedMCQA paper's generative reader as the paper built it (its BART-base row,
which writes "A + D + E"): a transformers encoder–decoder the user brings as a folder
(BART, T5, any model ``AutoModelForSeq2SeqLM`` loads; nothing is downloaded) fine-tuned to
write the right letters of a question from the question, its options and the best
retrieved passage, or none (:mod:`engine.french.seq2seq`).

This module only declares the kind and its settings (nothing heavy is imported); the work is
in :mod:`engine.train.seq2seq_task`. A trained one is a reader like the encoder's
(:mod:`engine.train.reader`): ``medexam french run --reader NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.fields import setting
from engine.registry import CLASS, FUNCTION, Lazy
from engine.train.kinds import TrainingKind, register_kind
from engine.train.reader import RETRIEVERS
from engine.train.settings import TrainSettings


@dataclass
class Seq2SeqSettings(TrainSettings):
    """A seq2seq reader's settings: the training ones, its base model, its context and its
    dev set."""

    base: str | None = setting(
        None, help="The encoder–decoder fine-tuned: a transformers model folder (BART, T5…)."
    )
    batch_size: int = setting(8, help="Questions per step.", min=1, max=4096)
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


KIND = register_kind(
    TrainingKind(
        "french-seq2seq",
        "FrenchMedMCQA seq2seq reader (BART, T5…)",
        "french",
        "reader",
        Lazy("engine.train.seq2seq", "Seq2SeqSettings", CLASS),
        Lazy("engine.train.seq2seq_task", "prepare", FUNCTION),
        answerer=Lazy("engine.french.seq2seq", "Seq2SeqReader", CLASS),
    )
)
