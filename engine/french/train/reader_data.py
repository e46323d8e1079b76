"""The reader's data: its encoder folder, the answer combinations it classifies into, the
context of each question and the encoded inputs.

>>> combination(["d", "a"])
'ad'
>>> labels([{"correct_answers": ["b"]}, {"correct_answers": ["a", "c"]},
...         {"correct_answers": ["b"]}])
['b', 'ac']
>>> first_segment({"question": "Q ?", "answers": dict(zip("abcde", "12345"))}, "[SEP]")
'Q ? [SEP] (A) 1 [SEP] (B) 2 [SEP] (C) 3 [SEP] (D) 4 [SEP] (E) 5'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError, first_line
from engine.french.items import gold, options

if TYPE_CHECKING:
    from engine.core.progress import ProgressCallback
    from engine.store.store import Store
    from engine.types import JSONDict, Row

Encoded = dict[str, Any]  # input_ids, token_type_ids, label
#: The fewest tokens a real tokenizer knows: fewer are its special tokens alone (what
#: transformers makes of a folder without tokenizer files).
MIN_VOCABULARY = 100


class ReaderError(UserError, ValueError):
    """An encoder folder that is not one, a context that cannot be retrieved…: one line."""


def combination(letters: Iterable[str]) -> str:
    """The class of a set of right letters: the letters, sorted (``"ad"``)."""
    return "".join(sorted(c.lower() for c in letters))


def labels(items: Iterable[JSONDict]) -> list[str]:
    """The combinations present in ``items``: the classes, fewest letters first."""
    found = {combination(gold(item)) for item in items}
    return sorted(found, key=lambda c: (len(c), c))


def encoder_dir(encoder: str) -> Path:
    """The folder of ``encoder``: ``minilm`` is the embedded all-MiniLM-L6-v2; else a
    Hugging Face model folder on disk (its ``config.json`` there)."""
    from engine.french.train.reader import DEFAULT_ENCODER

    if encoder in ("", DEFAULT_ENCODER):
        from engine.text.embedder import default_model_dir

        return default_model_dir()
    path = Path(encoder).expanduser()
    if not path.is_dir():
        raise ReaderError(f"encoder {encoder!r}: no such folder")
    if not (path / "config.json").is_file():
        raise ReaderError(f"encoder {encoder!r}: not a Hugging Face model folder (no config.json)")
    return path


def encoder_label(encoder: str, folder: Path) -> str:
    """The encoder in the report's rows: ``MiniLM`` for the embedded one, else its folder's
    name."""
    from engine.french.train.reader import DEFAULT_ENCODER

    return "MiniLM" if encoder in ("", DEFAULT_ENCODER) else folder.name


def offline() -> None:
    """Never reach the hub; quiet transformers' reports of new heads and progress bars."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def saver(tokenizer: Any, described: JSONDict) -> Callable[[Any, Path], JSONDict]:
    """A trained reader's ``save(model, folder)``: the model and its tokenizer written there
    (transformers' own files), ``described`` returned for its manifest."""

    def save(model: Any, target: Path) -> JSONDict:
        model.save_pretrained(str(target))
        tokenizer.save_pretrained(str(target))
        return described

    return save


def open_trained(name: str, load: Callable[[Path, str], Any]) -> tuple[JSONDict, Any, Any, Any]:
    """A trained reader ``name`` opened to answer: its manifest, its tokenizer, the device it
    runs on and its model (``load(folder, what)``, in evaluation mode there)."""
    from engine.train.artefacts import find
    from engine.train.loop import pick_device

    manifest = find(name, "reader")
    folder = Path(manifest["path"])
    what = f"trained reader {name!r}"
    tokenizer = load_tokenizer(folder, what)
    device = pick_device()
    return manifest, tokenizer, device, load(folder, what).to(device).eval()


def load_tokenizer(folder: Path, what: str) -> Any:
    """The folder's tokenizer; a folder without one (transformers then makes one of the
    special tokens alone) is one line naming ``what``."""
    offline()
    from transformers import AutoTokenizer

    try:
        found = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReaderError(f"{what}: its tokenizer cannot be loaded ({first_line(exc)})") from None
    if len(found) < MIN_VOCABULARY:
        raise ReaderError(
            f"{what}: its tokenizer knows only {len(found)} tokens (the folder lacks the "
            "tokenizer's files: tokenizer.json, vocab.txt…); use the whole model folder"
        )
    return found


