"""The seq2seq reader's work (:mod:`engine.french.train.seq2seq`): :func:`prepare` makes the loop's
:class:`~engine.train.loop.Task` — the user's encoder–decoder, each question encoded as the
encoder reader encodes it with its right letters as the text to write, the dev evaluation
(what it writes on the dev set, read back into letters and scored), and how the artefact is
saved. The loop does the rest: progress, Stop, checkpoints, resume, the best epoch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.french.items import LETTERS, gold
from engine.french.reader import format_letters
from engine.french.scoring import summarise
from engine.french.seq2seq import (
    SPARE_TOKENS,
    encode_source,
    generate,
    load_model,
    read_letters,
    target,
)
from engine.french.train.reader_data import (
    ReaderError,
    collate,
    contexts,
    load_tokenizer,
    pad_id,
    saver,
)
from engine.french.train.reader_task import _max_length, _split, about
from engine.train.loop import Task, check_memory

if TYPE_CHECKING:
    import torch

    from engine.core.progress import Cancel
    from engine.store.store import Store
    from engine.types import JSONDict


def base_dir(base: str | None) -> Path:
    """The folder of the model to fine-tune (``--base``): a transformers model folder."""
    if not base:
        raise ReaderError(
            "give --base FOLDER: a transformers encoder–decoder folder (BART, T5…) on disk"
        )
    path = Path(base).expanduser()
    if not path.is_dir():
        raise ReaderError(f"base {base!r}: no such folder")
    if not (path / "config.json").is_file():
        raise ReaderError(f"base {base!r}: not a Hugging Face model folder (no config.json)")
    return path


def target_ids(tokenizer: Any, text: str) -> list[int]:
    """The tokens of the text the reader learns to write (with the tokenizer's own start
    and end tokens for a target)."""
    return list(tokenizer(text_target=text)["input_ids"])


def collate_pairs(examples: list[JSONDict], pad: int, device: str) -> dict[str, Any]:
    """A batch: the inputs padded (:func:`engine.french.train.reader_data.collate`) and the texts
    to write as ``labels``, padded with -100 (no loss there)."""
    import torch

    batch = collate(examples, pad, device)
    width = max(len(e["target"]) for e in examples)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    for row, e in enumerate(examples):
        labels[row, : len(e["target"])] = torch.tensor(e["target"])
    batch["labels"] = labels.to(device)
    return batch


def prepare(
    store: Store, dataset: str, settings: JSONDict, device: str, cancel: Cancel | None = None
) -> Task:
    """The seq2seq reader's task for the loop; ``cancel`` is checked as the questions are
    encoded."""
    folder = base_dir(settings["base"])
    what = f"base {settings['base']!r}"
    items, dev_items, dev_name = _split(store, dataset, settings)
    if not items:
        raise ReaderError(f"data set {dataset!r} holds no question to train on")
    # the weights, their gradients and AdamW's two moments, and room for the activations
    weights = sum(f.stat().st_size for f in folder.glob("*.safetensors")) or sum(
        f.stat().st_size for f in folder.glob("*.bin"))  # fmt: skip
    check_memory(4 * weights + 2**28, "a smaller encoder–decoder")
    tokenizer = load_tokenizer(folder, what)
    model = load_model(folder, what).to(device)
    length = _max_length(tokenizer, model, settings["max_length"])
    retriever, corpus = settings["retriever"], settings["corpus"]
    found, index = contexts(store, dataset, items, retriever, corpus)
    examples = []
    for item, context in zip(items, found, strict=True):
        if cancel is not None:
            cancel.check()
        source = encode_source(tokenizer, item, context, length)
        examples.append({**source, "target": target_ids(tokenizer, target(item))})
    # room for the longest answer there is (all five letters), whatever the training set holds
    longest = max(len(target_ids(tokenizer, format_letters(LETTERS))), *(len(e["target"]) for e in examples))  # fmt: skip
    max_new = longest + SPARE_TOKENS
    evaluate = None
    if dev_items:
        dev_context, _ = contexts(store, dev_name, dev_items, retriever, corpus)
        sources = [encode_source(tokenizer, i, c, length) for i, c in zip(dev_items, dev_context, strict=True)]  # fmt: skip

        def evaluate(m: torch.nn.Module) -> JSONDict:
            texts = generate(m, tokenizer, sources, max_new, device)
            chosen = [read_letters(t, i)[0] for t, i in zip(texts, dev_items, strict=True)]
            scores = summarise(zip(chosen, (gold(i) for i in dev_items), strict=True))
            return {"n": scores["n"], "hamming": scores["hamming"], "emr": scores["emr"],
                    "score": scores["hamming"]}  # fmt: skip

    described = {
        "encoder": settings["base"],
        "encoder_label": folder.name,
        "encoder_path": str(folder),
        "retriever": retriever,
        "corpus": corpus if retriever != "none" else None,
        "index": index,
        "max_length": length,
        "max_new_tokens": max_new,
    }

    save = saver(tokenizer, described)
    data = {
        **described,
        "about": about(folder.name, retriever, corpus, len(items), "writes the letters"),
        "n_train": len(items),
        "dev": dev_name if dev_items else None,
        "n_dev": len(dev_items),
    }
    pad = pad_id(tokenizer)
    return Task(model, examples, lambda batch: collate_pairs(batch, pad, device), save, data, evaluate)  # fmt: skip
