"""The French reader's work: :func:`prepare` makes the loop's :class:`~engine.train.loop.Task`
(the encoder with a new classification head, the encoded questions, the dev evaluation, how
the artefact is saved), and :class:`TrainedReader` answers French runs with a trained one
(``medexam french run --reader NAME``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.french.items import gold
from engine.french.reader import THRESHOLD, ReaderAnswer, format_letters
from engine.french.scoring import summarise
from engine.french.train.reader_data import (
    Encoded,
    ReaderError,
    collate,
    contexts,
    encode,
    encoder_dir,
    encoder_label,
    load_pretrained,
    load_tokenizer,
    offline,
    open_trained,
    pad_id,
    saver,
)
from engine.french.train.reader_heads import (
    best_threshold,
    choose,
    classes_for,
    dev_loss,
    freeze,
    head_config,
    kept_threshold,
    option_chances,
    prior_loss,
    targets,
)
from engine.train.loop import Task, check_memory

if TYPE_CHECKING:
    import torch

    from engine.core.progress import Cancel
    from engine.store.store import Store
    from engine.types import JSONDict

#: Questions per forward pass when the dev set is evaluated.
EVAL_BATCH = 32


def _load_model(
    folder: Path, what: str, classes: list[str] | None = None, head: str = "combinations"
) -> Any:
    """The encoder in ``folder`` with a classification head (a new ``head`` over
    ``classes``, :mod:`engine.french.train.reader_heads`, or the trained one when none are
    given)."""
    offline()
    from transformers import AutoModelForSequenceClassification

    extra = head_config(head, classes) if classes is not None else {}
    return load_pretrained(AutoModelForSequenceClassification, folder, what, "an encoder", **extra)


def _max_length(tokenizer: Any, model: Any, wanted: int) -> int:
    limits = [wanted, int(getattr(model.config, "max_position_embeddings", wanted) or wanted)]
    if 0 < (tokenizer.model_max_length or 0) < 100_000:
        limits.append(int(tokenizer.model_max_length))
    return min(limits)


def _split(store: Store, dataset: str, settings: JSONDict) -> tuple[list[JSONDict], list, str]:
    """The training questions, the dev questions and the dev set's name (the training set's
    when part of it is held out)."""
    import numpy as np

    from engine.core.run_checks import check_dataset

    items = store.items(dataset, settings["limit"])
    if settings["dev"]:
        check_dataset(store, "french", settings["dev"])
        return items, store.items(settings["dev"]), settings["dev"]
    n_dev = round(settings["dev_fraction"] * len(items))
    if not n_dev:
        return items, [], dataset
    held = set(np.random.default_rng(settings["seed"]).choice(len(items), n_dev, replace=False))
    kept = [x for i, x in enumerate(items) if i not in held]
    return kept, [x for i, x in enumerate(items) if i in held], dataset


def about(label: str, retriever: str, corpus: str | None, n: int, makes: str) -> str:
    """A reader's training in a line: its model, its context, its examples and what it
    makes of them (said as it starts)."""
    where = "no context" if retriever == "none" else f"{retriever} context from {corpus}"
    return f"{label}, {where}, {n} examples, {makes}"


def prepare(
    store: Store, dataset: str, settings: JSONDict, device: str, cancel: Cancel | None = None
) -> Task:
    """The reader's task for the loop (see :mod:`engine.french.train.reader`); ``cancel`` is
    checked as the questions are encoded."""
    folder = encoder_dir(settings["encoder"])
    what = f"encoder {settings['encoder']!r}"
    items, dev_items, dev_name = _split(store, dataset, settings)
    head = settings["head"]
    classes = classes_for(head, items)
    if head == "combinations" and len(classes) < 2:
        raise ReaderError(f"data set {dataset!r} has fewer than two answer combinations to learn")
    # the weights, their gradients and AdamW's two moments, and room for the activations
    weights = sum(f.stat().st_size for f in folder.glob("*.safetensors")) or sum(
        f.stat().st_size for f in folder.glob("*.bin"))  # fmt: skip
    check_memory(4 * weights + 2**28, "a smaller encoder")
    tokenizer = load_tokenizer(folder, what)
    model = _load_model(folder, what, classes, head).to(device)
    frozen = freeze(model, settings["freeze"])
    length = _max_length(tokenizer, model, settings["max_length"])
    retriever, corpus = settings["retriever"], settings["corpus"]
    found, index = contexts(store, dataset, items, retriever, corpus)
    examples = []
    for item, context in zip(items, found, strict=True):
        if cancel is not None:
            cancel.check()
        label = targets(head, classes, item)
        examples.append({**encode(tokenizer, item, context, length), "label": label})
    pad = pad_id(tokenizer)
    evaluate = None
    if dev_items:
        dev_context, _ = contexts(store, dev_name, dev_items, retriever, corpus)
        dev_examples = [encode(tokenizer, i, c, length) for i, c in zip(dev_items, dev_context, strict=True)]  # fmt: skip

        def evaluate(m: torch.nn.Module) -> JSONDict:
            return evaluation(m, dev_examples, dev_items, head, classes, pad, device, settings["pick_on"])  # fmt: skip

    folder_label = encoder_label(settings["encoder"], folder)
    described = {
        "encoder": settings["encoder"],
        "encoder_label": folder_label,
        "encoder_path": str(folder),
        "head": head,
        "classes": classes,
        "frozen_layers": frozen,
        "retriever": retriever,
        "corpus": corpus if retriever != "none" else None,
        "index": index,
        "max_length": length,
    }

    save = saver(tokenizer, described)
    data = {
        **described,
        "about": about(folder_label, retriever, corpus, len(items), f"{len(classes)} classes"),
        "n_train": len(items),
        "dev": dev_name if dev_items else None,
        "n_dev": len(dev_items),
        "dev_prior_loss": prior_loss(head, classes, items, dev_items),
    }
    return Task(model, examples, lambda batch: collate(batch, pad, device), save, data, evaluate)


def _logits(model: torch.nn.Module, examples: list[Encoded], pad: int, device: str) -> torch.Tensor:  # fmt: skip
    """The head's outputs for every encoded question, one row each (on the CPU)."""
    import torch

    rows = []
    with torch.no_grad():
        for start in range(0, len(examples), EVAL_BATCH):
            batch = collate(examples[start : start + EVAL_BATCH], pad, device)
            rows.append(model(**batch).logits.float().cpu())
    return torch.cat(rows)


