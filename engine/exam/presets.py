"""The exam's experiment presets (:mod:`engine.experiments`): ExplainCPE's Table 8 protocol,
every model answering with 0, 1, 4 and 8 solved examples, with and without the task
instruction (the answer and its explanation generated, so that ROUGE is scored too). The
paper has one 0-shot prompt, so its two 0-shot rows are one run when the exam's settings
say so (the plan shows the second as "the same run"). Its
report draws Table 8, Table 3 (the best setting per model) and Figure 3
(:mod:`engine.exam.figures`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.exam.prompts import SHOT_COUNTS
from engine.experiments.plan import Cell, Preset, Request
from engine.registry import FUNCTION, Lazy, register

if TYPE_CHECKING:
    from engine.types import JSONDict


def setting_words(shots: int, instruction: bool) -> str:
    """A Table 8 row's setting as the paper writes it: ``4-shot w/ instruction``."""
    return f"{shots}-shot {'w/' if instruction else 'w/o'} instruction"


def table8_cells(request: Request) -> list[Cell]:
    """Each model × (0, 1, 4, 8 examples) × (with, without the instruction), generated."""
    cells = []
    for model in request.models:
        for instruction in (True, False):
            for shots in SHOT_COUNTS:
                settings: JSONDict = {
                    "model": model,
                    "method": "generate",
                    "shots": shots,
                    "instruction": instruction,
                    "limit": request.limit,
                }
                coords = {"model": model, "shots": shots, "instruction": instruction}
                label = f"{model} · {setting_words(shots, instruction)}"
                cells.append(Cell("exam", request.dataset, settings, label, coords))
    return cells


register(
    "preset",
    Preset(
        "explaincpe-table8",
        "ExplainCPE Table 8: examples × instruction",
        "exam",
        table8_cells,
        report=Lazy("engine.exam.figures", "table8_report", FUNCTION),
        dataset="cpe-test",
        dataset_hint="an ExplainCPE data set: medexam import explaincpe test.json --name cpe-test",
    ),
)
