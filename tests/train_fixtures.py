"""Fixtures for the training tests (import them into a test module to use them): a tiny
encoder made from a config (the embedded MiniLM's tokenizer, one small layer), so that a
reader trains in a moment, a training stopped after its first step, and a planted pickle
that would leave a mark if it ran."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.core.progress import Cancel, Progress
from engine.french.dataset import ensure_sample
from engine.store.store import Store
from engine.text.embedder import default_model_dir
from engine.train.loop import train
from engine.types import JSONDict

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


class Planted:
    """Unpickled without ``weights_only``, it creates the file ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (open, (str(self.marker), "w"))


def plant(path: Path, marker: Path) -> None:
    """A pickle at ``path`` that would create ``marker`` if it were ever run."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": Planted(marker), "position": {"step": 0}}, path)


def make_tiny_encoder(folder: Path) -> Path:
    """A BERT encoder of one small layer in ``folder``, with MiniLM's tokenizer."""
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(default_model_dir() / name, folder / name)
    config = BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64,
    )  # fmt: skip
    BertModel(config).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_encoder(tmp_path_factory.mktemp("encoders") / "tiny")


def settings(encoder: Path) -> JSONDict:
    """A reader of the tiny encoder on the shipped sample (15 questions): 3 steps of 5."""
    return {"epochs": 1, "batch_size": 5, "max_length": 32, "checkpoint_every": 1, "seed": 3,
            "encoder": str(encoder)}  # fmt: skip


def steps_of(store: Store, encoder: Path, name: str, resume: int | None = None) -> tuple[JSONDict, list[int]]:  # fmt: skip
    """A training (new, or ``resume``) run to its end, and the steps it went through."""
    steps: list[int] = []

    def progress(p: Progress) -> None:
        if "loss" in p.info:
            steps.append(p.done)

    if resume is not None:
        return train(store, "", resume=resume, progress=progress), steps
    ensure_sample(store)
    row = train(
        store, "french-reader", "frenchmedmcqa-sample", settings(encoder), name=name,
        progress=progress,
    )  # fmt: skip
    return row, steps


def stopped_after_one_step(store: Store, encoder: Path, name: str) -> JSONDict:
    """A training cancelled after its first step (its checkpoint there)."""
    ensure_sample(store)
    cancel = Cancel()

    def progress(p: Progress) -> None:
        if p.done == 1 and "loss" in p.info:
            cancel.set()

    row = train(
        store, "french-reader", "frenchmedmcqa-sample", settings(encoder), name=name,
        progress=progress, cancel=cancel,
    )  # fmt: skip
    assert row["status"] == "cancelled" and row["step"] == 1, row
    return row
