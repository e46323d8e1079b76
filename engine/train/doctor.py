"""A consultation doctor fine-tuned on golden dialogues, as the consultation paper's
"Vicuna Finetuned" (its §4.2): LoRA on a local GGUF chat model.

The dialogues are a golden set (:mod:`engine.consult.golden`) or a JSON Lines file of chat
dialogues; each is rendered with the base GGUF's own chat template and tokenized by
llama.cpp (what the model meets when it plays the doctor), the loss on the doctor's turns
only. transformers loads the GGUF (it dequantizes it; llama and gemma3 are supported) in
fp32 and peft adds LoRA to the attention and MLP projections — never to the embeddings or
the output layer, which SmolLM2 ties. The adapter is converted to a GGUF LoRA with
llama.cpp's ``convert_lora_to_gguf.py`` and shows in the catalog as ``BASE+NAME``
(``smollm2+doctor-ft``), loaded as the base GGUF with the adapter (``lora_path``).

This module only declares the kind and the LoRA settings (:class:`LoraSettings`, the French
writer's too); the work is in :mod:`engine.train.chat_lora` and :mod:`engine.train.lora`.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.fields import setting
from engine.registry import CLASS, FUNCTION, Lazy
from engine.train.kinds import TrainingKind, register_kind
from engine.train.settings import TrainSettings


@dataclass
class LoraSettings(TrainSettings):
    """LoRA's settings: the training ones with LoRA's defaults, the base model, the
    adapter's rank, scale and dropout, and the tokens kept of a conversation."""

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


@dataclass
class DoctorSettings(LoraSettings):
    """A doctor's settings: LoRA's (:class:`LoraSettings`)."""


KIND = register_kind(
    TrainingKind(
        "doctor",
        "consultation doctor (LoRA)",
        "consult",
        "adapter",
        Lazy("engine.train.doctor", "DoctorSettings", CLASS),
        Lazy("engine.train.chat_lora", "prepare_doctor", FUNCTION),
        data_flag="--dialogues",
        data_help="Golden set (medexam consult golden) or a JSON Lines file of chat dialogues.",
        check=Lazy("engine.train.chat_lora", "check_dialogues", FUNCTION),
    )
)