def load_pretrained(auto: Any, folder: Path, what: str, noun: str, **extra: Any) -> Any:
    """The model in ``folder`` loaded by transformers' ``auto`` class (``extra`` given to
    it); a folder it cannot load is one line naming ``what`` (``noun``: what it should be,
    "an encoder"…). Pickled weights are refused, never run."""
    import pickle
    import warnings

    from safetensors import SafetensorError

    offline()
    try:
        with warnings.catch_warnings():  # torch's notes on a pickle it refuses
            warnings.simplefilter("ignore")
            return auto.from_pretrained(str(folder), local_files_only=True, **extra)
    except pickle.UnpicklingError:  # its message would advise loading it unsafely
        raise ReaderError(
            f"{what}: its weights are a pickle that holds more than tensors, which medexam "
            "does not load (it could run code): use a folder whose weights are in "
            "model.safetensors (what transformers' save_pretrained writes)"
        ) from None
    except SafetensorError as exc:
        raise ReaderError(
            f"{what}: its model.safetensors is damaged or cut short ({first_line(exc)})"
        ) from None
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise ReaderError(f"{what}: not {noun} transformers can load ({first_line(exc)})") from None


def first_segment(item: Row, sep: str) -> str:
    """The question and its five options, the tokenizer's separator between them."""
    parts = [str(item["question"]), *(f"({k.upper()}) {text}" for k, text in options(item))]
    return f" {sep} ".join(parts)


def contexts(
    store: Store,
    dataset: str,
    items: Sequence[Row],
    retriever: str,
    corpus: str | None,
    progress: ProgressCallback | None = None,
) -> tuple[list[str], str | None]:
    """Each question's context: the best passage of the French activity's retrieval (the
    question's own passage never given, :func:`engine.french.context.reader_passages`), or
    none; and the index used (built over ``corpus`` when needed, reused when unchanged)."""
    if retriever == "none":
        return [""] * len(items), None
    from engine.french.index import build_index

    if not corpus:
        raise ReaderError(f"--retriever {retriever} needs --corpus (a stored corpus)")
    index = build_index(store, corpus, retriever, progress=progress)
    return passages_for(index, dataset, items), index.name


def passages_for(index: Any, dataset: str, items: Sequence[Row], k: int = 1) -> list[str]:
    """The text of the ``k`` best passages of ``index`` for each item of ``dataset`` (own
    passages left out), joined."""
    from engine.french.context import reader_passages

    return [" ".join(h.text for h in reader_passages(index, dataset, i, k)[0]) for i in items]


def encode(tokenizer: Any, item: Row, context: str, max_length: int) -> Encoded:
    """One input: the question and options, then the context, cut to ``max_length`` tokens
    (the context first; the options too when they alone are longer)."""
    first = first_segment(item, tokenizer.sep_token or tokenizer.eos_token or "|")
    if not context:
        found = tokenizer(first, truncation=True, max_length=max_length)
    else:
        alone = len(tokenizer(first, add_special_tokens=True)["input_ids"])
        cut = "only_second" if alone + 2 < max_length else "longest_first"
        found = tokenizer(first, context, truncation=cut, max_length=max_length)
    return {k: list(v) for k, v in found.items() if k in ("input_ids", "token_type_ids")}


def pad_id(tokenizer: Any) -> int:
    """The token that pads a batch (the end token for a tokenizer without one)."""
    found = tokenizer.pad_token_id
    return int(found if found is not None else tokenizer.eos_token_id or 0)


def collate(examples: Sequence[Encoded], pad_id: int, device: str) -> dict[str, Any]:
    """A batch of tensors on ``device``: the inputs padded to the longest, their attention
    mask and, when the examples have one, their ``labels``."""
    import torch

    width = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    types = torch.zeros((len(examples), width), dtype=torch.long)
    for row, e in enumerate(examples):
        n = len(e["input_ids"])
        ids[row, :n] = torch.tensor(e["input_ids"])
        mask[row, :n] = 1
        if "token_type_ids" in e:
            types[row, :n] = torch.tensor(e["token_type_ids"])
    batch: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in examples[0]:
        batch["token_type_ids"] = types
    if "label" in examples[0]:
        wanted = [e["label"] for e in examples]  # a class, or a 0/1 per option
        kind = torch.float32 if isinstance(wanted[0], list) else torch.long
        batch["labels"] = torch.tensor(wanted, dtype=kind)
    return {k: v.to(device) for k, v in batch.items()}
