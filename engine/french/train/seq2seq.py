"""The FrenchMedMCQA paper's generative reader as the paper built it (its BART-base row,
which writes "A + D + E"): a transformers encoder–decoder the user brings as a folder
(BART, T5, any model ``AutoModelForSeq2SeqLM`` loads; nothing is downloaded) fine-tuned to
write the right letters of a question from the question, its options and the best
retrieved passage, or none (:mod:`engine.french.seq2seq`).

This module only declares the kind and its settings (nothing heavy is imported); the work is
in :mod:`engine.french.train.seq2seq_task`. A trained one is a reader like the encoder's
(:mod:`engine.french.train.reader`): ``medexam french run --reader NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.fields import setting
from engine.french.train.reader import EVALUATION_NOTE, MEASURES, ReaderInputs
from engine.registry import CLASS, FUNCTION, Lazy, register
from engine.train.kinds import TrainingKind


@dataclass
class Seq2SeqSettings(ReaderInputs):
    """A seq2seq reader's settings: the training ones, its base model, its context and its
    dev set."""

    base: str | None = setting(
        None, help="The encoder–decoder fine-tuned: a transformers model folder (BART, T5…)."
    )
    batch_size: int = setting(8, help="Questions per step.", min=1, max=4096)


KIND = register(
    "training",
    TrainingKind(
        "french-seq2seq",
        "FrenchMedMCQA seq2seq reader (BART, T5…)",
        "french",
        "reader",
        Lazy("engine.french.train.seq2seq", "Seq2SeqSettings", CLASS),
        Lazy("engine.french.train.seq2seq_task", "prepare", FUNCTION),
        answerer=Lazy("engine.french.seq2seq", "Seq2SeqReader", CLASS),
        evaluation=Lazy("engine.french.train.reader", "evaluation", FUNCTION),
        measures=MEASURES,
        default_name="seq2seq",
        order=40,
        note="An encoder–decoder you bring as a folder (BART, T5…) fine-tuned to write the "
        'right letters of a FrenchMedMCQA question ("A + D + E"), with or without a retrieved '
        "passage; it answers French runs.",
        evaluation_note=EVALUATION_NOTE,
    ),
)
