"""What a finished training made, evaluated the way its activity evaluates models: a run of
the kind's activity with the settings its kind's ``evaluation`` gives (a French run of a
reader, a consultation run of a doctor ``BASE+NAME``…). ``medexam train evaluate`` and the
app's "Evaluate now" both call :func:`evaluate`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.train.artefacts import catalog_name
from engine.train.kinds import kinds
from engine.train.loop import TrainError

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import JSONDict


def trained_model(row: JSONDict) -> str:
    """The catalog name of what a LoRA training made: ``BASE+NAME``."""
    return catalog_name(str((row.get("settings") or {}).get("base")), str(row["name"]))


def evaluation(store: Store, training_id: int) -> tuple[JSONDict, str, JSONDict]:
    """Training ``training_id``'s row, the activity its artefact is evaluated in and the
    run's settings that use it; one line when it finished with nothing to evaluate."""
    from engine.train.records import get

    row = get(store, training_id)
    if row["status"] != "finished":
        raise TrainError(f"training {training_id} is {row['status']}: nothing to evaluate yet")
    kind = kinds().get(row["kind"])
    if kind is None or kind.evaluation is None:
        raise TrainError(f"training {training_id} is a {row['kind']}: medexam cannot evaluate it")
    return row, kind.activity, kind.evaluation.load()(row)


def evaluate(store: Store, training_id: int, dataset: str, **loop: Any) -> JSONDict:
    """A run on ``dataset`` of what training ``training_id`` made; its summary. ``loop``
    holds :func:`engine.core.runs.run`'s keywords (``progress``, ``cancel``, ``pool``…) and
    other settings of the run (``limit``…)."""
    from engine.core.runs import run_settings

    _row, activity_id, settings = evaluation(store, training_id)
    return run_settings(store, activity_id, dataset, {**settings, **loop})
