"""What a finished training made, evaluated the way its activity evaluates models: a French
run of a reader (``reader=NAME``) or of a French writer (the model ``BASE+NAME``, with the
passage it was trained with), a consultation run of a doctor (``doctor=BASE+NAME``).
``medexam train evaluate`` and the app's "Evaluate now" both call :func:`evaluate`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.train.artefacts import catalog_name
from engine.train.loop import TrainError

if TYPE_CHECKING:
    from engine.store import Store
    from engine.types import JSONDict

#: The activity whose data sets each kind is evaluated on.
EVALUATED_ON = {
    "french-reader": "french",
    "french-seq2seq": "french",
    "french-writer": "french",
    "doctor": "consult",
}


def trained_model(row: JSONDict) -> str:
    """The catalog name of what a LoRA training made: ``BASE+NAME``."""
    return catalog_name(str((row.get("settings") or {}).get("base")), str(row["name"]))


def run_settings(row: JSONDict) -> JSONDict:
    """The run's keywords that use what training ``row`` made."""
    if row["kind"] == "doctor":
        return {"doctor": trained_model(row)}
    if row["kind"] == "french-writer":
        index = (row.get("data") or {}).get("index")
        return {"model": trained_model(row), **({"index": index, "k": 1} if index else {})}
    return {"reader": row["name"]}


def evaluation(store: Store, training_id: int) -> tuple[JSONDict, str, JSONDict]:
    """Training ``training_id``'s row, the activity its artefact is evaluated in and the
    run's settings that use it; one line when it finished with nothing to evaluate."""
    from engine.train.records import get

    row = get(store, training_id)
    if row["status"] != "finished":
        raise TrainError(f"training {training_id} is {row['status']}: nothing to evaluate yet")
    if row["kind"] not in EVALUATED_ON:
        raise TrainError(f"training {training_id} is a {row['kind']}: medexam cannot evaluate it")
    return row, EVALUATED_ON[row["kind"]], run_settings(row)


def evaluate(store: Store, training_id: int, dataset: str, **loop: Any) -> JSONDict:
    """A run on ``dataset`` of what training ``training_id`` made; its summary. ``loop``
    holds :func:`engine.runs.run`'s keywords (``progress``, ``cancel``, ``pool``…) and
    other settings of the run (``limit``…)."""
    from engine.consult.run import run_consult
    from engine.french.runner import run_french

    _row, activity_id, settings = evaluation(store, training_id)
    if activity_id == "consult":
        return run_consult(store, dataset, **settings, **loop)
    return run_french(store, dataset, **settings, **loop)
