"""The settings of an exam run, declared once (:mod:`engine.fields`): ``medexam exam run``'s
options, the app's evaluation form and the settings stored on a run all come from
:class:`ExamSettings`.

>>> ExamSettings(model="smollm2", method="logprob", limit=3).as_dict()["shots"]
0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.exam.prompts import PROMPT_VERSION, SHOT_COUNTS, PromptSettings
from engine.fields import Settings, setting, temperature_setting

METHODS = ("generate", "logprob")
TEMPLATES = ("auto", "chat", "plain")


@dataclass
class ExamSettings(Settings):
    """Everything that decides a run's answers (stored with the run, reused on resume)."""

    model: str | None = setting(
        None, help="Model name or .gguf path (default: the default chat model).", kind="model"
    )
    method: str = setting(
        "generate",
        help="generate: answer and explanation; logprob: letter probabilities.",
        choices={
            "generate": "Write an answer and explanation",
            "logprob": "Read the letter probabilities (fast)",
        },
    )
    shots: int = setting(
        0,
        help="Solved examples before each question.",
        choices={n: f"{n} solved example(s)" if n else "No examples" for n in SHOT_COUNTS},
        label="Examples",
    )
    lang: str = setting(
        "zh",
        help="Language of the prompt template.",
        choices={"zh": "Chinese (as published)", "en": "English"},
        label="Prompt language",
    )
    instruction: bool = setting(
        True,
        help="Open the prompt with the task instruction (always at 0 shots: the paper has "
        "one 0-shot prompt).",
        label="Start with the instruction",
    )
    template: str = setting(
        "auto",
        help="Use the model's chat template (auto: when it has one).",
        choices=TEMPLATES,
        form=False,
    )
    max_tokens: int = setting(
        320, help="Length cap of a generated answer, in tokens.", min=1, form=False
    )
    seed: int = setting(0, help="Seed of the examples' order and of sampling.", form=False)
    temperature: float = temperature_setting("a generated answer")
    limit: int | None = setting(None, help="Only the first N questions.", min=1, form=False)
    shots_from: str | None = setting(
        None,
        help="Data set the examples come from (default: its train split if imported, "
        "else the data set itself).",
        form=False,
    )

    def __post_init__(self) -> None:
        if self.shots == 0:  # the one 0-shot prompt, with its instruction (as stored)
            self.instruction = True
        super().__post_init__()

    def prompt_settings(self) -> PromptSettings:
        return PromptSettings(self.shots, self.instruction, self.lang, self.seed)


def prompt_version_of(stored: Mapping[str, object]) -> int:
    """The prompt version of a run from its stored settings: its ``prompt_version`` (every
    model's run records :data:`~engine.exam.prompts.PROMPT_VERSION` there), else 1
    for a model's run stored before versions were recorded (its settings hold the examples'
    pool, ``shots_pool``, as every model's run does), else the current one (settings not
    stored yet, published responses)."""
    version = stored.get("prompt_version")
    if isinstance(version, int):
        return version
    return 1 if "shots_pool" in stored else PROMPT_VERSION


@dataclass
class PracticeSettings(Settings):
    """What a person's exam is held to (``medexam exam take``, the app's Exam Practice and
    the session's result)."""

    pass_mark: float = setting(
        60.0, help="Percent needed to pass.", min=0, max=100, label="Pass mark"
    )
