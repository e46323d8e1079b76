"""The settings of a French QA run, declared once (:mod:`engine.fields`): ``medexam french
run``'s options, the app's model-run form and the settings stored on a run all come from
:class:`FrenchSettings`.

>>> french_settings({"model": "smollm2", "k": 3})["k"]  # no index: no passages
0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.fields import Settings, setting, temperature_setting
from engine.french.reader import THRESHOLD

if TYPE_CHECKING:
    from engine.types import JSONDict


@dataclass
class FrenchSettings(Settings):
    """What decides a French run's answers: the model, the passages it is given (an index
    and ``k``), how it answers (``method``, ``threshold``), how many questions, and
    ``oracle`` (give each question its own passage; see :mod:`engine.french.runner`)."""

    model: str | None = setting(
        None, help="Model name (default: the default chat model).", kind="model"
    )
    index: str | None = setting(
        None, help="Index giving the passages (default: no passage).", label="Passages"
    )
    k: int = setting(1, help="Passages per question.", min=1, flag="-k")
    method: str = setting(
        "generate",
        help="generate: the model writes the letters; logprob: it is asked option by "
        "option (P(oui) against the threshold).",
        choices={
            "generate": "Write the letters",
            "logprob": "Ask option by option (probabilities)",
        },
    )
    threshold: float = setting(
        THRESHOLD,
        help="P(oui) needed to select an option (logprob method).",
        min=0.0,
        max=1.0,
        form=False,
    )
    limit: int | None = setting(None, help="First N questions only.", min=1, form=False)
    temperature: float = temperature_setting("a generated answer")
    seed: int = setting(0, help="Seed of sampling.", form=False)
    reader: str | None = setting(
        None,
        help="A trained reader answers instead of a chat model ('medexam train list'); it "
        "reads the passages it was trained with unless --index says otherwise.",
        form=False,
    )
    oracle: bool = setting(
        False,
        help="Also give each question its own passage (left out by default); the run is "
        "labelled oracle.",
        flag="--oracle-passages",
        form=False,
    )


def french_settings(given: Mapping[str, Any]) -> JSONDict:
    """A French run's settings with their defaults, checked; ``k`` is 0 without an index
    (it is not checked then: a run with no passages stores 0)."""
    values = dict(given)
    if not values.get("index"):
        values.pop("k", None)
    out = FrenchSettings.from_dict(values).as_dict()
    if not out["index"]:
        out["k"] = 0
    return out
