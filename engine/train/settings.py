"""The settings every training has, declared once (:mod:`engine.fields`); each kind's settings
dataclass adds its own fields to :class:`TrainSettings`.

>>> TrainSettings(epochs=2).as_dict()["epochs"]
2
>>> TrainSettings(learning_rate=0)
Traceback (most recent call last):
...
engine.fields.SettingError: learning_rate must be at least 1e-08 (got 0)
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.fields import Settings, setting


@dataclass
class TrainSettings(Settings):
    """How long and how a model is trained, and how it can be taken up again: the epochs,
    the batch, the learning rate (AdamW, linear decay after a warm-up), the seed (the order
    of the examples, the new weights, dropout) and how often a checkpoint is written."""

    epochs: int = setting(3, help="Passes over the training examples.", min=1, max=1000)
    limit: int | None = setting(None, help="First N training examples only.", min=1)
    max_steps: int | None = setting(
        None, help="Stop after N steps, however many epochs that makes.", min=1
    )
    batch_size: int = setting(16, help="Examples per step.", min=1, max=4096)
    learning_rate: float = setting(
        5e-5, help="Peak learning rate (AdamW).", min=1e-8, max=1.0, flag="--lr"
    )
    warmup: float = setting(
        0.1, help="Share of the steps the learning rate rises over.", min=0.0, max=1.0
    )
    weight_decay: float = setting(0.01, help="AdamW weight decay.", min=0.0, max=1.0)
    seed: int = setting(0, help="Seed of the example order, new weights and dropout.", min=0)
    checkpoint_every: int = setting(
        50, help="Steps between checkpoints (one is also written at each epoch's end).", min=1
    )
    device: str = setting(
        "auto", help="Where to train: auto is CUDA when torch sees a GPU, else the CPU.",
        choices=("auto", "cpu", "cuda"),
    )  # fmt: skip


@dataclass
class LoraSettings(TrainSettings):
    """LoRA's settings (:mod:`engine.train.chat_lora`): the training ones with LoRA's
    defaults, the base model, the adapter's rank, scale and dropout, and the tokens kept of a
    conversation. The kinds that train a LoRA extend them."""

    epochs: int = setting(2, help="Passes over the conversations.", min=1, max=1000)
    batch_size: int = setting(2, help="Conversations per step.", min=1, max=4096)
    learning_rate: float = setting(
        3e-4, help="Peak learning rate (AdamW).", min=1e-8, max=1.0, flag="--lr"
    )
    weight_decay: float = setting(0.0, help="AdamW weight decay.", min=0.0, max=1.0)
    checkpoint_every: int = setting(
        10, help="Steps between checkpoints (one is also written at each epoch's end).", min=1
    )
    base: str = setting(
        "smollm2", help="The local GGUF chat model fine-tuned (llama or gemma3).", kind="model"
    )
    rank: int = setting(8, help="LoRA rank.", min=1, max=512)
    alpha: float = setting(16.0, help="LoRA scale (alpha).", min=0.0)
    dropout: float = setting(0.05, help="LoRA dropout.", min=0.0, max=0.9)
    max_length: int = setting(
        2048, help="Tokens kept of a conversation (the rest is cut).", min=64, max=131072
    )