def predict(
    model: torch.nn.Module,
    examples: list[Encoded],
    classes: list[str],
    pad: int,
    device: str,
    head: str = "combinations",
    threshold: float = THRESHOLD,
) -> list[list[str]]:
    """The letters ``model`` chooses for each encoded question."""
    return choose(head, classes, _logits(model, examples, pad, device), threshold)


def evaluation(
    model: torch.nn.Module,
    examples: list[Encoded],
    items: list[JSONDict],
    head: str,
    classes: list[str],
    pad: int,
    device: str,
    measure: str,
) -> JSONDict:
    """One epoch's measures on the dev set: Hamming score, EMR and loss, the ``score``
    (``measure``) that picks the best epoch and, for the options head, the threshold that
    gives them (:func:`engine.french.train.reader_heads.best_threshold`)."""
    logits = _logits(model, examples, pad, device)
    golds = [gold(i) for i in items]
    extra: JSONDict = {}
    if head == "options":
        threshold, scores = best_threshold(option_chances(head, classes, logits), golds, measure)
        extra["threshold"] = threshold
    else:
        scores = dict(summarise(zip(choose(head, classes, logits, THRESHOLD), golds, strict=True)))
    return {"n": scores["n"], "hamming": scores["hamming"], "emr": scores["emr"],
            "loss": dev_loss(head, classes, logits, items), "score": scores[measure], **extra}  # fmt: skip


class TrainedReader:
    """A trained reader, loaded from its artefact by name, answering as the French
    activity's readers do (:class:`engine.french.reader.ReaderAnswer`): the most probable
    answer combination, and each option's probability (summed over the combinations that
    hold it)."""

    def __init__(self, name: str) -> None:
        import torch

        self.name = name
        self.manifest, self.tokenizer, self.device, self.model = open_trained(name, _load_model)
        self.classes: list[str] = list(self.manifest["classes"])
        self.head = str(self.manifest.get("head") or "combinations")
        self.threshold = kept_threshold(self.manifest)
        self.max_length = int(self.manifest["max_length"])
        self.pad = pad_id(self.tokenizer)
        self._torch = torch

    @property
    def index(self) -> str | None:
        """The index its contexts came from in training (None: it was trained without)."""
        return self.manifest.get("index")

    def answer(self, item: JSONDict, passages: list[str] | None = None) -> ReaderAnswer:
        started = time.perf_counter()
        encoded = encode(self.tokenizer, item, " ".join(passages or []), self.max_length)
        with self._torch.no_grad():
            logits = self.model(**collate([encoded], self.pad, self.device)).logits.float()
        letters = choose(self.head, self.classes, logits, self.threshold)[0]
        options = {c: round(p, 4) for c, p in option_chances(self.head, self.classes, logits)[0].items()}  # fmt: skip
        if self.head == "options":
            extra: JSONDict = {"head": "options", "threshold": self.threshold}
        else:
            chances = self._torch.softmax(logits[0], dim=-1).tolist()
            best = self.classes[max(range(len(chances)), key=chances.__getitem__)]
            extra = {"combination": best, "p": round(max(chances), 4)}
        return ReaderAnswer(
            letters,
            format_letters(letters),
            options,
            len(encoded["input_ids"]),
            0,
            time.perf_counter() - started,
            extra,
        )
