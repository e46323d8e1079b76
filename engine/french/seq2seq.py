"""The FrenchMedMCQA paper's generative reader (its best EMR row, BART-base writing
"A + D + E"): any transformers encoder–decoder (BART, T5…, what ``AutoModelForSeq2SeqLM``
loads) reads a question, its options and the retrieved passage, and writes the right
letters.

It reads what the encoder reader reads (:func:`engine.french.train.reader_data.encode`: the
question and ``(A) …`` to ``(E) …`` between the tokenizer's separators, then the best
passage of the French activity's retrieval, the question's own passage never among them:
:func:`engine.french.context.reader_passages`), and learns to write :func:`target` (the
letters as French runs store them, :func:`engine.french.reader.format_letters`). What it
writes is read back into letters by :func:`read_letters`, however it is written.

Trained by ``medexam train french-seq2seq --base FOLDER`` (:mod:`engine.french.train.seq2seq`);
:class:`Seq2SeqReader` answers French runs with a trained one (``medexam french run
--reader NAME``), registered as its kind's answerer.

>>> target({"correct_answers": ["e", "a", "d"]})
'A + D + E'
>>> item = {"answers": {"a": "Le foie", "b": "Le rein", "c": "x", "d": "y", "e": "z"}}
>>> [read_letters(text, item) for text in ["A + D + E", "d+a a", "le rein", "+ + ?"]]
[(['a', 'd', 'e'], 'letters'), (['a', 'd'], 'letters'), (['b'], 'option_text'), ([], 'nothing')]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.french.items import gold
from engine.french.reader import ReaderAnswer, format_letters, read_answer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.french.dataset import FrenchQuestion
    from engine.types import JSONDict, Row

#: Questions per generate call when many are read at once (a dev set).
GENERATE_BATCH = 32
#: Tokens a reader may write beyond its longest training answer.
SPARE_TOKENS = 4


def target(item: JSONDict) -> str:
    """What the reader learns to write for ``item``: its right letters, ``"A + D + E"``."""
    return format_letters(gold(item))


def read_letters(text: str, item: FrenchQuestion) -> tuple[list[str], str]:
    """The letters in what a reader wrote, and how they were read: ``letters`` (the text
    names them), ``option_text`` (it quotes options' texts) or ``nothing`` (junk: no
    letter)."""
    found = read_answer(text, item)
    return found.letters, found.how


def encode_source(tokenizer: Any, item: Row, context: str, max_length: int) -> JSONDict:
    """The reader's input for ``item`` with ``context``: the encoder reader's
    (:func:`engine.french.train.reader_data.encode`), without token types (an encoder–decoder
    takes none)."""
    from engine.french.train.reader_data import encode

    return {"input_ids": encode(tokenizer, item, context, max_length)["input_ids"]}


def generate(
    model: Any, tokenizer: Any, sources: Sequence[JSONDict], max_new_tokens: int, device: str
) -> list[str]:
    """What ``model`` writes for each encoded input, greedily (the same text every time),
    decoded without its special tokens."""
    import torch

    from engine.french.train.reader_data import collate, pad_id

    pad = pad_id(tokenizer)
    texts: list[str] = []
    with torch.no_grad():
        for start in range(0, len(sources), GENERATE_BATCH):
            batch = collate(sources[start : start + GENERATE_BATCH], pad, device)
            out = model.generate(
                **batch, max_new_tokens=max_new_tokens, num_beams=1, do_sample=False,
                no_repeat_ngram_size=0, min_length=0,
            )  # fmt: skip
            texts += [t.strip() for t in tokenizer.batch_decode(out, skip_special_tokens=True)]
    return texts


def load_model(folder: Path, what: str) -> Any:
    """The encoder–decoder in ``folder``; one line naming ``what`` when it is not one."""
    from transformers import AutoModelForSeq2SeqLM

    from engine.french.train.reader_data import load_pretrained

    return load_pretrained(AutoModelForSeq2SeqLM, folder, what, "an encoder–decoder")


class Seq2SeqReader:
    """A trained seq2seq reader, loaded from its artefact by name, answering as the French
    activity's readers do (:class:`engine.french.reader.ReaderAnswer`): the letters it
    writes, read by :func:`read_letters`."""

    def __init__(self, name: str) -> None:
        from engine.french.train.reader_data import open_trained

        self.name = name
        self.manifest, self.tokenizer, self.device, self.model = open_trained(name, load_model)
        self.max_length = int(self.manifest["max_length"])
        self.max_new_tokens = int(self.manifest["max_new_tokens"])

    @property
    def index(self) -> str | None:
        """The index its contexts came from in training (None: it was trained without)."""
        return self.manifest.get("index")

    def answer(self, item: FrenchQuestion, passages: list[str] | None = None) -> ReaderAnswer:
        started = time.perf_counter()
        source = encode_source(self.tokenizer, item, " ".join(passages or []), self.max_length)
        text = generate(self.model, self.tokenizer, [source], self.max_new_tokens, self.device)[0]
        letters, how = read_letters(text, item)
        written = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return ReaderAnswer(
            letters,
            text,
            None,
            len(source["input_ids"]),
            written,
            time.perf_counter() - started,
            {"parsed_from": how},
        )
