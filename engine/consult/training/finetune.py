"""A consultation doctor fine-tuned on golden dialogues, as the consultation paper's
"Vicuna Finetuned" (its §4.2): LoRA on a local GGUF chat model.

The dialogues are a golden set (:mod:`engine.consult.training.golden`) or a JSON Lines file of chat
dialogues; each is rendered with the base GGUF's own chat template and tokenized by
llama.cpp (what the model meets when it plays the doctor), the loss on the doctor's turns
only. transformers loads the GGUF (it dequantizes it; llama and gemma3 are supported) in
fp32 and peft adds LoRA to the attention and MLP projections — never to the embeddings or
the output layer, which SmolLM2 ties. The adapter is converted to a GGUF LoRA with
llama.cpp's ``convert_lora_to_gguf.py`` and shows in the catalog as ``BASE+NAME``
(``smollm2+doctor-ft``), loaded as the base GGUF with the adapter (``lora_path``).

This module declares the kind, its settings (LoRA's: :class:`engine.train.settings.LoraSettings`)
and how its dialogues are found; the work is in :mod:`engine.train.chat_lora` and
:mod:`engine.train.lora`. A trained doctor is evaluated by a consultation run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.registry import CLASS, FUNCTION, Lazy, register
from engine.train.kinds import TrainingKind
from engine.train.settings import LoraSettings

if TYPE_CHECKING:
    from engine.core.progress import Cancel
    from engine.store.store import Store
    from engine.train.loop import Task
    from engine.types import JSONDict

#: How a golden set is made (said where there is none to train on).
GOLDEN_HINT = "medexam consult golden --cases CASES --name NAME"


@dataclass
class DoctorSettings(LoraSettings):
    """A doctor's settings: LoRA's (:class:`engine.train.settings.LoraSettings`)."""


def check_dialogues(store: Store, data: str) -> JSONDict:
    """Refuse a source that is neither a golden set nor a file of chat dialogues; a file's
    absolute ``path`` and ``sha256`` (what a training records of it), ``{}`` for a golden
    set."""
    import hashlib

    from engine.consult.training.golden import doctor_dialogues, golden_sets

    doctor_dialogues(store, data)
    if data in golden_sets(store):
        return {}
    path = Path(data).expanduser().resolve()
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return {"path": str(path), "sha256": digest.hexdigest()}


def prepare_doctor(
    store: Store, dataset: str, settings: JSONDict, device: str, cancel: Cancel | None = None
) -> Task:
    """The doctor's task: the golden dialogues of ``dataset`` (a golden set or a file)."""
    from engine.consult.training.golden import doctor_dialogues
    from engine.train.chat_lora import lora_task

    dialogues = doctor_dialogues(store, dataset)[: settings["limit"] or None]
    return lora_task(settings, dialogues, device, "dialogues", cancel)


def evaluation(row: JSONDict) -> JSONDict:
    """A consultation run's settings with the doctor training ``row`` made (``BASE+NAME``)."""
    from engine.train.evaluate import trained_model

    return {"doctor": trained_model(row)}


KIND = register(
    "training",
    TrainingKind(
        "doctor",
        "consultation doctor (LoRA)",
        "consult",
        "adapter",
        Lazy("engine.consult.training.finetune", "DoctorSettings", CLASS),
        Lazy("engine.consult.training.finetune", "prepare_doctor", FUNCTION),
        data_flag="--dialogues",
        data_help="Golden set (medexam consult golden) or a JSON Lines file of chat dialogues.",
        check=Lazy("engine.consult.training.finetune", "check_dialogues", FUNCTION),
        evaluation=Lazy("engine.consult.training.finetune", "evaluation", FUNCTION),
        measures={"accuracy": "diagnosis accuracy"},
        shown=("patient_recall", "patient_f1", "doctor_f1", "accuracy", "avg_turns"),
        default_name="doctor",
        order=20,
        note="A local GGUF chat model fine-tuned with LoRA on golden dialogues (medexam "
        "consult golden) or a JSON Lines file of chat dialogues; it becomes the model "
        "BASE+NAME, a doctor for consultations.",
        evaluation_note="A consultation run of the doctor it made on these cases",
        data_picker=Lazy("gui.consult.training", "DialoguePicker", CLASS),
    ),
)
