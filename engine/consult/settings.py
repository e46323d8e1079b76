"""The settings of a consultation run, declared once (:mod:`engine.fields`): ``medexam
consult run``'s options, the app's "Model vs model" form and the settings stored on a run all
come from :class:`ConsultSettings`. Doctors and baselines are described in
:mod:`engine.consult.doctor.runner`.

>>> ConsultSettings(doctor="oracle-direct", max_turns=3).resolved().patient
'model'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.consult.doctor.final_task import METHODS as ANSWER_METHODS
from engine.fields import SettingError, Settings, setting, temperature_setting

if TYPE_CHECKING:
    from engine.types import JSONDict

BASELINES = ("upper", "lower")
ORACLES = ("oracle-direct", "oracle-random", "oracle-reverse")
#: The doctor, patient or solver that is the default chat model.
DEFAULT_MODEL = "model"
#: The most questions a doctor may be allowed (AgentClinic's budgets go up to 20).
MAX_TURNS = 100

PATIENT_MODE_HELP = (
    "paper: the patient model gets all the facts, the opening request and the dialogue, "
    "with honesty/strictness/colloquial instructions, and what it reveals is measured; "
    "grounded: only the facts a question asks about reach it, and a guard reads a fact "
    "out when its reply strays (tiny models, students)."
)


@dataclass
class ConsultSettings(Settings):
    """What decides a consultation run: who consults (``doctor``: ``model``, a model's name,
    an oracle or a baseline) with which prompt, the patient and how it plays, the solver who
    answers the task, and the caps. ``patient`` and ``solver`` left out are the defaults of
    :meth:`resolved`."""

    doctor: str = setting(
        DEFAULT_MODEL,
        help="model (the default chat model), a catalog model name, "
        + ", ".join(ORACLES + BASELINES),
    )
    style: str = setting(
        "long",
        help="The model doctor's prompt: long (detailed) or short.",
        choices={"long": "Detailed doctor prompt", "short": "Short doctor prompt"},
        label="Prompt",
    )
    patient: str | None = setting(
        None,
        help="Patient model (default: the default chat model).",
        kind="model",
        label="Patient model",
    )
    patient_mode: str = setting(
        "paper",
        help=PATIENT_MODE_HELP,
        choices={"paper": "As in the paper", "grounded": "Grounded in the asked facts"},
        label="Patient",
    )
    max_turns: int = setting(
        10,
        help="Safety cap on a model doctor's questions (oracles always ask every key).",
        min=1,
        max=MAX_TURNS,
        label="Questions per case",
    )
    solver: str | None = setting(
        None,
        help="Model answering the task (default: the fixed solver set with `consult solver`).",
        kind="model",
        form=False,
    )
    limit: int | None = setting(None, help="Only the first N cases.", min=1, form=False)
    seed: int = setting(0, help="Seed of the random oracle's order and of sampling.", form=False)
    format: str = setting(
        "dialogue",
        help="How the solver meets the case: the dialogue (a consultation), the vignette "
        "(the case written out at once, no consultation) or a summary of the dialogue that "
        "the solver writes first (CRAFT-MD's three formats).",
        choices={
            "dialogue": "The dialogue",
            "vignette": "The written case, no consultation",
            "summary": "A summary of the dialogue",
        },
        form=False,
    )
    temperature: float = temperature_setting("the model doctor and the patient")
    answer_method: str = setting(
        "logprobs",
        help="How the solver answers a multiple-choice task: logprobs reads the letters' "
        "probabilities, generate writes an answer.",
        choices=ANSWER_METHODS,
        form=False,
    )
    answer_form: str = setting(
        "mcq",
        help="How the solver answers a multiple-choice case: mcq picks a letter; free names "
        "the diagnosis in words (matched with the right option's text, judged by --judge, "
        "and a letter picked separately for comparison). Diagnosis cases are answered in "
        "words either way.",
        choices={"mcq": "A letter", "free": "The diagnosis in words"},
        flag="--answer",
        form=False,
    )
    judge: str | None = setting(
        None,
        help="Model that judges each diagnosis answered in words once the run ends "
        "(correct / partly / wrong, with its reason).",
        kind="model",
        form=False,
    )
    writer: str | None = setting(
        None,
        help="Model that writes an oracle doctor's question for each key and its closing "
        "analysis, each checked (a question that fails the check is the template's), as the "
        "paper's golden dialogues; default: the template question and closing.",
        kind="model",
        form=False,
    )
    doctor_max_tokens: int = setting(
        128,
        help="Length cap of one doctor turn (an unfinished last sentence is dropped).",
        min=16,
        form=False,
    )
    stop_on_repeat: bool = setting(
        False,
        help="End a model doctor's consultation when it asks a question it already asked, "
        "word for word (for small models that loop on one question). Off, as in the paper: "
        "a repeated question is a turn, and the repetition measure counts it.",
        flag="--stop-on-repeat/--count-repeats",
        form=False,
    )
    keep_conclusions: bool = setting(
        True,
        help="Keep the doctor's closing words in the solver's context (or drop them).",
        flag="--keep-conclusions/--drop-conclusions",
        form=False,
    )
    answer_at: str | None = setting(
        None,
        help="Shares of each consultation after which the solver also answers the task, "
        "e.g. 0.2,0.4,0.6,0.8: from the opening and the first share of the questions (the "
        "whole consultation, 1, is the run's own answer). Scored per share (the accuracy "
        "and recall curves of the paper's Figure 5).",
        form=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.answer_at is None:
            return
        from engine.consult.scoring.shares import parse_shares, shares_text

        if self.doctor in BASELINES or self.format == "vignette":
            raise SettingError(
                "answer_at needs a consultation to cut into shares "
                f"(not {'the vignette format' if self.format == 'vignette' else self.doctor})"
            )
        self.answer_at = shares_text(parse_shares(self.answer_at))

    def resolved(self) -> ConsultSettings:
        """These settings with the patient and solver named: the patient is the default chat
        model, the solver the one of medexam's settings (:func:`default_solver`)."""
        return dataclasses.replace(
            self, patient=self.patient or DEFAULT_MODEL, solver=self.solver or default_solver()
        )


def default_solver() -> str:
    """The fixed solver of medexam's settings, by name (``model`` there is the default chat
    model, recorded by its name)."""
    from engine import settings
    from engine.models.catalog import DEFAULT_MODEL as DEFAULT_CHAT_MODEL

    name = str(settings.get("solver") or DEFAULT_MODEL)
    return DEFAULT_CHAT_MODEL if name == DEFAULT_MODEL else name


def consult_settings(given: Mapping[str, Any]) -> JSONDict:
    """A consultation run's settings with their defaults, checked and resolved
    (:meth:`ConsultSettings.resolved`)."""
    chosen = ConsultSettings.from_dict(given).resolved()
    if chosen.writer and chosen.doctor not in ORACLES:
        raise ValueError(f"a writer writes an oracle doctor's questions: the doctor "
                         f"{chosen.doctor!r} is not one of {', '.join(ORACLES)}")  # fmt: skip
    return chosen.as_dict()
