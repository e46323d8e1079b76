"""The FrenchMedMCQA paper's generative reader (its BART-base row, which writes "A + D + E"),
made of a local GGUF chat model: LoRA (:mod:`engine.train.chat_lora`) trained to answer the
French activity's own request (:func:`engine.french.prompts.answer_messages`, with the best
retrieved passage or none, the question's own passage never given) with the right letters
(:func:`engine.french.reader.format_letters`). The trained model is a catalog model
(``smollm2+NAME``) that French runs evaluate like any chat model: ``medexam french run
--model smollm2+NAME -k 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from engine.fields import setting
from engine.french.train.reader import EVALUATION_NOTE, MEASURES, RETRIEVERS
from engine.registry import CLASS, FUNCTION, Lazy, register
from engine.train.kinds import TrainingKind
from engine.train.settings import LoraSettings

if TYPE_CHECKING:
    from engine.core.progress import Cancel
    from engine.french.dataset import FrenchQuestion
    from engine.store.store import Store
    from engine.train.loop import Task
    from engine.types import JSONDict


@dataclass
class WriterSettings(LoraSettings):
    """A French writer's settings: LoRA's, and the context of each question."""

    epochs: int = setting(1, help="Passes over the questions.", min=1, max=1000)
    batch_size: int = setting(8, help="Questions per step.", min=1, max=4096)
    max_length: int = setting(
        512, help="Tokens kept of a question with its passage.", min=64, max=131072
    )
    retriever: str = setting(
        "none", help="Context: none, or the best BM25 or dense passage.", choices=RETRIEVERS
    )
    corpus: str | None = setting(None, help="Stored corpus the context is retrieved from.")


def prepare(
    store: Store, dataset: str, settings: JSONDict, device: str, cancel: Cancel | None = None
) -> Task:
    """The writer's task: each question of ``dataset`` asked as a French run asks it, the
    right letters as the answer."""
    from engine.french.items import gold
    from engine.french.prompts import answer_messages
    from engine.french.reader import format_letters
    from engine.french.train.reader_data import contexts
    from engine.train.chat_lora import lora_task

    items = cast("list[FrenchQuestion]", store.items(dataset, settings["limit"]))
    found, index = contexts(store, dataset, items, settings["retriever"], settings["corpus"])
    conversations = [
        [*answer_messages(item, [context] if context else []),
         {"role": "assistant", "content": format_letters(gold(item))}]
        for item, context in zip(items, found, strict=True)
    ]  # fmt: skip
    retriever = settings["retriever"]
    return lora_task(
        settings, conversations, device, "questions", cancel, retriever=retriever,
        corpus=settings["corpus"] if retriever != "none" else None, index=index,
    )  # fmt: skip


def evaluation(row: JSONDict) -> JSONDict:
    """A French run's settings with the model training ``row`` made (``BASE+NAME``), given
    the passage it was trained with (the best one of its index) when it had one."""
    from engine.train.evaluate import trained_model

    index = (row.get("data") or {}).get("index")
    return {"model": trained_model(row), **({"index": index, "k": 1} if index else {})}


KIND = register(
    "training",
    TrainingKind(
        "french-writer",
        "FrenchMedMCQA generative reader (LoRA)",
        "french",
        "adapter",
        Lazy("engine.french.train.writer", "WriterSettings", CLASS),
        Lazy("engine.french.train.writer", "prepare", FUNCTION),
        evaluation=Lazy("engine.french.train.writer", "evaluation", FUNCTION),
        measures=MEASURES,
        default_name="writer",
        order=30,
        note="A local GGUF chat model fine-tuned with LoRA to write the right letters of a "
        'FrenchMedMCQA question ("A + D"), with or without a retrieved passage; it becomes the '
        "model BASE+NAME, evaluated by French runs.",
        evaluation_note=EVALUATION_NOTE,
    ),
)
